"""`semsearch serve`: the index over HTTP, a JSON API and a search page (app.py; keys, limits and errors in
protocol.py; the thread and the process that own an Index in workers.py; the page in static/). A layer above the Index
facade, like the CLI: it reaches the index only through an opened Index."""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SemsearchError
from .app import create_app
from .metrics import shared_by_workers
from .protocol import ServerSettings

if TYPE_CHECKING:
    from ..index import Index

__all__ = ["ServerSettings", "create_app", "serve"]


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (0: a free port), so the address printed is the one served."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as error:  # a busy port, an address not of this machine, a name that does not resolve
        reason = error.strerror or str(error)
        raise SemsearchError(f"cannot listen on {host}:{port}: {reason}") from None


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True)
class AppFactory:
    """The application's recipe, picklable: each worker process builds its own app (and opens its own Index)
    from it."""

    open_index: Callable[[float], Index]
    settings: ServerSettings

    def __call__(self):
        return create_app(self.open_index, self.settings)


def serve(
    open_index: Callable[[float], Index],
    host: str = "127.0.0.1",
    port: int = 8000,
    settings: ServerSettings | None = None,
    workers: int = 1,
    announce: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> None:
    """Serve until interrupted, in this process, or in `workers` processes sharing the socket (each with
    the index open: its searches run in parallel with the others'). The index is opened once here first, so a
    path that is not an index fails before anything listens."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    settings = settings or ServerSettings()
    open_index(settings.write_wait).close()
    sock = listening_socket(host, port)
    bound = sock.getsockname()
    url = f"http://{f'[{bound[0]}]' if ':' in bound[0] else bound[0]}:{bound[1]}/"
    writes = "writes need the api key" if settings.api_key else "read-only (no --api-key)"
    processes = f"; {workers} processes" if workers > 1 else ""
    announce(f"serving {url} ({writes}{processes}); Ctrl-C stops")
    if not is_loopback(host) and settings.search_key is None:
        announce(f"warning: anyone who can reach {host} can search this index: set --search-key")
    logging.basicConfig(level=logging.WARNING)
    config = uvicorn.Config(
        AppFactory(open_index, settings),
        factory=True,
        workers=workers,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    if workers == 1:
        server.run(sockets=[sock])
    else:
        with shared_by_workers():  # named before the workers start: /metrics counts them all
            Multiprocess(config, sockets=[sock]).run()
