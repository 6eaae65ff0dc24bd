"""One server, several indexes and keys with scopes (server/scopes.py, indexes.py): a key confined by its `where`
sees, counts and confirms only its own documents, through every route and the MCP tools (tests/tenantfuzz.py
fuzzes it with thousands of hostile requests against a record read from the JSONL); several indexes answer at
/indexes/{name}/... and the bare routes; the keys file is re-read on SIGHUP."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest
from conftest import built_once, copy_index, shared_data
from tenantfuzz import (
    ADMIN,
    INDEX,
    KEYS,
    MCP_HEADERS,
    TENANTS,
    Fuzzer,
    bearer,
    keys_file,
    owners_of,
    tenant_corpus,
)

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette", reason="the serve extra is not installed: pip install -e '.[serve]'")
pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")
from starlette.testclient import TestClient  # noqa: E402

from semsearch import Index  # noqa: E402
from semsearch.server import ServerSettings, create_app  # noqa: E402

pytestmark = pytest.mark.xdist_group("tenants")
DOCUMENTS = 150  # 50 a tenant
SERVE = [sys.executable, "-m", "semsearch", "serve", "--port", "0"]
# hostile requests, each with a twin naming an absent id where it names another's (benchmarks/tenants.py:
# 20,000)
REQUESTS = 600


@pytest.fixture(scope="module")
def tenant_index(tmp_path_factory) -> tuple[Path, Path]:
    """(the index, its JSONL): SciFact's first documents, a tenant each in turn."""

    def build(root: Path) -> None:
        corpus = tenant_corpus(shared_data("scifact", "corpus.jsonl"), root / "corpus.jsonl", DOCUMENTS)
        with Index.create(root / INDEX) as index:
            assert index.ingest(corpus).added == DOCUMENTS

    root = built_once(tmp_path_factory, "tenants", build)
    return root / INDEX, root / "corpus.jsonl"


@pytest.fixture
def served(tenant_index, tmp_path):
    """An app over a copy of the index with the tenants' keys, its lifespan running."""
    path = copy_index(tenant_index[0], tmp_path / INDEX)
    settings = ServerSettings(keys_file=str(keys_file(tmp_path / "keys.json")), backup_dir=str(tmp_path))
    with TestClient(create_app({INDEX: partial(Index.open, path)}, settings)) as client:
        yield client


def test_no_answer_holds_counts_or_confirms_another_tenants_document(served, tenant_index):
    owners = owners_of(tenant_index[1])
    assert sorted(set(owners.values())) == sorted(TENANTS) and len(owners) == DOCUMENTS
    fuzzer = Fuzzer(served, owners, seed=56)
    started = time.perf_counter()
    faults = fuzzer.run(REQUESTS)
    took = time.perf_counter() - started
    assert not faults.found, "\n".join(faults.found[:20])
    assert faults.requests >= REQUESTS, faults
    # the requests reached the work, not only the refusals: most answered, the others refused as such
    assert faults.statuses.get(200, 0) > REQUESTS / 2 and set(faults.statuses) <= {200, 400, 403, 404, 409}, (
        faults
    )
    assert fuzzer.written >= 3, fuzzer.written  # some writes were made, and followed by the record
    # the index holds exactly what the record says: nobody's documents lost, nothing planted
    info = served.get("/info", headers=bearer(ADMIN)).json()
    assert info["documents"] == len(fuzzer.owners), (info["documents"], took)
    for tenant in TENANTS:
        body = {
            "q": "cell",
            "k": 1000,
            "mode": "dense",
            "facets": ["tenant"],
        }  # dense: every allowed one counted
        mine = served.post("/search", json=body, headers=bearer(KEYS[tenant])).json()
        assert mine["facets"]["tenant"] == {tenant: sum(1 for o in fuzzer.owners.values() if o == tenant)}
    assert fuzzer.planted and all(
        served.get(f"/documents/{doc_id}", headers=bearer(ADMIN)).status_code == 404
        for doc_id in fuzzer.planted
    )


