"""`semsearch serve --shards DIR`: the HTTP API's searches over a sharded index (sharded.ShardedIndex), the same
requests and answers as `serve --index` gives (GET and POST /search, POST /search/batch: app.py's handlers),
with GET /shards (each shard, its generation, documents, worker and process) and GET /health.

The sharded index is opened once, on the one thread that runs every search (a shard searcher in this process
keeps its SQLite connection on the thread that opened it; on a cluster the shards answer in parallel anyway, a
query's calls to them sent at once), so the event loop only parses, checks and answers. A sharded directory
is read-only: no write route."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from .app import search_batch, search_one
from .protocol import ApiError, ServerSettings, endpoint, json_body
from .schemas import Requests, described, search_arguments
from .scopes import Keys

if TYPE_CHECKING:
    from ..sharded import ShardedIndex


class ShardedService:
    """The sharded index and the thread its searches run on."""

    def __init__(self, open_sharded: Callable[[], ShardedIndex], settings: ServerSettings):
        self.settings = settings
        self.keys = Keys(settings, ["shards"])
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="sharded")
        self.index: ShardedIndex = self.thread.submit(open_sharded).result()

    async def read(self, request: Request, fn: Callable[..., Any], *args: Any) -> Any:
        # a scoped key's where is not applied over shards yet: only keys that see the index whole search it
        self.keys.allowed(request, None, whole=True)
        return await asyncio.get_running_loop().run_in_executor(self.thread, fn, self.index, *args)

    def close(self) -> None:
        self.thread.submit(self.index.close).result()
        self.thread.shutdown()


def shards_answer(index: ShardedIndex) -> dict[str, Any]:
    return {"generation": index.generation, "shards": index.describe_shards()}


def health_answer(index: ShardedIndex) -> dict[str, Any]:
    return {"status": "ok", "documents": len(index), "generation": index.generation}


def create_sharded_app(open_sharded: Callable[[], ShardedIndex], settings: ServerSettings) -> Starlette:
    """The application over the sharded index `open_sharded()` opens."""
    running: dict[str, ShardedService] = {}
    requests = Requests(settings)

    def service() -> ShardedService:
        if "service" not in running:
            raise ApiError(503, "starting", "the server is starting")
        return running["service"]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        running["service"] = ShardedService(open_sharded, settings)
        try:
            yield
        finally:
            running.pop("service").close()

    @described(GET=requests.get_search)
    async def get_search(request: Request) -> dict[str, Any]:
        values = requests.get_search.query(request.query_params)
        return await service().read(request, search_one, values["q"], search_arguments(values))

    @described(POST=requests.post_search)
    async def post_search(request: Request) -> dict[str, Any]:
        values = requests.post_search.json(await json_body(request, settings.max_body))
        return await service().read(request, search_one, values["q"], search_arguments(values))

    @described(POST=requests.batch)
    async def post_batch(request: Request) -> dict[str, Any]:
        values = requests.batch.json(await json_body(request, settings.max_body))
        return await service().read(request, search_batch, values["queries"], search_arguments(values))

    async def get_shards(request: Request) -> dict[str, Any]:
        return await service().read(request, shards_answer)

    async def get_health(request: Request) -> dict[str, Any]:
        return await service().read(request, health_answer)

    routes = [
        Route("/search", endpoint(get_search), methods=["GET"]),
        Route("/search", endpoint(post_search), methods=["POST"]),
        Route("/search/batch", endpoint(post_batch), methods=["POST"]),
        Route("/shards", endpoint(get_shards)),
        Route("/health", endpoint(get_health)),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def serve_sharded(
    open_sharded: Callable[[], ShardedIndex],
    host: str,
    port: int,
    settings: ServerSettings,
    announce: Callable[[str], None],
) -> None:
    """Serve the sharded index until interrupted, in this process; opened once here first, so a directory that
    is not a sharded index fails before anything listens."""
    import uvicorn

    from . import is_loopback, listening_socket

    open_sharded().close()
    sock = listening_socket(host, port)
    bound = sock.getsockname()
    url = f"http://{f'[{bound[0]}]' if ':' in bound[0] else bound[0]}:{bound[1]}/"
    announce(f"serving {url} (a sharded index, read-only); Ctrl-C stops")
    if not is_loopback(host) and settings.search_key is None:
        announce(f"warning: anyone who can reach {host} can search this index: set --search-key")
    app = create_sharded_app(open_sharded, settings)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5
    )
    uvicorn.Server(config).run(sockets=[sock])
