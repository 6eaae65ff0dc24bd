"""The Starlette application of `semsearch serve`: the JSON API's routes and the search page, over one index or
several (indexes.py: each at /indexes/{name}/..., the first also at the bare routes).

Reads run on `settings.threads` threads, each owning an Index, writes in a child process with its own (workers.py), waiting
`settings.write_wait` seconds for another writer (then 503); the event loop only parses, checks and answers.
Limits and errors: protocol.py; who a request's key is and what it may see: principals.py, scopes.py."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..retrieval.hits import QUERY_OPTIONS, results_json
from ..settings import FACET_VALUES, MAX_FACET_VALUES
from .backups import backup_options, make_backup
from .documents import add_documents, delete_documents, get_document, stored, text_searchable
from .facetranges import facet_range_routes
from .files import file_routes, placed
from .indexes import DEFAULT_NAME, Indexes, no_index
from .mcp_http import McpEndpoints
from .protocol import (
    ApiError,
    ServerSettings,
    bounded_float,
    bounded_int,
    documents_of,
    endpoint,
    error_answer,
    flag,
    json_body,
    read_body,
    string_list,
)
from .workers import identity, warm

if TYPE_CHECKING:
    from ..index import Index
    from ..retrieval.search import Results

MAX_GENERATION = (1 << 63) - 1
STATIC = Path(__file__).parent / "static"
EXTRAS = QUERY_OPTIONS  # passed to Index.search only when the client sends them
PAGE_FIELDS = {"offset", "generation", "per_document", "full_text"}
SEARCH_FIELDS = {"q", "k", "where", "rerank", "facets", "facet_values", *PAGE_FIELDS, *EXTRAS}
SIMILAR_FIELDS = {"ids", "not", "k", "where", "rerank", *PAGE_FIELDS}
MAX_CROP = 1_000  # words of a snippet
# The page's scripts and styles come from this server only; nothing inline runs (a second wall behind the
# page's textContent-only rendering).
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; "
        b"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


# ---- searching -------------------------------------------------------------------------------------------


def page_options(values: dict[str, Any], settings: ServerSettings) -> dict[str, Any]:
    """What search and similar share: k, where, rerank, offset, generation, per_document and full_text."""
    where = values.get("where")
    full_text = values.get("full_text")
    return {
        "k": bounded_int(values.get("k"), "k", 1, settings.max_k) or 10,
        "where": where if isinstance(where, dict) else string_list(where, "where"),
        "rerank": bounded_int(values.get("rerank"), "rerank", 0, settings.max_k),
        "offset": bounded_int(values.get("offset"), "offset", 0, settings.max_offset) or 0,
        "generation": bounded_int(values.get("generation"), "generation", 0, MAX_GENERATION),
        "per_document": bounded_int(values.get("per_document"), "per_document", 0, settings.max_k),
        "full_text": full_text if isinstance(full_text, bool) else flag(full_text, "full_text"),
    }


def search_options(values: dict[str, Any], settings: ServerSettings) -> dict[str, Any]:
    """Index.search's keyword arguments from a request's parameters (a query string's or a JSON body's)."""
    options = page_options(values, settings)
    if facets := string_list(values.get("facets"), "facets"):
        options["facets"] = facets
        values_asked = bounded_int(values.get("facet_values"), "facet_values", 1, MAX_FACET_VALUES)
        options["facet_values"] = values_asked or FACET_VALUES
    for name in EXTRAS:
        if values.get(name) not in (None, ""):
            options[name] = values[name]
    if "alpha" in options:  # a query string's is text
        options["alpha"] = bounded_float(options["alpha"], "alpha", 0.0, 1.0)
    for name, high in (("typos", 2), ("crop", MAX_CROP)):
        if name in options:
            options[name] = bounded_int(options[name], name, 0, high)
    for name in ("mode", "fusion"):
        if name in options and not isinstance(options[name], str):
            raise ApiError(400, "bad_parameter", f"{name} must be a string")
    return options


def takes(method: Callable, name: str) -> bool:
    parameters = inspect.signature(method).parameters
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def supported(method: Callable, options: dict[str, Any]) -> dict[str, Any]:
    """The options, refusing one this semsearch's Index does not take (a mode before modes exist)."""
    if unknown := [name for name in options if not takes(method, name)]:
        raise ApiError(400, "bad_parameter", f"{', '.join(unknown)}: not supported by this index's semsearch")
    return options


def query_text(value: Any, name: str = "q") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "bad_parameter", f"{name} must be a non-empty string")
    return value


