"""The vector index: FAISS inner product over L2-normalised vectors (so scores are cosines), keyed by the
document store's integer row ids.

Size: one class over the six FAISS kinds, with the exact scoring filtered search needs (strategy.py) and the
bytes an index filled on a cluster travels as (distributed.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import faiss
import numpy as np

from ..errors import SettingsError
from ..storage.damage import brief, derived, size_problem
from ..storage.files import atomic_path

INDEX_TYPES = ("flat", "flat-sq8", "hnsw", "hnsw-sq8", "ivf", "pq", "auto")
GRAPHS = ("hnsw", "hnsw-sq8")  # HNSW over float32 vectors, over 8-bit codes
CODED = ("flat-sq8", "hnsw-sq8")  # over 8-bit codes (trained: each dimension's range)
EXHAUSTIVE = ("flat", "flat-sq8")  # every search scores every row it may return: exact over what they keep
# inverted lists over k-means cells (trained: the cells' centroids, pq's codebooks too), at most MAX_LISTS
LISTED, MAX_LISTS = ("ivf", "pq"), 65536
PQ_CENTROIDS = (16, 256)  # a pq sub-space's centroids: 4-bit or 8-bit codes (`create`)
# `auto`: exact search while documents x dims stay within a budget, HNSW over 8-bit codes above (hnsw-sq8). The
# budget is 50,000 documents at the default 128 dims (an exact scan of 6.4M numbers, about 1.5 ms here; 117k x 128 took 3.4 ms against
# HNSW's 0.6): wider vectors switch sooner (16,666 at 384 dims), narrower ones later. Within it, from
# AUTO_CODED_ROWS rows, the exact scan is over 8-bit codes (flat-sq8: 136 bytes a passage with its id at 128
# dims against flat's 520, the nDCG@10 of the long-document sets, Cranfield and SciFact unchanged within
# 0.002, benchmarks/results/flat-codes-*.md); below it, flat (the 0.4 MB it would save is under the 0.8 MB of
# statistics and transform every index keeps, and a range trained on a few hundred rows clips the rows added
# next: recall@10 0.959 against float32 exact on cranfield-mixed's 7,698 rows trained on 256 of them, 0.987 on
# 1,000, 0.991 on all). IVF-PQ (`--index-type pq`)
# keeps 47 bytes a passage against HNSW's 792 but stays opt-in: tuned at a default query's depth too, it still
# loses full SciFact's default nDCG@10 0.7303 against HNSW's 0.7356 and answers 2.4x slower, its re-scoring
# of raw rows the cost (benchmarks/results/index-type-quality.md, docs/performance.md "Bytes").
# hnsw-sq8 keeps a byte a dimension where hnsw keeps four, and 16 neighbours a node where hnsw keeps 32 (280
# bytes a passage at 128 dims against 792; HNSW32,SQ8 408). Its codes, decoded, are the vectors it keeps, as an
# int8 raw row is the raw vector kept: filtered search is exact over them (they differ from the float32 projection by a few thousandths of a cosine) and a default
# query's rerank re-scores its candidates from the raw vectors. It searches as fast as hnsw (SQ8 distances are
# AVX2 in FAISS; the sparser graph tuned to a higher efSearch) with the default's nDCG@10 unchanged: full
# SciFact 0.7357 against hnsw's 0.7356, HNSW32,SQ8 0.7356 (benchmarks/results/bytes.md).
AUTO_FLAT_LIMIT, AUTO_REFERENCE_DIMS = 50_000, 128
AUTO_CODED_ROWS = 1024
LEVELS_SEED = 16  # of the hnsw rows' levels (position_uniforms)
SQ8_TRAINING_ROWS = 65_536  # rows whose per-dimension range the 8-bit codes span (a value outside is clipped)
HNSW_NEIGHBOURS, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128  # efSearch: of indexes built untuned
SQ8_NEIGHBOURS = 16
TRAINING_ROWS_PER_LIST = 40
PARAM_NAMES = ("efSearch", "nprobe", "k_factor")  # the unfiltered search's, in `params`
TUNED_K = 10  # the depth `params` are tuned at; ivf and pq also at `params["deep"]["k"]` (tuning.py)
SELECTORS_KEPT = 8
RECONSTRUCTED_ROWS = 4096  # ivf scores up to this many rows exactly by id, more by scanning every list
# hnsw-sq8 decodes and scores up to this many rows, more by a scan of its codes with a selector: FAISS decodes
# about 3 microseconds a row (2,400 rows: 7 ms), its scan of every code took 0.5-1.8 ms at WordNet's 117,791
DECODED_ROWS = 128
BITMAP_IDS = 1 << 27  # ids below this are selected through a bitmap (16 MiB at most), others by a hash set
PQ_MIN_DOCUMENTS = 64  # 4-bit codes need 16 centroids per sub-space, each from a few rows  # FAISS warns below 39 points per centroid


def lists_problem(kind: str, dim: int, trained: dict[str, np.ndarray]) -> str | None:
    """What keeps these trained arrays (VectorIndex.trained_lists) from making an empty `kind` index of `dim`
    dims, or None where they fit: centroids of `dim` dims; for pq alone, codebooks of 4 or 8 bits whose
    sub-spaces split `dim`; every number finite."""
    centroids, codebooks = trained.get("centroids"), trained.get("codebooks")
    if kind not in LISTED or not isinstance(centroids, np.ndarray) or centroids.ndim != 2:
        return f"no cells' centroids for {kind}"
    if not 0 < len(centroids) <= MAX_LISTS or centroids.shape[1] != dim:
        return f"centroids of {centroids.shape} for an index of {dim} dims"
    if (codebooks is not None) != (kind == "pq"):
        return f"codebooks {'missing' if codebooks is None else 'given'} for {kind}"
    if codebooks is not None and (
        codebooks.ndim != 3
        or codebooks.shape[1] not in PQ_CENTROIDS
        or codebooks.shape[0] * codebooks.shape[2] != dim
    ):
        return f"codebooks of {codebooks.shape} for an index of {dim} dims"
    if not all(np.isfinite(array).all() for array in trained.values()):
        return "numbers that are not finite"
    return None


def resolve_index_type(index_type: str, count: int, dim: int = AUTO_REFERENCE_DIMS) -> str:
    """The concrete type for `count` documents of `dim` dims (`auto` picks by both; see AUTO_FLAT_LIMIT)."""
    if index_type not in INDEX_TYPES:
        raise SettingsError(f"unknown index type {index_type!r} (known: {', '.join(INDEX_TYPES)})")
    if index_type == "auto":
        if count * dim > AUTO_FLAT_LIMIT * AUTO_REFERENCE_DIMS:
            return "hnsw-sq8"
        return "flat" if count < AUTO_CODED_ROWS else "flat-sq8"
    return index_type


def outgrown(kind: str, before: int, after: int) -> bool:
    """Whether a flat-sq8 index growing from `before` to `after` rows is rebuilt, its codes trained again: when
    the count passes a power of two, so the range its codes span is always trained on more than half the rows
    (a rebuild is a scan of the rows, amortised: the rows encoded again at most double those added). Graphs are
    trained on a sample of SQ8_TRAINING_ROWS once."""
    return kind == "flat-sq8" and max(before, 1).bit_length() < max(after, 1).bit_length()


def inverted_lists(count: int) -> int:
    """IVF's number of lists: about 4 sqrt(n), FAISS's rule of thumb, with enough rows to train each."""
    return int(max(1, min(4 * np.sqrt(max(count, 1)), count // TRAINING_ROWS_PER_LIST, MAX_LISTS)))


class Selector:
    """Ids a search may return, as FAISS checks them for every vector it scores: a bitmap (one bit per id, a
    shift and a mask per check) where the ids are small enough, else FAISS's hash set. Keeps its arrays
    alive as long as FAISS may read them."""

    def __init__(self, ids: np.ndarray):
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        top = int(ids.max(initial=-1)) + 1
        if int(ids.min(initial=0)) >= 0 and top <= BITMAP_IDS:
            member = np.zeros(top, dtype=bool)
            member[ids] = True
            self.array = np.packbits(member, bitorder="little")
            self.faiss = faiss.IDSelectorBitmap(len(self.array), faiss.swig_ptr(self.array))
        else:
            self.array = ids
            self.faiss = faiss.IDSelectorBatch(len(ids), faiss.swig_ptr(ids))


T = TypeVar("T")


def single_threaded(queries: int, search: Callable[[], T]) -> T:
    """Run a search of one query on one thread: it gives FAISS's threads little to share (measured at 117k x
    128, flat: 5.8-7.3 ms on one thread, 10.7 ms on two)."""
    if queries != 1 or faiss.omp_get_max_threads() == 1:
        return search()
    with one_faiss_thread():
        return search()


@contextlib.contextmanager
def one_faiss_thread() -> Iterator[None]:
    """FAISS's OpenMP work on one thread inside the block (the count is the process's: every thread's searches),
    the process's count back after."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


