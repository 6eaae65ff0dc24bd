"""ivf: inverted lists over k-means cells (IndexIVFFlat), trained on a sample, `nprobe` lists searched; its
float32 rows, kept in the lists, score filtered searches exactly. pq (pq.py) is this with product-quantised
codes."""

from __future__ import annotations

from typing import Any, ClassVar

import faiss
import numpy as np

from .base import TUNED_K, Ranked, VectorIndex
from .faissthreads import single_threaded
from .selector import Selector

MAX_LISTS = 65536
TRAINING_ROWS_PER_LIST = 40  # FAISS warns below 39 training points a centroid
RECONSTRUCTED_ROWS = 4096  # up to this many rows are scored exactly by id, more by scanning every list


def inverted_lists(count: int) -> int:
    """The number of lists: about 4 sqrt(n), FAISS's rule of thumb, with enough rows to train each."""
    return int(max(1, min(4 * np.sqrt(max(count, 1)), count // TRAINING_ROWS_PER_LIST, MAX_LISTS)))


class IVF(VectorIndex):
    kind = "ivf"
    STRUCTURE: ClassVar[type] = faiss.IndexIVFFlat
    exact_source: ClassVar[str | None] = "lists"
    mergeable = True
    MIN_TRAINING_ROWS = 0

    @classmethod
    def create(cls, dim: int, count: int = 0) -> VectorIndex:
        """`count`: the expected number of vectors, which sizes the lists."""
        return cls(faiss.index_factory(dim, f"IVF{inverted_lists(count)},Flat", faiss.METRIC_INNER_PRODUCT))

    def codes_name(self) -> str:
        return "Flat"

    @property
    def description(self) -> str:
        refine = self.search_params.get("k_factor", 1)
        rescored = f" k_factor={refine}" if refine > 1 else ""
        deep = (self.params or {}).get("deep")
        if deep:
            deeper = f" k_factor={deep['k_factor']}" if "k_factor" in deep else ""
            rescored += f" ({deep['k']} deep: nprobe={deep['nprobe']}{deeper})"
        nprobe = self.search_params["nprobe"]
        return f"IVF{self.concrete.nlist},{self.codes_name()} nprobe={nprobe}{rescored}"

    def untuned_params(self) -> dict[str, Any]:
        """About 1/16 of the lists, at least 8."""
        nlist = self.concrete.nlist
        return {"nprobe": int(min(nlist, max(8, nlist // 16)))}

    def at_depth(self, params: dict[str, Any], k: int) -> dict[str, Any]:
        """An inverted list holds a query's nearest few, not its 200 nearest: a search as deep as a default
        query's candidates (rerank's 100 rows, 200 with long documents) needs more lists at the same recall,
        and pq fewer candidates per result. Both were tuned at TUNED_K and at the depth in `params["deep"]`
        (tuning.py); in between they go geometrically, and nprobe and k_factor scale by that ratio. Unchanged
        for k <= TUNED_K or an index tuned at TUNED_K only."""
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
        index = self.concrete
        return 0 if index.is_trained else max(index.nlist * 64, self.MIN_TRAINING_ROWS)

    def _search_parameters(
        self, selector: Selector | None, params: dict[str, Any], k: int
    ) -> faiss.SearchParameters:
        chosen = None if selector is None else selector.faiss
        return faiss.SearchParametersIVF(sel=chosen, nprobe=int(min(params["nprobe"], self.concrete.nlist)))

    def ids(self) -> np.ndarray:
        index = self.concrete
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

    def vectors_of(self, ids: np.ndarray) -> np.ndarray | None:
        """Read from the lists by id, through a hash table of ids made on first use (an O(n) pass)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        index = self.concrete
        if index.direct_map.type != faiss.DirectMap.Hashtable:
            index.set_direct_map_type(faiss.DirectMap.Hashtable)
        try:
            # on one thread: FAISS splits a batch of more than 1,000 ids between threads, at a cost of many
            # times the gather itself
            gather = lambda: index.reconstruct_batch(ids)  # noqa: E731
            return single_threaded(1, gather) if len(ids) else np.empty((0, self.dim), dtype=np.float32)
        except RuntimeError:  # an id not held (a document a writer added since this generation): no score
            return np.stack([reconstructed(index, int(pk)) for pk in ids])

    def exact(self, queries: np.ndarray, k: int, ids: np.ndarray) -> Ranked | None:
        """A few ids read from the lists by id and scored here (RECONSTRUCTED_ROWS), more by a search of every
        list with the ids as a selector."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, len(ids))
        if k == 0:
            return [[] for _ in queries]
        if len(ids) <= RECONSTRUCTED_ROWS:
            return self._scored_by_id(queries, k, ids)
        return self.search(queries, k, ids, {"nprobe": self.concrete.nlist})

    def trained_lists(self) -> dict[str, np.ndarray] | None:
        """What the training made: the cells' centroids (lists x dims), which an export carries so that its
        import files every vector as this index does (trained again on the rows of the import, which after
        upserts are not the rows this index was trained on, the cells differ, and so the rows a search's
        `nprobe` lists hold)."""
        index = self.concrete
        return {"centroids": faiss.downcast_index(index.quantizer).reconstruct_n(0, index.nlist)}

    @classmethod
    def trained_problem(cls, dim: int, trained: dict[str, np.ndarray]) -> str | None:
        """What keeps these arrays (`trained_lists`, their centroids a 2-d array) from making an empty index of
        `dim` dims, or None where they fit."""
        centroids = trained["centroids"]
        if not 0 < len(centroids) <= MAX_LISTS or centroids.shape[1] != dim:
            return f"centroids of {centroids.shape} for an index of {dim} dims"
        if problem := cls.codebooks_problem(dim, trained.get("codebooks")):
            return problem
        if not all(np.isfinite(array).all() for array in trained.values()):
            return "numbers that are not finite"
        return None

    @classmethod
    def codebooks_problem(cls, dim: int, codebooks: np.ndarray | None) -> str | None:
        return None if codebooks is None else f"codebooks given for {cls.kind}"

    @classmethod
    def with_trained(cls, dim: int, trained: dict[str, np.ndarray]) -> VectorIndex:
        """An empty index of `dim` dims trained with these (`trained_lists`, checked: `trained_problem`), as
        FAISS's training leaves it."""
        centroids = trained["centroids"]
        index = faiss.index_factory(dim, f"IVF{len(centroids)},Flat", faiss.METRIC_INNER_PRODUCT)
        return cls(with_centroids(index, centroids))


def with_centroids(index: faiss.Index, centroids: np.ndarray) -> faiss.Index:
    """An untrained IVF index given its cells' centroids, trained so."""
    concrete = faiss.downcast_index(index)
    concrete.quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
    concrete.is_trained = True
    return index


def reconstructed(index: faiss.IndexIVF, pk: int) -> np.ndarray:
    """The vector of one id as an IVF index holds it, or NaNs where it holds none."""
    try:
        return index.reconstruct(pk)
    except RuntimeError:
        return np.full(index.d, np.nan, dtype=np.float32)
