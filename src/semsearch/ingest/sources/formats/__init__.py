"""One parser per kind of document file. A format is one module in this package that declares
`FORMATS = (Format(kind, suffixes, ...),)` and defines `parse(data: bytes, kind: str) -> Parsed`: the file's
text, its own title, the metadata it carries (Markdown's front matter) and its sections, each a stretch of the
text with its place in the file. Nothing else registers it: the first file whose kind is asked for imports
every module here once and reads their declarations, so a module's top imports no parser library (those are
real ones from the package registry, in the `files` extra, imported inside `parse`); a file that cannot be
read raises Unreadable with the reason."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from ....documents import Section
from ...ocr import TEXT_LAYERS_ONLY, Extraction


class Unreadable(Exception):
    """A file of a known kind that cannot be read: the reason, as the one-line error says it."""


@dataclass
class Parsed:
    """A file's text, title, sections and metadata (the document's); `blank_pages`: the pages OCR recognized and
    found no text on, in a file that has text elsewhere (the ingest names them; the document does not keep
    them)."""

    text: str
    title: str | None = None
    sections: list[Section] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    blank_pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Format:
    """A kind of document file: its name (the document's `type` metadata), the suffixes that name it, the
    libraries its `parse` imports on a file's first read (a pool's server imports them once for its workers),
    `claims`: whether a file's first bytes and suffix show it whatever the suffix says (a binary format's
    magic), and whether `parse` takes the ingest's Extraction (OCR) as its third argument."""

    kind: str
    suffixes: tuple[str, ...]
    libraries: tuple[str, ...] = ()
    claims: Callable[[bytes, str], bool] | None = None
    takes_extraction: bool = False
    module: str = ""  # filled in by the registry: the module that declares it


def starting_with(*magic: bytes) -> Callable[[bytes, str], bool]:
    """A `claims` for a format told by its first bytes alone."""
    return lambda head, suffix: head.startswith(magic)


@cache
def registered() -> dict[str, Format]:
    """Every format this package's modules declare, by kind (helper modules declare none). Two formats that
    name one kind or one suffix are a mistake the first ingest reports."""
    found: dict[str, Format] = {}
    owners: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        module = importlib.import_module(f".{info.name}", __name__)
        for declared in getattr(module, "FORMATS", ()):
            if declared.kind in found or declared.kind in SOURCE_KINDS:
                owner = found[declared.kind].module if declared.kind in found else "a source"
                raise RuntimeError(f"formats {owner} and {info.name} both read {declared.kind}")
            for suffix in declared.suffixes:
                if suffix in owners or suffix in SOURCE_SUFFIXES:
                    raise RuntimeError(
                        f"{suffix} is claimed by {info.name} and {owners.get(suffix, 'a source')}"
                    )
                owners[suffix] = info.name
            found[declared.kind] = replace(declared, module=info.name)
    return found


@cache
def _suffix_kinds() -> dict[str, str]:
    return {suffix: declared.kind for declared in registered().values() for suffix in declared.suffixes}


class _Registered(Mapping[str, Any]):
    """A read-only view of the registered formats (kind -> what `view` takes of its Format), read on first use:
    importing this package costs no format module, so a JSONL ingest or `--help` imports none."""

    def __init__(self, view: Callable[[Format], Any]):
        self._view = view
        self._items: dict[str, Any] | None = None

    def _map(self) -> dict[str, Any]:
        if self._items is None:
            self._items = {kind: self._view(declared) for kind, declared in registered().items()}
        return self._items

    def __getitem__(self, kind: str) -> Any:
        return self._map()[kind]

    def __contains__(self, kind: object) -> bool:
        return kind not in SOURCE_KINDS and kind in self._map()

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


# A table or a JSONL corpus: each row or line a document (sources/tables.py, sources/jsonl.py).
TABLE_KINDS = {"csv": (".csv",), "tsv": (".tsv", ".tab"), "parquet": (".parquet", ".pq")}
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".gz")
SOURCE_KINDS = {*TABLE_KINDS, "jsonl"}
SOURCE_SUFFIXES = {suffix: kind for kind, suffixes in TABLE_KINDS.items() for suffix in suffixes} | {
    suffix: "jsonl" for suffix in JSONL_SUFFIXES
}
PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
DOCUMENT_KINDS: Mapping[str, Format] = _Registered(lambda declared: declared)
LIBRARIES: Mapping[str, tuple[str, ...]] = _Registered(lambda declared: declared.libraries)
MISSING_EXTRA = "the files extra is needed to read {kind} files: pip install 'semsearch[files]'"


def parser(kind: str, extraction: Extraction = TEXT_LAYERS_ONLY) -> Callable[[bytes, str], Parsed]:
    """The parse function of a document kind, imported on first use; the kinds whose text depends on how it
    is extracted (OCR) take the ingest's `extraction`."""
    declared = DOCUMENT_KINDS[kind]
    module = importlib.import_module(f".{declared.module}", __name__)
    if declared.takes_extraction:
        return lambda data, name: module.parse(data, kind, extraction)
    return lambda data, name: module.parse(data, kind)


def kind_of(name: str, head: bytes, given: bool = False) -> str | None:
    """A file's kind from its name's suffix and its first bytes (None: of no known kind, ignored). Content wins
    where the suffix is missing or lies: a `.pdf` holding HTML is read as HTML, a file without a suffix holding
    JSON lines as JSONL. `given`: named on the command line, where any other file is read as JSONL, as always."""
    lowered = name.lower()
    suffix = lowered[lowered.rfind(".") :] if "." in lowered.lstrip(".") else ""
    jsonl_named = suffix in JSONL_SUFFIXES and (
        given or suffix != ".gz" or lowered.endswith((".jsonl.gz", ".ndjson.gz"))
    )
    if jsonl_named and (head.startswith(GZIP_MAGIC) or _sniffed(head) == "jsonl"):
        return "jsonl"  # the name and the content agree (no format's magic starts so): no format module read
    formats = registered()
    for declared in formats.values():
        if declared.claims is not None and declared.claims(head, suffix):
            return declared.kind
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    by_suffix = SOURCE_SUFFIXES.get(suffix) or _suffix_kinds().get(suffix)
    if suffix == ".gz" and not given and not lowered.endswith((".jsonl.gz", ".ndjson.gz")):
        return None
    if by_suffix == "parquet" or (by_suffix in formats and formats[by_suffix].claims is not None):
        return _sniffed(head)  # the content is not what the suffix says
    if by_suffix in (None, "text"):
        sniffed = _sniffed(head)
        if given and by_suffix is None:
            return "jsonl" if sniffed in ("jsonl", "text", None) else sniffed
        if by_suffix is None and suffix:
            return None  # an unknown suffix in a directory: passed over, counted as ignored
        return sniffed if sniffed in ("html", "jsonl") else by_suffix or sniffed
    return by_suffix


def _sniffed(head: bytes) -> str | None:
    """The kind a file's first bytes show: HTML, JSON lines, else plain text if it reads as UTF-8."""
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:64].lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "html"
    if start.startswith(b"{"):
        return "jsonl"
    if b"\0" in head:
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:  # not a character cut at the end of the sample
            return None
    return "text"


def decoded(data: bytes) -> str:
    """A text file's characters: UTF-8 (a byte-order mark dropped), newlines as \\n."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise Unreadable(f"bytes that are not UTF-8 at line {line}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
