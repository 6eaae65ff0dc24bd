"""The Starlette application of `semsearch serve`: the JSON API's routes and the search page, over one index or
several (indexes.py: each at /indexes/{name}/..., the first also at the bare routes).

Reads run on `settings.threads` threads, each owning an Index, writes in a child process with its own (workers.py), waiting
`settings.write_wait` seconds for another writer (then 503); the event loop only parses, checks and answers.
Limits and errors: protocol.py; who a request's key is and what it may see: principals.py, scopes.py."""

from __future__ import annotations

import contextlib
import inspect
import os
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
from .backups import backup_options, make_backup
from .documents import add_documents, delete_documents, get_document, stored, text_searchable
from .facetranges import facet_range_routes
from .files import file_routes, placed
from .indexes import DEFAULT_NAME, Indexes, no_index
from .mcp_http import McpEndpoints
from .metrics import Measured, Metrics, Searched, metrics_routes, worker_stopped
from .openapi import openapi_routes
from .protocol import (
    ApiError,
    ServerSettings,
    documents_of,
    endpoint,
    error_answer,
    json_body,
    read_body,
)
from .schemas import Requests, described, page_arguments, search_arguments
from .workers import identity, warm

if TYPE_CHECKING:
    from ..index import Index
    from ..retrieval.search import Results

STATIC = Path(__file__).parent / "static"
EXTRAS = QUERY_OPTIONS  # passed to Index.search only when the client sends them
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


def takes(method: Callable, name: str) -> bool:
    parameters = inspect.signature(method).parameters
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def supported(method: Callable, options: dict[str, Any]) -> dict[str, Any]:
    """The options, refusing one this semsearch's Index does not take (a mode before modes exist)."""
    if unknown := [name for name in options if not takes(method, name)]:
        raise ApiError(400, "bad_parameter", f"{', '.join(unknown)}: not supported by this index's semsearch")
    return options


def answered(hits: Results) -> dict[str, Any]:
    """A query's answer: its page's hits (hits.py's shape), where the page starts, the generation read, the
    facets if asked."""
    return results_json(hits)


def mode_of(index: Index, options: dict[str, Any]) -> str:
    return str(options.get("mode") or index.default_mode.value)


def search_one(index: Index, q: str, options: dict[str, Any]) -> dict[str, Any]:
    if options.get("mode") != "keyword":
        text_searchable(index)
    hits = index.search(q, **supported(index.search_many, options))
    return Searched({"q": q, "k": options["k"], **answered(hits)}, mode_of(index, options))


def search_batch(index: Index, queries: list[str], options: dict[str, Any]) -> dict[str, Any]:
    if options.get("mode") != "keyword":
        text_searchable(index)
    results = index.search_many(queries, **supported(index.search_many, options))
    payload = {
        "k": options["k"],
        "results": [{"q": q, **answered(hits)} for q, hits in zip(queries, results)],
    }
    return Searched(payload, mode_of(index, options), len(queries))


