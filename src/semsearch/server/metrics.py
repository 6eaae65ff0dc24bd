"""What the server has done, for Prometheus (`GET /metrics`, the text exposition format), by prometheus-client:
requests by route, index and status; latency by route and search mode; searches answered by index and mode;
errors by route and code; and per index its documents, generation and writes queued.

One process keeps its figures in a registry of its own (several apps in one process, as the tests make, never
mix). Several worker processes (`serve --workers N`) share a directory (prometheus-client's multiprocess mode:
each process writes its values to files there, and whichever process answers /metrics reads them all), so a
counter counts every worker's requests; a gauge of an index's state is the most recent any worker set. The
directory must be named in PROMETHEUS_MULTIPROC_DIR before a worker first imports prometheus-client
(`shared_directory`), which is why nothing here imports it at module level."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# Seconds: a keyword query answers in about a millisecond, a dense one in a few, a batch or a write in seconds
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def shared_directory() -> Path:
    """A fresh directory for the workers' figures, named where they will look (called before they start)."""
    path = Path(tempfile.mkdtemp(prefix="semsearch-metrics-"))
    os.environ[MULTIPROCESS_VARIABLE] = str(path)
    return path


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
            "Writes waiting for the writer",
            ["index"],
            **own,
            multiprocess_mode="livesum",
        )

    def answered(self, route: str, index: str, status: int, seconds: float, mode: str = "") -> None:
        """A request answered: counted, timed, and an error status counted by its route."""
        self.requests.labels(route, index, str(status)).inc()
        self.latency.labels(route, mode).observe(seconds)

    def failed(self, route: str, code: str) -> None:
        self.errors.labels(route, code).inc()

    def searched(self, index: str, mode: str, queries: int = 1) -> None:
        self.searches.labels(index, mode).inc(queries)

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
