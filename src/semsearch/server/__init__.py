"""`semsearch serve`: the index over HTTP, a JSON API and a search page (app.py; keys, limits and errors in
protocol.py; the thread and the process that own an Index in workers.py; the page in static/). A layer above the Index
facade, like the CLI: it reaches the index only through an opened Index."""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SemsearchError
from .app import create_app
from .indexes import DEFAULT_NAME
from .metrics import shared_by_workers
from .protocol import ServerSettings
from .scopes import Keys

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

    open_index: Callable[[float], Index] | Mapping[str, Callable[[float], Index]]
    settings: ServerSettings

    def __call__(self):
        return create_app(self.open_index, self.settings)


def serve(
    open_index: Callable[[float], Index] | Mapping[str, Callable[[float], Index]],
    host: str = "127.0.0.1",
    port: int = 8000,
    settings: ServerSettings | None = None,
    workers: int = 1,
    announce: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> None:
    """Serve until interrupted, in this process, or in `workers` processes sharing the socket (each with
    the indexes open: its searches run in parallel with the others'). `open_index`: one index's opener, or
    several by name (the first the default). Each index is opened once here first, and the keys read, so a
    path that is not an index or a bad keys file fails before anything listens."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    settings = settings or ServerSettings()
    openers = open_index if isinstance(open_index, Mapping) else {DEFAULT_NAME: open_index}
    for opener in openers.values():
        opener(settings.write_wait).close()
    ring = Keys(settings, list(openers)).ring
    sock = listening_socket(host, port)
    bound = sock.getsockname()
    url = f"http://{f'[{bound[0]}]' if ':' in bound[0] else bound[0]}:{bound[1]}/"
    writing = "the api key" if settings.keys_file is None else "a key that may write"
    writes = f"writes need {writing}" if ring.writes else "read-only (no --api-key)"
    served = f"; indexes {', '.join(openers)}" if len(openers) > 1 else ""
    processes = f"; {workers} processes" if workers > 1 else ""
    announce(f"serving {url} ({writes}{served}{processes}); Ctrl-C stops")
    if not is_loopback(host) and ring.open_reads:
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