def test_each_route_in_the_scope(served, tenant_index):
    owners = owners_of(tenant_index[1])
    acme, globex = bearer(KEYS["acme"]), bearer(KEYS["globex"])
    theirs = next(i for i, t in owners.items() if t == "globex")
    mine = next(i for i, t in owners.items() if t == "acme")
    # searches in every mode: only acme's, whatever the where says
    for mode in ("dense", "keyword", "hybrid"):
        for where in ([], ["tenant=globex"], ["tenant!=acme"]):
            found = served.get(
                "/search", params={"q": "cell", "mode": mode, "k": 50, "where": where}, headers=acme
            )
            assert found.status_code == 200, found.text
            assert {owners[h["id"]] for h in found.json()["hits"]} <= {"acme"}
            assert (where == []) == bool(found.json()["hits"])
    # facets count acme's documents only
    counted = served.get(
        "/search", params={"q": "cell", "facets": "tenant", "mode": "dense"}, headers=acme
    ).json()
    assert counted["facets"]["tenant"] == {"acme": DOCUMENTS // 3}
    # documents, similar and deletes of another tenant's are as absent ones are
    assert served.get(f"/documents/{mine}", headers=acme).status_code == 200
    assert served.get(f"/documents/{theirs}", headers=acme).json()["error"]["code"] == "not_found"
    assert served.get(f"/documents/{theirs}/similar", headers=acme).status_code == 404
    similar = served.get(f"/documents/{mine}/similar", params={"k": 20}, headers=acme).json()
    assert similar["hits"] and {owners[h["id"]] for h in similar["hits"]} == {"acme"}
    other = next(i for i, t in owners.items() if t == "initech")
    assert served.delete(f"/documents/{other}", headers=globex).status_code == 404
    assert (
        served.delete(
            "/documents", params={"where": "tenant=initech", "confirm": "true"}, headers=globex
        ).json()["deleted"]
        == 0
    )
    # /info: the key's count, nothing of the others'
    info = served.get("/info", headers=acme).json()
    assert info["documents"] == DOCUMENTS // 3 and "passages" not in info and "bytes" not in info
    # a scoped writer adds only inside its where; a reader not at all; backups and files are refused
    planted = [{"id": "planted", "text": "planted text", "tenant": "acme"}]
    refused = served.post("/documents", json=planted, headers=globex)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "outside_scope"
    assert served.post("/documents", json=planted, headers=acme).json()["error"]["code"] == "forbidden"
    taken = served.post(
        "/documents", json=[{"id": other, "text": "mine now", "tenant": "globex"}], headers=globex
    )
    assert taken.status_code == 403  # an id of another tenant's document is not free: never overwritten
    assert served.get(f"/documents/{other}", headers=bearer(ADMIN)).json()["document"]["text"] != "mine now"
    assert served.post("/backup", headers=globex).json()["error"]["code"] == "forbidden"
    assert served.post("/backup", headers=bearer(ADMIN)).status_code == 200
    assert served.get("/files/anything", headers=acme).status_code == 403

    # the MCP tools in the same scope
    def tool(name: str, arguments: dict) -> dict:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        result = served.post("/mcp", json=call, headers={**MCP_HEADERS, **acme}).json()["result"]
        assert not result.get("isError"), result
        return json.loads(result["content"][0]["text"])

    described = tool("describe_index", {})
    assert described["documents"] == DOCUMENTS // 3 and described["passages"] is None
    hits = tool("search", {"query": "cell", "k": 50, "mode": "dense", "where": ["tenant!=acme"]})["hits"]
    assert hits == []
    hits = tool("search", {"query": "cell", "k": 50, "mode": "hybrid"})["hits"]
    assert hits and {owners[h["id"]] for h in hits} == {"acme"}


def test_keys_are_asked_once_and_answer_401_or_403(served):
    assert served.get("/search", params={"q": "cell"}).json()["error"]["code"] == "key_required"
    unknown = served.get("/search", params={"q": "cell"}, headers=bearer("not-a-key-of-this-server"))
    assert unknown.status_code == 401 and unknown.json()["error"]["code"] == "unknown_key"
    assert served.get("/indexes", headers=bearer(KEYS["acme"])).json()["indexes"] == [INDEX]
    assert served.get("/indexes/other/search", params={"q": "x"}, headers=bearer(ADMIN)).status_code == 404
    stranger = served.get("/indexes/other/search", params={"q": "x"})
    assert stranger.status_code == 401  # no index's name told to a stranger
    assert served.get(f"/indexes/{INDEX}/health").json()["status"] == "ok"  # health needs no key
    assert served.get("/indexes/other/health").status_code == 404


def test_metrics_are_an_admins_and_labelled_by_index(served):
    served.get(f"/indexes/{INDEX}/search", params={"q": "cell"}, headers=bearer(KEYS["acme"]))
    for key, status in ((KEYS["acme"], 403), (KEYS["globex"], 403), (None, 401), (ADMIN, 200)):
        assert served.get("/metrics", headers=bearer(key) if key else {}).status_code == status, key
    text = served.get("/metrics", headers=bearer(ADMIN)).text
    assert (
        f'semsearch_searches_total{{index="{INDEX}",mode=' in text
    )  # the served name, never a client's path
    served.get("/indexes/no-such-index/search", params={"q": "x"}, headers=bearer(ADMIN))
    assert "no-such-index" not in served.get("/metrics", headers=bearer(ADMIN)).text


def test_several_indexes_in_one_app(tenant_index, tmp_path):
    notes = copy_index(tenant_index[0], tmp_path / "notes")
    mail = copy_index(tenant_index[0], tmp_path / "mail")
    keys = tmp_path / "keys.json"
    entries = [
        {"key": KEYS["acme"], "indexes": ["mail"], "where": ["tenant=acme"]},
        {"key": ADMIN, "write": True},
    ]
    keys.write_text(json.dumps({"keys": entries}))
    openers = {"notes": partial(Index.open, notes), "mail": partial(Index.open, mail)}
    with TestClient(create_app(openers, ServerSettings(keys_file=str(keys)))) as client:
        admin, acme = bearer(ADMIN), bearer(KEYS["acme"])
        listed = client.get("/indexes", headers=admin).json()
        assert listed["indexes"] == ["notes", "mail"] and listed["default"] == "notes"
        listed = client.get("/indexes", headers=acme).json()
        assert listed["indexes"] == ["mail"] and listed["default"] is None
        removed = client.delete(
            "/indexes/mail/documents", params={"where": "tenant=acme", "confirm": "true"}, headers=admin
        )
        assert removed.json()["deleted"] == DOCUMENTS // 3
        assert (
            client.get("/indexes/mail/info", headers=admin).json()["documents"] == DOCUMENTS - DOCUMENTS // 3
        )
        assert client.get("/info", headers=admin).json()["documents"] == DOCUMENTS  # the bare routes: notes
        assert client.get("/indexes/notes/info", headers=admin).json()["documents"] == DOCUMENTS
        assert client.get("/info", headers=acme).json()["error"]["code"] == "forbidden"
        assert client.get("/indexes/mail/info", headers=acme).json()["documents"] == 0
        mcp = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "describe_index", "arguments": {}},
        }
        headers = {"accept": "application/json, text/event-stream", **admin}
        described = client.post("/indexes/mail/mcp", json=mcp, headers=headers).json()["result"]
        assert json.loads(described["content"][0]["text"])["documents"] == DOCUMENTS - DOCUMENTS // 3


