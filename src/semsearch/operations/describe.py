"""`info`: what an index is and holds, from its manifest and the sizes of its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..retrieval.query import QueryDefaults
from ..retrieval.vectorindex import VectorIndex
from ..settings import DRIFT_LIMIT
from ..storage.manifest import FORMAT_VERSION
from ..storage.store import DocumentStore
from .directory import IndexDirectory
from .isotropy import current as current_isotropy
from .language import cjk_share


def describe(index: IndexDirectory, defaults: QueryDefaults) -> dict[str, Any]:
    """The index in `index` as `info` shows it; `defaults`: what its queries take when they do not say."""
    s, state = index.settings, index.state
    generation = index.generation_dir
    sizes = {
        "documents": _size(index.path / DocumentStore.FILE)
        + _size(index.path / (DocumentStore.FILE + "-wal")),
        "raw_vectors": sum(_size(index.path / "raw" / segment["name"]) for segment in state.segments),
        "vector_index": _size(generation / VectorIndex.FILE),
        "transform": sum(_size(p) for p in generation.glob("*") if p.name != VectorIndex.FILE),
    }
    sizes["total"] = sum(sizes.values())
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
        "calibration": state.calibration,
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
        "bytes": sizes,
        "created": state.created,
        "updated": state.updated,
        "format_version": FORMAT_VERSION,
    }


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
