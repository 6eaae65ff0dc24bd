"""Thread limits for short pieces of work, where more threads only wait on each other, and the limit a process
is given for the rest."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


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


def threads_counted() -> int:
    """`threads_allowed` as a count (one per core where it says 0), for a pool that must be told a number."""
    return threads_allowed() or os.cpu_count() or 1


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
    """NumPy's BLAS on one thread inside the block (threadpoolctl: 6 ms to import, 1 to limit): OpenBLAS's
    workers spin on the free cores after each product before they sleep, which a block of many small products
    (a calibration's) pays in CPU seconds for nothing. The process's own count comes back after. A BLAS built
    on OpenMP (FAISS's own OpenBLAS) is left alone: its count is OpenMP's, and limiting it put FAISS's searches
    on one thread too (a renewal's 495 searches: 44 ms where two threads take 22)."""
    from threadpoolctl import ThreadpoolController

    limited = [
        (blas, blas.num_threads)
        for blas in ThreadpoolController().select(user_api="blas").lib_controllers
        if blas.threading_layer != "openmp"
    ]
    for blas, _ in limited:
        blas.set_num_threads(1)
    try:
        yield
    finally:
        for blas, threads in limited:
            blas.set_num_threads(threads)
