"""An open index directory: its path, manifest, document store, writer lock and generations, and the parts a
query or a write needs (encoder, transform, vector index, raw vectors), each opened on first use.

The Index facade holds one and hands it to the operations (writes, check, describe), which work through this
small surface rather than through the facade.

Layout of an index directory:
    manifest.json              settings and state (manifest.py)
    documents.db               SQLite: documents and metadata; its `state` table holds the generation (store.py)
    raw/seg-*.npy              raw encoder vectors (float32), append-only segments, a row per passage: a document
                               of n passages owns rows pk .. pk + n - 1 (its SQLite pk the first; rawvectors.py)
    gen-NNNNNN/                one generation of derived files: stats.safetensors, transform files, vectors.faiss,
                               and a copy of its manifest (`semsearch check --repair` restores from it)

Writes take turns and publish whole generations (generations.py): ingest adds, build derives, search reads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..encoding import Encoder
from ..encoding.factory import make_encoder
from ..errors import IndexStateError
from ..retrieval.vectorindex import VectorIndex, load_index, runs_blocks
from ..settings import DEFAULT_WAIT, NO_MODEL
from ..storage.generations import Generations, WriterLock
from ..storage.manifest import IndexSettings, IndexState, Manifest
from ..storage.rawvectors import RawVectors, Segment
from ..storage.store import DocumentStore
from ..transforms import Transform, implementation, load_transform
from ..transforms.stats import RunningStats


def derived_files(manifest: Manifest) -> list[str]:
    """The files a generation of this index holds: statistics, the transform's own, the vector index."""
    return [RunningStats.FILE, *implementation(manifest.settings.spec.kind).FILES, VectorIndex.FILE]


@dataclass(frozen=True)
class Published:
    """A generation just published, with the parts already in memory."""

    manifest: Manifest
    transform: Transform
    vectors: VectorIndex


class IndexDirectory:
    """One index directory opened by this process. `read_only` says why writes are refused (None: they are not)."""

    def __init__(
        self, path: Path, manifest: Manifest, wait: float = DEFAULT_WAIT, read_only: str | None = None
    ):
        self.path = Path(path)
        self.manifest = manifest
        self.wait = wait  # seconds a write waits for another process's write to finish
        new = manifest.state.generation == 0  # a missing or empty store is new, not lost
        self.store = DocumentStore(self.path / DocumentStore.FILE, read_only=bool(read_only), create=new)
        self.read_only = read_only or ("documents.db opens only to read" if self.store.read_only else None)
        self.lock = WriterLock(self.path)
        self.generations = Generations(self.path, self.store)
        self._encoder: Encoder | None = None
        self._transform: Transform | None = None
        self._vectors: VectorIndex | None = None
        self._raw: RawVectors | None = None

    def close(self) -> None:
        self.lock.release()
        self.store.close()

    # ---- the state -----------------------------------------------------------------------------------

    @property
    def settings(self) -> IndexSettings:
        return self.manifest.settings

    @property
    def state(self) -> IndexState:
        return self.manifest.state

    @property
    def fusible(self) -> bool:
        """Whether queries can fuse a keyword side with a dense one: the index has keywords and a model."""
        return self.store.has_keywords and self.settings.model != NO_MODEL

    @property
    def generation_dir(self) -> Path:
        return self.generations.directory(self.state.generation)

    def use(self, manifest: Manifest) -> None:
        """Take up a generation published elsewhere: its derived parts are loaded again when asked for."""
        self.manifest = manifest
        self._transform = self._vectors = None

    def take_up(self, published: Published) -> None:
        """Take up the generation a write just published, with the parts it already has in memory."""
        self.manifest = published.manifest
        self._transform, self._vectors = published.transform, published.vectors

    def refresh(self) -> bool:
        """Catch up with writes made by other processes since this directory was opened; True if any."""
        if self.store.generation() == self.state.generation:
            return False
        self.use(self.generations.current(self.lock))
        return True

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """The latest generation taken up, and every row read inside from the store as that generation
        committed it (one read transaction): a write that commits meanwhile is not seen, so the documents a
        search or an export reads are the ones its vector index holds. A write published between the refresh
        and the snapshot's first read: its manifest is read and the snapshot taken again."""
        for _ in range(100):
            self.refresh()
            with self.store.read_snapshot():
                if self.store.generation() == self.state.generation:
                    yield
                    return
        raise IndexStateError(f"{self.path} kept changing while it was being read: try again")

    @contextlib.contextmanager
    def writing(self, refresh: bool = True) -> Iterator[None]:
        """Hold the writer lock and start from the latest committed state (another process may have written
        since this directory was opened, or crashed half-way: that is rolled forward or discarded here)."""
        if self.read_only:
            raise IndexStateError(f"{self.path} is read-only: {self.read_only}; writes need write access")
        self.lock.acquire(self.wait)
        try:
            with self.store.guarded():
                if refresh:
                    self.generations.roll_forward()
                    self.use(Manifest(self.settings, Manifest.load(self.path).state))
                    self.generations.check(self.manifest, derived_files(self.manifest))
                yield
        finally:
            self.lock.release()

    def require_fitted(self) -> None:
        if self.state.count == 0:
            raise IndexStateError(f"{self.path} holds no documents yet: ingest some first")

    # ---- the parts, opened on first use --------------------------------------------------------------

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = make_encoder(self.path, self.settings, self.settings.quantize)
        return self._encoder

    @property
    def transform(self) -> Transform:
        if self._transform is None:
            self.require_fitted()
            self._transform = load_transform(
                self.generation_dir, self.settings.spec, self.settings.encoder_dim
            )
        return self._transform

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            self.require_fitted()
            self._vectors = self.loaded_vectors()
        return self._vectors

    def loaded_vectors(self) -> VectorIndex:
        """The current generation's vector index read from its file, as its manifest has it tuned (a copy of
        its own, to change and publish again)."""
        return load_index(self.generation_dir, runs_blocks(self.state.graph_blocks)).with_tuning(
            self.state.search_params, self.state.measured_recall
        )

    @property
    def raw(self) -> RawVectors:
        """The raw vectors of the current segments; kept while they stay the same (it keeps their maps)."""
        segments = Segment.all_of(self.state.segments)
        if self._raw is None or self._raw.segments != segments or self._raw.dim != self.settings.encoder_dim:
            self._raw = RawVectors(self.path, segments, self.settings.encoder_dim)
        return self._raw

    def stats(self) -> RunningStats:
        path = self.generation_dir / RunningStats.FILE
        return RunningStats.load(path) if path.is_file() else RunningStats(self.settings.encoder_dim)


class DirectoryParts:
    """The parts of the open directory an object holds (the Index), read through it by what measures them: the
    evaluation, the benchmarks and tests. The CLI, the server, MCP and LangChain ask the Index's methods
    instead (tests/test_facade.py checks that they reach none of these)."""

    directory: IndexDirectory

    @property
    def manifest(self) -> Manifest:
        return self.directory.manifest

    @property
    def store(self) -> DocumentStore:
        return self.directory.store

    @property
    def wait(self) -> float:
        return self.directory.wait

    @property
    def generation_dir(self) -> Path:
        return self.directory.generation_dir

    @property
    def encoder(self) -> Encoder:
        return self.directory.encoder

    @property
    def transform(self) -> Transform:
        return self.directory.transform

    @property
    def vectors(self) -> VectorIndex:
        return self.directory.vectors

    @property
    def raw(self) -> RawVectors:
        return self.directory.raw

    def stats(self) -> RunningStats:
        return self.directory.stats()
