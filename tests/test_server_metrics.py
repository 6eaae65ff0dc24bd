"""The server's figures for Prometheus (server/metrics.py), read back with prometheus-client's own parser of the
text format: exact in one process with two apps side by side, and summed across worker processes sharing a
directory (real processes, each counting its own requests); and GET /metrics of a real server counting exactly
the requests a test sent, in one process and across `semsearch serve --workers 2`."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from conftest import serve_command

pytest.importorskip("prometheus_client")
httpx = pytest.importorskip("httpx")
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


# ---- GET /metrics of the server -----------------------------------------------------------------------------

ADMIN = "admin-key-for-metrics"
QUERY = "parse a date from a string"


def exposition(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sent_requests(client, index: str) -> dict[tuple[str, str, str], int]:
    """A known mix of requests (answers, errors, searches of several modes); their counts by route, index
    and status."""
    bearer = {"Authorization": f"Bearer {ADMIN}"}
    assert client.get("/info").status_code == 200  # the readers have the index open: every label has it
    for _ in range(3):
        assert client.get("/search", params={"q": QUERY, "k": 2}).status_code == 200
    assert client.get("/search", params={"q": QUERY, "mode": "keyword"}).status_code == 200
    assert client.post("/search", json={"q": QUERY, "k": 0}).status_code == 400
    assert client.post("/search/batch", json={"queries": [QUERY, "files", "json"]}).status_code == 200
    assert client.get("/documents/no-such-id").status_code == 404
    assert client.get("/no/such/route/42").status_code == 404
    assert client.delete("/documents", params={"id": "no-such-id"}, headers=bearer).status_code == 404
    assert client.get("/metrics").status_code == 401
    return {
        ("/info", index, "200"): 1,
        ("/search", index, "200"): 4,
        ("/search", index, "400"): 1,
        ("/search/batch", index, "200"): 1,
        ("/documents/{doc_id}", index, "404"): 1,
        ("(unmatched)", index, "404"): 1,
        ("/documents", index, "404"): 1,
        ("/metrics", index, "401"): 1,
    }


def assert_counted(found, sent: dict[tuple[str, str, str], int], index: str, default_mode: str) -> None:
    counted = {
        (labels["route"], labels["index"], labels["status"]): value
        for (name, label_items), value in found.items()
        if name == "semsearch_requests_total" and (labels := dict(label_items))
    }
    assert counted == sent
    assert found["semsearch_searches_total", (("index", index), ("mode", default_mode))] == 3 + 3
    assert found["semsearch_searches_total", (("index", index), ("mode", "keyword"))] == 1
    latency = ("semsearch_request_seconds_count", (("mode", default_mode), ("route", "/search")))
    assert found[latency] == 3
    assert found["semsearch_errors_total", (("code", "not_found"), ("route", "(unmatched)"))] == 1
    assert found["semsearch_errors_total", (("code", "bad_parameter"), ("route", "/search"))] == 1
    assert found["semsearch_errors_total", (("code", "key_required"), ("route", "/metrics"))] == 1
    assert found["semsearch_documents", (("index", index),)] == 300
    assert found["semsearch_generation", (("index", index),)] >= 1
    assert found["semsearch_writes_queued", (("index", index),)] == 0  # the delete came and went


def test_metrics_of_one_process_count_exactly_what_was_sent(sample_encoded, tmp_path, one_process):
    from starlette.testclient import TestClient

    from semsearch import Index
    from semsearch.server import ServerSettings, create_app

    path = shutil.copytree(sample_encoded, tmp_path / "notes")
    with Index.open(path) as index:
        default_mode = index.default_mode.value
    # served by its name, the metrics' index label
    app = create_app({"notes": partial(Index.open, path)}, ServerSettings(api_key=ADMIN))
    with TestClient(app) as client:
        sent = sent_requests(client, "notes")
        response = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert_counted(exposition(response.text), sent, "notes", default_mode)


def test_metrics_of_two_worker_processes_sum_both(sample_encoded, tmp_path):
    from semsearch import Index

    path = shutil.copytree(sample_encoded, tmp_path / "notes")
    with Index.open(path) as index:
        default_mode = index.default_mode.value
    scratch = tmp_path / "scratch"  # where the server makes its metrics directory
    scratch.mkdir()
    env = {**os.environ, "SEMSEARCH_API_KEY": ADMIN, "TMPDIR": str(scratch)}
    env.pop(MULTIPROCESS_VARIABLE, None)
    with serve_command(path, "--workers", "2", env=env) as url:
        (shared,) = scratch.glob("semsearch-metrics-*")  # this run's, named before its workers started
        with httpx.Client(base_url=url, timeout=60) as client:
            sent = sent_requests(client, "notes")
            more = 40  # a new connection each: the kernel spreads them over both workers
            for _ in range(more):
                assert httpx.get(url + "/info", timeout=60).status_code == 200
            sent["/info", "notes", "200"] += more
            scrape = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
            assert scrape.status_code == 200
        assert len(list(shared.glob("counter_*.db"))) == 2  # both workers answered some and counted them
    assert_counted(exposition(scrape.text), sent, "notes", default_mode)
    assert not shared.exists()  # removed when the run stops
