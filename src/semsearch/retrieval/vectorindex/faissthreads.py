"""FAISS's OpenMP threads around a search: a search of one query runs on one thread."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import faiss

T = TypeVar("T")


def single_threaded(queries: int, search: Callable[[], T]) -> T:
    """Run a search of one query on one thread: it gives FAISS's threads too little work to pay for waking
    them."""
    if queries != 1 or faiss.omp_get_max_threads() == 1:
        return search()
    with one_faiss_thread():
        return search()


@contextlib.contextmanager
def one_faiss_thread() -> Iterator[None]:
    """FAISS's OpenMP work on one thread inside the block (the count is the process's: every thread's searches),
    the process's count back after."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)
