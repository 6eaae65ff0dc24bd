"""`semsearch export`: an index's documents as JSONL, the version-portable way to move or upgrade an index.

The first line is a header: `{"semsearch_export": 1, "settings": {...}, ...}`, the settings the index was made
with (model and its fingerprint, pooling, max_length, chunking, transform, index type; the manifest's own
fields), its query defaults (`query_defaults`: mode, alpha, rerank) and the calibration record they come from
(`calibration`), the fitted transform (`transform`: its kind and files, safetensors and JSON in base64;
exported.py), which an index keeps through upserts while the same vectors would fit another today, an 8-bit
index's ranges (`vector_codes`), an hnsw graph's adds and search parameters (`graph`), an ivf or pq index's
cells' centroids, pq's codebooks and search parameters (`lists`): what the import needs to answer as this index
does. Then one document per line, in the order they were stored: `id`, `title` (when it has one), `text` and
`metadata` as ingested. With vectors, `vector` is the raw encoder vector (before the transform) as a list of
numbers (9 significant digits: each float32 exactly); a document the index cut into passages has one per
passage: `vector` is then a list of lists and `passages` their character spans in the text, `[[start, end],
...]`, so an import takes them as they are and encodes nothing (documents.py reads them back). A document read
from a file has `sections`, `[[start, end, location], ...]` (documents.py's Section): an import cuts and places
its passages as the index did.

`semsearch ingest` of the file makes a new index with the header's settings, calibration and transform. Memory stays at one batch of
documents: rows are read by a cursor, vectors a batch at a time."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import IndexStateError
from ..ingest.exported import EXPORT_KEY, Lists, transform_record
from ..ingest.given import SECTIONS
from ..retrieval.query import QueryDefaults
from ..settings import NO_MODEL
from ..storage.files import atomic_path
from .directory import IndexDirectory

EXPORT_FORMAT = 1
BATCH_DOCS = 1024  # documents whose vectors are read together
FLOAT32 = "{:.9g}"  # the shortest format every float32 survives (9 significant digits)


def header(index: IndexDirectory, vectors: bool) -> dict[str, Any]:
    state = index.state
    defaults = QueryDefaults.recorded(index.fusible, index.settings.rerank, state.calibration)
    return {
        EXPORT_KEY: EXPORT_FORMAT,
        "semsearch": _version(),
        "generation": state.generation,
        "documents": state.count,
        "passages": state.rows,
        "vectors": vectors,
        "settings": asdict(index.settings),
        # what queries take when they do not say, and the calibration they come from (calibration.py's record,
        # or why there is none): an import keeps it, so it answers as this index does (exported.py)
        "query_defaults": defaults.to_json(),
        "calibration": state.calibration,
        # the transform as fitted (maybe before upserts): what the vectors are indexed and candidates found by
        "transform": transform_record(index.transform, index.settings.transform),
        # flat-sq8's and hnsw-sq8's ranges, trained on the rows of their build: the import codes its vectors the
        # same (the index read only where its structure is SQ8: another kind's can be gigabytes)
        "vector_codes": index.vectors.code_ranges()
        if (index.state.index_structure or "").endswith("SQ8")
        else None,
        # an hnsw graph's adds (the rows of each, as runs) and the search parameters tuned for it: the import adds
        # its rows so, builds the same graph and searches it as this index does (vectorindex.VectorIndex.blocks)
        "graph": None
        if state.graph_blocks is None
        else {
            "blocks": state.graph_blocks,
            "search_params": state.search_params,
            "measured_recall": state.measured_recall,
        },
        # an ivf or pq index's training (its cells' centroids, pq's codebooks), trained on the rows of its build,
        # and the search parameters tuned for it: the import files and codes its rows so and searches them as
        # this index does (exported.Lists; the index read only where its structure is IVF)
        "lists": Lists.record(index.vectors, state.search_params, state.measured_recall)
        if (state.index_structure or "").startswith("IVF")
        else None,
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semsearch")
    except PackageNotFoundError:
        return "unknown"


def export(
    index: IndexDirectory,
    out: str | Path | IO[str],
    *,
    vectors: bool = False,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the index's documents to `out` (a path, written whole or not at all; `.gz` compressed; or an open
    text stream); returns how many. An index without a model always exports its vectors: they are all it has."""
    vectors = vectors or index.settings.model == NO_MODEL
    if isinstance(out, (str, Path)):
        with atomic_path(out) as tmp:
            opener = gzip.open if str(out).endswith(".gz") else open
            with opener(tmp, "wt", encoding="utf-8") as handle:
                return export(index, handle, vectors=vectors, progress=progress)
    with index.pinned():
        out.write(json.dumps(header(index, vectors), ensure_ascii=False) + "\n")
        count = 0
        for batch in _batches(index, vectors):
            out.write("".join(line + "\n" for line in batch))
            count += len(batch)
            if progress:
                progress(len(batch))
    if count != index.state.count:
        raise IndexStateError(
            f"{index.path}: exported {count} documents, the manifest counts {index.state.count}"
        )
    return count


def _batches(index: IndexDirectory, vectors: bool) -> Iterator[list[str]]:
    """The documents' JSON lines, a batch at a time."""
    store = index.store
    passages = store.passages() if store.has_keywords else None  # older stores: a passage per document
    for rows in store.document_batches(BATCH_DOCS):
        records = [_record(*row[1:]) for row in rows]
        if not vectors:
            yield [json.dumps(record, ensure_ascii=False) for record in records]
            continue
        pks = np.array([row[0] for row in rows], dtype=np.int64)
        counts = passages.counts_of(pks) if passages is not None else np.ones(len(pks), np.int64)
        yield list(_with_vectors(index, records, pks, counts))


def _record(doc_id: str, title: str | None, text: str, metadata: str, sections: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": doc_id}
    if title is not None:
        record["title"] = title
    record["text"] = text
    record["metadata"] = json.loads(metadata)
    if sections is not None:
        record[SECTIONS] = json.loads(sections)
    return record


def _numbers(vector: np.ndarray) -> str:
    """A float32 vector as a JSON list: 9 significant digits give back every float32 exactly, in half the
    characters of the float64 repr, and parse twice as fast."""
    return "[" + ",".join(map(FLOAT32.format, vector.tolist())) + "]"


def _with_vectors(
    index: IndexDirectory, records: list[dict], pks: np.ndarray, counts: np.ndarray
) -> Iterator[str]:
    rows = np.concatenate([np.arange(pk, pk + n) for pk, n in zip(pks.tolist(), counts.tolist())])
    raw = index.raw.read(rows)
    long_rows = [row for pk, n in zip(pks.tolist(), counts.tolist()) if n > 1 for row in range(pk, pk + n)]
    spans = index.store.spans(long_rows) if long_rows else {}
    at = 0
    for record, pk, n in zip(records, pks.tolist(), counts.tolist()):
        if n == 1:
            vector = _numbers(raw[at])
        else:
            vector = "[" + ",".join(_numbers(row) for row in raw[at : at + n]) + "]"
            record["passages"] = [list(spans[row]) for row in range(pk, pk + n)]
        at += n
        yield json.dumps(record, ensure_ascii=False)[:-1] + ', "vector": ' + vector + "}"
