"""ONNX Runtime sessions of the cached graphs: one per graph and thread count for the process's life, started
from a copy of the graph with the portable optimizations already made (saved by the graph's first session).

Why: a CLI process's start is mostly imports and this session; the optimizations are the same every time, so a
new process's session starts in about 60% of the CPU time from the optimized copy (0.25 s against 0.39,
measured; a CLI query 0.95 CPU-s against 1.1-1.4), its vectors identical (test_encoder)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ..errors import ModelError
from ..storage.files import atomic_path
from ..threads import threads_allowed

_SESSIONS: dict[tuple[str, int], Any] = {}  # one per graph and thread count, for the process's life


def session(path: str, threads: int):
    """An ONNX Runtime session on `threads` threads (0: one per core), made once per process. Its threads
    sleep between runs instead of spinning: the ingest's own work between batches needs the cores
    (measured: faster). Not told (0): as many as OMP_NUM_THREADS allows (threads.threads_allowed)."""
    threads = threads or threads_allowed()
    if (path, threads) not in _SESSIONS:
        _SESSIONS[path, threads] = _new_session(path, threads, keep_optimized=True)
    return _SESSIONS[path, threads]


def one_off_session(path: str):
    """A session on one thread for a check of a graph being exported: not kept, nothing saved beside it."""
    return _new_session(path, 1, keep_optimized=False)


def release(path: str) -> None:
    """Drop the sessions of a graph (its weights leave memory once nothing else holds them)."""
    for key in [key for key in _SESSIONS if key[0] == path]:
        del _SESSIONS[key]


def optimized_path(path: str | Path, runtime_version: str) -> Path:
    """Where a graph's copy with ONNX Runtime's portable (extended) optimizations already applied is kept. Its
    name holds the runtime's version, whose optimizations it is, and the graph file's size and modification
    time, so a graph exported again is optimized again; the layout optimizations, which depend on the CPU,
    are still made at each load."""
    path = Path(path)
    stat = path.stat()
    return path.with_name(f"{path.stem}.ort-{runtime_version}-{stat.st_size}-{stat.st_mtime_ns}.onnx")


def _new_session(path: str, threads: int, keep_optimized: bool):
    import onnxruntime

    def options(level):
        made = onnxruntime.SessionOptions()
        made.intra_op_num_threads = threads
        made.inter_op_num_threads = 1
        made.add_session_config_entry("session.intra_op.allow_spinning", "0")
        made.graph_optimization_level = level
        return made

    levels = onnxruntime.GraphOptimizationLevel
    optimized = optimized_path(path, onnxruntime.__version__) if keep_optimized else None
    if optimized is not None and optimized.is_file():
        with contextlib.suppress(Exception):  # damaged or from another build: the graph itself still loads
            return onnxruntime.InferenceSession(
                str(optimized), options(levels.ORT_ENABLE_ALL), providers=["CPUExecutionProvider"]
            )
    try:
        made = onnxruntime.InferenceSession(
            path, options(levels.ORT_ENABLE_ALL), providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # a damaged cache file: say where it is, so it can be removed
        raise ModelError(
            f"{path}: cannot load the cached ONNX graph ({error}); delete it to re-export"
        ) from None
    if optimized is not None:
        with contextlib.suppress(
            Exception
        ):  # only a start-up saving: a cache that cannot be written loses it
            saving = options(levels.ORT_ENABLE_EXTENDED)
            with atomic_path(optimized) as tmp:
                saving.optimized_model_filepath = str(tmp)
                onnxruntime.InferenceSession(path, saving, providers=["CPUExecutionProvider"])
    return made