def answered(hits: Results) -> dict[str, Any]:
    """A query's answer: its page's hits (hits.py's shape), where the page starts, the generation read, the
    facets if asked."""
    return results_json(hits)


def search_one(index: Index, q: str, options: dict[str, Any]) -> dict[str, Any]:
    if options.get("mode") != "keyword":
        text_searchable(index)
    hits = index.search(q, **supported(index.search_many, options))
    return {"q": q, "k": options["k"], **answered(hits)}


def search_batch(index: Index, queries: list[str], options: dict[str, Any]) -> dict[str, Any]:
    if options.get("mode") != "keyword":
        text_searchable(index)
    results = index.search_many(queries, **supported(index.search_many, options))
    return {"k": options["k"], "results": [{"q": q, **answered(hits)} for q, hits in zip(queries, results)]}


def similar(index: Index, ids: list[str], negative: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """The documents like `ids` (404 for an id not stored), away from `negative`."""
    stored(index, ids + negative)
    hits = index.similar(ids, negative=negative, **options)
    return {"ids": ids, "not": negative, "k": options["k"], **answered(hits)}


def json_object(body: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "bad_parameter", "the body must be a JSON object")
    if unknown := sorted(set(body) - allowed):
        raise ApiError(
            400, "bad_parameter", f"unknown field {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )
    return body


# ---- the index ---------------------------------------------------------------------------------------------


def describe(index: Index, settings: ServerSettings, writes: bool, keys: bool) -> dict[str, Any]:
    """/info: the index as the key sees it, and the server's limits (`writes`: some key may write; `keys`:
    reads need a key)."""
    index.refresh()
    details = index.info()
    details["server"] = {
        "writes": writes,
        "search_key": keys,
        "max_k": settings.max_k,
        "max_offset": settings.max_offset,
        "max_batch": settings.max_batch,
        "max_body": settings.max_body,
        "extras": [name for name in EXTRAS if takes(index.search_many, name)],
    }
    return details


# ---- the application --------------------------------------------------------------------------------------


def search_routes(svc: Indexes, settings: ServerSettings) -> list[Route]:
    """/search (GET and POST), /search/batch, /documents/{id}/similar and /similar."""

    async def get_search(request: Request) -> dict[str, Any]:
        params = request.query_params
        lists = {"where": params.getlist("where"), "facets": params.getlist("facets")}
        values = {name: params.get(name) for name in SEARCH_FIELDS} | lists
        q = query_text(values["q"])
        return await svc(request).read(request, search_one, q, search_options(values, settings))

    async def post_search(request: Request) -> dict[str, Any]:
        body = json_object(await json_body(request, settings.max_body), SEARCH_FIELDS)
        q = query_text(body.get("q"))
        return await svc(request).read(request, search_one, q, search_options(body, settings))

    async def post_batch(request: Request) -> dict[str, Any]:
        body = json_object(await json_body(request, settings.max_body), SEARCH_FIELDS - {"q"} | {"queries"})
        queries = body.get("queries")
        if not isinstance(queries, list) or not queries:
            raise ApiError(400, "bad_parameter", "queries must be a non-empty list of strings")
        if len(queries) > settings.max_batch:
            raise ApiError(400, "bad_parameter", f"queries: at most {settings.max_batch}, got {len(queries)}")
        queries = [query_text(q, "each query") for q in queries]
        return await svc(request).read(request, search_batch, queries, search_options(body, settings))

    async def get_similar(request: Request) -> dict[str, Any]:
        params = request.query_params
        values = {name: params.get(name) for name in SIMILAR_FIELDS} | {"where": params.getlist("where")}
        ids, negative = [request.path_params["doc_id"]], params.getlist("not")
        return await svc(request).read(request, similar, ids, negative, page_options(values, settings))

    async def post_similar(request: Request) -> dict[str, Any]:
        body = json_object(await json_body(request, settings.max_body), SIMILAR_FIELDS)
        ids, negative = string_list(body.get("ids"), "ids"), string_list(body.get("not"), "not")
        if not ids:
            raise ApiError(400, "bad_parameter", "ids must name at least one document")
        return await svc(request).read(request, similar, ids, negative, page_options(body, settings))

    return [
        Route("/search", endpoint(placed(get_search, settings)), methods=["GET"]),
        Route("/search", endpoint(placed(post_search, settings)), methods=["POST"]),
        Route("/search/batch", endpoint(placed(post_batch, settings)), methods=["POST"]),
        Route("/documents/{doc_id:path}/similar", endpoint(placed(get_similar, settings)), methods=["GET"]),
        Route("/similar", endpoint(placed(post_similar, settings)), methods=["POST"]),
    ]


def document_routes(svc: Indexes, settings: ServerSettings) -> list[Route]:
    """/documents (POST adds, DELETE deletes by id or filter) and /documents/{id} (GET, DELETE)."""

    async def document(request: Request) -> dict[str, Any]:
        doc_id = request.path_params["doc_id"]
        if request.method == "DELETE":
            return await svc(request).write(request, delete_documents, [doc_id], [])
        return await svc(request).read(request, get_document, doc_id)

    async def post_documents(request: Request) -> dict[str, Any]:
        svc(request).allowed(request, write=True)  # before reading a body that may be large
        records = documents_of(await read_body(request, settings.max_body))
        if not isinstance(records, list) or not records:
            raise ApiError(422, "invalid_document", "no documents: send a JSON array of them, or JSON lines")
        return await svc(request).write(request, add_documents, records)

    async def delete_where(request: Request) -> dict[str, Any]:
        ids, where = request.query_params.getlist("id"), request.query_params.getlist("where")
        if not ids and not where:
            raise ApiError(400, "bad_parameter", "name the documents to delete: where=FIELD=VALUE or id=ID")
        confirm = flag(request.query_params.get("confirm"), "confirm")
        return await svc(request).write(request, delete_documents, ids, where, confirm)

    return [
        Route("/documents", endpoint(post_documents, invalid_documents=True), methods=["POST"]),
        Route("/documents", endpoint(delete_where), methods=["DELETE"]),
        Route("/documents/{doc_id:path}", endpoint(document), methods=["GET", "DELETE"]),
    ]


def index_routes(svc: Indexes, settings: ServerSettings) -> list[Route]:
    """/health, /info and /backup."""

    async def post_backup(request: Request) -> dict[str, Any]:
        service = svc(request)
        archive = await backup_options(request, service, settings)
        return await make_backup(await service.reader.run(lambda index: index.path), settings, archive)

    async def info(request: Request) -> dict[str, Any]:
        ring = svc.keys.ring
        return await svc(request).read(request, describe, settings, ring.writes, not ring.open_reads)

    async def health(request: Request) -> dict[str, Any]:
        """Answered on the event loop (the readers may all be busy): the index directory is checked as it is
        now; a replaced one is reopened by the next search (workers.current)."""
        name = request.path_params.get("index", svc.default)
        service = svc.named(name)
        if service is None and svc.services is not None:
            raise no_index(name)
        path = service.reader.path if service is not None else None
        if path is not None and identity(path) is None:
            raise ApiError(503, "index_unavailable", f"no index at {path} now", {"Retry-After": "1"})
        return {"status": "ok" if service is not None else "starting"}

    return [
        Route("/health", endpoint(health)),
        Route("/info", endpoint(info)),
        Route("/backup", endpoint(post_backup), methods=["POST"]),
    ]


async def page(request: Request) -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})


