"""The Index: a small facade over the stages, for one directory holding everything one corpus needs.

Layout of an index directory:
    manifest.json              settings and state (manifest.py)
    documents.db               SQLite: documents and metadata; its `state` table holds the generation (store.py)
    raw/seg-*.npy              raw encoder vectors (float32), append-only segments, a row per passage: a document
                               of n passages owns rows pk .. pk + n - 1 (its SQLite pk the first; rawvectors.py)
    gen-NNNNNN/                one generation of derived files: stats.safetensors, transform files, vectors.faiss,
                               and a copy of its manifest (`semsearch check --repair` restores from it)

Writes take turns and publish whole generations (generations.py): ingest adds, build derives, search reads.

Size: one short method per operation a program asks of an index (create, open, ingest and sync, add, delete,
refit, search, similar, export, info), each a call into the stage that does it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from .errors import DataError, IndexStateError
from .ingest import build, exported
from .ingest.creation import check_compatible, check_new_directory, new_settings
from .ingest.distributed import Executor, executor_for
from .ingest.documents import Corpus, Document, FieldNames, checked, parse_document, validate_documents
from .ingest.pipeline import AddReport, Progress
from .ingest.sources import is_table
from .ingest.sync import FolderChanges
from .operations import searching, syncing, writes
from .operations.check import health
from .operations.deleting import Preview, preview
from .operations.describe import describe
from .operations.directory import IndexDirectory, derived_files
from .operations.export import export as export_documents
from .operations.syncing import SyncReport
from .retrieval.calibration_age import age
from .retrieval.hits import QUERY_OPTIONS
from .retrieval.query import Page, QueryDefaults, QueryOptions
from .retrieval.search import Hit, Results, Where, allowed_rows
from .retrieval.similar import Examples
from .settings import (
    DEFAULT_WAIT,
    NO_MODEL,
    Fusion,
    IndexOptions,
    RefitPolicy,
    SearchMode,
    TransformSpec,
    at_least,
)
from .storage.faults import fault_point
from .storage.generations import cannot_write
from .storage.manifest import FILE, PENDING, IndexState, Manifest
from .transforms.stats import RunningStats

# How a query ranks; search's other options are its page's.

__all__ = ["AddReport", "Hit", "Index", "Page", "Results"]


class Index:
    """A semsearch index directory. Open one with `Index.open`, make one with `Index.create`."""

    def __init__(self, directory: IndexDirectory):
        self.directory = directory

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
        index = cls(IndexDirectory(path, Manifest(settings, IndexState()), wait))
        directory = index.directory
        with directory.writing(refresh=False):
            if (path / FILE).exists():
                raise IndexStateError(f"{path} was just made an index by another process")
            with directory.store.transaction():
                directory.store.set_generation(0)
            fault_point("creating")
            directory.manifest = directory.manifest.save(path)
        return index

    @classmethod
    def open(cls, path: str | Path, wait: float = DEFAULT_WAIT) -> Index:
        """Open an index to search or write. Any number of processes may have it open; writes take turns."""
        path = Path(path)
        # not an index: Manifest.load says so
        index = cls(IndexDirectory(path, Manifest.load(path), wait, cannot_write(path)))
        directory = index.directory
        with _closed_on_error(index), directory.store.guarded():
            directory.manifest = directory.generations.read(directory.lock, derived_files)
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
            index.directory.manifest = Manifest(
                index.settings.with_changes(batch_size=options.batch_size), index.state
            )
        return index

    def check_compatible(self, options: IndexOptions | None = None, **asked: Any) -> None:
        """Options given for an existing index must match it (changing the transform is a refit)."""
        check_compatible(self.path, self.settings, options or IndexOptions(**asked))

    def close(self) -> None:
        self.directory.close()

    def refresh(self) -> bool:
        """Catch up with writes made by other processes since this index was opened; True if any."""
        return self.directory.refresh()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- what it holds (the open directory's parts) ----------------------------------------------------

    path = property(lambda self: self.directory.path)
    manifest = property(lambda self: self.directory.manifest)
    settings = property(lambda self: self.directory.settings)
    state = property(lambda self: self.directory.state)
    store = property(lambda self: self.directory.store)
    read_only = property(lambda self: self.directory.read_only)
    wait = property(lambda self: self.directory.wait)
    generation_dir = property(lambda self: self.directory.generation_dir)
    encoder = property(lambda self: self.directory.encoder)
    transform = property(lambda self: self.directory.transform)
    vectors = property(lambda self: self.directory.vectors)
    raw = property(lambda self: self.directory.raw)

    def stats(self) -> RunningStats:
        return self.directory.stats()

    def __len__(self) -> int:
        return self.state.count

    # ---- writing --------------------------------------------------------------------------------------

    def ingest(
        self,
        corpus: Corpus | str | Path | Sequence[str | Path] | Any,
        fields: FieldNames | None = None,
        progress: Progress | None = None,
        refit: RefitPolicy | str = RefitPolicy.NEVER,
        vectors: str | Path | None = None,
        cluster: Executor | str | int | None = None,
        recalibrate: bool = False,
        resumable: bool = False,
    ) -> AddReport:
        """Add the documents of a corpus, validated whole before anything is written: a path (a JSONL file, a
        directory, a document file, a CSV/TSV/Parquet table), several paths, a pandas DataFrame or pyarrow
        Table (a row a document, columns named by `fields`), or a checked Corpus. `refit` after adding: "never",
        "always" or "auto" (drift above DRIFT_LIMIT: the report's `drift`). `vectors`: an .npy of vectors made
        elsewhere, row i for the i-th document (as a vector field in `fields`). `cluster`: where to encode
        (distributed.py): a Dask scheduler's address, a number of local worker processes or an Executor; the
        result is the same. An export ingested into a new index keeps its calibration unless `recalibrate`, and
        its transform (exported.py); `resumable`: a first ingest no reader sees (first.py) keeps resume points."""
        if not isinstance(corpus, Corpus):
            corpus = Corpus(corpus, fields or FieldNames(), vectors)
        width, dim = corpus.check().vector_width, self.settings.encoder_dim
        if width is not None and width != dim:
            where = dict(path=corpus.vectors) if corpus.vectors else dict(path=corpus.path, line=1)
            raise DataError(f"vectors of width {width}, expected {dim}", field=corpus.fields.vector, **where)
        restored = exported.restored(corpus, self.state.count, self.settings, recalibrate, refit)
        how = dict(restored=restored, streamed=corpus.streamed, resume_from=corpus if resumable else None)
        with executor_for(cluster, self.wait) as executor:  # a scheduler that does not answer: after `wait`
            return self._add(corpus.documents, progress, refit, executor, **how)

    def add(
        self,
        documents: Iterable[Document | dict[str, Any]] | Any,
        progress: Progress | None = None,
        refit: RefitPolicy | str = RefitPolicy.NEVER,
        fields: FieldNames | None = None,
    ) -> AddReport:
        """Add documents (Document objects or dicts shaped like the JSONL lines, or a pandas DataFrame or
        pyarrow Table, a row a document with its columns named by `fields`), validated first."""
        if is_table(documents):
            return self.ingest(documents, fields, progress, refit)
        docs = [
            d if isinstance(d, Document) else parse_document(d, line=n) for n, d in enumerate(documents, 1)
        ]
        validate_documents(docs, dim=self.settings.encoder_dim)
        return self._add(lambda: iter(docs), progress, refit)

    def _add(self, documents, progress, refit, executor=None, **how) -> AddReport:
        with self.directory.writing():
            return self._add_locked(documents, progress, refit, executor, **how)

    def _add_locked(self, documents, progress, refit, executor, **how) -> AddReport:
        """The add (`how`: writes.add's restored, streamed, resume_from), then a refit if `refit` says (which
        calibrates again), else under "auto" a calibration again where the recorded one is stale."""
        refit, restored = RefitPolicy.parse(refit, "refit"), how.get("restored")
        done, published = writes.add(self.directory, documents(), progress, executor, **how)
        if published is not None:
            self.directory.take_up(published)
        kept = restored.parts if restored and published else ()
        report, drift = done.report(restored=kept), self.state.drift
        if report.added and refit.due(drift) and not report.young:
            self._refit_locked(build.refit_spec(self.settings, None, None, None, None, None), None)
            return replace(report, refitted=True, drift=drift, restored=())  # both made again
        if report.added and refit is RefitPolicy.AUTO and self.calibration_stale:
            self._recalibrate_locked()
            return replace(report, drift=drift, recalibrated=True, restored=report.kept("calibration"))
        return replace(report, drift=drift)

    def sync(
        self,
        changes: FolderChanges,
        *,
        documents: Iterable[Document] | None = None,
        prune: bool = False,
        progress: Progress | None = None,
        refit: RefitPolicy | str = RefitPolicy.NEVER,
        cluster: Executor | str | int | None = None,
    ) -> SyncReport:
        """Bring the index in step with a folder scanned by `ingest.sync.scan`, holding the writer lock: the new
        and changed files' documents (`documents`: as `sync.read_changes` parses them; else `changes.documents`)
        added, checked as they pass; a changed file's lost ids, and with `prune` gone files', removed."""
        streamed = documents is not None
        stream = checked(
            documents if streamed else changes.documents, path=changes.root, dim=self.settings.encoder_dim
        )
        started, added = time.perf_counter(), None
        with executor_for(cluster, self.wait) as executor, self.directory.writing():
            if streamed or changes.documents:
                report = self._add_locked(lambda: stream, progress, refit, executor, streamed=streamed)
                added = report if report.added or report.unchanged or report.moved else None
            removed = syncing.finish(self.directory, changes, prune)
        return SyncReport.of(changes, removed, prune, added, time.perf_counter() - started)

    def delete(self, ids: Sequence[str] = (), where: Where = None, expect: int | None = None) -> int:
        """Delete by id and/or filter (from the statistics, exactly, and the vector index); how many. `expect`: chosen's."""
        with self.directory.writing():
            self.directory.require_fitted()
            pks = writes.chosen(self.directory, ids, allowed_rows(self.store, where), expect)
            if pks:
                self.directory.take_up(writes.delete(self.directory, pks))
            return len(pks)

    def preview_delete(self, ids: Sequence[str] = (), where: Where = None) -> Preview:
        """What `delete(ids, where)` would remove now: the count and the first ids, and whether it is large
        enough to be confirmed first (operations/deleting.py)."""
        return preview(self.directory, ids, where)

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
        with self.directory.writing():
            spec = build.refit_spec(self.settings, transform, dims, power, flow_epochs, seed)
            return self._refit_locked(spec, index_type, rerank, recall_target, calibrate)

    def recalibrate(self) -> float:
        """Calibrate the fusion weight again from the documents as they are now (no other part). Returns seconds."""
        with self.directory.writing():
            return self._recalibrate_locked()

    def _recalibrate_locked(self) -> float:
        self.directory.require_fitted()
        seconds, published = writes.recalibrate(self.directory)
        self.directory.take_up(published)
        return seconds

    @property
    def calibration_stale(self) -> bool:
        """Whether the recorded calibration is stale: more than STALE_SHARE of the documents it was made on
        changed since (calibration_age.py)."""
        recorded = age(self.state.calibration)
        return recorded is not None and recorded.stale

    def _refit_locked(self, spec: TransformSpec, index_type: str | None, *tuning: Any) -> float:
        self.directory.require_fitted()
        seconds, published = writes.refit(self.directory, spec, index_type, *tuning)
        self.directory.take_up(published)
        return seconds

    # ---- reading --------------------------------------------------------------------------------------

    def search(
        self, text: str, k: int = 10, where: Where = None, rerank: int | None = None, **options: Any
    ) -> Results:
        """The k places that best match `text` (a passage of a document each); `where` filters first (k come back
        whenever k match). `rerank=N` re-scores N candidates by the kept raw vectors (None: the index's setting,
        0: off). `options` as `search_many` takes them: `mode` dense, keyword or hybrid, `alpha` hybrid's dense
        weight (None: as calibrated), `fusion` convex or rrf, `typos` the edits a keyword query word may hold (0-2:
        retrieval/typos.py), `crop` each hit's snippet in words (0: none), `per_document` the hits one document
        may fill (0: no cap; None: a document once, its further places where fewer documents match than k),
        `full_text` the whole text in each hit's JSON, `offset`, `facets`, `generation` (Page). The hits come as a
        list (Results) that also carries the generation read and the facets."""
        return self.search_many([text], k, where, rerank, **options)[0]

    def search_many(
        self,
        texts: Sequence[str],
        k: int = 10,
        where: Where = None,
        rerank: int | None = None,
        *,
        mode: SearchMode | str | None = None,
        alpha: float | None = None,
        fusion: Fusion | str | None = None,
        typos: int | None = None,
        crop: int | None = None,
        **page: Any,
    ) -> list[Results]:
        """`search` for several texts at once (encoded in one batch); `page`: `offset`, `facets`,
        `facet_values`, `generation`, `per_document`, `full_text` (Page)."""
        if any(not text.strip() for text in texts):
            raise DataError("the query text is empty")
        asked = dict(mode=mode, alpha=alpha, fusion=fusion, rerank=rerank, typos=typos, crop=crop)
        options = QueryOptions.resolve(self.query_defaults, queries=texts, **asked)
        vectors = None if options.mode is SearchMode.KEYWORD else self.encoder.encode(list(texts))
        return self._search(options, vectors, texts, k, where, Page(**page))

    @property
    def query_defaults(self) -> QueryDefaults:
        """The mode, weight and rerank depth a query takes when it does not say: the calibrated mode (hybrid if
        none) where the index has keywords and a model, else dense."""
        return QueryDefaults.recorded(self.directory.fusible, self.settings.rerank, self.state.calibration)

    @property
    def default_mode(self) -> SearchMode:
        return self.query_defaults.mode

    def search_vectors(
        self,
        queries: np.ndarray | None,
        k: int = 10,
        where: Where = None,
        rerank: int | None = None,
        *,
        texts: Sequence[str] | None = None,
        **options: Any,
    ) -> list[Results]:
        """Search with query vectors from this index's encoder, or made elsewhere as its documents' were
        (before the transform), one row per query; with `texts` (the queries' words), keyword and hybrid too
        (mode None: dense without texts, else the index's default). `options` as `search_many` takes them."""
        how = {name: options.pop(name) for name in QUERY_OPTIONS if name in options}
        resolved = QueryOptions.resolve(
            self.query_defaults, rerank=rerank, texts=texts is not None, queries=texts or (), **how
        )
        return self._search(resolved, queries, texts, k, where, Page(**options))

    def similar(
        self,
        ids: Sequence[str],
        k: int = 10,
        where: Where = None,
        rerank: int | None = None,
        *,
        negative: Sequence[str] = (),
        crop: int | None = None,
        **page: Any,
    ) -> Results:
        """The k places closest to the documents `ids` by their stored vectors and distinctive words, away from
        those of `negative` (retrieval/similar.py), the examples left out, in the index's default mode; `where`,
        `rerank`, `crop` and the page's options as for `search`."""
        with self.directory.pinned():  # the examples read from the generation searched
            examples = Examples.of(self.store, ids, negative)
            words = examples.words(self.store) if self.query_defaults.mode is not SearchMode.DENSE else ""
            texts = [words] if words else None
            options = QueryOptions.resolve(self.query_defaults, rerank=rerank, texts=bool(texts), crop=crop)
            vector, left_out = examples.vector(self.raw)
            return self._search(options, vector[None], texts, k, where, Page(**page), left_out)[0]

    def _search(self, options, vectors, texts, k, where, page: Page, exclude=frozenset()) -> list[Results]:
        return searching.search(self.directory, options, vectors, texts, k, where, page, exclude)

    def export(
        self, out: str | Path | IO[str], *, vectors: bool = False, progress: Progress | None = None
    ) -> int:
        """Write the documents as JSONL (a header line with the settings, then one document per line; with
        `vectors` their raw vectors) to a path (whole or not at all) or a stream; how many (operations/export.py).
        `ingest` of the file makes the same index again, in this or a later semsearch."""
        return export_documents(self.directory, out, vectors=vectors, progress=progress)

    def info(self) -> dict[str, Any]:
        """What the index is and holds; a damaged file found by the cheap checks (check.health) is an error."""
        described = describe(self.directory, self.query_defaults)
        return {**described, "read_only": self.read_only is not None, "health": health(self.directory)}


@contextlib.contextmanager
def _closed_on_error(index: Index) -> Iterator[None]:
    try:
        yield
    except BaseException:
        index.close()
        raise
