"""`semsearch serve`'s /mcp: the MCP tools (mcp_tools.py) over streamable HTTP, stateless and answered as JSON,
behind the API's key rules: the endpoint needs the search key where one is set (as /search does), and the writing
tools, listed where the server has an api key, need the api key on the call (as POST /documents does). Reads run
on the server's reader threads, writes in its writer process (workers.py). Without the `mcp` extra, /mcp says
which to install."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import Route

from .protocol import ApiError, ServerSettings, error_answer, require_key

if TYPE_CHECKING:
    from .app import Service

INSTALL = "pip install 'semsearch[mcp]'"


class Guarded:
    """An ASGI app answering the API's JSON error when the request lacks the key `require` wants."""

    def __init__(self, app: Any, require: Callable[[Request], None]):
        self.app, self.require = app, require

    async def __call__(self, scope, receive, send) -> None:
        started = time.perf_counter()
        try:
            self.require(Request(scope, receive))
        except ApiError as error:
            return await error_answer(error, started)(scope, receive, send)
        await self.app(scope, receive, send)


def mcp_route(service: Callable[[], Service], settings: ServerSettings) -> tuple[Route, Callable]:
    """The /mcp route and the context its session manager runs in (entered by the app's lifespan)."""
    try:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    except ImportError:

        def missing(request: Request) -> None:
            raise ApiError(501, "mcp_not_installed", f"/mcp needs the mcp extra on the server: {INSTALL}")

        return Route("/mcp", Guarded(None, missing)), contextlib.nullcontext

    from .mcp_tools import Served, Tools, mcp_server

    async def read(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
        return await service().read(request, fn, *args)

    async def write(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
        return await service().write(request, fn, *args)

    tools = Tools([Served("index", read, write)], allow_writes=settings.api_key is not None)
    manager = StreamableHTTPSessionManager(app=mcp_server(tools), stateless=True, json_response=True)

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with manager.run():
            yield

    guarded = Guarded(
        StreamableHTTPASGIApp(manager), lambda request: require_key(request, settings, write=False)
    )
    return Route("/mcp", guarded, methods=["GET", "POST", "DELETE"]), running
