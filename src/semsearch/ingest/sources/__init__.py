"""Where documents come from. Every source yields each Document, or the DataError an entry is, with its place
(base.Source), so a corpus of any kind is checked, skipped and counted alike (ingest/documents.py):

- `jsonl.py`: a JSONL file (`-`, a pipe, `.gz`), with an .npy file of vectors made elsewhere;
- `files.py`: one document file, or a directory walked recursively (the kinds in `formats/`, a parser each);
- `tables.py`: CSV, TSV and Parquet files, a pandas DataFrame or a pyarrow Table, a row a document (a file's
  rows read by a child process with pyarrow: `tablereader.py`, `tablerows.py`).

`open_source` picks the kind of each path by its suffix, and by its content where the suffix is missing or lies."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import DataError
from .base import Source, Sources
from .fields import FieldNames
from .formats import DOCUMENT_KINDS, TABLE_KINDS

__all__ = ["FieldNames", "Source", "Sources", "open_source", "is_table"]


def open_source(
    paths: str | Path | Sequence[str | Path] | Any,
    fields: FieldNames = FieldNames(),
    vectors: str | Path | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    no_ignore: bool = False,
    extraction: Any = None,
) -> Source:
    """The source of one path (or of several, read in turn), or of an in-memory table. A directory is walked
    (files.DirectorySource: `include`, `exclude`, `hidden`, `no_ignore`); a file is read by its kind; `vectors`
    (an .npy file) goes with a single JSONL file; `extraction` (ocr.Extraction: how pictures are read, by default
    as an ingest reads them: --ocr auto) goes to the document files."""
    from .jsonl import JsonlSource
    from .tables import TableSource

    if is_table(paths):
        return TableSource(paths, fields)
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise DataError("no path given")
    if vectors is not None and len(paths) > 1:
        raise DataError(f"--vectors goes with one JSONL file, not {len(paths)} paths", path=vectors)

    def table_or_jsonl(path: Path, kind: str) -> Source:  # met in a directory
        return JsonlSource(path, fields) if kind == "jsonl" else TableSource(path, fields, kind, found=True)

    parts: list[Source] = []
    if extraction is None and any(str(path) != "-" for path in paths):
        from ..ocr import extraction as default_extraction

        extraction = default_extraction()
    for path in paths:
        if str(path) == "-":
            parts.append(JsonlSource(path, fields, vectors))
            continue
        path = Path(path)
        if path.is_dir() and vectors is not None:
            raise DataError("--vectors goes with a JSONL file, not a directory", path=path)
        if path.is_dir():
            from .files import DirectorySource

            parts.append(
                DirectorySource(
                    path, include, exclude, hidden, no_ignore, tables=table_or_jsonl, extraction=extraction
                )
            )
            continue
        kind = _given_kind(path)
        if vectors is not None and kind != "jsonl":
            raise DataError("--vectors goes with a JSONL file", path=path)
        if kind in DOCUMENT_KINDS:
            from .files import FileSource

            parts.append(FileSource(path, kind, extraction))
        elif kind in TABLE_KINDS:
            parts.append(TableSource(path, fields, kind))
        else:
            parts.append(JsonlSource(path, fields, vectors))
    return parts[0] if len(parts) == 1 else Sources(parts)


def is_table(value: Any) -> bool:
    """A pandas DataFrame or a pyarrow Table / RecordBatch (told by their module, importing neither)."""
    module = type(value).__module__.split(".")[0]
    return module in ("pandas", "pyarrow") and hasattr(value, "columns")


def _given_kind(path: Path) -> str:
    """The kind of a file named on the command line (JSONL unless it shows another)."""
    from ..jsonl import needs_spooling
    from .files import HEAD_BYTES
    from .formats import kind_of

    if needs_spooling(path):
        return "jsonl"  # a pipe or socket: read once, as JSONL
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        head = b""  # reading it reports why, naming the file
    return kind_of(path.name, head, given=True) or "jsonl"
