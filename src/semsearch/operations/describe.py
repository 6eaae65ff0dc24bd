"""`info`: what an index is and holds, from its manifest and the sizes of its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..retrieval.calibration_age import age
from ..retrieval.query import QueryDefaults
from ..retrieval.vectorindex import VectorIndex
from ..settings import DRIFT_LIMIT
from ..storage.manifest import FORMAT_VERSION
from ..storage.rawvectors import DIRECTORY, Segment
from ..storage.store import DocumentStore
from .directory import IndexDirectory
from .isotropy import current as current_isotropy
from .language import cjk_share


def describe(index: IndexDirectory, defaults: QueryDefaults) -> dict[str, Any]:
    """The index in `index` as `info` shows it; `defaults`: what its queries take when they do not say."""
    s, state = index.settings, index.state
    sizes = parts(index)
    passages = state.rows
    return {
        "path": str(index.path),
        "documents": state.count,
        # vectors: a passage each; documents longer than one passage were cut into several (chunk_tokens)
        "passages": state.rows,
        "long_documents": state.long_documents,
        "chunk_tokens": s.chunk_tokens,
        "chunk_overlap": s.chunk_overlap,
        "generation": state.generation,  # what a page reads (query --generation)
        # the metadata fields (as --where and --facets name them, nested ones dotted) and their values' types
        "fields": index.store.fields(),
        "field_types": field_types(index.store),
        "keyword_index": index.store.has_keywords,
        "cjk_share": cjk_share(index.store),  # of the text, Chinese/Japanese/Korean (language.py: a sample)
        "default_mode": defaults.mode.value,
        # hybrid's default dense weight, and how the corpus chose it (calibration.py; None: not calibrated)
        "default_alpha": defaults.alpha,
        "calibration": _shown(state.calibration),
        # documents added, replaced or deleted since the calibration, and whether that makes it stale
        # (calibration_age.py: past STALE_SHARE of those it was made on; `refit --calibrate` renews it)
        "calibration_age": (recorded := age(state.calibration)) and recorded.to_json(),
        "model": s.model,
        "model_name": s.model_name,
        "pooling": s.pooling,
        "max_length": s.max_length,
        "transform": s.transform,
        "dims": state.dims,
        "dims_requested": s.dims_requested,
        "power": s.power,
        "rerank": s.rerank,
        **({"flow_epochs": s.flow_epochs, "seed": s.seed} if s.transform == "flow" else {}),
        "drift": state.drift,
        # how anisotropic the raw vectors are, what the transform made of them, and whether whitening helps
        "isotropy": current_isotropy(index),
        "drift_limit": DRIFT_LIMIT,
        "encoder_dim": s.encoder_dim,
        "quantize": s.quantize,
        **({"int8_method": s.int8_method} if s.quantize == "int8" else {}),
        **({"quantize_fidelity": state.quantize_fidelity} if s.quantize != "none" else {}),
        "backend": s.backend,
        "index_type": s.index_type,
        "index_structure": state.index_structure,
        # efSearch / nprobe tuned at build for recall_target, the recall@10 measured with them, and filtered
        # search's rule (exact at or below exact_rows allowed; above, the parameters of each selectivity)
        "recall_target": s.recall_target,
        "search_params": state.search_params,
        "measured_recall": state.measured_recall,
        # every file of the directory by part (`other`: the manifest, the lock, files a write leaves for
        # readers of the previous generation), and per passage
        "bytes": sizes,
        "bytes_per_passage": {name: round(size / passages) for name, size in sizes.items()}
        if passages
        else {},
        "created": state.created,
        "updated": state.updated,
        "format_version": FORMAT_VERSION,
    }


def _shown(calibration: dict | None) -> dict | None:
    """The calibration record without its ranks (a character per pseudo-query and weight: the manifest keeps
    them for the choice to be made again, calibration.py), nor its bands' (bands.py)."""
    if not calibration:
        return calibration
    shown = {k: v for k, v in calibration.items() if k != "ranks"}
    if calibration.get("bands"):
        shown["bands"] = {
            name: {k: v for k, v in band.items() if k != "ranks"}
            for name, band in calibration["bands"].items()
        }
    return shown


def parts(index: IndexDirectory) -> dict[str, int]:
    """The bytes of every file under the index directory, by part: documents (the SQLite store with its
    keyword index, its write-ahead log), raw_vectors (the segments the manifest names, with their row ids and
    scales), vector_index (FAISS), transform (the generation's other files: transform, statistics), other."""
    generation = index.generation_dir
    segments = [name for segment in Segment.all_of(index.state.segments) for name in segment.files]
    store = [index.path / (DocumentStore.FILE + tail) for tail in ("", "-wal", "-journal")]
    sizes = {
        "documents": sum(_size(path) for path in store),
        "raw_vectors": sum(_size(index.path / DIRECTORY / name) for name in segments),
        "vector_index": _size(generation / VectorIndex.FILE),
        "transform": sum(_size(p) for p in generation.glob("*") if p.name != VectorIndex.FILE),
    }
    # not SQLite's -shm: shared memory of the open connections, gone when the last one closes
    every = sum(_size(path) for path in index.path.rglob("*") if not path.name.endswith("-shm"))
    return {**sizes, "other": every - sum(sizes.values()), "total": every}


KIND_NAMES = {"text": "string", "true": "boolean", "false": "boolean", "array": "list"}


def field_types(store: DocumentStore) -> dict[str, dict[str, int]]:
    """Each metadata field path: how many values of each type (string, integer, real, boolean, list, object)
    it holds, a list's members counted by their own types."""
    if store.schema_version < 2:  # read-only, made before the typed metadata
        return {}
    types: dict[str, dict[str, int]] = {}
    for path, kind, n in store.field_kinds():
        named = types.setdefault(path, {})
        name = KIND_NAMES.get(kind, kind)
        named[name] = named.get(name, 0) + n
    return types


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0
