"""What the server's handlers reach the index through (app.py's routes, mcp_http.py's /mcp): the threads that read
it, the process that writes it, and the server's settings, which say which key each needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .protocol import ServerSettings, require_key
from .workers import IndexThreads, WriterProcess

if TYPE_CHECKING:
    from ..index import Index


class Service:
    """The thread that reads the index, the process that writes it, and the settings, for the handlers."""

    def __init__(self, open_index: Callable[[float], Index], settings: ServerSettings):
        self.settings = settings
        self.reader = IndexThreads(lambda: open_index(settings.write_wait), settings.threads, "reader")
        self.writer = WriterProcess(open_index, settings.write_wait)

    async def read(self, request: Request, fn: Callable[..., Any], *args: Any) -> Any:
        require_key(request, self.settings, write=False)
        return await self.reader.run(fn, *args)

    async def write(self, request: Request, fn: Callable[..., dict], *args: Any) -> dict:
        require_key(request, self.settings, write=True)
        return await self.writer.run(fn, *args)

    def close(self) -> None:
        self.reader.close()
        self.writer.close()