async def http_error(request: Request, error: HTTPException):
    codes = {404: "not_found", 405: "method_not_allowed"}
    message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed here"}
    code = codes.get(error.status_code, "http_error")
    shown = message.get(error.status_code, str(error.detail))
    return error_answer(ApiError(error.status_code, code, shown, error.headers), time.perf_counter())


def create_app(
    open_index: Callable[[float], Index] | Mapping[str, Callable[[float], Index]],
    settings: ServerSettings | None = None,
) -> Starlette:
    """The application over one index (`open_index`) or several by name (the first the default, at the bare
    routes). `open_index(wait)` opens an index (once per worker thread), for writes waiting up to `wait`
    seconds for another writer."""
    settings = settings or ServerSettings()
    svc = Indexes(open_index if isinstance(open_index, Mapping) else {DEFAULT_NAME: open_index}, settings)
    mcp = McpEndpoints(svc, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        svc.start()
        for service in (svc.services or {}).values():
            for _ in service.reader.threads:  # queued first: the first searches wait for them, not start them
                service.reader.submit(warm)
        try:
            with svc.keys.reloaded_on_hangup():
                async with mcp.running():
                    yield
        finally:
            svc.close()

    per_index = [
        *index_routes(svc, settings),
        *search_routes(svc, settings),  # /documents/{id}/similar before /documents/{id}
        *document_routes(svc, settings),
        Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
        *(file_routes(svc) if settings.files else []),
        *facet_range_routes(svc),
    ]
    routes = [
        Route("/", page),
        Route("/indexes", endpoint(svc.listed)),
        Mount("/indexes/{index}", routes=per_index),
        *per_index,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    app.add_middleware(SecurityHeaders)
    return app


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response (a plain ASGI middleware: no per-request task)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        return await self.app(scope, receive, sending)
