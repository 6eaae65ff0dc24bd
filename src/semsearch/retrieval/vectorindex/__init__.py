"""The vector index: one backend per kind (flat, flat-sq8, hnsw, hnsw-sq8, ivf, pq; the `--index-type` values)
behind one base (base.VectorIndex), made, loaded and chosen by name in factory.py. Beside them: filtered
search's selector (selector), FAISS's thread count around a search (faissthreads) and the bytes a cluster's fill
sends (wire). These names are the rest of the package's way in."""

from .base import TUNED_K, VectorIndex, ranked
from .factory import (
    AUTO_CODED_ROWS,
    AUTO_FLAT_LIMIT,
    CODED,
    GRAPHS,
    INDEX_TYPES,
    LISTED,
    create_index,
    index_of_bytes,
    index_with_trained_lists,
    lists_problem,
    load_index,
    resolve_index_type,
)
from .faissthreads import one_faiss_thread, single_threaded
from .flat import outgrown
from .hnsw import runs_blocks
from .ivf import inverted_lists

__all__ = [
    "AUTO_CODED_ROWS",
    "AUTO_FLAT_LIMIT",
    "CODED",
    "GRAPHS",
    "INDEX_TYPES",
    "LISTED",
    "TUNED_K",
    "VectorIndex",
    "create_index",
    "index_of_bytes",
    "index_with_trained_lists",
    "inverted_lists",
    "lists_problem",
    "load_index",
    "one_faiss_thread",
    "outgrown",
    "ranked",
    "resolve_index_type",
    "runs_blocks",
    "single_threaded",
]
