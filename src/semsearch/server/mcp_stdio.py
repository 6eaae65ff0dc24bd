"""`semsearch mcp`'s transport: the MCP tools (mcp_tools.py) over stdin and stdout, each index on a thread of
its own that opened it (workers.IndexThreads), warmed before the first call, writes on the same thread."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .mcp_tools import Served, Tools, mcp_server
from .workers import IndexThreads, warm

if TYPE_CHECKING:
    from ..index import Index


def on_thread(threads: IndexThreads) -> Callable[..., Any]:
    """A runner for Served: the job on the index's thread (no HTTP request over stdio, so no key to check)."""

    async def run(request: Any, fn: Callable[..., Any], *args: Any) -> Any:
        return await threads.run(fn, *args)

    return run


def run(openers: dict[str, Callable[[float], Index]], allow_writes: bool, wait: float) -> None:
    """Serve the named indexes (`openers[name](wait)` opens one) until stdin closes."""
    import anyio
    from mcp.server.stdio import stdio_server

    for opener in openers.values():  # a path that is not an index fails here, before anything is served
        opener(wait).close()
    threads = {
        name: IndexThreads(partial(opener, wait), 1, f"mcp-{name}") for name, opener in openers.items()
    }
    for reader in threads.values():
        reader.submit(warm)
    served = [
        Served(name, on_thread(t), on_thread(t) if allow_writes else None) for name, t in threads.items()
    ]
    server = mcp_server(Tools(served, allow_writes))

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        for reader in threads.values():
            reader.close()
