"""The HTTP API fuzzed from its own OpenAPI document (GET /openapi.json, made from the definitions that check
requests): schemathesis generates requests for every operation, valid and invalid ones, each sent with no key,
the search key, the api key or a wrong key, to the running app (its lifespan, reader threads and writer process)
over a real index; no answer may be a 5xx, and each must be of a documented status, content type and schema."""

from __future__ import annotations

import shutil
from functools import partial

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("starlette", reason="the serve extra is not installed: pip install -e '.[serve]'")
from serverfuzz import ADMIN, LIMITS, SEARCHER, fuzzed  # noqa: E402


def test_no_generated_request_gets_a_5xx_or_an_answer_off_its_schema(sample_encoded, tmp_path):
    from semsearch import Index
    from semsearch.server import ServerSettings, create_app

    path = shutil.copytree(sample_encoded, tmp_path / "index")
    backups = tmp_path / "backups"
    backups.mkdir()
    keyed = ServerSettings(api_key=ADMIN, search_key=SEARCHER, backup_dir=str(backups), **LIMITS)
    # a few hundred requests here; benchmarks/server_fuzz.py sends thousands (results/server-fuzz.md)
    sent, statuses = fuzzed(create_app(partial(Index.open, path), keyed), examples=8)
    assert sent >= 330, sent  # 20 operations, valid and invalid requests of each
    assert statuses.get("200", 0) >= 20 and statuses.get("400", 0) >= 50, statuses  # not only refusals
    assert statuses.get("401", 0) >= 50 and statuses.get("403", 0) >= 50, statuses
    # no key at all: reads open to all, writes refused
    sent, statuses = fuzzed(create_app(partial(Index.open, path), ServerSettings(**LIMITS)), examples=3)
    assert sent >= 120 and statuses.get("200", 0) >= 10, (sent, statuses)


def test_the_document_is_made_from_the_routes_and_its_schemas_are_json_schema(sample_encoded, tmp_path):
    from jsonschema import Draft202012Validator
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from semsearch import Index
    from semsearch.server import ServerSettings, create_app

    path = shutil.copytree(sample_encoded, tmp_path / "index")
    app = create_app(partial(Index.open, path), ServerSettings(api_key=ADMIN, max_k=50))
    app.router.routes.append(Route("/added/{name}", lambda request: JSONResponse({}), methods=["PUT"]))
    with TestClient(app) as client:
        document = client.get("/openapi.json").json()
        assert set(document["paths"]) >= {"/search", "/documents/{doc_id}", "/metrics", "/openapi.json"}
        # each index's routes under /indexes/{index}/..., its name a path parameter
        mounted = document["paths"]["/indexes/{index}/search"]["get"]["parameters"]
        assert {"name": "index", "in": "path", "required": True}.items() <= mounted[0].items()
        assert "/indexes" in document["paths"] and "/indexes/{index}/{path}/search" not in document["paths"]
        added = document["paths"]["/added/{name}"]["put"]  # a route never described still appears
        assert [(p["name"], p["in"]) for p in added["parameters"]] == [("name", "path")]
        k = next(p for p in document["paths"]["/search"]["get"]["parameters"] if p["name"] == "k")
        assert k["schema"]["maximum"] == 50  # this server's bound, the one its handler checks
        assert client.get("/search", params={"q": "x", "k": 51}).status_code == 400
        paths = document["paths"]
        assert paths["/search"]["get"]["security"] == [{}, {"bearer": []}]  # no search key: a key optional
        assert paths["/metrics"]["get"]["security"] == [{"bearer": []}]  # the api key's
        assert client.get("/metrics").status_code == 401 and paths["/health"]["get"]["security"] == []
        search = document["paths"]["/search"]["post"]
        for operation in (op for methods in document["paths"].values() for op in methods.values()):
            schemas = [p["schema"] for p in operation["parameters"]]
            schemas += [c["schema"] for c in operation.get("requestBody", {}).get("content", {}).values()]
            for response in operation["responses"].values():
                schemas += [c["schema"] for c in response.get("content", {}).values()]
            for schema in schemas:
                Draft202012Validator.check_schema(schema)
        answer = client.post("/search", json={"q": "parse a date", "k": 3, "facets": ["kind"]}).json()
        Draft202012Validator(search["responses"]["200"]["content"]["application/json"]["schema"]).validate(
            answer
        )
