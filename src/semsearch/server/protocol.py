"""The HTTP side of the API: limits, keys, parameters and bodies read and checked, errors as JSON.

Every answer is a JSON object with `took_ms`; an error is `{"error": {"code", "message"}, "took_ms"}` with its
status: 400 a bad parameter, 401 no key, 403 a wrong key or writes not enabled, 404 nothing there, 405, 409 a large
delete without confirm=true or a page asked of a generation the index has left (generation_changed), 413 a body over the limit, 422 an invalid document, 503 another writer holds the
index (or it is being replaced), 507 a full disk (nothing written)."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import (
    DataError,
    GenerationChanged,
    SemsearchError,
    SettingsError,
    WriterBusy,
    disk_full,
    os_error_message,
)
from ..ingest.jsonl import MAX_DEPTH, depth
from ..retrieval.hits import error_json

MAX_LINE_BYTES = 16 << 20  # as ingest's longest line
SEARCHED = "semsearch.searched"  # the scope's key for a search answer's (mode, queries), read by metrics.py


@dataclass(frozen=True)
class ServerSettings:
    """The server's keys and limits. `api_key`: an unscoped writer's key (None and no keys file: writes are
    refused); `search_key`: an unscoped reader's (None and no keys file: reads are open to whoever reaches the
    address); `keys_file`: keys with scopes (principals.py)."""

    api_key: str | None = None
    search_key: str | None = None
    keys_file: str | None = None
    max_k: int = 1000  # results per query, and rerank candidates
    max_offset: int = 10_000  # where a page may start (a page reads the windows up to offset + k)
    max_batch: int = 64  # queries in one POST /search/batch
    max_body: int = MAX_LINE_BYTES  # bytes of a request body
    write_wait: float = 2.0  # seconds a write waits for another writer before answering 503
    threads: int = 2  # searches at once in a process, each thread with the index open (the cores here)
    backup_dir: str | None = None  # where POST /backup writes backups (None: it is refused)
    files: bool = True  # GET /files/{path} serves the files the index ingested (server/files.py)


class ApiError(Exception):
    """An error answered as JSON with `status`; `code` is a short machine-readable name."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def error_of(error: Exception, invalid_documents: bool = False) -> ApiError:
    """A library error as the API's: bad input 400 (a document 422), a busy writer 503, the rest 500."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, SemsearchError):
        message = error.naming(error.setting) if error.setting else str(error)
        if isinstance(error, DataError) and invalid_documents:
            return ApiError(422, "invalid_document", message)
        if isinstance(error, DataError | SettingsError):
            return ApiError(400, "bad_parameter", message)
        if isinstance(error, GenerationChanged):
            return ApiError(409, "generation_changed", message)
        # The writer lock's message (generations.WriterLock); a WriterBusy error class would say it better.
        if isinstance(error, WriterBusy):
            return ApiError(503, "busy", message, {"Retry-After": "1"})
        return ApiError(500, "index_error", message)
    if disk_full(error):
        return ApiError(507, "disk_full", os_error_message(error))
    if isinstance(error, RecursionError):
        return ApiError(400, "bad_parameter", "input nested too deeply to read")
    return ApiError(500, "internal_error", f"{type(error).__name__}: {error}")


def answer(payload: dict[str, Any], started: float, status: int = 200, headers=None) -> JSONResponse:
    payload["took_ms"] = round((time.perf_counter() - started) * 1000, 3)
    return JSONResponse(payload, status, headers)


def error_answer(error: ApiError, started: float) -> JSONResponse:
    return answer(error_json(error.code, error.message), started, error.status, error.headers)


Handler = Callable[[Request], Awaitable[dict[str, Any]]]


def endpoint(handler: Handler, invalid_documents: bool = False) -> Callable[[Request], Awaitable[Any]]:
    """A Starlette endpoint from a handler returning a JSON object: timed, its errors answered as JSON."""

    @functools.wraps(handler)  # its operations (schemas.described) with it
    async def run(request: Request) -> JSONResponse:
        started = time.perf_counter()
        try:
            out = await handler(request)
            if searched := getattr(out, "queries", 0):  # metrics.Searched: counted by metrics.Measured
                request.scope[SEARCHED] = out.mode, searched
            return answer(out, started)
        except Exception as error:
            return error_answer(error_of(error, invalid_documents), started)

    return run


# ---- keys ------------------------------------------------------------------------------------------------


def bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


# ---- bodies and parameters -----------------------------------------------------------------------------


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 past `limit` bytes (by its Content-Length, or while it streams)."""
    too_large = ApiError(413, "too_large", f"the request body is over the limit of {limit:,} bytes")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request, limit: int) -> Any:
    body = await read_body(request, limit)
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ApiError(400, "bad_json", f"the body is not valid JSON ({error})") from None


def documents_of(body: bytes) -> list[Any]:
    """POST /documents: a JSON array of documents, or JSON lines (one document per line), as ingest reads them.
    Invalid JSON is named by its line; `Index.add` then validates the documents themselves."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ApiError(
            422, "invalid_document", f"bytes that are not UTF-8 at byte {error.start + 1}"
        ) from None
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
            too_deep(records, 1)
        except RecursionError:
            too_deep(None, 1, deep=True)
        except json.JSONDecodeError as error:
            raise ApiError(
                422,
                "invalid_document",
                f"line {error.lineno}: not valid JSON ({error.msg} at column {error.colno})",
            ) from None
        return records
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
            too_deep(records[-1], number)
        except RecursionError:
            too_deep(None, number, deep=True)
        except json.JSONDecodeError as error:
            raise ApiError(
                422,
                "invalid_document",
                f"line {number}: not valid JSON ({error.msg} at column {error.colno})",
            ) from None
    return records


def too_deep(value: Any, line: int, deep: bool = False) -> None:
    """422 for JSON nested deeper than ingest takes (jsonl.MAX_DEPTH), as it says for a line of a file."""
    if deep or depth(value) > MAX_DEPTH + (1 if line == 1 and isinstance(value, list) else 0):
        raise ApiError(422, "invalid_document", f"line {line}: JSON nested deeper than {MAX_DEPTH} levels")


def bounded_int(value: Any, name: str, low: int, high: int) -> int | None:
    """An integer parameter in [low, high] (None when not given), else 400 naming it."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ApiError(400, "bad_parameter", f"{name} must be an integer, got {json.dumps(value)}")
    try:
        number = int(value)
    except ValueError:
        raise ApiError(400, "bad_parameter", f"{name} must be an integer, got {value!r}") from None
    if not low <= number <= high:
        raise ApiError(400, "bad_parameter", f"{name} must be from {low} to {high}, got {number}")
    return number


def string_list(value: Any, name: str) -> list[str]:
    """A list of strings from a JSON value (a string alone is a list of one)."""
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ApiError(400, "bad_parameter", f"{name} must be a string or a list of strings")
    return values


def flag(value: Any, name: str) -> bool:
    """A true/false query parameter (absent: false)."""
    if value in (None, "", "false", "0"):
        return False
    if value in ("true", "1"):
        return True
    raise ApiError(400, "bad_parameter", f"{name} must be true or false, got {value!r}")


def bounded_float(value: Any, name: str, low: float, high: float) -> float:
    """A number parameter in [low, high] (a JSON number or its text), else 400 naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ApiError(400, "bad_parameter", f"{name} must be a number, got {json.dumps(value)}")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ApiError(400, "bad_parameter", f"{name} must be a number, got {value!r}") from None
    if not low <= number <= high:  # NaN is in no range
        raise ApiError(400, "bad_parameter", f"{name} must be from {low:g} to {high:g}, got {value!r}")
    return number
