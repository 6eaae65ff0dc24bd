"""What the server's handlers reach an index through (app.py's routes, mcp_http.py's /mcp): the threads that read
it, the process that writes it, and the server's keys, asked for the principal of each request (scopes.py), whose
scope the job then runs in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .principals import Principal
from .protocol import ServerSettings
from .scopes import Keys, within
from .workers import IndexThreads, WriterProcess

if TYPE_CHECKING:
    from ..index import Index


class Service:
    """One served index, by its name: the threads that read it, the process that writes it, and the keys."""

    def __init__(self, name: str, open_index: Callable[[float], Index], settings: ServerSettings, keys: Keys):
        self.name, self.settings, self.keys = name, settings, keys
        self.reader = IndexThreads(
            lambda: open_index(settings.write_wait), settings.threads, f"reader-{name}"
        )
        self.writer = WriterProcess(open_index, settings.write_wait)

    def allowed(self, request: Request, write: bool = False, whole: bool = False) -> Principal:
        """The request's principal where it may read this index (`write`: write it; `whole`: see all of it)."""
        return self.keys.allowed(request, self.name, write, whole)

    async def read(self, request: Request, fn: Callable[..., Any], *args: Any) -> Any:
        principal = self.allowed(request)
        return await self.reader.run(within, principal.where, fn, *args)

    async def write(self, request: Request, fn: Callable[..., dict], *args: Any) -> dict:
        principal = self.allowed(request, write=True)
        return await self.writer.run(within, principal.where, fn, *args)

    def close(self) -> None:
        self.reader.close()
        self.writer.close()
