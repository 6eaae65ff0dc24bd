"""Ingesting a `semsearch export` (operations/export.py): a new index takes the settings its header records, so
the import is the index it came from, documents, passages and vectors included (a vector per passage is taken as
it is, documents.py); options given on the command line win over the header's."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..settings import DEFAULT_MODEL, NO_MODEL, IndexOptions
from ..storage.manifest import IndexSettings

# The first line of a `semsearch export` holds this key (and the index's settings): not a document.
EXPORT_KEY = "semsearch_export"
HEADER_BYTES = 1 << 20  # a header is a few hundred bytes; a first line longer is a document

# The header's settings an import makes its index with (IndexSettings names -> IndexOptions names).
CARRIED = {
    "model": "model",
    "pooling": "pooling",
    "max_length": "max_length",
    "transform": "transform",
    "dims_requested": "dims",
    "power": "power",
    "rerank": "rerank",
    "flow_epochs": "flow_epochs",
    "seed": "seed",
    "index_type": "index_type",
    "quantize": "quantize",
    "backend": "backend",
    "recall_target": "recall_target",
    "chunk_tokens": "chunk_tokens",
    "chunk_overlap": "chunk_overlap",
    "raw_precision": "raw_precision",
}


def export_header(path: Path) -> dict[str, Any] | None:
    """The header line of a `semsearch export` file (its first line), or None for any other corpus."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as handle:
            first = handle.readline(HEADER_BYTES)
    except (OSError, EOFError):
        return None  # read_jsonl reports it
    if EXPORT_KEY.encode() not in first:
        return None
    try:
        record = json.loads(first.decode("utf-8-sig"))
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("settings"), dict) else None


def options_for(header: dict[str, Any], given: IndexOptions) -> IndexOptions:
    """The options of the index an export is ingested into: the header's, then those given."""
    settings = header["settings"]
    # an export of a release before raw precisions kept float32 raw vectors: the same index keeps them so
    settings = {"raw_precision": "float32", **settings}
    carried = {option: settings[name] for name, option in CARRIED.items() if settings.get(name) is not None}
    if settings.get("model") == NO_MODEL:
        carried = {k: v for k, v in carried.items() if k not in ("pooling", "max_length", "quantize")}
        carried["dim"] = settings.get("encoder_dim")
    return replace(IndexOptions(**carried), **given.given())


def check_model(header: dict[str, Any], settings: IndexSettings, where: str) -> None:
    """Vectors of an export are the model's own: the index they go into must encode queries with that model."""
    theirs = header["settings"]
    if not header.get("vectors") or theirs.get("model") == NO_MODEL:
        return
    if theirs.get("model_fingerprint") != settings.model_fingerprint:
        name = theirs.get("model_name") or theirs.get("model") or DEFAULT_MODEL
        raise DataError(
            f"its vectors were made by {name} (fingerprint {theirs.get('model_fingerprint')}), but the index "
            f"encodes queries with {settings.model_name} ({settings.model_fingerprint}): ingest it into an "
            "index of that model, or export without --vectors",
            path=where,
            line=1,
        )
