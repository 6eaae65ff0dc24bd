"""What the server has done, for Prometheus (`GET /metrics`, the text exposition format), by prometheus-client:
requests by route, index and status; latency by route and search mode; searches answered by index and mode;
errors by route and code; and per index its documents, generation and writes queued. `Measured`, a middleware
around the routes, counts and times every request; a search's handler marks its answer (`Searched`) with its
mode; the index's figures are read at each scrape.

One process keeps its figures in a registry of its own (several apps in one process, as the tests make, never
mix). Several worker processes (`serve --workers N`) share a directory (prometheus-client's multiprocess mode:
each process writes its values to files there, and whichever process answers /metrics reads them all), so a
counter counts every worker's requests; a gauge of an index's state is the most recent any worker set. The
directory must be named in PROMETHEUS_MULTIPROC_DIR before a worker first imports prometheus-client
(`shared_directory`), which is why nothing here imports it at module level."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import SemsearchError
from .protocol import SEARCHED, ApiError, error_answer, error_of
from .schemas import Operation, described

if TYPE_CHECKING:
    from ..index import Index
    from .indexes import Indexes

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# Seconds: a keyword query answers in about a millisecond, a dense one in a few, a batch or a write in seconds
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


UNMATCHED = "(unmatched)"  # the route of a request no route took: its raw path is never a label


def shared_directory() -> Path:
    """A fresh directory for the workers' figures, named where they will look (called before they start)."""
    path = Path(tempfile.mkdtemp(prefix="semsearch-metrics-"))
    os.environ[MULTIPROCESS_VARIABLE] = str(path)
    return path


@contextlib.contextmanager
def shared_by_workers() -> Iterator[Path]:
    """One directory for this server run's workers, removed when they have all stopped."""
    previous = os.environ.get(MULTIPROCESS_VARIABLE)
    path = shared_directory()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if previous is None:
            os.environ.pop(MULTIPROCESS_VARIABLE, None)
        else:
            os.environ[MULTIPROCESS_VARIABLE] = previous


class Searched(dict):
    """A search's JSON answer that also says, for the metrics, its mode and how many queries it answered."""

    def __init__(self, payload: dict[str, Any], mode: str, queries: int = 1):
        super().__init__(payload)
        self.mode, self.queries = mode, queries


class Metrics:
    """The server's figures; `exposition()` is what /metrics answers."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.directory = os.environ.get(MULTIPROCESS_VARIABLE)
        # shared: the values live in the directory's files, the metrics in no registry (a second app in the
        # process would register them twice); one process: the app's own registry
        self.registry = None if self.directory else CollectorRegistry()
        own: dict[str, Any] = {"registry": self.registry}
        self.requests = Counter(
            "semsearch_requests", "HTTP requests answered", ["route", "index", "status"], **own
        )
        self.latency = Histogram(
            "semsearch_request_seconds",
            "Time to answer a request",
            ["route", "mode"],
            buckets=LATENCY_BUCKETS,
            **own,
        )
        self.searches = Counter("semsearch_searches", "Queries answered", ["index", "mode"], **own)
        self.errors = Counter("semsearch_errors", "Requests answered with an error", ["route", "code"], **own)
        mode = {"multiprocess_mode": "mostrecent"}
        self.documents = Gauge("semsearch_documents", "Documents in the index", ["index"], **own, **mode)
        self.generation = Gauge("semsearch_generation", "The index generation read", ["index"], **own, **mode)
        self.writes_queued = Gauge(
            "semsearch_writes_queued",
            "Writes in the writer's queue (waiting or being written)",
            ["index"],
            **own,
            multiprocess_mode="livesum",
        )

    def answered(self, route: str, index: str, status: int, seconds: float, mode: str = "") -> None:
        """A request answered: counted and timed."""
        self.requests.labels(route, index, str(status)).inc()
        self.latency.labels(route, mode).observe(seconds)

    def failed(self, route: str, code: str) -> None:
        self.errors.labels(route, code).inc()

    def searched(self, index: str, mode: str, queries: int = 1) -> None:
        self.searches.labels(index, mode).inc(queries)

    def queued(self, index: str, change: int) -> None:
        self.writes_queued.labels(index).inc(change)

    def index_state(self, index: str, documents: int, generation: int) -> None:
        self.documents.labels(index).set(documents)
        self.generation.labels(index).set(generation)

    def exposition(self) -> tuple[bytes, str]:
        """The figures in Prometheus's text format, and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        if self.directory is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.directory)
        return generate_latest(registry), CONTENT_TYPE_LATEST


