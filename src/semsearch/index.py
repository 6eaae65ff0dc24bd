"""The Index: a small facade over the stages, for one directory holding everything one corpus needs.

Layout of an index directory:
    manifest.json              settings and state (manifest.py)
    documents.db               SQLite: documents and metadata; its `state` table holds the generation (store.py)
    raw/seg-*.npy              raw encoder vectors (float32), append-only segments, a row per passage: a document
                               of n passages owns rows pk .. pk + n - 1 (its SQLite pk the first; rawvectors.py)
    gen-NNNNNN/                one generation of derived files: stats.safetensors, transform files, vectors.faiss,
                               and a copy of its manifest (`semsearch check --repair` restores from it)

Writes take turns and publish whole generations (generations.py): ingest.py adds, build.py derives, search.py
and calibration.py read."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .encoding import Encoder
from .errors import DataError, IndexStateError
from .ingest import build
from .ingest.creation import check_compatible, check_new_directory, make_encoder, new_settings
from .ingest.distributed import Executor, executor_for
from .ingest.documents import Corpus, Document, FieldNames, parse_document, validate_documents
from .ingest.pipeline import AddReport, Progress
from .operations import writes
from .retrieval.calibration import query_defaults
from .retrieval.keywords import KeywordRetriever
from .retrieval.search import DenseRetriever, Hit, Request, Where, allowed_rows
from .retrieval.search import search as run_search
from .retrieval.vectorindex import VectorIndex
from .settings import (
    DEFAULT_MODE,
    DEFAULT_WAIT,
    NO_MODEL,
    IndexOptions,
    RefitPolicy,
    SearchMode,
    TransformSpec,
    at_least,
)
from .storage.faults import fault_point
from .storage.generations import Generations, WriterLock, cannot_write
from .storage.manifest import FILE, PENDING, IndexSettings, IndexState, Manifest
from .storage.rawvectors import RawVectors, Segment
from .storage.store import DocumentStore
from .transforms import Transform, load_transform
from .transforms.stats import RunningStats

__all__ = ["AddReport", "Hit", "Index"]


class Index:
    """A semsearch index directory. Open one with `Index.open`, make one with `Index.create`."""

    def __init__(
        self, path: Path, manifest: Manifest, wait: float = DEFAULT_WAIT, read_only: str | None = None
    ):
        self.path = Path(path)
        self.manifest = manifest
        self.wait = wait  # seconds a write waits for another process's write to finish
        new = manifest.state.generation == 0  # a missing or empty store is new, not lost
        self.store = DocumentStore(self.path / DocumentStore.FILE, read_only=bool(read_only), create=new)
        # Why writes are refused (None: they are not): storage this process cannot write.
        self.read_only = read_only or ("documents.db opens only to read" if self.store.read_only else None)
        self.lock = WriterLock(self.path)
        self.generations = Generations(self.path, self.store)
        self._encoder: Encoder | None = None
        self._transform: Transform | None = None
        self._vectors: VectorIndex | None = None
        self._raw: RawVectors | None = None

    # ---- making and opening -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | Path,
        options: IndexOptions | None = None,
        *,
        wait: float = DEFAULT_WAIT,
        **asked: Any,
    ) -> Index:
        """A new, empty index; the transform is fitted when the first documents arrive. Options (an
        IndexOptions, or its fields as keywords) left out take the defaults the benchmark chose (settings.py).

        `model="none"` makes an index of vectors made elsewhere (`dim` wide): documents then bring their vectors
        (a vector field, or `Corpus(..., vectors=)`) and queries are vectors (`search_vectors`)."""
        options, path = options or IndexOptions(**asked), Path(path)
        check_new_directory(path)
        settings = new_settings(options)  # loads the model first: nothing is written for one that fails
        path.mkdir(parents=True, exist_ok=True)
        index = cls(path, Manifest(settings, IndexState()), wait)
        with index._writing(refresh=False):
            if (path / FILE).exists():
                raise IndexStateError(f"{path} was just made an index by another process")
            with index.store.transaction():
                index.store.set_generation(0)
            fault_point("creating")
            index.manifest = index.manifest.save(path)
        return index

    @classmethod
    def open(cls, path: str | Path, wait: float = DEFAULT_WAIT) -> Index:
        """Open an index to search or write. Any number of processes may have it open; writes take turns."""
        path = Path(path)
        index = cls(path, Manifest.load(path), wait, cannot_write(path))  # says plainly when not an index
        with _closed_on_error(index), index.store.guarded():
            index.manifest = index.generations.current(index.lock)
            index.generations.check(index.manifest)
        return index

    @classmethod
    def open_or_create(
        cls,
        path: str | Path,
        options: IndexOptions | None = None,
        *,
        corpus: Corpus | None = None,
        wait: float = DEFAULT_WAIT,
        **asked: Any,
    ) -> Index:
        """Open an existing index, refusing options that contradict it, or create one with them. With a checked
        `corpus` that brings its own vectors and no model named, a new index has no model and their width."""
        options = options or IndexOptions(**asked)
        path = Path(path)
        width = corpus.check().vector_width if corpus is not None else None
        if not (path / FILE).exists() and not (path / PENDING).exists():
            if width is not None and options.model is None:
                options = replace(options, model=NO_MODEL)
            return cls.create(path, replace(options, dim=width or options.dim), wait=wait)
        index = cls.open(path, wait)
        with _closed_on_error(index):
            index.check_compatible(options)
        if options.batch_size:  # a setting of this run's encoding, not of the index
            index.manifest = Manifest(index.settings.with_changes(batch_size=options.batch_size), index.state)
        return index

    def check_compatible(self, options: IndexOptions | None = None, **asked: Any) -> None:
        """Options given for an existing index must match it (changing the transform is a refit)."""
        check_compatible(self.path, self.settings, options or IndexOptions(**asked))

    def close(self) -> None:
        self.lock.release()
        self.store.close()

    def refresh(self) -> bool:
        """Catch up with writes made by other processes since this index was opened; True if any."""
        if self.store.generation() == self.state.generation:
            return False
        self._use(self.generations.current(self.lock))
        return True

    def _use(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self._transform = self._vectors = None

    @contextlib.contextmanager
    def _writing(self, refresh: bool = True) -> Iterator[None]:
        """Hold the writer lock and start from the latest committed state (another process may have written
        since this index was opened, or crashed half-way: that is rolled forward or discarded here)."""
        if self.read_only:
            raise IndexStateError(f"{self.path} is read-only: {self.read_only}; writes need write access")
        self.lock.acquire(self.wait)
        try:
            with self.store.guarded():
                if refresh:
                    self.generations.roll_forward()
                    self._use(Manifest(self.settings, Manifest.load(self.path).state))
                    self.generations.check(self.manifest)
                yield
        finally:
            self.lock.release()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- components -----------------------------------------------------------------------------------

    @property
    def settings(self) -> IndexSettings:
        return self.manifest.settings

    @property
    def state(self) -> IndexState:
        return self.manifest.state

    @property
    def generation_dir(self) -> Path:
        return self.generations.directory(self.state.generation)

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = make_encoder(self.path, self.settings, self.settings.quantize)
        return self._encoder

    @property
    def transform(self) -> Transform:
        if self._transform is None:
            self._require_fitted()
            self._transform = load_transform(
                self.generation_dir, self.settings.spec, self.settings.encoder_dim
            )
        return self._transform

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            self._require_fitted()
            tuned = self.state.search_params, self.state.measured_recall
            self._vectors = VectorIndex.load(self.generation_dir).with_tuning(*tuned)
        return self._vectors

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

    def __len__(self) -> int:
        return self.state.count

    def _require_fitted(self) -> None:
        if self.state.count == 0:
            raise IndexStateError(f"{self.path} holds no documents yet: ingest some first")

    # ---- writing --------------------------------------------------------------------------------------

    def ingest(
        self,
        corpus: Corpus | str | Path,
        fields: FieldNames | None = None,
        progress: Progress | None = None,
        refit: RefitPolicy | str = RefitPolicy.NEVER,
        vectors: str | Path | None = None,
        cluster: Executor | str | int | None = None,
    ) -> AddReport:
        """Add the documents of a JSONL file (a path, or a checked Corpus), validated whole before anything is
        written. `refit` after adding: "never", "always" or "auto" (drift above DRIFT_LIMIT; the report's `drift`
        says if one is advised). `vectors`: an .npy of vectors made elsewhere, row i for the i-th document (as a
        vector field in `fields`). `cluster`: where to encode (distributed.py): a Dask scheduler's address, a
        number of local worker processes or an Executor; the result is the same."""
        if not isinstance(corpus, Corpus):
            corpus = Corpus(corpus, fields or FieldNames(), vectors)
        width, dim = corpus.check().vector_width, self.settings.encoder_dim
        if width is not None and width != dim:
            where = dict(path=corpus.vectors) if corpus.vectors else dict(path=corpus.path, line=1)
            raise DataError(f"vectors of width {width}, expected {dim}", field=corpus.fields.vector, **where)
        with executor_for(cluster, self.wait) as executor:  # a scheduler that does not answer: after `wait`
            return self._add(corpus.documents, progress, refit, executor)

    def add(
        self,
        documents: Iterable[Document | dict[str, Any]],
        progress: Progress | None = None,
        refit: RefitPolicy | str = RefitPolicy.NEVER,
    ) -> AddReport:
        """Add documents (Document objects or dicts shaped like the JSONL lines), validated first."""
        docs = [
            d if isinstance(d, Document) else parse_document(d, line=n) for n, d in enumerate(documents, 1)
        ]
        validate_documents(docs, dim=self.settings.encoder_dim)
        return self._add(lambda: iter(docs), progress, refit)

    def _add(self, documents: Callable[[], Iterable[Document]], progress, refit, executor=None) -> AddReport:
        refit = RefitPolicy.parse(refit, "refit")
        with self._writing():
            done, published = writes.add(self, documents(), progress, executor)
            if published is not None:
                self._take_up(published)
            report, drift = done.report(), self.state.drift
            if report.added and refit.due(drift) and not report.young:
                self._refit_locked(build.refit_spec(self.settings, None, None, None, None, None), None)
                return replace(report, refitted=True, drift=drift)
            return replace(report, drift=drift)

    def delete(self, ids: Sequence[str] = (), where: Where = None) -> int:
        """Delete documents by id and/or filter (from the statistics, exactly, and the vector index); how many."""
        with self._writing():
            self._require_fitted()
            pks = writes.chosen(self, ids, allowed_rows(self.store, where))
            if pks:
                self._take_up(writes.delete(self, pks))
            return len(pks)

    def refit(
        self,
        transform: str | None = None,
        dims: int | Literal["all"] | None = None,
        power: float | None = None,
        *,
        flow_epochs: int | None = None,
        seed: int | None = None,
        index_type: str | None = None,
        rerank: int | None = None,
        recall_target: float | None = None,
        calibrate: bool = True,
    ) -> float:
        """Derive a new transform from the stored statistics and rebuild the vector index from the kept raw
        vectors: no encoding. Unnamed settings (None) keep their current values, except that a new transform
        kind starts from its own defaults for dims and power; `dims="all"` keeps every dimension; `index_type`
        changes the FAISS index (flat, hnsw, ivf, pq, auto); `rerank` the queries' default; `recall_target`
        the recall@10 it is tuned for; `calibrate` False keeps the fusion weight (calibration.py). Returns s."""
        at_least(rerank, 0, "rerank")
        with self._writing():
            spec = build.refit_spec(self.settings, transform, dims, power, flow_epochs, seed)
            return self._refit_locked(spec, index_type, rerank, recall_target, calibrate)

    def _refit_locked(self, spec: TransformSpec, index_type: str | None, *tuning: Any) -> float:
        self._require_fitted()
        seconds, published = writes.refit(self, spec, index_type, *tuning)
        self._take_up(published)
        return seconds

    def _take_up(self, published: writes.Published) -> None:
        """Use the generation a write just published, with the parts it already has in memory."""
        self.manifest = published.manifest
        self._transform, self._vectors = published.transform, published.vectors

    # ---- reading --------------------------------------------------------------------------------------

    def search(
        self, text: str, k: int = 10, where: Where = None, rerank: int | None = None, **how: Any
    ) -> list[Hit]:
        """The k documents that best match `text`; `where` filters first (k come back whenever k match). `rerank=N`
        re-scores N candidates by cosine of the kept raw vectors (None: the index's setting, 0: off). `mode` dense,
        keyword or hybrid, `alpha` hybrid's dense weight (None: as calibrated), `fusion` convex or rrf."""
        return self.search_many([text], k, where, rerank, **how)[0]

    def search_many(
        self, texts: Sequence[str], k: int = 10, where: Where = None, rerank: int | None = None, **how: Any
    ) -> list[list[Hit]]:
        if any(not text.strip() for text in texts):
            raise DataError("the query text is empty")
        how = query_defaults(self.state.calibration, how)  # mode and alpha not given: as calibrated
        keywords_only = SearchMode.parse(how.get("mode") or self.default_mode, "mode") is SearchMode.KEYWORD
        vectors = None if keywords_only else self.encoder.encode(list(texts))
        return self.search_vectors(vectors, k, where, rerank, texts=texts, **how)

    @property
    def default_mode(self) -> SearchMode:
        """The calibrated mode (hybrid if none) where the index has keywords and a model, else dense."""
        fusible = self.store.has_keywords and self.settings.model != NO_MODEL
        calibrated = query_defaults(self.state.calibration, {}).get("mode")
        return SearchMode(calibrated or DEFAULT_MODE) if fusible else SearchMode.DENSE

    def search_vectors(
        self,
        queries: np.ndarray | None,
        k: int = 10,
        where: Where = None,
        rerank: int | None = None,
        *,
        texts: Sequence[str] | None = None,
        **how: Any,
    ) -> list[list[Hit]]:
        """Search with query vectors from this index's encoder, or made elsewhere as its documents' were
        (before the transform), one row per query; with `texts` (the queries' words), keyword and hybrid too
        (mode None: dense without texts, else the index's default)."""
        rerank = at_least(self.settings.rerank if rerank is None else rerank, 0, "rerank")
        default = self.default_mode if texts is not None else SearchMode.DENSE
        how = query_defaults(self.state.calibration, how) if texts is not None else how
        request = Request.checked(k, queries, texts, where, rerank, self.settings.encoder_dim, default, **how)
        self.refresh()
        if self.state.count == 0:
            return [[] for _ in range(request.count)]
        keywords_only = request.mode is SearchMode.KEYWORD
        dense = None if keywords_only else DenseRetriever(self.transform, self.vectors, self.raw)
        keyword = KeywordRetriever(self.store, self.state.count)
        return run_search(request, store=self.store, dense=dense, keyword=keyword)

    def info(self) -> dict[str, Any]:
        """What the index is and holds; a damaged file found by the cheap checks (check.health) is an error."""
        from .operations.check import health
        from .operations.describe import describe

        return {**describe(self), "read_only": self.read_only is not None, "health": health(self)}


@contextlib.contextmanager
def _closed_on_error(index: Index) -> Iterator[None]:
    try:
        yield
    except BaseException:
        index.close()
        raise
