"""The graph kinds: hnsw, an HNSW graph of 32 neighbours a node over float32 rows; hnsw-sq8, of 16 over 8-bit
codes (a third of hnsw's bytes at the same quality: benchmarks/results/bytes.md). No training but the codes',
no removal (a removal is a rebuild), `efSearch` candidates kept by a search.

FAISS inserts an add's rows by level, so a graph depends on how its rows were split between adds: `blocks`
keeps the rows of each add, and a build given the same adds (an export's import) makes the same graph, each
row's level drawn from its position alone."""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np

from .codes import Codes
from .idmapped import IdMapped, StoredRows
from .selector import Selector

HNSW_NEIGHBOURS, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128  # efSearch: of indexes built untuned
SQ8_NEIGHBOURS = 16  # fewer links over codes: as fast as hnsw, tuned to a higher efSearch
LEVELS_SEED = 16  # of the rows' levels (position_uniforms)


class Graph(IdMapped):
    """An IndexIDMap over an IndexHNSW, whose `storage` holds the rows."""

    supports_remove = False

    def __init__(self, index: faiss.Index, blocks: list[int] | None = None):
        super().__init__(index, blocks)
        faiss.downcast_index(index.index).hnsw.efConstruction = HNSW_EF_CONSTRUCTION

    @property
    def description(self) -> str:
        neighbours = faiss.downcast_index(self.index.index).hnsw.nb_neighbors(1)  # M, as built
        return f"HNSW{neighbours},{self.CODES}"  # efSearch: `info`'s search_params

    def _storage(self) -> faiss.Index:
        return faiss.downcast_index(faiss.downcast_index(self.index.index).storage)

    def untuned_params(self) -> dict[str, Any]:
        return {"efSearch": HNSW_EF_SEARCH}

    def _search_parameters(
        self, selector: Selector | None, params: dict[str, Any], k: int
    ) -> faiss.SearchParameters:
        # HNSW keeps efSearch candidates: fewer than k, it answers fewer than k (a deep page would end early)
        chosen = None if selector is None else selector.faiss
        return faiss.SearchParametersHNSW(sel=chosen, efSearch=max(int(params["efSearch"]), k))

    def _before_add(self, count: int) -> None:
        """The levels of the next `count` rows, each drawn from its position alone (FAISS's own draw continues
        a generator it does not save, which starts again at every load: a graph appended to after a load would
        not be the one an import adding the same rows at once makes). FAISS's distribution: level l where a
        uniform number falls in the l-th of its `assign_probas`; FAISS takes levels set before an add (kept as
        a level plus one)."""
        graph = faiss.downcast_index(self.index.index).hnsw
        bounds = np.cumsum(faiss.vector_to_array(graph.assign_probas))
        drawn = np.searchsorted(bounds, position_uniforms(self.index.ntotal, count), side="right")
        start = graph.levels.size()
        graph.levels.resize(start + count)  # the new rows' levels written in place: an add costs its own rows
        faiss.rev_swig_ptr(graph.levels.data(), start + count)[start:] = (
            np.minimum(drawn, len(bounds) - 1) + 1
        )

    def graph_runs(self) -> list[list[int]] | None:
        """The adds as runs (`block_runs`); None where they are not known."""
        if self.blocks is None or sum(self.blocks) != self.count:
            return None
        return block_runs(self.blocks)


class HNSW(Graph, StoredRows):
    kind = "hnsw"
    STRUCTURE = faiss.IndexHNSWFlat

    @classmethod
    def create(cls, dim: int, count: int = 0) -> HNSW:
        return cls(
            faiss.IndexIDMap(faiss.IndexHNSWFlat(dim, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)), []
        )


class HNSWSQ8(Graph, Codes):
    kind = "hnsw-sq8"
    STRUCTURE = faiss.IndexHNSWSQ

    @classmethod
    def create(cls, dim: int, count: int = 0) -> HNSWSQ8:
        codes = faiss.ScalarQuantizer.QT_8bit
        graph = faiss.IndexHNSWSQ(dim, codes, SQ8_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
        return cls(faiss.IndexIDMap(graph), [])


def position_uniforms(start: int, count: int) -> np.ndarray:
    """A uniform number in [0, 1) for each position from `start`, a function of the position alone (splitmix64
    of it and LEVELS_SEED): a row's level (Graph._before_add)."""
    with np.errstate(over="ignore"):
        z = np.arange(start, start + count, dtype=np.uint64) + np.uint64(LEVELS_SEED) * np.uint64(
            0x9E3779B97F4A7C15
        )
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def block_runs(blocks: list[int]) -> list[list[int]]:
    """Adds' rows (`blocks`) as [rows, times] runs, as a manifest and an export keep them."""
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