def position_uniforms(start: int, count: int) -> np.ndarray:
    """A uniform number in [0, 1) for each position from `start`, a function of the position alone (splitmix64
    of it and LEVELS_SEED): an hnsw row's level (VectorIndex._preset_levels)."""
    with np.errstate(over="ignore"):
        z = np.arange(start, start + count, dtype=np.uint64) + np.uint64(LEVELS_SEED) * np.uint64(
            0x9E3779B97F4A7C15
        )
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def block_runs(blocks: list[int]) -> list[list[int]]:
    """Adds' rows (VectorIndex.blocks) as [rows, times] runs, as a manifest and an export keep them."""
    runs: list[list[int]] = []
    for rows in blocks:
        if runs and runs[-1][0] == rows:
            runs[-1][1] += 1
        else:
            runs.append([rows, 1])
    return runs


def runs_blocks(runs: Any) -> list[int] | None:
    """`block_runs` read back (None where they are not runs of positive counts: made by something else)."""
    try:
        blocks = [int(rows) for rows, times in runs for _ in range(int(times))]
    except (TypeError, ValueError):
        return None
    return blocks if all(rows > 0 for rows in blocks) else None


def reconstructed(index: faiss.IndexIVF, pk: int) -> np.ndarray:
    """The vector of one id as an IVF index holds it, or NaNs where it holds none."""
    try:
        return index.reconstruct(pk)
    except RuntimeError:
        return np.full(index.d, np.nan, dtype=np.float32)


