"""Where an ingest's partitions are encoded: in this process, or on a Dask cluster, with the same result.

An `Executor` runs the unit of work (ingest.encode_documents) on each partition and yields the results in
partition order; the driver (ingest.add_documents) cuts the partitions at a fixed size (ingest.CHUNK_DOCS)
whatever runs them, and merges the statistics, writes the raw vectors and the documents in that order. So an
index ingested on any cluster holds the same documents, pks and raw vectors, bit for bit, as one ingested
here: a vector depends only on its partition's composition, never on which process or how many threads made
it. Another engine (Ray) would be one more Executor.

On Dask, each task gets the documents themselves (no shared filesystem) and the index's settings, and runs
on a worker (worker.py), which also encodes the texts of the fidelity check and calibration: the driver loads
no model. The driver keeps a few partitions in flight per worker thread and appends each result to the resume
cache as it arrives, so a driver killed and run again skips the partitions it had received; a worker killed
mid-task has its task run again elsewhere by Dask. An ivf or pq index is trained on the driver and filled on
the workers (`add_blocks`), its shards merged in block order: byte for byte the index filled here. Dask is an
optional extra (`pip install 'semsearch[dask]'`), imported only here and only when a cluster is asked for.

Size: the two executors, the resume spool and the worker tasks' messages are one protocol, read in one place."""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SemsearchError
from ..retrieval.vectorindex import VectorIndex
from ..storage.manifest import IndexSettings
from ..storage.resumecache import ResumeCache
from . import build
from .addresses import check_address
from .chunking import Chunker
from .documents import Document
from .pipeline import (
    CHUNK_DOCS,
    Encode,
    EncodedPartition,
    Progress,
    cached_partition,
    encode_documents,
    quantize_fidelity,
)
from .worker import encode_partition_task, encode_texts_task, fidelity_task

log = logging.getLogger(__name__)

INSTALL = "pip install 'semsearch[dask]'"
IN_FLIGHT = 2  # partitions submitted per worker thread: one running, one queued behind it
# Kept by Dask's logs of messages, transitions and events, for its own debugging (see _short_logs).
RECENT_MESSAGES = 0
POLL_SECONDS = 0.25  # how often the driver passes the workers' progress on while it waits


class ClusterError(SemsearchError):
    """A cluster that cannot be used: Dask missing, a scheduler that does not answer, no workers."""


@dataclass(frozen=True)
class Job:
    """What one ingest asks of an executor: the index's settings (all a remote worker needs), and this
    process's own encoder, chunker, resume cache and progress callback."""

    settings: IndexSettings
    encode: Encode | None  # None: an index of vectors made elsewhere
    chunker: Chunker | None
    cache: ResumeCache
    progress: Progress | None = None
    path: Path = Path()  # the index's, which errors name


