"""`semsearch serve`'s /mcp: the MCP tools (mcp_tools.py) over streamable HTTP, stateless and answered as JSON,
behind the API's key rules: the endpoint needs the search key where one is set (as /search does), and the writing
tools, listed where the server has an api key, need the api key on the call (as POST /documents does). Reads run
on the server's reader threads, writes in its writer process (workers.py).

The SDK is imported and its session manager started at the first /mcp request (a second and more of CPU: a
server nobody asks over MCP starts as fast as before), its manager kept running by a task of the app's lifespan.
Without the `mcp` extra, /mcp answers 501 naming it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .protocol import ApiError, ServerSettings, error_answer, require_key

if TYPE_CHECKING:
    from .service import Service

INSTALL = "pip install 'semsearch[mcp]'"


class McpEndpoint:
    """The ASGI app at /mcp; `running()` is entered by the app's lifespan."""

    def __init__(self, service: Callable[[], Service], settings: ServerSettings):
        self.service, self.settings = service, settings
        self.asgi: Any = None
        self.tasks: Any = None
        self.stop: Any = None
        self.lock: Any = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        import anyio

        self.stop, self.lock = anyio.Event(), anyio.Lock()
        async with anyio.create_task_group() as self.tasks:
            try:
                yield
            finally:
                self.stop.set()  # the manager's task leaves its run() in the task that entered it

    async def __call__(self, scope, receive, send) -> None:
        started = time.perf_counter()
        try:
            require_key(Request(scope, receive), self.settings, write=False)
            app = await self.started()
        except ApiError as error:
            return await error_answer(error, started)(scope, receive, send)
        await app(scope, receive, send)

    async def started(self) -> Any:
        async with self.lock:
            if self.asgi is None:
                self.asgi = await self.start()
        return self.asgi

    async def start(self) -> Any:
        import anyio

        try:
            from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
        except ImportError:
            raise ApiError(
                501, "mcp_not_installed", f"/mcp needs the mcp extra on the server: {INSTALL}"
            ) from None
        from .mcp_tools import Served, Tools, mcp_server

        async def read(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
            return await self.service().read(request, fn, *args)

        async def write(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
            return await self.service().write(request, fn, *args)

        tools = Tools(
            [Served("index", read, write)],
            allow_writes=self.settings.api_key is not None,
            place_urls=self.settings.files,
        )
        manager = StreamableHTTPSessionManager(app=mcp_server(tools), stateless=True, json_response=True)
        ready = anyio.Event()

        async def keep_running() -> None:
            async with manager.run():
                ready.set()
                await self.stop.wait()

        self.tasks.start_soon(keep_running)
        await ready.wait()
        return StreamableHTTPASGIApp(manager)
