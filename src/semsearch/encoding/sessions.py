"""ONNX Runtime sessions of the cached graphs: one per graph and thread count for the process's life, started
from a copy of the graph with the portable optimizations already made (saved by the graph's first session).

Why: a CLI process's start is mostly imports and this session; the optimizations are the same every time, so a
new process's session starts in about 60% of the CPU time from the optimized copy (0.25 s against 0.39,
measured; a CLI query 0.95 CPU-s against 1.1-1.4), its vectors identical (test_encoder). The copy keeps its
weights in a file of their own beside it (WEIGHTS), which ONNX Runtime maps instead of reading them through the
graph's protobuf: MiniLM's int8 session in 0.05-0.07 CPU-s against 0.12-0.13 (its 56 MiB neither copied nor
zeroed; the vectors the same to the bit)."""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ModelError
from ..storage.files import atomic_path
from ..threads import threads_allowed

if TYPE_CHECKING:
    from onnxruntime import GraphOptimizationLevel, InferenceSession, SessionOptions

_SESSIONS: dict[
    tuple[str, int], InferenceSession
] = {}  # one per graph and thread count, for the process's life
_STARTING = threading.Lock()  # a session started on one thread while another asks for it is made once
WEIGHTS = "weights"  # the optimized copy's weights' file: beside it, its name, a word of its own and this


def session(path: str, threads: int) -> InferenceSession:
    """An ONNX Runtime session on `threads` threads (0: one per core), made once per process. Its threads
    sleep between runs instead of spinning: the ingest's own work between batches needs the cores
    (measured: faster). Not told (0): as many as OMP_NUM_THREADS allows (threads.threads_allowed)."""
    threads = threads or threads_allowed()
    made = _SESSIONS.get((path, threads))
    if made is None:
        with _STARTING:
            if (path, threads) not in _SESSIONS:
                _SESSIONS[path, threads] = _new_session(path, threads, keep_optimized=True)
            made = _SESSIONS[path, threads]
    return made


def one_off_session(path: str) -> InferenceSession:
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
    are still made at each load. `mapped`: its weights in a file of their own (a copy saved before them is
    another name, left as it is)."""
    path = Path(path)
    stat = path.stat()
    return path.with_name(f"{path.stem}.ort-{runtime_version}-{stat.st_size}-{stat.st_mtime_ns}.mapped.onnx")


def _new_session(path: str, threads: int, keep_optimized: bool) -> InferenceSession:
    import onnxruntime

    def options(level: GraphOptimizationLevel) -> SessionOptions:
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
            # a name of its own: the copy that names it takes its place only once both are written
            weights = optimized.with_name(f"{optimized.name}.{uuid.uuid4().hex[:12]}.{WEIGHTS}")
            saving.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name", weights.name
            )
            saving.add_session_config_entry(
                "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
            )
            try:
                with atomic_path(optimized) as tmp:
                    saving.optimized_model_filepath = str(tmp)
                    onnxruntime.InferenceSession(path, saving, providers=["CPUExecutionProvider"])
                    with open(weights, "rb+") as handle:  # on disk before the copy naming it is
                        os.fsync(handle.fileno())
            except BaseException:
                weights.unlink(missing_ok=True)
                raise
            for other in optimized.parent.glob(f"{optimized.name}.*.{WEIGHTS}"):  # a copy saved before
                if other != weights:
                    other.unlink(missing_ok=True)
    return made
