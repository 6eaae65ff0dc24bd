"""A Dask scheduler's address checked before a client tries it: Dask's own errors for a malformed one come
from deep inside it, as tracebacks, after its timeout."""

from __future__ import annotations

from ..errors import SettingsError

SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
DEFAULT_PORT = "8786"


def check_address(address: str) -> None:
    """`tcp://host:8786`, `tls://host:8786`, `tcp://host` (Dask's default port) or `host:8786`."""
    scheme, separator, rest = address.partition("://")
    host, _, port = (rest if separator else address).rpartition(":")
    if separator and not port.isdigit():
        host, port = rest, DEFAULT_PORT
    if (
        (separator and scheme not in SCHEMES)
        or not host.strip("[]")
        or not port.isdigit()
        or not 0 < int(port) < 65536
        or any(char.isspace() or char in "/?#@" for char in host)
    ):
        raise SettingsError(
            f"{address!r} is not a scheduler address: expected tcp://HOST:PORT (or HOST:PORT)",
            setting="cluster",
        )
