"""What every vector-index kind does: FAISS inner product over L2-normalised vectors (so scores are cosines),
keyed by the document store's integer row ids, with the search parameters tuned at build. Each kind is a
subclass in a module of its own (flat, hnsw, ivf, pq); factory.py makes, loads and names them."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import faiss
import numpy as np

from ...errors import SettingsError
from ...storage.files import atomic_path
from . import wire
from .faissthreads import single_threaded
from .selector import Selector, Selectors

PARAM_NAMES = ("efSearch", "nprobe", "k_factor")  # the unfiltered search's, in `params`
TUNED_K = 10  # the depth `params` are tuned at; ivf and pq also at `params["deep"]["k"]` (tuning.py)

Ranked = list[list[tuple[int, float]]]


def ranked(scores: np.ndarray, ids: np.ndarray) -> Ranked:
    """FAISS's (scores, ids) arrays as per-query (id, score) lists, best first, without the -1 padding."""
    return [
        [(i, s) for i, s in zip(row_ids, row_scores) if i != -1]
        for row_ids, row_scores in zip(ids.tolist(), scores.tolist())
    ]


class VectorIndex:
    """One FAISS index of a kind (`kind`, an `--index-type` value). Every kind adds, searches (filtered by id
    inside the search), trains, saves and loads; the capabilities only some kinds have (removal, exact scores
    from their own vectors, the arrays an export carries, lists a cluster merges) answer None or refuse here.

    `params`: the search parameters tuned at build for a recall target (tuning.py; kept in the manifest as
    `search_params`), None for an index built untuned, which searches with each kind's defaults."""

    FILE = "vectors.faiss"
    kind: ClassVar[str] = ""
    STRUCTURE: ClassVar[type]  # the FAISS class of the index (of what an id map wraps: idmapped.py)
    exhaustive: ClassVar[bool] = False  # every search scores every row it may return: nothing to tune
    supports_remove: ClassVar[bool] = True  # else a removal is a rebuild (the caller's)
    # where exact scores come from (strategy.py): "stored" float32 rows, "lists" (ivf's inverted lists),
    # "codes" (8-bit codes, decoded); None: the raw vectors re-score the candidates
    exact_source: ClassVar[str | None] = None
    mergeable: ClassVar[bool] = False  # FAISS merges its inverted lists: a cluster's workers fill shards
    params: dict[str, Any] | None = None
    recall: float | None = None  # recall@10 against flat measured with `params` when they were tuned
    # the rows of each add since the index was made, in order (None: not followed); hnsw.py says why it matters
    blocks: list[int] | None = None
    _selectors: Selectors | None = None

    def __init__(self, index: faiss.Index, blocks: list[int] | None = None):
        self.index = index
        self.blocks = blocks

    @classmethod
    def create(cls, dim: int, count: int = 0) -> VectorIndex:
        """An empty index of this kind; `count`: the expected number of vectors (it sizes ivf and pq)."""
        raise NotImplementedError

    @classmethod
    def holds(cls, index: faiss.Index) -> bool:
        """Whether a FAISS index (downcast) is of this kind's making: how a loaded file finds its kind."""
        return type(index) is cls.STRUCTURE

    @cached_property
    def concrete(self) -> faiss.Index:
        """The index as its own FAISS class (a wrapper of the same object, made once: a SWIG call each)."""
        return faiss.downcast_index(self.index)

    @property
    def dim(self) -> int:
        return self.index.d

    @property
    def count(self) -> int:
        return self.index.ntotal

    @property
    def description(self) -> str:
        """The FAISS structure in FAISS's factory names (e.g. IVF1372,Flat), for `info`."""
        raise NotImplementedError

    # ---- search parameters --------------------------------------------------------------------------------

    def with_tuning(self, params: dict[str, Any] | None, recall: float | None) -> VectorIndex:
        """This index searching with the parameters its manifest records (None: untuned)."""
        self.params, self.recall = params, recall
        return self

    def untuned_params(self) -> dict[str, Any]:
        """The unfiltered search's parameters of an index built untuned."""
        return {}

    @property
    def search_params(self) -> dict[str, Any]:
        """The unfiltered search's parameters: as tuned, else `untuned_params`."""
        tuned = {key: value for key, value in (self.params or {}).items() if key in PARAM_NAMES}
        return {**self.untuned_params(), **tuned}

    def at_depth(self, params: dict[str, Any], k: int) -> dict[str, Any]:
        """`params` (tuned at TUNED_K results) for a search of k results: the same, but for ivf and pq."""
        return params

    # ---- building -----------------------------------------------------------------------------------------

    @property
    def training_rows(self) -> int:
        """Rows `train` wants (0: needs none)."""
        return 0

    def train(self, sample: np.ndarray) -> None:
        self.index.train(np.ascontiguousarray(sample, dtype=np.float32))

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or len(vectors) != len(ids):
            raise SettingsError(
                f"vectors {vectors.shape} and ids {ids.shape} do not fit an index of dim {self.dim}"
            )
        self._before_add(len(ids))
        self.index.add_with_ids(vectors, ids)
        self._changed()
        if self.blocks is not None:
            self.blocks.append(len(ids))

    def _before_add(self, count: int) -> None:
        """What a kind prepares for the next `count` rows."""

    def _changed(self) -> None:
        """Forget what was derived from the rows held (their rows changed)."""
        self._selectors = None

    def remove(self, ids: np.ndarray) -> int:
        """Remove by id (where `supports_remove`; else the caller rebuilds the index instead)."""
        if not self.supports_remove:
            raise SettingsError(f"an index of kind {self.kind} cannot remove vectors; rebuild it")
        self._changed()
        return int(self.index.remove_ids(np.ascontiguousarray(ids, dtype=np.int64)))

    def save(self, directory: Path) -> None:
        with atomic_path(Path(directory) / self.FILE) as tmp:
            faiss.write_index(self.index, str(tmp))

    def to_bytes(self) -> np.ndarray:
        """The index as `save` writes it (uint8), for a cluster's workers (factory.index_of_bytes reads it)."""
        return wire.index_bytes(self.index)

    def ids(self) -> np.ndarray:
        """Every id the index holds, sorted (to check them against the store's)."""
        raise NotImplementedError

    # ---- search -------------------------------------------------------------------------------------------

    def search(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
        params: dict[str, Any] | None = None,
    ) -> Ranked:
        """The k best (id, score) per query, approximate but for the exhaustive kinds; with `allowed` (sorted
        unique ids), only among those (filtered inside the search; strategy.py decides when that is the way).
        `params`: efSearch / nprobe for this search instead of `search_params`."""
        return ranked(*self.search_arrays(queries, k, allowed, params))

    def search_arrays(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
        params: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`search` as FAISS answers it: (scores, ids) arrays of a row per query, padded with id -1 (candidates
        stay arrays until re-scored: a Python pair per candidate costs more than the search)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise SettingsError(f"queries {queries.shape} do not fit an index of dim {self.dim}")
        selector = None
        if allowed is not None:
            k = min(k, len(allowed))
            selector = self._selector(allowed) if k else None
        k = min(k, self.count)
        if k == 0:
            return np.empty((len(queries), 0), dtype=np.float32), np.empty((len(queries), 0), dtype=np.int64)
        settings = self._search_parameters(selector, params or self.search_params, k)
        return single_threaded(len(queries), lambda: self.index.search(queries, k, params=settings))

    def _selector(self, allowed: np.ndarray, rows: Callable[[], np.ndarray] | None = None) -> Selector:
        """The selector of these ids (`rows`: of what it selects instead, the stored rows holding them), kept
        for the last few arrays searched with (selector.Selectors)."""
        if self._selectors is None:
            self._selectors = Selectors()
        return self._selectors.of(allowed, rows)

    def _search_parameters(
        self, selector: Selector | None, params: dict[str, Any], k: int
    ) -> faiss.SearchParameters:
        return faiss.SearchParameters(sel=None if selector is None else selector.faiss)

    # ---- exact scores from the index's own vectors (strategy.py) ------------------------------------------

    def vectors_of(self, ids: np.ndarray) -> np.ndarray | None:
        """The stored vectors of these ids exactly as indexed, NaN rows for an id not held (None: the kind
        keeps no vectors to score exactly)."""
        return None

    def exact(self, queries: np.ndarray, k: int, ids: np.ndarray) -> Ranked | None:
        """The exact k best of these ids (sorted unique) by inner product with the index's own vectors (None:
        the caller scores the raw vectors, projected)."""
        return None

    def scanned_codes(self, queries: np.ndarray, k: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The kinds over 8-bit codes: the k best of these ids by a scan of their codes (codes.py)."""
        raise SettingsError(f"an index of kind {self.kind} keeps no 8-bit codes")

    def _scored_by_id(self, queries: np.ndarray, k: int, ids: np.ndarray) -> Ranked:
        """The exact k best of a few ids, their vectors read by id (`vectors_of`) and scored here: cheaper than
        a scan of every row with a selector."""
        vectors = self.vectors_of(ids)
        assert vectors is not None  # asked only of the kinds that keep their vectors (codes, ivf)
        scores = queries @ vectors.T
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # an id not held: NaN, sorted last
        scores = np.take_along_axis(scores, top, 1)
        return ranked(scores, np.where(np.isnan(scores), -1, np.asarray(ids)[top]))

    # ---- what an export carries, so that its import makes the same index (operations/export.py) -----------

    def code_ranges(self) -> list[float] | None:
        """The kinds over 8-bit codes: their trained ranges (codes.py); else None."""
        return None

    def with_code_ranges(self, ranges: list[float]) -> VectorIndex:
        """This empty index trained with these ranges (`code_ranges`); ValueError where they do not fit."""
        raise ValueError(f"an index of kind {self.kind} keeps no 8-bit ranges")

    def trained_lists(self) -> dict[str, np.ndarray] | None:
        """ivf, pq: what their training made (ivf.py); else None."""
        return None

    def graph_runs(self) -> list[list[int]] | None:
        """An hnsw graph's adds as runs, as its manifest keeps them (hnsw.py); None for the other kinds."""
        return None

    # ---- a cluster's fill (ingest/distributed.py): the lists of shards filled on workers merged here ------

    def lists_bytes(self) -> np.ndarray:
        """The inverted lists alone (wire.lists_bytes), where `mergeable`."""
        self._check_mergeable()
        return wire.lists_bytes(self.concrete)

    def merger(self) -> Callable[[np.ndarray], None]:
        """A function merging each shard's `lists_bytes` into this index (wire.lists_merger: ask while this
        index is empty), where `mergeable`."""
        self._check_mergeable()
        return wire.lists_merger(self.index)

    def _check_mergeable(self) -> None:
        if not self.mergeable:
            raise SettingsError(f"an index of kind {self.kind} has no inverted lists to merge")