def similar(index: Index, ids: list[str], negative: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """The documents like `ids` (404 for an id not stored), away from `negative`."""
    stored(index, ids + negative)
    hits = index.similar(ids, negative=negative, **options)
    return {"ids": ids, "not": negative, "k": options["k"], **answered(hits)}


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


def search_routes(svc: Indexes, settings: ServerSettings, requests: Requests) -> list[Route]:
    """/search (GET and POST), /search/batch, /documents/{id}/similar and /similar."""

    @described(GET=requests.get_search)
    async def get_search(request: Request) -> dict[str, Any]:
        values = requests.get_search.query(request.query_params)
        return await svc(request).read(request, search_one, values["q"], search_arguments(values))

    @described(POST=requests.post_search)
    async def post_search(request: Request) -> dict[str, Any]:
        values = requests.post_search.json(await json_body(request, settings.max_body))
        return await svc(request).read(request, search_one, values["q"], search_arguments(values))

    @described(POST=requests.batch)
    async def post_batch(request: Request) -> dict[str, Any]:
        values = requests.batch.json(await json_body(request, settings.max_body))
        return await svc(request).read(request, search_batch, values["queries"], search_arguments(values))

    @described(GET=requests.get_similar)
    async def get_similar(request: Request) -> dict[str, Any]:
        values = requests.get_similar.query(request.query_params)
        ids = [request.path_params["doc_id"]]
        return await svc(request).read(request, similar, ids, values["not"], page_arguments(values))

    @described(POST=requests.post_similar)
    async def post_similar(request: Request) -> dict[str, Any]:
        values = requests.post_similar.json(await json_body(request, settings.max_body))
        return await svc(request).read(request, similar, values["ids"], values["not"], page_arguments(values))

    return [
        Route("/search", endpoint(placed(get_search, settings)), methods=["GET"]),
        Route("/search", endpoint(placed(post_search, settings)), methods=["POST"]),
        Route("/search/batch", endpoint(placed(post_batch, settings)), methods=["POST"]),
        Route("/documents/{doc_id:path}/similar", endpoint(placed(get_similar, settings)), methods=["GET"]),
        Route("/similar", endpoint(placed(post_similar, settings)), methods=["POST"]),
    ]


def document_routes(svc: Indexes, settings: ServerSettings, requests: Requests) -> list[Route]:
    """/documents (POST adds, DELETE deletes by id or filter) and /documents/{id} (GET, DELETE)."""

    @described(GET=requests.get_document, DELETE=requests.delete_document)
    async def document(request: Request) -> dict[str, Any]:
        doc_id = request.path_params["doc_id"]
        if request.method == "DELETE":
            return await svc(request).write(request, delete_documents, [doc_id], [])
        return await svc(request).read(request, get_document, doc_id)

    @described(POST=requests.add)
    async def post_documents(request: Request) -> dict[str, Any]:
        svc(request).allowed(request, write=True)  # before reading a body that may be large
        records = documents_of(await read_body(request, settings.max_body))
        if not isinstance(records, list) or not records:
            raise ApiError(422, "invalid_document", "no documents: send a JSON array of them, or JSON lines")
        return await svc(request).write(request, add_documents, records)

    @described(DELETE=requests.delete_where)
    async def delete_where(request: Request) -> dict[str, Any]:
        values = requests.delete_where.query(request.query_params)
        if not values["id"] and not values["where"]:
            raise ApiError(400, "bad_parameter", "name the documents to delete: where=FIELD=VALUE or id=ID")
        ids, where, confirm = values["id"], values["where"], values["confirm"]
        return await svc(request).write(request, delete_documents, ids, where, confirm)

    return [
        Route("/documents", endpoint(post_documents, invalid_documents=True), methods=["POST"]),
        Route("/documents", endpoint(delete_where), methods=["DELETE"]),
        Route("/documents/{doc_id:path}", endpoint(document), methods=["GET", "DELETE"]),
    ]


def index_routes(svc: Indexes, settings: ServerSettings, requests: Requests) -> list[Route]:
    """/health, /info and /backup."""

    @described(POST=requests.backup)
    async def post_backup(request: Request) -> dict[str, Any]:
        service = svc(request)
        archive = await backup_options(request, service, settings, requests.backup)
        return await make_backup(await service.reader.run(lambda index: index.path), settings, archive)

    @described(GET=requests.info)
    async def info(request: Request) -> dict[str, Any]:
        ring = svc.keys.ring
        return await svc(request).read(request, describe, settings, ring.writes, not ring.open_reads)

    @described(GET=requests.health)
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
    requests = Requests(settings)
    mcp.operations = {method: requests.mcp for method in ("GET", "POST", "DELETE")}
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        svc.start()
        for name, service in (svc.services or {}).items():
            service.writer.queued = lambda change, name=name: metrics.queued(name, change)
            for _ in service.reader.threads:  # queued first: the first searches wait for them, not start them
                service.reader.submit(warm)
        try:
            with svc.keys.reloaded_on_hangup():
                async with mcp.running():
                    yield
        finally:
            svc.close()
            worker_stopped(os.getpid())

    per_index = [
        *index_routes(svc, settings, requests),
        *search_routes(svc, settings, requests),  # /documents/{id}/similar before /documents/{id}
        *document_routes(svc, settings, requests),
        Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
        *(file_routes(svc, requests.file) if settings.files else []),
        *facet_range_routes(svc, requests.facet_ranges),
    ]
    routes = [
        Route("/", described(GET=requests.page_of_search)(page)),
        Route("/indexes", described(GET=requests.indexes)(endpoint(svc.listed))),
        *metrics_routes(svc, metrics, requests.metrics),
        *openapi_routes(settings, requests.openapi),
        Mount("/indexes/{index}", routes=per_index),
        *per_index,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    app.add_middleware(Measured, metrics=metrics, index_of=lambda scope: svc.name_of(scope))
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
