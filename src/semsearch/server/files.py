"""GET /files/{path}: the files the index ingested, read-only, so that a hit's place opens (placeurl.py makes
its address). Only a file the index records (table `files`: each folder's root and its files' relative paths)
whose documents are still stored, and only inside its folder:

- the path asked is never opened: it is split into components (refused, as a 404, when any is empty, `.` or
  `..`, or holds a NUL or a backslash: `..`, `%2e%2e`, `%2f..`, doubled slashes, absolute paths all end so) and
  looked up; a component tail of it must be a recorded relative path and the rest a tail of that folder's root;
- the file opened is the recorded root joined with the recorded relative path, resolved, and refused unless it
  is still inside the resolved root (a symbolic link out, or one swapped in after the ingest); it is then opened
  a component at a time from the root with O_NOFOLLOW, so a link swapped in between the check and the open is
  refused too, and must be a regular file.

Text, Markdown, reStructuredText, code and CSV files open as a page of numbered lines (every character of the
file escaped; the lines the address names, `#L12-L20`, marked by /static/lines.js); `?raw=1` gives the bytes.
HTML is served sandboxed (no script runs, an opaque origin), PDF as itself (`#page=N` is the viewer's)."""

from __future__ import annotations

import functools
import html
import os
import stat
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from ..ingest.sources.files import HEAD_BYTES
from ..ingest.sources.formats import kind_of
from ..placeurl import LINE_KINDS, with_place_url
from .protocol import ApiError, error_answer, error_of
from .schemas import Operation, described

if TYPE_CHECKING:
    from ..index import Index

CHUNK = 1 << 16
MAX_LINES_PAGE = 16 << 20  # bytes of a text file shown as a page of lines; larger ones come as text
MEDIA = {
    "pdf": "application/pdf",
    "html": "text/html",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
# A served HTML file runs nothing and reaches nothing but its own inline styles and pictures of this server.
HTML_POLICY = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"
# The page of lines: its one script and style sheet, nothing else.
LINES_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
NOT_FOUND = "no file {path} in this index"


@dataclass
class Opened:
    """A served file: its open descriptor, size, kind (formats.kind_of) and path as asked."""

    fd: int
    size: int
    kind: str | None
    path: str


def components(path: str) -> list[str] | None:
    """The path's components, or None for any path that is not plainly relative (see the module's text)."""
    if not path or "\x00" in path or "\\" in path:
        return None
    parts = path.split("/")
    return None if any(part in ("", ".", "..") for part in parts) else parts


def open_inside(root: str, relative: str) -> int | None:
    """A read-only descriptor of root/relative if that is a regular file inside root once every link is
    resolved, opened without following any link on the way (None otherwise)."""
    real_root = os.path.realpath(root)
    if real_root != os.path.normpath(root):  # recorded resolved: the folder, or one above it, is a link now
        return None
    target = os.path.realpath(os.path.join(real_root, *relative.split("/")))
    if os.path.commonpath([real_root, target]) != real_root or target == real_root:
        return None
    *folders, name = os.path.relpath(target, real_root).split(os.sep)
    try:
        at = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for folder in folders:
            inner = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at)
            os.close(at)
            at = inner
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=at)
    except OSError:
        return None
    finally:
        os.close(at)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def open_file(index: Index, path: str) -> Opened:
    """The recorded file at `path`, opened (on a reader thread); 404 for anything else."""
    parts = components(path)
    for root, relative in index.served_files(parts) if parts else []:
        fd = open_inside(root, relative)
        if fd is not None:
            head = os.pread(fd, HEAD_BYTES, 0)
            return Opened(fd, os.fstat(fd).st_size, kind_of(PurePosixPath(relative).name, head), path)
    raise ApiError(404, "not_found", NOT_FOUND.format(path=repr(path)))


def chunks(fd: int) -> Iterator[bytes]:
    """The file's bytes; the descriptor is closed at their end, or with its file object if they are never read
    (a client gone before its body: the object is made here, not in the generator)."""
    handle = os.fdopen(fd, "rb", buffering=0)

    def read() -> Iterator[bytes]:
        with handle:
            yield from iter(lambda: handle.read(CHUNK), b"")

    return read()


def numbered(text: str) -> list[str]:
    """The text's lines numbered as ingest numbers them (formats.decoded: \r\n and \r are newlines; no other
    character is, unlike str.splitlines)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and not lines[-1] else lines


def lines_page(opened: Opened, base: str) -> HTMLResponse:
    """The text file as a page of numbered lines, every character of it escaped; `base`: the server's URL
    (absolute, so a copy opened from a blob: address finds its script too)."""
    try:
        text = b"".join(chunks(opened.fd)).decode("utf-8-sig", errors="replace")
    finally:
        opened.fd = -1
    rows = "".join(
        f'<span class="line" id="L{n}"><a class="n" href="#L{n}">{n}</a>{html.escape(line)}\n</span>'
        for n, line in enumerate(numbered(text), start=1)
    )
    name = html.escape(opened.path)
    raw = html.escape(f"{base}files/{quote(opened.path, safe='/')}?raw=1")
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{name}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="{base}static/lines.css"><script src="{base}static/lines.js" defer>'
        f'</script></head><body><header><a href="{base}">semsearch</a> <span class="file">{name}</span> '
        f'<a href="{raw}">raw</a></header><pre id="lines">{rows}</pre></body></html>'
    )
    return HTMLResponse(page, headers={"content-security-policy": LINES_POLICY, "cache-control": "no-cache"})


def response_of(opened: Opened, raw: bool, base: str) -> Response:
    if opened.kind in LINE_KINDS and not raw and opened.size <= MAX_LINES_PAGE:
        return lines_page(opened, base)
    name = quote(PurePosixPath(opened.path).name)
    headers = {
        "content-length": str(opened.size),
        "cache-control": "no-cache",
        "content-disposition": f"{'inline' if opened.kind in ('pdf', 'html', *LINE_KINDS) else 'attachment'}; "
        f"filename*=UTF-8''{name}",
    }
    media = MEDIA.get(opened.kind or "", "application/octet-stream")
    if opened.kind in LINE_KINDS:
        media = "text/plain; charset=utf-8"
    if opened.kind == "html":
        headers["content-security-policy"] = HTML_POLICY
    return StreamingResponse(chunks(opened.fd), media_type=media, headers=headers)


def placed(handler: Callable[[Request], Awaitable[dict[str, Any]]], settings: Any) -> Callable:
    """The handler whose answer's hits (`hits`, a batch's `results[].hits`) carry `location.url`, where the
    route serves files."""
    if not settings.files:
        return handler

    @functools.wraps(handler)
    async def run(request: Request) -> dict[str, Any]:
        out = await handler(request)
        for hits in [out.get("hits", []), *(result["hits"] for result in out.get("results", []))]:
            for hit in hits:
                with_place_url(hit)
        return out

    return run


def file_routes(service: Callable[[Request], Any], operation: Operation) -> list[Route]:
    """The /files route over the app's service (its reader threads and keys: a read)."""

    @described(GET=operation, HEAD=operation)
    async def get_file(request: Request) -> Response:
        started = time.perf_counter()
        try:
            opened = await service(request).read(request, open_file, request.path_params["path"])
        except Exception as error:
            return error_answer(error_of(error), started)
        return response_of(opened, request.query_params.get("raw") == "1", str(request.base_url))

    return [Route("/files/{path:path}", get_file, methods=["GET", "HEAD"])]
