"""Ingesting a `semsearch export` (operations/export.py): a new index takes the settings its header records, so
the import is the index it came from, documents, passages and vectors included (a vector per passage is taken as
it is, documents.py); options given on the command line win over the header's. It also keeps what its source's
answers depend on beyond the vectors (`Restored`): the calibration, and the transform as the source fitted it,
which after upserts is not the one the same vectors would fit today; so too its vector index's training (8-bit
ranges, ivf cells, pq codebooks) and an hnsw graph's adds, with the search parameters tuned for them."""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, SemsearchError
from ..settings import DEFAULT_MODEL, NO_MODEL, IndexOptions, RefitPolicy, TransformKind
from ..storage.damage import DamagedFile, brief
from ..storage.manifest import IndexSettings
from .jsonl import MAX_LINE_BYTES

# The first line of a `semsearch export` holds this key (and the index's settings): not a document.
EXPORT_KEY = "semsearch_export"
HEADER_BYTES = 1 << 20  # a first line without the key in this many bytes is a document
# The transform's files travel in the header, base64: up to this many bytes (a whitening of 384 dims to 128 takes
# 0.5 MB), so the header stays a line the JSONL reader takes (MAX_LINE_BYTES); a larger one (a flow of wide
# vectors) is left out, and the import fits its own.
TRANSFORM_BYTES = MAX_LINE_BYTES // 2
# An ivf or pq index's trained arrays travel there too, base64, up to this many bytes (full SciFact's 897 lists
# of 128 dims and pq's codebooks: 0.8 MB; 6,000 lists, about 2.3M passages, at 128 dims: 4 MB): the header's
# other fields keep the rest of the line. Larger ones are left out, and the import trains its own.
LISTS_BYTES = MAX_LINE_BYTES // 2 - HEADER_BYTES
# The settings a transform was fitted under: where the import's differ, its vectors or its fit are not the
# source's, and it fits its own.
FITTED_UNDER = (
    "model_fingerprint",
    "pooling",
    "max_length",
    "quantize",
    "int8_method",
    "encoder_dim",
    "chunk_tokens",
    "chunk_overlap",
    "raw_precision",
    "transform",
    "dims_requested",
    "power",
    "flow_epochs",
    "seed",
)

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
            if EXPORT_KEY.encode() not in first:
                return None
            if not first.endswith(b"\n"):  # a header carrying a transform: the rest of its line
                first += handle.readline(MAX_LINE_BYTES)
    except (OSError, EOFError):
        return None  # read_jsonl reports it
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


def transform_record(transform: Any, kind: str) -> dict[str, Any] | None:
    """The fitted transform as an export's header carries it: its kind and its files (safetensors and JSON,
    as the index keeps them; never a pickle), base64. None where nothing was fitted or it is too large."""
    if kind == TransformKind.NONE.value:
        return None
    with tempfile.TemporaryDirectory(prefix="semsearch-export-") as directory:
        transform.save(Path(directory))
        files = {path.name: path.read_bytes() for path in sorted(Path(directory).iterdir())}
    if not files or sum(len(data) for data in files.values()) * 4 // 3 > TRANSFORM_BYTES:
        return None
    return {
        "kind": kind,
        "files": {name: base64.b64encode(data).decode("ascii") for name, data in files.items()},
    }


@dataclass(frozen=True)
class Restored:
    """What an ingest of an export into a new index keeps of its source instead of making it again."""

    calibration: dict | None = None  # calibration.py's record (or why there is none)
    transform: Any = None  # the Transform its source fitted (before any upserts since)
    codes: list[float] | None = None  # with it, its source's 8-bit ranges (flat-sq8's, hnsw-sq8's), or None
    graph: Graph | None = None  # with it, its source's hnsw graph's adds and search parameters
    lists: Lists | None = None  # with it, its source's ivf or pq training and search parameters

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(
            name for name in ("calibration", "transform", "graph", "lists") if getattr(self, name) is not None
        )


@dataclass(frozen=True)
class Graph:
    """An export's source's hnsw graph as an import makes it again: the rows of each add, in order
    (vectorindex.VectorIndex.blocks), and the search parameters tuned for it, with the recall measured."""

    blocks: list[int]
    search_params: dict | None
    measured_recall: float | None

    @classmethod
    def of(cls, record: Any) -> Graph | None:
        """A header's `graph` (None where it has none, or one this release cannot read: the import builds
        its own)."""
        from ..retrieval.vectorindex import runs_blocks

        if not isinstance(record, dict) or not isinstance(record.get("search_params"), (dict, type(None))):
            return None
        blocks = runs_blocks(record.get("blocks"))
        recall = record.get("measured_recall")
        if blocks is None or not isinstance(recall, (int, float, type(None))):
            return None
        return cls(blocks, record.get("search_params"), recall)