class Executor(ABC):
    """Encodes an ingest's partitions somewhere, yielding the results in partition order."""

    partition_docs: int = CHUNK_DOCS  # the same wherever partitions run: the vectors' bits depend on it

    @abstractmethod
    def run(self, partitions: Iterable[list[Document]], job: Job) -> Iterator[EncodedPartition]:
        """Each partition's result, in order, pulling partitions only as it needs them."""

    def add_blocks(self, vectors: VectorIndex, blocks: build.Blocks) -> None:
        """Fill a trained vector index with (pks, projected) blocks in order (a build.BlockAdder): here."""
        build.add_here(vectors, blocks)

    def encoder(self, job: Job) -> Encode:
        """What encodes texts outside the partitions (calibration's pseudo-queries): the index's encoder."""
        return job.encode  # type: ignore[return-value]  # None only for vectors made elsewhere: nothing calibrates

    def fidelity(self, texts: list[str], job: Job) -> Callable[[], dict[str, Any]]:
        """The quantized encoder against fp32 on `texts` (ingest.quantize_fidelity), begun now; the call
        returned gives it. Here it is measured at once, so its fp32 model is freed before the vector index is
        built rather than held on top of it."""
        measured = quantize_fidelity(texts, job.settings, job.encode, job.path)  # type: ignore[arg-type]
        return lambda: measured

    def describe(self) -> str:
        return "this process"

    def close(self) -> None:  # noqa: B027 (nothing to release by default)
        """Release what the executor started (a local cluster) or connected to."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class InProcess(Executor):
    """Partitions encoded one after the other in this process, its vectors going to the resume cache as they
    are encoded (every ingest.RESUME_EVERY documents)."""

    def __init__(self, partition_docs: int = CHUNK_DOCS):
        self.partition_docs = partition_docs

    def run(self, partitions: Iterable[list[Document]], job: Job) -> Iterator[EncodedPartition]:
        dim = job.settings.encoder_dim
        for docs in partitions:
            precision = job.settings.raw_precision
            yield encode_documents(docs, job.encode, dim, job.chunker, job.cache, job.progress, precision)


class DaskExecutor(Executor):
    """Partitions encoded as tasks on a Dask cluster: a running scheduler (`connect`) or a LocalCluster of
    worker processes on this machine (`local`), or a `distributed.Client` of your own."""

    def __init__(self, client: Any, partition_docs: int = CHUNK_DOCS, *, owned: tuple[Any, ...] = ()):
        self.client = client
        self.partition_docs = partition_docs
        self._owned = owned  # closed with the executor: what `connect` or `local` made

    @classmethod
    def connect(cls, address: str, timeout: float, partition_docs: int = CHUNK_DOCS) -> DaskExecutor:
        """A client of the scheduler at `address` (`tcp://host:8786`) with a worker, or a ClusterError."""
        check_address(address)
        distributed = _dask()
        try:
            with _short_logs():
                client = distributed.Client(address, timeout=f"{timeout}s", set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise ClusterError(
                f"no Dask scheduler answered at {address} within {timeout:g} s ({_brief(error)}): start one "
                "(`dask scheduler`, then `dask worker ADDRESS` on each machine) or check the address"
            ) from None
        return cls(client, partition_docs, owned=(client,))._with_workers(timeout, address)

    @classmethod
    def local(cls, workers: int, timeout: float = 60.0, partition_docs: int = CHUNK_DOCS) -> DaskExecutor:
        """A LocalCluster of `workers` worker processes (one thread each) on this machine, on loopback."""
        distributed = _dask()
        with _short_logs():
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            client = distributed.Client(cluster, set_as_default=False)
        return cls(client, partition_docs, owned=(client, cluster))._with_workers(timeout, "a local cluster")

    def _with_workers(self, timeout: float, where: str) -> DaskExecutor:
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            self.close()
            raise ClusterError(f"the Dask scheduler at {where} has no workers after {timeout:g} s") from None
        return self

    def threads(self) -> int:
        """The worker threads the cluster has now: as many tasks run at once."""
        return sum(worker["nthreads"] for worker in self.client.scheduler_info()["workers"].values())

    def describe(self) -> str:
        workers = len(self.client.scheduler_info()["workers"])
        return f"Dask at {self.client.scheduler.address} ({workers} workers, {self.threads()} threads)"

    def close(self) -> None:
        for part in self._owned:
            with contextlib.suppress(Exception):
                part.close()
        self._owned = ()

    def run(self, partitions: Iterable[list[Document]], job: Job) -> Iterator[EncodedPartition]:
        if job.encode is None:  # vectors made elsewhere: nothing to encode, nothing worth sending
            yield from InProcess(self.partition_docs).run(partitions, job)
            return
        distributed = _dask()
        topic = f"semsearch-progress-{uuid.uuid4().hex}"
        counter = _Counter(job.progress)
        self.client.subscribe_topic(topic, counter.event)
        source = enumerate(partitions)
        pending: dict[int, Any] = {}  # partition number -> future
        ready: dict[int, EncodedPartition] = {}  # received, waiting for the partitions before them
        window, following, exhausted = IN_FLIGHT * max(1, self.threads()), 0, False
        arrived = threading.Event()  # set by a task that ends (on the client's thread)
        try:
            while True:
                while not exhausted and len(pending) + len(ready) < window:
                    number, docs = next(source, (None, None))
                    if number is None or docs is None:
                        exhausted = True
                        break
                    counter.expect(number, len(docs))
                    if len(job.cache) and (cached := _cached(docs, job)) is not None:
                        ready[number] = cached  # received by a run that was interrupted
                        counter.finished(number)
                        continue
                    shipped = [_shipped(doc) for doc in docs]
                    key = f"semsearch-encode-{topic[-32:]}-{number}"
                    pending[number] = self.client.submit(
                        encode_partition_task, shipped, job.settings, topic, number, key=key, pure=False
                    )
                    pending[number].add_done_callback(lambda _: arrived.set())
                if following in ready:
                    yield ready.pop(following)
                    following += 1
                    continue
                if not pending:
                    return
                arrived.wait(POLL_SECONDS)
                arrived.clear()
                counter.flush()
                for number in [n for n, future in pending.items() if future.done()]:
                    part = _result(pending.pop(number), f"partition {number}", distributed)
                    rows = [i for i, key in enumerate(part.keys) if key is not None]
                    job.cache.append([part.keys[i] for i in rows], part.vectors[rows])
                    counter.finished(number)
                    ready[number] = part
        finally:
            for future in pending.values():
                future.cancel()
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(topic)
            counter.flush()

    def add_blocks(self, vectors: VectorIndex, blocks: build.Blocks) -> None:
        """An ivf or pq index filled on the workers: each block a task (build.fill_shard) adding it to a copy of
        the trained, empty index, sent once to every worker; the shards' lists merged into `vectors` in block
        order as they come back, a few in flight per worker thread. Each list then holds its rows in the order
        adding the blocks here gives: the same index. Other kinds are filled here (FAISS cannot merge them)."""
        if vectors.kind not in build.MERGEABLE:
            build.add_here(vectors, blocks)
            return
        import dask

        distributed = _dask()
        empty = self.client.scatter(vectors.to_bytes(), broadcast=True, hash=False)
        tag, window = uuid.uuid4().hex, IN_FLIGHT * max(1, self.threads())
        in_order: deque[tuple[int, Any]] = deque()  # (block number, future), merged from the left
        merge = vectors.merger()

        def merge_first() -> None:
            number, future = in_order.popleft()
            merge(_result(future, f"shard {number}", distributed))

        try:
            for number, (pks, projected) in enumerate(blocks):
                # The block travels in its task, not scattered to one worker: a worker lost mid-task has the
                # task run again elsewhere. At 384 dims that is 12.6 MB, above Dask's warning for a graph.
                size = f"{pks.nbytes + projected.nbytes + (1 << 20)}B"
                with dask.config.set({"distributed.admin.large-graph-warning-threshold": size}):
                    future = self.client.submit(
                        build.fill_shard, empty, pks, projected, key=f"semsearch-shard-{tag}-{number}"
                    )
                in_order.append((number, future))
                while in_order and (len(in_order) >= window or in_order[0][1].done()):
                    merge_first()
            while in_order:
                merge_first()
        finally:
            for _, future in in_order:
                future.cancel()
            empty.release()

    def encoder(self, job: Job) -> Encode:
        """Texts encoded on a worker, a task per call: the driver loads no model, and the vectors are the
        ones the index's encoder gives here (worker.py)."""
        distributed = _dask()

        def encode(texts: list[str], progress: Progress | None = None) -> np.ndarray:  # no progress: one task
            future = self.client.submit(encode_texts_task, list(texts), job.settings, pure=False)
            return _result(future, "encoding texts", distributed)

        return encode

    def fidelity(self, texts: list[str], job: Job) -> Callable[[], dict[str, Any]]:
        """Measured on a worker while the driver goes on (builds the vector index)."""
        distributed = _dask()
        future = self.client.submit(fidelity_task, texts, job.settings, pure=False)
        return lambda: _result(future, "the quantized encoder's fidelity check", distributed)


