"""The Index: a small facade over the stages, for one directory holding everything one corpus needs.

The layout of an index directory: operations/directory.py.

Writes take turns and publish whole generations (generations.py): ingest adds, build derives, search reads.

Size: one short method per operation a program asks of an index (create, open, ingest and sync, add, delete,
refit, search, similar, export, info), each a call into the stage that does it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from .errors import DataError
from .ingest import build
from .ingest.creation import check_compatible
from .ingest.distributed import Executor
from .ingest.documents import Corpus, Document, FieldNames, parse_document, validate_documents
from .ingest.pipeline import AddReport, Progress
from .ingest.recordfiles import served_at
from .ingest.sources import is_table
from .ingest.sync import FolderChanges
from .operations import adding, ingesting, opening, searching, syncing, writes
from .operations.deleting import Preview, preview
from .operations.describe import describe
from .operations.directory import DirectoryParts, IndexDirectory
from .operations.export import export as export_documents
from .operations.facetranges import facet_ranges
from .operations.health import health
from .operations.ingestoptions import Ingested, IngestOptions, Listener, SyncReport
from .retrieval.hits import QUERY_OPTIONS
from .retrieval.query import Page, QueryDefaults, QueryOptions
from .retrieval.search import Hit, Results, Where
from .settings import DEFAULT_K, DEFAULT_WAIT, Fusion, IndexOptions, RefitPolicy, SearchMode, at_least
from .storage.manifest import IndexSettings, IndexState

__all__ = ["AddReport", "Hit", "Index", "IngestOptions", "Ingested", "Listener", "Page", "Results"]


class Searching:
    """The searches a program asks of an index, one index directory's (Index) or a sharded index's
    (sharded.ShardedIndex) alike: each resolves its options against `query_defaults`, encodes with `encode`
    and asks `_search` (operations/searching.search) for the pages."""

    @property
    def query_defaults(self) -> QueryDefaults:
        raise NotImplementedError

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def _search(self, options, vectors, texts, k, where, page: Page, exclude=frozenset()) -> list[Results]:
        raise NotImplementedError

    def search(
        self, text: str, k: int = DEFAULT_K, where: Where = None, rerank: int | None = None, **options: Any
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
        k: int = DEFAULT_K,
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
        options = QueryOptions.resolve(
            self.query_defaults,
            queries=texts,
            mode=mode,
            alpha=alpha,
            fusion=fusion,
            rerank=rerank,
            typos=typos,
            crop=crop,
        )
        vectors = None if options.mode is SearchMode.KEYWORD else self.encode(texts)
        return self._search(options, vectors, texts, k, where, Page(**page))

    def search_vectors(
        self,
        queries: np.ndarray | None,
        k: int = DEFAULT_K,
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


class Index(DirectoryParts, Searching):
    """A semsearch index directory. Open one with `Index.open`, make one with `Index.create`, or ingest into
    one made if needed with `Index.ingest_into`. Its parts (store, encoder, transform, vector index, raw
    vectors: DirectoryParts) are for the evaluation, benchmarks and tests; a program asks the methods."""

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
        return cls(opening.create(Path(path), options or IndexOptions(**asked), wait))

    @classmethod
    def open(cls, path: str | Path, wait: float = DEFAULT_WAIT) -> Index:
        """Open an index to search or write. Any number of processes may have it open; writes take turns."""
        return cls(opening.open_directory(Path(path), wait))

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
        return cls(opening.open_or_create(Path(path), options or IndexOptions(**asked), wait, corpus))

    @classmethod
    def ingest_into(
        cls,
        path: str | Path,
        sources: str | Path | Sequence[str | Path],
        options: IndexOptions | None = None,
        ingest: IngestOptions | None = None,
        *,
        listener: Listener | None = None,
        wait: float = DEFAULT_WAIT,
        watch: bool = False,
        **asked: Any,
    ) -> Ingested:
        """What `semsearch ingest SOURCES --index PATH` does: the index at `path` made if there is none (built
        beside it and moved into place once complete: readers see no index, then the whole one), `options` (or
        IndexOptions' fields as keywords) refused where they contradict an existing one; directories synced
        (only new and changed files read; `ingest.prune` removes gone files' documents), other sources read
        as one corpus; the files read recorded for `serve`. `ingest`: how (IngestOptions); `listener`: told
        each step (what the command prints); `watch`: then keep the index in step with the directories until
        SIGINT or SIGTERM."""
        how, told = ingest or IngestOptions(), listener or Listener()
        options = options or IndexOptions(**asked)
        into = ingesting.Into(Path(path), options, how, told, wait)
        return ingesting.ingest_into(into, _paths(sources), watch)

    @staticmethod
    def plan_ingest(
        path: str | Path, folders: str | Path | Sequence[str | Path], ingest: IngestOptions | None = None
    ) -> list[tuple[Path, FolderChanges, int]]:
        """What `ingest_into(path, folders)` would read and a prune remove, nothing parsed or written: each
        folder's root, its changes (added, changed, gone files; prunable ids) and the index's count."""
        return ingesting.planned(Path(path), _paths(folders), ingest or IngestOptions(), DEFAULT_WAIT)

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

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what it is ------------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self.directory.path

    @property
    def settings(self) -> IndexSettings:
        """What it was made with (model, transform, index type, chunking: storage/manifest.py)."""
        return self.directory.settings

    @property
    def state(self) -> IndexState:
        """What it holds now: counts, generation, calibration, drift (storage/manifest.py)."""
        return self.directory.state

    @property
    def read_only(self) -> str | None:
        """Why writes are refused (None: they are not)."""
        return self.directory.read_only

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
        **asked: Any,
    ) -> AddReport:
        """Add the documents of a corpus, validated whole before anything is written: a path (a JSONL file, a
        directory, a document file, a CSV/TSV/Parquet table), several paths, a pandas DataFrame or pyarrow
        Table (a row a document, columns named by `fields`), or a checked Corpus. Paths that are all
        directories are synced as `semsearch ingest DIR` syncs them (only new and changed files read; `prune`
        removes the documents of files gone). `refit` after adding: "never", "always" or "auto" (drift above
        DRIFT_LIMIT: the report's `drift`). `vectors`: an .npy of vectors made elsewhere, row i for the i-th
        document. `cluster`: where to encode (distributed.py): a Dask scheduler's address, a number of local
        worker processes or an Executor; the result is the same. An export ingested into a new index keeps its
        calibration unless `recalibrate`, and its transform (exported.py); `resumable`: a first ingest no
        reader sees (first.py) keeps resume points. `asked`: IngestOptions' other fields (prune,
        tuning_queries, skip_invalid, the walk's). The files read are recorded for `serve`."""
        fields = fields or FieldNames()
        how = IngestOptions(fields, refit=refit, vectors=vectors, cluster=cluster, recalibrate=recalibrate)
        options = replace(how, **asked)
        paths = _paths(corpus) if isinstance(corpus, str | Path | list | tuple) else None
        if paths is not None and ingesting.are_folders(paths, options):
            folders = ingesting.folders_of(paths, options)
            return ingesting.synced_folders(self.directory, folders, options, Listener(progress)).report
        if not isinstance(corpus, Corpus):
            corpus = Corpus(corpus, options.fields, options.vectors, options.skip_invalid, **options.walk)
        return adding.ingest(self.directory, corpus, options, progress, resumable)

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
            return self.ingest(documents, fields, progress, refit=refit)
        docs = [
            d if isinstance(d, Document) else parse_document(d, line=n) for n, d in enumerate(documents, 1)
        ]
        validate_documents(docs, dim=self.settings.encoder_dim)
        return adding.add(self.directory, lambda: iter(docs), progress, refit)

    def sync(self, changes: FolderChanges, **how: Any) -> SyncReport:
        """Bring the index in step with a folder scanned by `ingest.sync.scan`, holding the writer lock: the new
        and changed files' documents (`documents`: as `sync.read_changes` parses them; else `changes.documents`)
        added, checked as they pass; a changed file's lost ids, and with `prune` gone files', removed. `how`:
        documents, prune, progress, refit, cluster (operations/syncing.py)."""
        return syncing.sync(self.directory, changes, **how)

    def delete(self, ids: Sequence[str] = (), where: Where = None, expect: int | None = None) -> int:
        """Delete by id and/or filter (from the statistics, exactly, and the vector index); how many. `expect`: chosen's."""
        return writes.delete_chosen(self.directory, ids, where, expect)

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
            tuning = (rerank, recall_target, calibrate)
            return adding.refit_locked(self.directory, spec, index_type, *tuning)

    def recalibrate(self) -> float:
        """Calibrate the fusion weight again from the documents as they are now (no other part). Returns seconds."""
        with self.directory.writing():
            return adding.recalibrate_locked(self.directory)

    @property
    def calibration_stale(self) -> bool:
        """Whether the recorded calibration is stale: more than STALE_SHARE of the documents it was made on
        changed since (calibration_age.py)."""
        return adding.calibration_stale(self.state)

    # ---- reading --------------------------------------------------------------------------------------

    @property
    def query_defaults(self) -> QueryDefaults:
        """The mode, weight and rerank depth a query takes when it does not say: the calibrated mode (hybrid if
        none) where the index has keywords and a model, else dense."""
        return QueryDefaults.recorded(self.directory.fusible, self.settings.rerank, self.state.calibration)

    @property
    def default_mode(self) -> SearchMode:
        return self.query_defaults.mode

    def similar(
        self,
        ids: Sequence[str],
        k: int = DEFAULT_K,
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
        options = dict(rerank=rerank, crop=crop)
        return searching.similar(
            self.directory, self.query_defaults, ids, negative, k, where, Page(**page), options
        )

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
        """What the index is and holds; a damaged file found by the cheap checks (health.py) is an error."""
        described = describe(self.directory, self.query_defaults)
        return {**described, "read_only": self.read_only is not None, "health": health(self.directory)}

    # ---- its documents, fields and files ------------------------------------------------------------------

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored documents of those `ids` that are stored (id -> its id, title, text and metadata)."""
        store = self.directory.store
        found = {doc_id: pk for doc_id, (pk, _) in store.existing_ids(list(ids)).items()}
        rows = store.get(list(found.values()))
        return {doc_id: rows[pk] for doc_id, pk in found.items() if pk in rows}

    def missing(self, ids: Sequence[str]) -> list[str]:
        """Those of `ids` that name no stored document, in their order."""
        known = self.directory.store.existing_ids(list(ids))
        return [doc_id for doc_id in ids if doc_id not in known]

    def field_examples(self) -> dict[str, dict[str, Any]]:
        """Each metadata field: the kinds of its values, with their documents and an example value."""
        return self.directory.store.field_examples()

    @property
    def text_modes(self) -> list[SearchMode]:
        """The modes a text query can take: none but keyword without a model, only dense without keywords."""
        return searching.text_modes(self.directory)

    def facet_ranges(
        self, fields: Sequence[str], q: str | None, where: Where, mode: str | None, buckets: int
    ) -> dict[str, list[dict] | None]:
        """Each number or date field's values among a search's documents as about `buckets` ranges
        (operations/facetranges.py); None for a field of neither."""
        return facet_ranges(self.directory, self.default_mode, fields, q, where, mode, buckets)

    def served_files(self, parts: Sequence[str]) -> list[tuple[str, str]]:
        """(folder root, path relative to it) of the recorded files a path (its components) names whose
        documents are still stored as their ingest stored them (ingest/recordfiles.py)."""
        return served_at(self.directory.store, parts)

    # ---- its vectors ---------------------------------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The encoder's vectors of the texts (before the transform), a row each, as documents' are made."""
        return self.directory.encoder.encode(list(texts))

    def hit_vectors(self, hits: Sequence[Hit], query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A raw query vector (the encoder's, or made elsewhere as the documents' were) and the hits' passages'
        kept raw vectors, in the index's own space (its transform applied), for measures between them."""
        directory = self.directory
        rows = directory.raw.get(np.array([hit.row for hit in hits]))
        return directory.transform.apply(np.atleast_2d(query)), directory.transform.apply(rows)


def _paths(sources: Any) -> list[Any]:
    return [sources] if isinstance(sources, str | Path) else list(sources)
