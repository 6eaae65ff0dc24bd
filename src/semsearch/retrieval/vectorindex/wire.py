"""The bytes a cluster's fill sends (ingest/distributed.py): the trained, empty index out to every worker once,
each shard's inverted lists back, merged into the driver's index in block order."""

from __future__ import annotations

from collections.abc import Callable

import faiss
import numpy as np


def index_bytes(index: faiss.Index) -> np.ndarray:
    """The index as uint8, as FAISS writes it to a file."""
    return faiss.serialize_index(index)


def index_of_bytes(data: np.ndarray) -> faiss.Index:
    return faiss.deserialize_index(np.ascontiguousarray(data, dtype=np.uint8))


def lists_bytes(index: faiss.IndexIVF) -> np.ndarray:
    """An ivf or pq index's inverted lists alone (codes and ids, as FAISS writes them), without the centroids
    every shard shares (they can be a hundred times a shard's codes)."""
    writer = faiss.VectorIOWriter()
    faiss.write_InvertedLists(index.invlists, writer)
    return faiss.vector_to_array(writer.data)


def lists_merger(index: faiss.Index) -> Callable[[np.ndarray], None]:
    """A function appending each list of a shard (`lists_bytes` of a copy of `index`) to `index`'s, by FAISS's
    merge_from. Each shard is read into an empty copy of `index` (made here: ask while it is empty), which
    owns it until the next (lists FAISS reads are freed only by an index)."""
    target, carrier = faiss.downcast_index(index), faiss.clone_index(index)
    carrier.reset()

    def merge(lists: np.ndarray) -> None:
        reader = faiss.VectorIOReader()
        faiss.copy_array_to_vector(np.ascontiguousarray(lists, dtype=np.uint8), reader.data)
        shard = faiss.read_InvertedLists(reader)
        carrier.replace_invlists(shard, True)  # frees the previous shard's, emptied by the merge
        carrier.ntotal = shard.compute_ntotal()
        target.merge_from(carrier, 0)

    return merge
