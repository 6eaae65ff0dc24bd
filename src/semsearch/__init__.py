"""semsearch: semantic search with a transform (whitening, PCA, flow) fitted on the corpus's own vectors."""

from .documents import Document, FieldNames
from .errors import DataError, IndexStateError, ModelError, SemsearchError, SettingsError
from .index import AddReport, Hit, Index

__all__ = [
    "AddReport",
    "DataError",
    "Document",
    "FieldNames",
    "Hit",
    "Index",
    "IndexStateError",
    "ModelError",
    "SemsearchError",
    "SettingsError",
]
