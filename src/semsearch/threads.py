"""Thread limits for short pieces of work, where more threads only wait on each other, and the limit a process
is given for the rest."""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable, Iterator

PTHREADS = 1  # openblas_get_parallel(): 0 sequential, 1 its own threads, 2 OpenMP's


def threads_allowed() -> int:
    """The threads a batch of work may take when not told: OMP_NUM_THREADS where it is set to a positive number
    (FAISS and torch already keep to it; ONNX Runtime's and the external model's own pools do not read it),
    else 0, one per core. Where cores are shared (`make test`: two workers on two cores, 1 each), a second
    thread mostly waits for a core: 200 SciFact abstracts, alternated in one process on the 2-core machine
    at load 5-6, took 31.0 s and 15.3 CPU-s on one thread, 33.3 s and 16.1 CPU-s on two."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0]))  # OpenMP: a list per level
    except ValueError:
        return 0


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread inside the block (the flow's small matrices, a query's few tokens)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS on one thread inside the block, where it is OpenBLAS on threads of its own (pthreads): after
    each product its workers spin on the free cores for a while before they sleep, which a block of many small
    products (a calibration's) pays in CPU seconds for nothing. Elsewhere (another BLAS, OpenBLAS on OpenMP,
    no /proc to find it in) it does nothing."""
    libraries = _threaded_openblas()
    before = [get() for get, _ in libraries]
    for _, set_threads in libraries:
        set_threads(1)
    try:
        yield
    finally:
        for (_, set_threads), threads in zip(libraries, before):
            set_threads(threads)


def _threaded_openblas() -> list[tuple[Callable[[], int], Callable[[int], None]]]:
    """The get and set of the thread count of each OpenBLAS the process has loaded on threads of its own
    (the names numpy's wheels give them: scipy-openblas's, its 64-bit integer builds', plain OpenBLAS's)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if "openblas" in line}
    except OSError:
        return []
    found = []
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (
            ("scipy_openblas", "64_"),
            ("scipy_openblas", ""),
            ("openblas", "64_"),
            ("openblas", ""),
        ):
            get = getattr(library, f"{prefix}_get_num_threads{suffix}", None)
            set_threads = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
            parallel = getattr(library, f"{prefix}_get_parallel{suffix}", None)
            if get and set_threads and parallel:
                if parallel() == PTHREADS:
                    set_threads.argtypes = [ctypes.c_int]
                    found.append((get, set_threads))
                break
    return found
