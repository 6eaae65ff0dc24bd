"""The server's figures for Prometheus (server/metrics.py), read back with prometheus-client's own parser of the
text format: exact in one process with two apps side by side, and summed across worker processes sharing a
directory (real processes, each counting its own requests)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from semsearch.server.metrics import MULTIPROCESS_VARIABLE, Metrics  # noqa: E402


def samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def requests(found, route, index, status) -> float:
    key = ("semsearch_requests_total", (("index", index), ("route", route), ("status", status)))
    return found.get(key, 0.0)


@pytest.fixture
def one_process(monkeypatch):
    monkeypatch.delenv(MULTIPROCESS_VARIABLE, raising=False)


def test_counts_are_exact_and_two_apps_in_one_process_keep_their_own(one_process):
    first, second = Metrics(), Metrics()
    for n in range(7):
        first.answered("/search", "notes", 200, 0.002 * n, mode="hybrid")
    first.answered("/search", "notes", 400, 0.001)
    first.failed("/search", "bad_request")
    first.searched("notes", "hybrid", queries=3)
    first.index_state("notes", documents=1234, generation=5)
    second.answered("/info", "mail", 200, 0.001)
    found = samples(first)
    assert requests(found, "/search", "notes", "200") == 7 and requests(found, "/search", "notes", "400") == 1
    assert requests(found, "/info", "mail", "200") == 0  # the other app's
    assert found["semsearch_request_seconds_count", (("mode", "hybrid"), ("route", "/search"))] == 7
    assert found["semsearch_searches_total", (("index", "notes"), ("mode", "hybrid"))] == 3
    assert found["semsearch_errors_total", (("code", "bad_request"), ("route", "/search"))] == 1
    assert found["semsearch_documents", (("index", "notes"),)] == 1234
    assert found["semsearch_generation", (("index", "notes"),)] == 5
    assert requests(samples(second), "/info", "mail", "200") == 1


WORKER = """
import sys
from semsearch.server.metrics import Metrics
metrics = Metrics()
for _ in range(int(sys.argv[1])):
    metrics.answered("/search", "notes", 200, 0.003, mode="dense")
metrics.index_state("notes", documents=int(sys.argv[2]), generation=2)
"""


def test_workers_sharing_a_directory_are_summed_by_whichever_answers(tmp_path: Path):
    env = {**os.environ, MULTIPROCESS_VARIABLE: str(tmp_path)}
    for count, documents in ((5, 100), (11, 101), (3, 102)):  # three worker processes, one after another
        subprocess.run([sys.executable, "-c", WORKER, str(count), str(documents)], env=env, check=True)
    # the process that answers /metrics: its own count and the others' files
    reader = subprocess.run(
        [
            sys.executable,
            "-c",
            "from semsearch.server.metrics import Metrics; import sys; "
            "m = Metrics(); m.answered('/search', 'notes', 200, 0.001, mode='dense'); "
            "sys.stdout.write(m.exposition()[0].decode())",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    found = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(reader.stdout)
        for sample in family.samples
    }
    assert requests(found, "/search", "notes", "200") == 5 + 11 + 3 + 1
    assert found["semsearch_request_seconds_count", (("mode", "dense"), ("route", "/search"))] == 20
    assert found["semsearch_documents", (("index", "notes"),)] == 102  # the most recent worker's


def test_nothing_imports_the_client_before_the_directory_is_named():
    code = "import semsearch.server.metrics, sys; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert multiprocessing.current_process().name == "MainProcess"