@contextlib.contextmanager
def executor_for(cluster: Executor | str | int | None, timeout: float) -> Iterator[Executor]:
    """The executor asked for: None this process, an address a running Dask scheduler, a number of workers a
    LocalCluster of that many processes, or an Executor as it is (not closed here). Ones made here are closed
    on leaving."""
    if isinstance(cluster, Executor):
        yield cluster
        return
    if cluster is None:
        made: Executor = InProcess()
    elif isinstance(cluster, int) and not isinstance(cluster, bool):
        if cluster < 1:
            raise ClusterError(f"a local cluster needs at least 1 worker, not {cluster}", setting="workers")
        made = DaskExecutor.local(cluster, max(timeout, 60.0))
    else:
        made = DaskExecutor.connect(str(cluster), timeout)
    with made:
        yield made


# ---- helpers ----------------------------------------------------------------------------------------------


class _Counter:
    """The progress of tasks on other machines, passed on by the driver's thread: the documents each
    partition's batches report (at most its size, so a task run again after its worker died counts once), and
    the rest of the partition when its result arrives."""

    def __init__(self, progress: Progress | None):
        self.progress = progress
        self.sizes: dict[int, int] = {}
        self.counted: dict[int, int] = {}
        self.owed = 0
        self.lock = threading.Lock()  # events arrive on the client's thread

    def expect(self, number: int, size: int) -> None:
        with self.lock:
            self.sizes[number] = size

    def event(self, event: tuple[float, tuple[int, int]]) -> None:
        number, n = event[1]
        with self.lock:
            self._count(number, n)

    def finished(self, number: int) -> None:
        with self.lock:
            self._count(number, self.sizes[number])
        self.flush()

    def _count(self, number: int, n: int) -> None:
        before = self.counted.get(number, 0)
        after = min(before + n, self.sizes.get(number, 0))
        self.owed += max(0, after - before)
        self.counted[number] = after

    def flush(self) -> None:
        with self.lock:
            owed, self.owed = self.owed, 0
        if self.progress and owed:
            self.progress(owed)


def _shipped(doc: Document) -> Document:
    """What a task needs of a document: its text, title and any vector, not its metadata."""
    return replace(doc, metadata={}) if doc.metadata else doc


def _cached(docs: list[Document], job: Job) -> EncodedPartition | None:
    settings = job.settings
    return cached_partition(docs, settings.encoder_dim, job.chunker, job.cache, settings.raw_precision)


def _result(future: Any, task: str, distributed: Any) -> Any:
    try:
        return future.result()
    except distributed.KilledWorker as error:
        raise ClusterError(
            f"{task} was lost with every worker that ran it ({error}): are the workers running out of memory?"
        ) from None


def _brief(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


@contextlib.contextmanager
def _short_logs() -> Iterator[None]:
    """Dask's logs of recent messages kept short for the connections made inside: each keeps the last 1,000
    messages under 1 MB by default, and a task's message holds its partition's documents, so a driver held
    every partition it had sent, up to 1,000 of them (its RSS grew 0.5 KB a document)."""
    import dask

    with dask.config.set({"distributed.admin.low-level-log-length": RECENT_MESSAGES}):
        yield


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError(f"a cluster (--cluster, --workers) needs Dask: {INSTALL}") from None
    return distributed
