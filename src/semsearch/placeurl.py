"""Where a hit's place opens: `place_url(metadata, location)`, the address under `serve`'s /files route
(server/files.py) of the file a document was read from, at the place (`/files/manual.pdf#page=71`,
`/files/notes.md#L120-L124`, `/files/guide.html#install`). Below every stage: the hit shaper calls it.

The address is the document's metadata `path` (as the ingest reached the file) made relative and normal: the
route finds the file by the longest tail of it that a recorded folder holds, never by opening the path."""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import quote

FILES_ROUTE = "/files/"
# the file kinds (metadata `type`) the route serves; a text kind opens as a page of numbered lines
LINE_KINDS = frozenset({"markdown", "text", "rst", "code", "csv", "tsv", "jsonl"})
FILE_KINDS = LINE_KINDS | {"pdf", "html", "docx", "parquet"}


def file_address(shown: str) -> str | None:
    """The /files/ path of a file shown as `shown`: normalised, made relative (leading `/` and `..` dropped)."""
    if not shown or "\x00" in shown or "\\" in shown:
        return None
    parts = [part for part in posixpath.normpath(shown).split("/") if part not in ("", ".", "..")]
    return "/".join(parts) or None


def place_url(metadata: dict[str, Any], location: dict[str, Any] | None) -> str | None:
    """The address that opens a hit's place in the file its document was read from (None: a document not
    read from a file the route serves, as a JSON line's)."""
    shown, kind = metadata.get("path"), metadata.get("type")
    if not isinstance(shown, str) or kind not in FILE_KINDS or not (address := file_address(shown)):
        return None
    url = FILES_ROUTE + quote(address, safe="/")
    location = location or {}
    if kind == "pdf" and isinstance(location.get("page"), int):
        return f"{url}#page={location['page']}"
    if kind in LINE_KINDS and isinstance(start := location.get("line_start"), int):
        end = location.get("line_end")
        return f"{url}#L{start}" + (f"-L{end}" if isinstance(end, int) and end > start else "")
    if kind == "html" and isinstance(anchor := location.get("anchor"), str) and anchor:
        return f"{url}#{quote(anchor, safe='')}"
    return url


def with_place_url(hit: dict[str, Any]) -> dict[str, Any]:
    """The hit JSON with `location.url` where its document came from a file (a location made for it)."""
    url = place_url(hit.get("metadata") or {}, hit.get("location"))
    if url is not None:
        hit["location"] = {**(hit.get("location") or {}), "url": url}
    return hit
