"""The indexes one server serves, by name (`serve --index A --index B`: each by its directory's name), each a
Service of its own (its reader threads and writer process: an index opened once per process). The first is the
default, answered at the bare routes (/search, /info, ...); every one at /indexes/{name}/... (the same routes);
`GET /indexes` lists those the request's key reaches."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from ..errors import SemsearchError
from .protocol import ApiError, ServerSettings
from .scopes import Keys
from .service import Service

if TYPE_CHECKING:
    from ..index import Index

Opener = Callable[[float], "Index"]
DEFAULT_NAME = "index"  # an app made with one opener and no name


def named_indexes(paths: list[Path]) -> dict[str, Path]:
    """Each index by its directory's name; two of one name are an error (a name is the address of its routes)."""
    named: dict[str, Path] = {}
    for path in paths:
        if path.name in named and named[path.name] != path:
            raise SemsearchError(
                f"two indexes named {path.name!r} ({named[path.name]}, {path}): serve directories of different names"
            )
        named[path.name] = path
    return named


def no_index(name: str) -> ApiError:
    return ApiError(404, "no_index", f"no index {name!r} is served here (GET /indexes lists them)")


class Indexes:
    """The served indexes' Services, made by the app's lifespan (a request before then is answered 503)."""

    def __init__(self, openers: Mapping[str, Opener], settings: ServerSettings):
        if not openers:
            raise SemsearchError("no index to serve")
        self.openers, self.settings = dict(openers), settings
        self.keys = Keys(settings, list(self.openers))
        self.services: dict[str, Service] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.openers)

    @property
    def default(self) -> str:
        return self.names[0]

    def start(self) -> None:
        self.services = {
            name: Service(name, opener, self.settings, self.keys) for name, opener in self.openers.items()
        }

    def close(self) -> None:
        services, self.services = self.services or {}, None
        for service in services.values():
            service.close()

    def named(self, name: str) -> Service | None:
        return None if self.services is None else self.services.get(name)

    def __call__(self, request: Request) -> Service:
        """The Service a request names (/indexes/{index}/...; the default at the bare routes): 503 while
        starting, 404 for a name not served (once the key is known: no name is told to a stranger)."""
        if self.services is None:
            raise ApiError(503, "starting", "the server is starting")
        name = request.path_params.get("index", self.default)
        if name not in self.services:
            self.keys.principal(request)
            raise no_index(name)
        return self.services[name]

    def name_of(self, scope: dict[str, Any]) -> str:
        """The index a request's scope addressed, for the metrics' labels: its {index} if one served (else
        "(none)": a client's path never becomes a label), the default at the bare routes."""
        name = scope.get("path_params", {}).get("index")
        if name is None:
            return self.default
        return name if name in self.openers else "(none)"

    async def listed(self, request: Request) -> dict[str, Any]:
        """GET /indexes: the names of those the key reaches, the default first."""
        principal = self.keys.principal(request)
        reached = [name for name in self.names if principal.reaches(name)]
        return {"indexes": reached, "default": self.default if principal.reaches(self.default) else None}
