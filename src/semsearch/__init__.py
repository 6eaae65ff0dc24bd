"""semsearch: semantic search with a transform (whitening, PCA, flow) fitted on the corpus's own vectors."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .errors import DataError, IndexStateError, ModelError, SemsearchError, SettingsError

if TYPE_CHECKING:
    from .documents import Document
    from .index import AddReport, Hit, Index, Ingested, IngestOptions
    from .ingest.documents import FieldNames

# Imported on first use: `semsearch --help` and argument errors then answer without loading numpy or FAISS.
_LAZY = {
    "AddReport": "index",
    "Hit": "index",
    "Index": "index",
    "IngestOptions": "index",
    "Ingested": "index",
    "Document": "documents",
    "FieldNames": "ingest.documents",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AddReport",
    "DataError",
    "Document",
    "FieldNames",
    "Hit",
    "Index",
    "IndexStateError",
    "IngestOptions",
    "Ingested",
    "ModelError",
    "SemsearchError",
    "SettingsError",
]
