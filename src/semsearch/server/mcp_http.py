"""`semsearch serve`'s /mcp: the MCP tools (mcp_tools.py) over streamable HTTP, stateless and answered as JSON,
behind the API's key rules: the endpoint needs a key that reads the index where reads need one (as /search does),
and the writing tools, listed where some key may write, need one that may on the call (as POST /documents does);
every tool runs in the key's scope (scopes.py). Each index has its own endpoint (/indexes/{name}/mcp; /mcp: the
default index's). Reads run on the index's reader threads, writes in its writer process (workers.py).

The SDK is imported and its session manager started at the first /mcp request (a second and more of CPU: a
server nobody asks over MCP starts as fast as before), its manager kept running by a task of the app's lifespan.
Without the `mcp` extra, /mcp answers 501 naming it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .protocol import ApiError, ServerSettings, error_answer

if TYPE_CHECKING:
    from .indexes import Indexes

INSTALL = "pip install 'semsearch[mcp]'"


class McpEndpoints:
    """The ASGI app at /mcp and /indexes/{name}/mcp: a streamable HTTP app per index, made at its first request;
    `running()` is entered by the app's lifespan."""

    def __init__(self, indexes: Indexes, settings: ServerSettings):
        self.indexes, self.settings = indexes, settings
        self.apps: dict[str, Any] = {}
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
            request = Request(scope, receive)
            service = self.indexes(request)
            service.allowed(request)
            app = await self.started(service.name)
        except ApiError as error:
            return await error_answer(error, started)(scope, receive, send)
        await app(scope, receive, send)

    async def started(self, name: str) -> Any:
        async with self.lock:
            if name not in self.apps:
                self.apps[name] = await self.start(name)
        return self.apps[name]

    async def start(self, name: str) -> Any:
        import anyio

        try:
            from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
        except ImportError:
            raise ApiError(
                501, "mcp_not_installed", f"/mcp needs the mcp extra on the server: {INSTALL}"
            ) from None
        from .mcp_tools import Served, Tools, mcp_server

        async def read(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
            return await self.indexes(request).read(request, fn, *args)

        async def write(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
            return await self.indexes(request).write(request, fn, *args)

        tools = Tools(
            [Served(name, read, write)],
            allow_writes=self.indexes.keys.ring.writes,
            place_urls=self.settings.files,
            # one listing for every key: with scoped keys, no value of a document in the descriptions
            examples=self.indexes.keys.legacy,
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