def worker_stopped(pid: int) -> None:
    """A worker's live gauges leave the sums (its files stay for the counters it counted)."""
    if os.environ.get(MULTIPROCESS_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def route_of(scope: dict[str, Any]) -> str:
    """The template of the route that took the request (`/documents/{doc_id}`), never its raw path."""
    route = scope.get("route")
    return getattr(route, "path_format", None) or getattr(route, "path", None) or UNMATCHED


def error_code(body: bytes) -> str:
    """An error answer's `error.code` (an answer not in the API's shape: `http_error`)."""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        return str(json.loads(body)["error"]["code"])
    return "http_error"


class Measured:
    """ASGI middleware: each HTTP request counted by route template, index and status, timed by route and
    search mode, its error counted by code, its search by mode. Counted before its answer leaves: a client
    that has an answer finds it in the next /metrics of any worker. `index_of(scope)`: the index the request
    addressed."""

    def __init__(self, app: Any, metrics: Metrics, index_of: Callable[[dict[str, Any]], str]):
        self.app, self.metrics, self.index_of = app, metrics, index_of

    def record(self, scope: dict[str, Any], status: int, started: float, code: str | None) -> None:
        route, index = route_of(scope), self.index_of(scope)
        mode, queries = scope.get(SEARCHED, ("", 0))
        self.metrics.answered(route, index, status, time.perf_counter() - started, mode)
        if code is not None:
            self.metrics.failed(route, code)
        if queries and status < 400:
            self.metrics.searched(index, mode, queries)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        held: list[dict[str, Any]] = []  # an error answer, kept until its body says its code
        recorded = False

        async def sending(message):
            nonlocal recorded
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held.append(message)
                return
            if message["type"] == "http.response.start":
                recorded = True
                self.record(scope, message["status"], started, None)
            elif held and message["type"] == "http.response.body":
                held.append(message)
                if message.get("more_body"):
                    return
                body = b"".join(part.get("body", b"") for part in held[1:])
                recorded = True
                self.record(scope, held[0]["status"], started, error_code(body))
                await send(held[0])
                message = {**message, "body": body}
                held.clear()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if not recorded:
                self.record(scope, 500, started, "internal_error")
            raise


def index_figures(index: Index) -> tuple[int, int]:
    """Its documents and generation as they are now (a job for a reader thread)."""
    index.refresh()
    return len(index), index.state.generation


def metrics_routes(indexes: Indexes, metrics: Metrics, operation: Operation) -> list[Route]:
    """GET /metrics: an admin's (every index, no where, may write) where keys are set, else a read's; each
    index's figures read at each scrape."""

    @described(GET=operation)
    async def get_metrics(request: Request) -> Response:
        started = time.perf_counter()
        try:
            keys = indexes.keys
            principal = keys.allowed(request, None, write=keys.ring.writes, whole=True)
            if not keys.legacy and not principal.admin:
                raise ApiError(403, "forbidden", f"the key {principal.name!r} is not an admin's")
            for name, service in (indexes.services or {}).items():
                try:
                    documents, generation = await service.reader.run(index_figures)
                    metrics.index_state(name, documents, generation)
                except (ApiError, SemsearchError):  # no index now, or starting: the rest is still answered
                    pass
            body, content_type = metrics.exposition()
            return Response(body, media_type=content_type)
        except Exception as error:
            return error_answer(error_of(error), started)

    return [Route("/metrics", get_metrics, methods=["GET"])]
