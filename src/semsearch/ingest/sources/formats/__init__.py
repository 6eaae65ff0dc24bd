"""One parser per kind of document file, each a module with `parse(data: bytes) -> Parsed`: the file's text,
its own title, the metadata it carries (Markdown's front matter) and its sections, each a stretch of the text
with its place in the file. The parsers are real ones from the package registry (the `files` extra), imported
only when a file of their kind is read; a file that cannot be read raises Unreadable with the reason."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ....documents import Section
from ...ocr import TEXT_LAYERS_ONLY, Extraction


class Unreadable(Exception):
    """A file of a known kind that cannot be read: the reason, as the one-line error says it."""


@dataclass
class Parsed:
    text: str
    title: str | None = None
    sections: list[Section] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


# kind -> (module, suffixes): the kind is the document's `type` metadata
DOCUMENT_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "markdown": ("markdown", (".md", ".markdown")),
    "text": ("text", (".txt", ".text")),
    "rst": ("rst", (".rst",)),
    "html": ("html", (".html", ".htm", ".xhtml")),
    "pdf": ("pdf", (".pdf",)),
    "docx": ("docx", (".docx",)),
    "image": ("image", (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")),
    "code": (
        "text",
        tuple(
            f".{suffix}"
            for suffix in [
                "py",
                "pyi",
                "js",
                "mjs",
                "ts",
                "tsx",
                "jsx",
                "go",
                "rs",
                "java",
                "kt",
                "scala",
                "swift",
                "c",
                "h",
                "cc",
                "cpp",
                "hpp",
                "cxx",
                "cs",
                "rb",
                "php",
                "pl",
                "lua",
                "r",
                "jl",
                "sh",
                "bash",
                "zsh",
                "fish",
                "ps1",
                "sql",
                "hs",
                "ml",
                "ex",
                "exs",
                "erl",
                "clj",
                "dart",
                "m",
                "css",
                "scss",
                "vue",
                "svelte",
                "toml",
                "yaml",
                "yml",
                "ini",
                "cfg",
            ]
        ),
    ),
}
# What each kind's parser imports when it first reads a file: a pool's server imports them once for its workers
LIBRARIES = {
    "markdown": ("markdown_it", "mdit_py_plugins.front_matter", "yaml"),
    "html": ("lxml.html",),
    "pdf": ("pypdfium2",),
    "docx": ("docx",),
    "rst": ("docutils.core",),
    "image": ("PIL.Image",),
}
# A table or a JSONL corpus: each row or line a document (sources/tables.py, sources/jsonl.py).
TABLE_KINDS = {"csv": (".csv",), "tsv": (".tsv", ".tab"), "parquet": (".parquet", ".pq")}
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".gz")
SUFFIX_KIND = {suffix: kind for kind, (_, suffixes) in DOCUMENT_KINDS.items() for suffix in suffixes} | {
    suffix: kind for kind, suffixes in TABLE_KINDS.items() for suffix in suffixes
}
SUFFIX_KIND.update({suffix: "jsonl" for suffix in JSONL_SUFFIXES})
BINARY_KINDS = {"pdf": b"%PDF-", "docx": b"PK\x03\x04", "parquet": b"PAR1"}
# PNG, JPEG, TIFF (both byte orders), WebP (a RIFF file whose form is WEBP)
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
MISSING_EXTRA = "the files extra is needed to read {kind} files: pip install 'semsearch[files]'"


def parser(kind: str, extraction: Extraction = TEXT_LAYERS_ONLY) -> Callable[[bytes, str], Parsed]:
    """The parse function of a document kind, imported on first use; the kinds whose text depends on how it
    is extracted (OCR) take the ingest's `extraction`."""
    module = importlib.import_module(f".{DOCUMENT_KINDS[kind][0]}", __name__)
    if getattr(module, "TAKES_EXTRACTION", False):
        return lambda data, name: module.parse(data, kind, extraction)
    return lambda data, name: module.parse(data, kind)


def kind_of(name: str, head: bytes, given: bool = False) -> str | None:
    """A file's kind from its name's suffix and its first bytes (None: of no known kind, ignored). Content wins
    where the suffix is missing or lies: a `.pdf` holding HTML is read as HTML, a file without a suffix holding
    JSON lines as JSONL. `given`: named on the command line, where any other file is read as JSONL, as always."""
    lowered = name.lower()
    suffix = lowered[lowered.rfind(".") :] if "." in lowered.lstrip(".") else ""
    if head.startswith(IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return "image"
    for kind, magic in BINARY_KINDS.items():
        if head.startswith(magic) and (kind != "docx" or suffix == ".docx" or b"word/" in head):
            return kind
    by_suffix = SUFFIX_KIND.get(suffix)
    if suffix == ".gz" and not given and not lowered.endswith((".jsonl.gz", ".ndjson.gz")):
        return None
    if by_suffix in BINARY_KINDS or by_suffix == "image":  # the content is not what the suffix says
        return _sniffed(head)
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
