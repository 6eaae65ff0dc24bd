"""GET /openapi.json: the API as OpenAPI 3.1, made from the running app's routes and the operations their
handlers are marked with (schemas.described): the parameters and bodies the handlers check requests against,
the answers' schemas, and the key each needs under this server's settings. A route without operations still
appears, with its path and methods."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from .answers import ERROR, ERRORS
from .protocol import ServerSettings, error_answer, error_of
from .schemas import Operation, described

OPENAPI_VERSION = "3.1.0"
BEARER = {"bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer KEY"}}


def package_version() -> str:
    try:
        return version("semsearch")
    except PackageNotFoundError:
        return "0"


def access(operation: Operation, settings: ServerSettings) -> str:
    """The operation's access under these settings: an admin's is a read's where no api key is set."""
    return "read" if operation.access == "admin" and settings.api_key is None else operation.access


def security(operation: Operation, settings: ServerSettings) -> list[dict[str, list]]:
    """Who may call it: none needed (`[]`), a key optional (`[{}, bearer]`) or needed (`[bearer]`)."""
    needs = access(operation, settings)
    if needs == "open":
        return []
    if needs == "read" and settings.search_key is None:
        return [{}, {"bearer": []}]
    return [{"bearer": []}]


def statuses(operation: Operation, settings: ServerSettings) -> list[int]:
    """The error statuses it may answer: its own, and a missing (401) or wrong (403) key's."""
    keyed = security(operation, settings) == [{"bearer": []}]
    return sorted({*operation.errors, *((401, 403) if keyed else ())})


def json_content(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {media: {"schema": schema}} if schema else {}


def operation_object(
    operation: Operation, method: str, path: str, params: list[str], settings: ServerSettings
) -> dict[str, Any]:
    path_params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for name in params
    ]
    query_params = [
        {
            "name": param.name,
            "in": "query",
            "required": param.required,
            "schema": param.schema(in_query=True),
            **({"style": "form", "explode": True} if param.many else {}),
        }
        for param in operation.params
    ]
    described_errors = {
        str(status): {"description": ERRORS[status], "content": json_content(operation.error)}
        for status in statuses(operation, settings)
    }
    error = {"description": "An error", "content": json_content(operation.error)}
    out: dict[str, Any] = {
        "summary": operation.summary,
        "operationId": f"{method.lower()}{re.sub(r'[^A-Za-z0-9]+', '_', path).rstrip('_')}",
        "parameters": [*path_params, *query_params],
        "responses": {
            "200": {"description": "Done", "content": json_content(operation.answer, operation.media)},
            **described_errors,
            # every other error is in the API's error shape too (405, 500); /mcp answers as the MCP SDK does
            "default": error if operation.errors or operation.access != "open" else {"description": "Other"},
        },
        "security": security(operation, settings),
    }
    if (body := operation.body_schema()) is not None:
        out["requestBody"] = {"required": operation.fields is None, "content": json_content(body)}
    return out


def served(
    routes: list[Any], prefix: str = "", params: tuple[str, ...] = ()
) -> Iterator[tuple[str, list[str], Route]]:
    """Each route with its whole path and path parameters, a mount's (an index's /indexes/{name}/...) within it;
    not the page's static files."""
    for route in routes:
        if isinstance(route, Mount) and route.name != "static":
            # a mount's path_format ends in the {path} it hands on: its own part is `path`
            mounted = tuple(name for name in route.param_convertors if name != "path")
            yield from served(route.routes, prefix + route.path, (*params, *mounted))
        elif isinstance(route, Route):
            yield prefix + route.path_format, [*params, *route.param_convertors], route


def document(routes: list[Any], settings: ServerSettings) -> dict[str, Any]:
    """The OpenAPI document of these routes."""
    paths: dict[str, dict[str, Any]] = {}
    for path, params, route in served(routes):
        operations = getattr(route.endpoint, "operations", {})
        methods = sorted(set(route.methods or ["GET"]) - ({"HEAD"} - set(operations)))
        for method in methods:
            operation = operations.get(method) or Operation(f"{method} {path}", access="open")
            paths.setdefault(path, {})[method.lower()] = operation_object(
                operation, method, path, params, settings
            )
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "semsearch", "version": package_version()},
        "paths": paths,
        "components": {"securitySchemes": BEARER, "schemas": {"Error": ERROR}},
    }


def openapi_routes(settings: ServerSettings, operation: Operation) -> list[Route]:
    @described(GET=operation)
    async def get_openapi(request: Request):
        started = time.perf_counter()
        try:
            return JSONResponse(
                document(request.app.routes, settings)
            )  # no took_ms: a document, not an answer
        except Exception as error:
            return error_answer(error_of(error), started)

    return [Route("/openapi.json", get_openapi, methods=["GET"])]