@dataclass(frozen=True)
class Lists:
    """An export's source's ivf or pq index as an import trains it again: its cells' centroids and pq's
    codebooks (VectorIndex.trained_lists), and the search parameters tuned for it, with the recall measured."""

    trained: dict[str, np.ndarray]
    search_params: dict | None
    measured_recall: float | None

    @staticmethod
    def record(vectors: Any, search_params: dict | None, recall: float | None) -> dict[str, Any] | None:
        """An ivf or pq index's `lists` as an export's header carries them (arrays as little-endian float32,
        base64, with their shapes); None for the other kinds, or where they are larger than LISTS_BYTES."""
        trained = vectors.trained_lists()
        if trained is None or sum(array.nbytes for array in trained.values()) * 4 // 3 > LISTS_BYTES:
            return None
        arrays = {
            name: {
                "shape": list(array.shape),
                "float32": base64.b64encode(array.astype("<f4")).decode("ascii"),
            }
            for name, array in trained.items()
        }
        return {**arrays, "search_params": search_params, "measured_recall": recall}

    @classmethod
    def of(cls, record: Any, kind: str | None, dim: int) -> Lists | None:
        """A header's `lists` for an index of `kind` and `dim` dims (None where it has none, or they do not
        fit that index, or this release cannot read them: the import trains its own)."""
        from ..retrieval.vectorindex import lists_problem

        if kind is None or not isinstance(record, dict):
            return None
        if not isinstance(record.get("search_params"), (dict, type(None))):
            return None
        recall = record.get("measured_recall")
        read = {name: _array(record[name]) for name in ("centroids", "codebooks") if name in record}
        trained = {name: array for name, array in read.items() if array is not None}
        if not isinstance(recall, (int, float, type(None))) or len(trained) < len(read):
            return None
        if lists_problem(kind, dim, trained):
            return None
        return cls(trained, record.get("search_params"), recall)


def _array(record: Any) -> np.ndarray | None:
    """A `Lists.record` array read back, or None where it is not one."""
    try:
        shape = tuple(int(size) for size in record["shape"])
        data = base64.b64decode(record["float32"], validate=True)
        return np.frombuffer(data, dtype="<f4").reshape(shape).astype(np.float32)
    except (TypeError, ValueError, KeyError, binascii.Error):
        return None


def restored(
    corpus: Any, count: int, settings: IndexSettings, recalibrate: bool, refit: Any
) -> Restored | None:
    """What an index of `count` documents and these `settings` keeps of `corpus` (documents.Corpus) where it is
    an export and the index new (else None): its calibration unless `recalibrate`; its transform where the header
    carries one (exports before issue 38 do not) fitted under the settings the index has (FITTED_UNDER), and with
    it (or with no transform to fit), where the index is of its source's type, its hnsw graph's adds or its ivf
    or pq training (`lists`) with the search parameters tuned for them. Nothing under `refit` always, which fits
    and calibrates again."""
    header = corpus.export
    if not header or count:
        return None
    if RefitPolicy.parse(refit, "refit") is RefitPolicy.ALWAYS:
        return Restored()
    calibration = None if recalibrate else header.get("calibration")
    record, theirs = header.get("transform"), {"raw_precision": "float32", **header["settings"]}
    ours = asdict(settings)
    if any(theirs.get(name) != ours[name] for name in FITTED_UNDER):
        return Restored(calibration)
    graph, kind = Graph.of(header.get("graph")), theirs.get("index_type")
    if kind != settings.index_type:  # another kind of index asked for: built as its own
        graph = kind = None
    if not isinstance(record, dict):  # the same vectors, indexed as they are: the graph is made again
        if settings.transform != TransformKind.NONE.value:  # fitted again: its own graph and lists
            return Restored(calibration)
        return Restored(
            calibration, graph=graph, lists=Lists.of(header.get("lists"), kind, settings.encoder_dim)
        )
    transform = _loaded(record, settings, str(corpus.path))
    lists = Lists.of(header.get("lists"), kind, transform.out_dim)
    return Restored(calibration, transform, _codes(header.get("vector_codes")), graph, lists)


def _codes(ranges: Any) -> list[float] | None:
    """The source's 8-bit ranges (flat-sq8's, hnsw-sq8's), where the header has a list of numbers (else None:
    the import trains its own; ranges of other dims are refused by the build, which trains them then)."""
    if not isinstance(ranges, list) or not all(isinstance(value, (int, float)) for value in ranges):
        return None
    return [float(value) for value in ranges]


def _loaded(record: dict[str, Any], settings: IndexSettings, where: str) -> Any:
    """The transform of a header's record, read as the index reads its own files (which checks their shapes)."""
    from ..transforms import load_transform

    try:
        with tempfile.TemporaryDirectory(prefix="semsearch-import-") as directory:
            for name, data in record["files"].items():
                if Path(name).name != name:
                    raise ValueError(f"a file name with a directory in it: {name!r}")
                (Path(directory) / name).write_bytes(base64.b64decode(data, validate=True))
            return load_transform(Path(directory), settings.spec, settings.encoder_dim)
    except (SemsearchError, ValueError, TypeError, KeyError, AttributeError) as error:
        reason = f"{error.path.name} {error.reason}" if isinstance(error, DamagedFile) else brief(error)
        raise DataError(
            f"its transform cannot be read ({reason}): export the index again",
            path=where,
            line=1,
            field="transform",
        ) from None