def ranked(scores: np.ndarray, ids: np.ndarray) -> list[list[tuple[int, float]]]:
    """FAISS's (scores, ids) arrays as per-query (id, score) lists, best first, without the -1 padding."""
    return [
        [(i, s) for i, s in zip(row_ids, row_scores) if i != -1]
        for row_ids, row_scores in zip(ids.tolist(), scores.tolist())
    ]


class VectorIndex:
    """flat: exact (IndexFlatIP); flat-sq8: exact over 8-bit codes (IndexScalarQuantizer, trained: each
    dimension's range). hnsw: a graph (HNSW32), no training, removal by rebuilding; hnsw-sq8: the same
    graph (HNSW16) over 8-bit codes. ivf: inverted
    lists over k-means cells, trained on a sample, `nprobe` lists searched. pq: ivf with product-quantised
    codes (about 4 dims per byte), the smallest. All keep our ids and filter by id inside the search.

    `params`: the search parameters tuned at build for a recall target (tuning.py; kept in the manifest as
    `search_params`), None for an index built before tuning, which searches as those releases did."""

    FILE = "vectors.faiss"
    params: dict[str, Any] | None = None
    # an hnsw graph's rows of each add since it was made, in order (None: another kind, or loaded without them):
    # FAISS inserts an add's rows by level, so the graph depends on how its rows were split between adds, and a
    # build given the same adds makes the same graph (an export's import, `graph`)
    blocks: list[int] | None = None
    recall: float | None = None  # recall@10 against flat measured with `params` when they were tuned
    _positions: np.ndarray | None = None  # row of the stored vectors by id (flat, hnsw), made on first use
    _held: np.ndarray | None = None  # the id of each stored row, with it
    _selectors: dict[tuple[int, bool], tuple[np.ndarray, Selector]] | None = None

    def __init__(self, index: faiss.Index, blocks: list[int] | None = None):
        self.index = index
        self.blocks = blocks
        self._tune()

    @classmethod
    def create(cls, dim: int, index_type: str = "flat", count: int = 0) -> VectorIndex:
        """An empty index of a concrete type (see `resolve_index_type`); `count`: the expected number of
        vectors, which sizes ivf and pq."""
        metric = faiss.METRIC_INNER_PRODUCT
        if index_type == "flat":
            # IDMap2 keeps our ids and can reconstruct vectors by id.
            return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))
        if (
            index_type == "flat-sq8"
        ):  # IDMap: its codes are read by row (`positions`), never reconstructed by id
            return cls(
                faiss.IndexIDMap(faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, metric))
            )
        if index_type == "hnsw":
            return cls(faiss.IndexIDMap(faiss.IndexHNSWFlat(dim, HNSW_NEIGHBOURS, metric)), [])
        if index_type == "hnsw-sq8":
            codes = faiss.ScalarQuantizer.QT_8bit
            return cls(faiss.IndexIDMap(faiss.IndexHNSWSQ(dim, codes, SQ8_NEIGHBOURS, metric)), [])
        lists = inverted_lists(count)
        if index_type == "ivf":
            return cls(faiss.index_factory(dim, f"IVF{lists},Flat", metric))
        if index_type == "pq":
            if count < PQ_MIN_DOCUMENTS:
                raise SettingsError(
                    f"a pq index trains its codes on at least {PQ_MIN_DOCUMENTS} documents, and there are "
                    f"{count}: use --index-type flat (or auto) until the corpus is larger"
                )
            # About 4 dims per one-byte code, m dividing dim; 4-bit codes where lists are too few to train 8.
            m = max(d for d in range(1, dim + 1) if dim % d == 0 and d <= max(1, dim // 4))
            bits = 8 if count >= 256 * TRAINING_ROWS_PER_LIST else 4
            index = faiss.index_factory(dim, f"IVF{lists},PQ{m}x{bits}", metric)
            # FAISS trains a polysemous code order by default, for a Hamming pre-filter no search here uses:
            # it took minutes on one thread (30,000 rows: 8 of the 9 minutes a pq build spent)
            faiss.downcast_index(index).do_polysemous_training = False
            return cls(index)
        raise SettingsError(f"unknown index type {index_type!r} (known: {', '.join(INDEX_TYPES[:-1])})")

    def _tune(self) -> None:
        inner = faiss.downcast_index(self.index.index) if isinstance(self.index, faiss.IndexIDMap) else None
        if isinstance(inner, faiss.IndexHNSW):
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION

    @cached_property
    def concrete(self) -> faiss.Index:
        """The index as its own FAISS class (a wrapper of the same object, made once: a query asked for it in
        several places, a SWIG call each)."""
        return faiss.downcast_index(self.index)

    @cached_property
    def kind(self) -> str:
        index = self.concrete
        if isinstance(index, faiss.IndexIDMap):
            inner = faiss.downcast_index(index.index)
            if isinstance(inner, faiss.IndexHNSWSQ):
                return "hnsw-sq8"
            if isinstance(inner, faiss.IndexScalarQuantizer):
                return "flat-sq8"
            return "hnsw" if isinstance(inner, faiss.IndexHNSW) else "flat"
        return "pq" if isinstance(index, faiss.IndexIVFPQ) else "ivf"

    @property
    def description(self) -> str:
        """The FAISS structure, e.g. IVF1372,Flat, for `info`."""
        index = self.concrete
        if isinstance(index, faiss.IndexIVF):
            codes = f"PQ{index.pq.M}x{index.pq.nbits}" if isinstance(index, faiss.IndexIVFPQ) else "Flat"
            refine = self.search_params.get("k_factor", 1)
            rescored = f" k_factor={refine}" if refine > 1 else ""
            deep = (self.params or {}).get("deep")
            if deep:
                deeper = f" k_factor={deep['k_factor']}" if "k_factor" in deep else ""
                rescored += f" ({deep['k']} deep: nprobe={deep['nprobe']}{deeper})"
            return f"IVF{index.nlist},{codes} nprobe={self.search_params['nprobe']}{rescored}"
        if self.kind in GRAPHS:  # efSearch: `info`'s search_params
            neighbours = faiss.downcast_index(self.index.index).hnsw.nb_neighbors(1)  # M, as built
            return f"HNSW{neighbours},{'SQ8' if self.kind == 'hnsw-sq8' else 'Flat'}"
        return "SQ8" if self.kind == "flat-sq8" else "Flat"  # FAISS's factory names

    def with_tuning(self, params: dict[str, Any] | None, recall: float | None) -> VectorIndex:
        """This index searching with the parameters its manifest records (None: untuned)."""
        self.params, self.recall = params, recall
        return self

    @property
    def search_params(self) -> dict[str, Any]:
        """The unfiltered search's parameters: as tuned, or those of releases before tuning (HNSW efSearch 128;
        IVF about 1/16 of the lists, at least 8)."""
        index = self.concrete
        if isinstance(index, faiss.IndexIVF):
            untuned = {"nprobe": int(min(index.nlist, max(8, index.nlist // 16)))}
        else:
            untuned = {"efSearch": HNSW_EF_SEARCH} if self.kind in GRAPHS else {}
        tuned = {key: value for key, value in (self.params or {}).items() if key in PARAM_NAMES}
        return {**untuned, **tuned}

    def at_depth(self, params: dict[str, Any], k: int) -> dict[str, Any]:
        """ivf, pq: `params` (tuned at TUNED_K results) for a search of k results. An inverted list holds a
        query's nearest few, not its 200 nearest: a search as deep as a default query's candidates (rerank's
        100 rows, 200 with long documents) needs more lists at the same recall, and pq fewer candidates per
        result. Both were tuned at TUNED_K and at the depth in `params["deep"]` (tuning.py); in between they
        go geometrically, and nprobe and k_factor scale by that ratio. Unchanged for other kinds, k <= TUNED_K
        or an index tuned at TUNED_K only."""
        deep = (self.params or {}).get("deep")
        if not deep or k <= TUNED_K or "nprobe" not in params:
            return params
        shallow = self.search_params
        share = min(1.0, np.log(k / TUNED_K) / np.log(deep["k"] / TUNED_K))
        nprobe = params["nprobe"] * (deep["nprobe"] / shallow["nprobe"]) ** share
        out = {**params, "nprobe": int(min(self.concrete.nlist, np.ceil(nprobe - 1e-9)))}
        if "k_factor" in params:
            factor = params["k_factor"] * (deep["k_factor"] / shallow.get("k_factor", 1)) ** share
            out["k_factor"] = max(1, int(np.ceil(factor - 1e-9)))
        return out

    @property
    def training_rows(self) -> int:
        """Rows `train` wants (0: needs none)."""
        index = self.concrete
        if isinstance(index, faiss.IndexIVF) and not index.is_trained:
            return max(index.nlist * 64, 256 * 64 if isinstance(index, faiss.IndexIVFPQ) else 0)
        return SQ8_TRAINING_ROWS if self.kind in CODED and not self.index.is_trained else 0

    def train(self, sample: np.ndarray) -> None:
        self.index.train(np.ascontiguousarray(sample, dtype=np.float32))

    @property
    def supports_remove(self) -> bool:
        return self.kind not in GRAPHS

    @property
    def exhaustive(self) -> bool:
        """Exact over the vectors it keeps (flat, flat-sq8): nothing to tune, every filter scored exactly."""
        return self.kind in EXHAUSTIVE

    @property
    def dim(self) -> int:
        return self.index.d

    @property
    def count(self) -> int:
        return self.index.ntotal

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or len(vectors) != len(ids):
            raise SettingsError(
                f"vectors {vectors.shape} and ids {ids.shape} do not fit an index of dim {self.dim}"
            )
        if self.kind in GRAPHS:
            self._preset_levels(len(ids))
        self.index.add_with_ids(vectors, ids)
        self._positions = self._selectors = None
        if self.blocks is not None:
            self.blocks.append(len(ids))

    def _preset_levels(self, count: int) -> None:
        """The hnsw levels of the next `count` rows, each drawn from its position alone (FAISS's own draw
        continues a generator it does not save, which starts again at every load: a graph appended to after a
        load would not be the one an import adding the same rows at once makes). FAISS's distribution: level l
        where a uniform number falls in the l-th of its `assign_probas`; FAISS takes levels set before an add
        (kept as a level plus one)."""
        graph = faiss.downcast_index(self.index.index).hnsw
        bounds = np.cumsum(faiss.vector_to_array(graph.assign_probas))
        drawn = np.searchsorted(bounds, position_uniforms(self.index.ntotal, count), side="right")
        start = graph.levels.size()
        graph.levels.resize(start + count)  # the new rows' levels written in place: an add costs its own rows
        faiss.rev_swig_ptr(graph.levels.data(), start + count)[start:] = (
            np.minimum(drawn, len(bounds) - 1) + 1
        )

    def remove(self, ids: np.ndarray) -> int:
        """Remove by id (not for hnsw: see `supports_remove`; the caller rebuilds it instead)."""
        if not self.supports_remove:
            raise SettingsError("an HNSW index cannot remove vectors; rebuild it")
        self._positions = self._selectors = None
        return int(self.index.remove_ids(np.ascontiguousarray(ids, dtype=np.int64)))

    def search(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
        params: dict[str, Any] | None = None,
    ) -> list[list[tuple[int, float]]]:
        """The k best (id, score) per query, approximate for hnsw, ivf and pq; with `allowed` (sorted unique
        ids), only among those (filtered inside the search; strategy.py decides when that is the way).
        `params`: efSearch / nprobe for this search instead of `search_params`."""
        return ranked(*self.search_arrays(queries, k, allowed, params))

    def search_arrays(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
        params: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`search` as FAISS answers it: (scores, ids) arrays of a row per query, padded with id -1 (pq's
        candidates stay arrays until re-scored: a Python pair per candidate took more than the search)."""
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

    def _selector(self, allowed: np.ndarray, stored: bool = False) -> Selector:
        """The selector of these ids (`stored`: of the rows of the stored vectors holding them, for a scan of
        hnsw-sq8's codes), kept for the last few arrays searched with (a filter's rows, cached by the store, come
        back as the same array: its bitmap is made once)."""
        if self._selectors is None:
            self._selectors = {}
        key = (id(allowed), stored)
        if key not in self._selectors or self._selectors[key][0] is not allowed:
            if len(self._selectors) >= SELECTORS_KEPT:
                self._selectors.pop(next(iter(self._selectors)))
            rows = self.positions(allowed) if stored else allowed
            self._selectors[key] = (allowed, Selector(rows[rows >= 0] if stored else rows))
        return self._selectors[key][1]

    def _search_parameters(
        self, selector: Selector | None, params: dict[str, Any], k: int
    ) -> faiss.SearchParameters:
        chosen = selector.faiss if selector is not None else None
        index = self.concrete
        if isinstance(index, faiss.IndexIVF):
            return faiss.SearchParametersIVF(sel=chosen, nprobe=int(min(params["nprobe"], index.nlist)))
        if self.kind in GRAPHS:
            # HNSW keeps efSearch candidates: fewer than k, it answers fewer than k (a deep page would end early)
            return faiss.SearchParametersHNSW(sel=chosen, efSearch=max(int(params["efSearch"]), k))
        return faiss.SearchParameters(sel=chosen)

    # ---- exact scores from the index's own vectors (strategy.py) ------------------------------------------

    @property
    def exact_source(self) -> str | None:
        """Where this index's exact vectors are: "stored" (flat and hnsw keep them contiguous), "lists" (ivf
        keeps them in its inverted lists), "codes" (flat-sq8, hnsw-sq8: their 8-bit codes, decoded, are the
        vectors they keep, as int8 raw rows are the raw vectors kept), or None (pq's codes only find candidates,
        which the raw vectors re-score)."""
        sources = {
            "flat": "stored",
            "hnsw": "stored",
            "ivf": "lists",
            "flat-sq8": "codes",
            "hnsw-sq8": "codes",
        }
        return sources.get(self.kind)

    def _storage(self) -> faiss.Index:
        inner = faiss.downcast_index(self.index.index)
        return faiss.downcast_index(inner.storage) if isinstance(inner, faiss.IndexHNSW) else inner

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Rows of the stored vectors (flat, hnsw and their -sq8 kinds) holding these ids, -1 for an id not held (a document a
        writer added since this generation); the id -> row table is made once per loaded index (an O(n) pass,
        8 bytes per id) and dropped when the index changes."""
        if self._positions is None:
            self._held = faiss.vector_to_array(self.concrete.id_map)
            table = np.full(int(self._held.max(initial=-1)) + 2, -1, dtype=np.int64)  # the last: ids beyond
            table[self._held] = np.arange(len(self._held), dtype=np.int64)
            self._positions = table
        ids = np.asarray(ids, dtype=np.int64)
        return self._positions[np.clip(ids, -1, len(self._positions) - 1)]

    def vectors_of(self, ids: np.ndarray) -> np.ndarray | None:
        """The stored vectors of these ids, exactly as indexed (-sq8 kinds: their codes decoded; None for pq)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if self.exact_source == "codes":  # decoded by FAISS as its search decodes them (a row in 1 ns a dim)
            storage = self._storage()
            size = storage.code_size
            codes = faiss.rev_swig_ptr(storage.codes.data(), storage.ntotal * size).reshape(-1, size)
            rows = self.positions(ids)
            if not len(rows):
                return np.empty((0, self.dim), dtype=np.float32)
            chosen = np.ascontiguousarray(codes[np.maximum(rows, 0)])
            decoded = single_threaded(1, lambda: storage.sa_decode(chosen))  # two threads: twice as slow
            return np.where((rows >= 0)[:, None], decoded, np.nan)  # not held: no score
        if self.exact_source == "stored":
            storage = self._storage()
            stored = faiss.rev_swig_ptr(storage.get_xb(), storage.ntotal * self.dim).reshape(-1, self.dim)
            rows = self.positions(ids)
            return np.where((rows >= 0)[:, None], stored[np.maximum(rows, 0)], np.nan)  # not held: no score
        if self.exact_source == "lists":
            index = self.concrete
            if index.direct_map.type != faiss.DirectMap.Hashtable:
                index.set_direct_map_type(faiss.DirectMap.Hashtable)  # an O(n) pass, once per loaded index
            try:
                # on one thread: FAISS splits a batch over 1,000 ids between threads, which took 12 ms for
                # 1,037 of 1M rows where one thread takes 0.2
                gather = lambda: index.reconstruct_batch(ids)  # noqa: E731
                return single_threaded(1, gather) if len(ids) else np.empty((0, self.dim), dtype=np.float32)
            except RuntimeError:  # an id not held (see `positions`): no score for it
                return np.stack([reconstructed(index, int(pk)) for pk in ids])
        return None

    def held_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every id the index holds and its vector exactly as indexed (`vectors_of`; a copy), for a caller that
        scores many queries against them all at once (a calibration's scratch copy of a flat-sq8 index)."""
        ids = faiss.vector_to_array(self.concrete.id_map)
        return ids, self.vectors_of(ids)

    def exact(self, queries: np.ndarray, k: int, ids: np.ndarray) -> list[list[tuple[int, float]]] | None:
        """The exact k best of these ids (sorted unique) by inner product with the index's own vectors: for
        flat and hnsw scored in place from the stored rows (no copy), for ivf by every inverted list with the
        ids as a selector, for flat-sq8 and hnsw-sq8 by their codes with their rows as a selector (FAISS's SQ8 scan, about a
        nanosecond a dimension); None for pq (the caller scores the raw vectors, projected)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        held = self.exact_source in ("stored", "codes")
        rows = np.ascontiguousarray(self.positions(ids)) if held else None
        if rows is not None:
            rows = rows[rows >= 0]  # ids this index does not hold (see `positions`) have no score
        k = min(k, len(ids) if rows is None else len(rows))
        if k == 0:
            return [[] for _ in queries]
        if self.exact_source == "codes" and len(rows) <= DECODED_ROWS:  # few: decoded, scored here
            return self._scored_by_id(queries, k, np.asarray(ids)[self.positions(ids) >= 0])
        if self.exact_source == "codes":
            return ranked(*self.scanned_codes(queries, k, ids))
        if rows is not None:
            storage = self._storage()
            scores = np.empty((len(queries), k), dtype=np.float32)
            found = np.empty((len(queries), k), dtype=np.int64)
            faiss.knn_inner_products_by_idx(
                faiss.swig_ptr(queries),
                storage.get_xb(),
                faiss.swig_ptr(rows),
                self.dim,
                len(queries),
                storage.ntotal,
                len(rows),
                k,
                faiss.swig_ptr(scores),
                faiss.swig_ptr(found),
                0,  # every query scores the same rows
            )
            order = np.argsort(-scores, axis=1, kind="stable")  # FAISS leaves these in heap order
            scores, found = np.take_along_axis(scores, order, 1), np.take_along_axis(found, order, 1)
            return ranked(scores, np.where(found >= 0, self._held[np.maximum(found, 0)], -1))
        if self.exact_source == "lists" and len(ids) <= RECONSTRUCTED_ROWS:  # read from the lists by id
            return self._scored_by_id(queries, k, ids)
        if self.exact_source == "lists":  # every list scanned, the ids as a selector
            every = {"nprobe": self.concrete.nlist}
            return self.search(queries, k, ids, every)
        return None

    def scanned_codes(self, queries: np.ndarray, k: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """flat-sq8, hnsw-sq8: the k best of these ids (sorted unique) by their codes, a scan of every code with
        their rows as a selector (FAISS's SQ8 scan, about a nanosecond a dimension), as FAISS's (scores, ids)
        arrays, -1 padding."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        codes, selector = self._storage(), self._selector(ids, stored=True)
        k = max(1, min(k, self.count))
        search = lambda: codes.search(queries, k, params=faiss.SearchParameters(sel=selector.faiss))  # noqa: E731
        scores, found = single_threaded(len(queries), search)
        return scores, np.where(found >= 0, self._held[np.maximum(found, 0)], -1)

    def _scored_by_id(self, queries: np.ndarray, k: int, ids: np.ndarray) -> list[list[tuple[int, float]]]:
        """The exact k best of a few ids, their vectors read by id (`vectors_of`) and scored here: cheaper than a
        scan of every row with a selector (a filter of 82 of WordNet's 117,791 rows over hnsw-sq8's codes:
        FAISS's scan of every code took 1.8 ms on a loaded machine, decoding them 0.07)."""
        scores = queries @ self.vectors_of(ids).T
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # an id not held: NaN, sorted last
        scores = np.take_along_axis(scores, top, 1)
        return ranked(scores, np.where(np.isnan(scores), -1, np.asarray(ids)[top]))

    def code_ranges(self) -> list[float] | None:
        """flat-sq8, hnsw-sq8: their trained ranges (each dimension's least value, then each one's span), which
        an export carries so that its import codes every vector as this index did (trained on other rows, the
        codes of the same vectors differ, and so the candidates near a list's foot, and a graph's links); else
        None."""
        if self.kind not in CODED:
            return None
        return faiss.vector_to_array(faiss.downcast_index(self._storage()).sq.trained).tolist()

    def with_code_ranges(self, ranges: list[float]) -> VectorIndex:
        """This empty flat-sq8 or hnsw-sq8 index trained with these ranges (`code_ranges`); ValueError where
        they do not fit its dims."""
        trained = np.asarray(ranges, dtype=np.float32)
        if self.kind not in CODED or trained.shape != (2 * self.dim,) or not np.isfinite(trained).all():
            raise ValueError(f"8-bit ranges of {trained.shape}, for {self.dim} dims of {self.kind}")
        storage, inner = faiss.downcast_index(self._storage()), faiss.downcast_index(self.index.index)
        faiss.copy_array_to_vector(trained, storage.sq.trained)
        storage.is_trained = inner.is_trained = self.index.is_trained = True  # the codes, the graph, the ids
        return self

    def trained_lists(self) -> dict[str, np.ndarray] | None:
        """ivf, pq: what their training made, the cells' centroids (lists x dims) and pq's codebooks (sub-spaces x
        centroids x their dims), which an export carries so that its import files and codes every vector as this
        index does (trained again on the rows of the import, which after upserts are not the rows this index
        was trained on, the cells differ, and so the rows a search's `nprobe` lists hold); else None."""
        if self.kind not in LISTED:
            return None
        index = self.concrete
        trained = {"centroids": faiss.downcast_index(index.quantizer).reconstruct_n(0, index.nlist)}
        if isinstance(index, faiss.IndexIVFPQ):
            pq = index.pq
            trained["codebooks"] = faiss.vector_to_array(pq.centroids).reshape(pq.M, pq.ksub, pq.dsub)
        return trained

    @classmethod
    def with_trained_lists(cls, dim: int, kind: str, trained: dict[str, np.ndarray]) -> VectorIndex:
        """An empty ivf or pq index of `dim` dims trained with these (`trained_lists`: its number of lists,
        sub-spaces and bits theirs), as FAISS's training leaves it; ValueError where they do not fit."""
        if problem := lists_problem(kind, dim, trained):
            raise ValueError(problem)
        centroids, codebooks = trained["centroids"], trained.get("codebooks")
        lists, metric = len(centroids), faiss.METRIC_INNER_PRODUCT
        if codebooks is None:
            index = faiss.index_factory(dim, f"IVF{lists},Flat", metric)
        else:
            bits = int(np.log2(codebooks.shape[1]))
            index = faiss.index_factory(dim, f"IVF{lists},PQ{len(codebooks)}x{bits}", metric)
            concrete = faiss.downcast_index(index)
            concrete.do_polysemous_training = False  # as `create`
            faiss.copy_array_to_vector(
                np.ascontiguousarray(codebooks, "float32").ravel(), concrete.pq.centroids
            )
        concrete = faiss.downcast_index(index)
        concrete.quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
        concrete.is_trained = True
        if codebooks is not None:
            concrete.precompute_table()  # what FAISS's training ends with (scores of residuals by table)
        return cls(index)

    def save(self, directory: Path) -> None:
        with atomic_path(Path(directory) / self.FILE) as tmp:
            faiss.write_index(self.index, str(tmp))

    # ---- bytes for a cluster's workers (distributed.py): the trained index out, a shard's lists back ---------

    def to_bytes(self) -> np.ndarray:
        return faiss.serialize_index(self.index)  # uint8, as `save` writes it

    @classmethod
    def from_bytes(cls, data: np.ndarray) -> VectorIndex:
        return cls(faiss.deserialize_index(np.ascontiguousarray(data, dtype=np.uint8)))

    def lists_bytes(self) -> np.ndarray:
        """ivf, pq: the inverted lists alone (codes and ids, as FAISS writes them), without the centroids that
        every shard shares (20 MB at 40,000 lists, where a shard's codes can be 0.3 MB)."""
        writer = faiss.VectorIOWriter()
        faiss.write_InvertedLists(self.concrete.invlists, writer)
        return faiss.vector_to_array(writer.data)

    def merger(self) -> Callable[[np.ndarray], None]:
        """ivf, pq: a function appending each list of a shard (`lists_bytes` of a copy of this index) to this
        one's, by FAISS's merge_from. Each shard is read into an empty copy of this index (made here: ask while
        this one is empty), which owns it until the next (lists FAISS reads are freed only by an index)."""
        index, carrier = self.concrete, faiss.clone_index(self.index)
        carrier.reset()

        def merge(lists: np.ndarray) -> None:
            reader = faiss.VectorIOReader()
            faiss.copy_array_to_vector(np.ascontiguousarray(lists, dtype=np.uint8), reader.data)
            shard = faiss.read_InvertedLists(reader)
            carrier.replace_invlists(shard, True)  # frees the previous shard's, emptied by the merge
            carrier.ntotal = shard.compute_ntotal()
            index.merge_from(carrier, 0)

        return merge

    def ids(self) -> np.ndarray:
        """Every id the index holds, sorted (to check them against the store's)."""
        index = self.concrete
        if isinstance(index, faiss.IndexIDMap):
            found = faiss.vector_to_array(index.id_map)
        else:
            lists = index.invlists
            found = np.concatenate(
                [
                    faiss.rev_swig_ptr(lists.get_ids(n), lists.list_size(n)).copy()
                    for n in range(index.nlist)
                    if lists.list_size(n)
                ]
                or [np.empty(0, dtype=np.int64)]
            )
        return np.sort(found.astype(np.int64))

    def graph_runs(self) -> list[list[int]] | None:
        """An hnsw graph's adds as runs (`block_runs`), as its manifest keeps them; None for the other kinds,
        whose contents do not depend on them, or where they are not known."""
        if self.kind not in GRAPHS or self.blocks is None or sum(self.blocks) != self.count:
            return None
        return block_runs(self.blocks)

    @classmethod
    def load(cls, directory: Path, blocks: list[int] | None = None) -> VectorIndex:
        """The saved index, and its adds where its manifest keeps them (`blocks`); a file FAISS cannot read
        whole is damaged."""
        path = Path(directory) / cls.FILE
        if problem := size_problem(path):
            raise derived(path, problem)
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as error:  # FAISS reports a short or garbled file so, naming it
            reason = brief(error).replace(f" in {path}", "").replace(" (Success)", "")
            raise derived(path, f"unreadable by FAISS: {reason}") from None
        return cls(index, blocks)  # already of its own class; a downcast here would not own it