def test_two_indexes_of_one_name_are_an_error(tenant_index, tmp_path):
    first, second = tmp_path / "a" / INDEX, tmp_path / "b" / INDEX
    copy_index(tenant_index[0], first)
    result = subprocess.run(
        [*SERVE, "--index", str(first), "--index", str(second)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "two indexes named 'notes'" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_keys_file_is_read_again_on_sighup(tenant_index, tmp_path):
    path = copy_index(tenant_index[0], tmp_path / INDEX)
    keys = keys_file(tmp_path / "keys.json")
    command = [*SERVE, "--index", str(path), "--keys", str(keys)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ})
    lines: list[str] = []
    try:
        url = re.search(r"serving (http://127\.0\.0\.1:\d+)/", process.stderr.readline())[1]
        threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
        ask = partial(httpx.get, f"{url}/info", timeout=30)
        assert ask(headers=bearer(KEYS["acme"])).json()["documents"] == DOCUMENTS // 3
        new = "a-new-key-given-later-0123"
        keys.write_text(json.dumps({"keys": [{"key": new, "where": ["tenant=globex"]}]}))
        process.send_signal(signal.SIGHUP)
        for _ in range(100):
            if ask(headers=bearer(new)).status_code == 200:
                break
            time.sleep(0.1)
        assert ask(headers=bearer(new)).json()["documents"] == DOCUMENTS // 3
        assert ask(headers=bearer(KEYS["acme"])).status_code == 401
        keys.write_text("{not json")
        process.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert ask(headers=bearer(new)).status_code == 200  # a bad file keeps the keys held
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(30)
    assert any("keys not reloaded" in line and "not JSON" in line for line in lines), lines
