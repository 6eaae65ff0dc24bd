"""The MCP tools (server/mcp_tools.py): `semsearch mcp` launched as a subprocess and driven with the SDK's own
client (stdio_client, ClientSession), and `semsearch serve`'s /mcp with its streamable HTTP client, each
answer checked against this process's own Index: schemas that are valid JSON Schema, searches and documents,
writes only where allowed, and bad arguments that each come back as a tool error while the server answers on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import copy_index

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

import jsonschema  # noqa: E402  (an mcp dependency)
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from semsearch import Index  # noqa: E402

pytestmark = pytest.mark.xdist_group("mcp")
SEMSEARCH = [sys.executable, "-m", "semsearch"]
QUERY = "parse a date from a string"
ADMIN, SEARCHER = "admin-key-for-mcp-tests", "search-key-for-mcp-tests"
BAD_SEARCHES = [
    ({"query": 5}, "query: 5 is not of type 'string'"),
    ({"query": "x", "k": "ten"}, "k: 'ten' is not of type 'integer'"),
    ({"query": "x", "k": 10**9}, "k: 1000000000 is greater than the maximum of 50"),
    ({"query": "x", "colour": "red"}, "'colour' was unexpected"),
    ({"query": "x", "where": ["year==2001"]}, "an operator twice"),
    ({"query": "x", "where": ["colour=red"]}, "no document has a field 'colour'"),
    ({"query": "x", "where": "year>2001"}, "is not of type 'array'"),
    ({"query": "x", "mode": "fuzzy"}, "'fuzzy' is not one of"),
    ({}, "'query' is a required property"),
]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def answer(result) -> dict:
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error(result) -> str:
    assert result.is_error, result.content
    (content,) = result.content
    assert "\n" not in content.text and "Traceback" not in content.text
    return content.text


@pytest.fixture(scope="module")
def reference(sample_encoded):
    """The sample index opened in this process: what the servers' answers are checked against."""
    with Index.open(sample_encoded) as index:
        yield index


HIT_FIELDS = {"id", "title", "score", "metadata", "passage", "location", "snippet", "scores"}


def expected_ids(index: Index, query: str, **options) -> list[str]:
    return [hit.id for hit in index.search(query, **options)]


async def check_reads(session: ClientSession, reference: Index, index: dict) -> None:
    """What both transports answer alike, on the sample corpus: searches as Index.search, paging, documents,
    the index's fields, and bad arguments as tool errors."""
    found = answer(await session.call_tool("search", {"query": QUERY, "k": 5, **index}))
    assert [hit["id"] for hit in found["hits"]] == expected_ids(reference, QUERY, k=5)
    assert all(
        len(hit["passage"]["text"]) <= 1000
        and hit["text"] == hit["passage"]["text"]
        and set(hit) >= HIT_FIELDS
        for hit in found["hits"]
    )
    filtered = {"query": QUERY, "k": 4, "offset": 3, "where": ["year>=2010", "kind=even"], "mode": "dense"}
    paged = answer(await session.call_tool("search", {**filtered, **index}))
    want = expected_ids(reference, QUERY, k=7, where=["year>=2010", "kind=even"], mode="dense")[3:]
    assert [hit["id"] for hit in paged["hits"]] == want
    assert all(hit["metadata"]["year"] >= 2010 and hit["metadata"]["kind"] == "even" for hit in paged["hits"])

    doc_id = found["hits"][0]["id"]
    document = answer(await session.call_tool("get_document", {"id": doc_id, **index}))
    pk = reference.store.existing_ids([doc_id])[doc_id][0]
    stored = reference.store.get([pk])[pk]
    assert (document["text"], document["metadata"]) == (stored["text"][:20_000], stored["metadata"])
    assert "no document with id 'nope'" in error(
        await session.call_tool("get_document", {"id": "nope", **index})
    )

    described = answer(await session.call_tool("describe_index", index))
    assert described["documents"] == 300 and described["languages"] == ["English"]
    assert set(described["fields"]["year"]) == {"integer"} and set(described["fields"]["kind"]) == {"text"}

    for arguments, message in BAD_SEARCHES:
        assert message in error(await session.call_tool("search", {**arguments, **index})), arguments
    assert "no tool 'drop_everything'" in error(await session.call_tool("drop_everything", {}))
    assert answer(await session.call_tool("search", {"query": QUERY, "k": 1, **index}))[
        "hits"
    ]  # still answering


def check_schemas(tools) -> dict:
    by_name = {tool.name: tool for tool in tools}
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["additionalProperties"] is False and len(tool.description) > 80
    where = by_name["search"].input_schema["properties"]["where"]["description"]
    assert re.search(r'Example: \["(kind=(even|odd)|module=\w+|year>=\d+)"\]', where), where
    assert by_name["search"].input_schema["properties"]["k"]["maximum"] == 50
    return by_name


def test_semsearch_mcp_over_stdio(sample_encoded, reference, tmp_path):
    """Two indexes, writes allowed: the `index` argument names them; a write is seen by the next search."""
    writable = copy_index(sample_encoded, tmp_path / "notes")
    params = StdioServerParameters(
        command=SEMSEARCH[0],
        args=[
            *SEMSEARCH[1:],
            "mcp",
            "--index",
            str(writable),
            "--index",
            str(sample_encoded),
            "--allow-writes",
        ],
        # the SDK passes the server only this env beside a few of its own (HOME, PATH, ...): the run's caches
        # too, else the server exports the model again into the user's cache
        env={
            **{
                name: os.environ[name]
                for name in ("PYTHONPATH", "SEMSEARCH_CACHE", "SEMSEARCH_ENCODING_CACHE")
                if name in os.environ
            },
            "OMP_NUM_THREADS": "1",
        },
    )

    async def drive():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = check_schemas((await session.list_tools()).tools)
            assert set(tools) == {
                "search",
                "get_document",
                "describe_index",
                "add_documents",
                "delete_documents",
            }
            assert tools["search"].input_schema["properties"]["index"]["enum"] == ["notes", "index"]
            await check_reads(session, reference, {"index": "index"})

            added = answer(await session.call_tool("add_documents", {"documents": [
                {"id": "mcp-1", "text": "Zanzibar spice tariffs of 1850", "year": 1850, "kind": "even"},
                {"id": "argparse", "text": "Replaced by the agent.", "kind": "odd"},
            ]}))  # fmt: skip
            assert (added["added"], added["replaced"], added["documents"]) == (
                2,
                1,
                301,
            )  # added counts the replaced
            hits = answer(await session.call_tool("search", {"query": "Zanzibar spice tariffs", "k": 1}))
            assert hits["hits"][0]["id"] == "mcp-1"
            bad = {"documents": [{"id": "mcp-2", "text": "fine"}, {"id": "mcp-3", "text": "  "}]}
            assert "line 2, field 'text': empty text" in error(
                await session.call_tool("add_documents", bad)
            )  # nothing written
            assert "documents: [] should be non-empty" in error(
                await session.call_tool("add_documents", {"documents": []})
            )
            assert "'text' is a required property" in error(
                await session.call_tool("add_documents", {"documents": [{"id": "mcp-4"}]})
            )
            most = error(await session.call_tool("delete_documents", {"where": ["year>=2000"]}))
            assert "confirm=true" in most
            gone = answer(
                await session.call_tool("delete_documents", {"ids": ["mcp-1"], "where": ["year=1850"]})
            )
            assert (gone["deleted"], gone["documents"]) == (1, 300)
            assert "name the documents" in error(await session.call_tool("delete_documents", {}))
            other = answer(await session.call_tool("describe_index", {"index": "index"}))
            assert other["documents"] == 300  # the second index untouched

    run(drive())
    with Index.open(writable) as index:
        assert len(index) == 300 and not index.store.existing_ids(["mcp-1"])
        pk = index.store.existing_ids(["argparse"])["argparse"][0]
        assert index.store.get([pk])[pk]["text"] == "Replaced by the agent."


@contextlib.contextmanager
def serving(path: Path, *options: str):
    command = [*SEMSEARCH, "serve", "--index", str(path), "--port", "0", *options]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    try:
        line = process.stderr.readline()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+)/", line)
        assert found, line + process.stderr.read()
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield found[1]
    finally:
        process.terminate()
        process.wait(30)


async def http_session(url: str, key: str | None, drive):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url + "/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await drive(session)


def test_serve_answers_mcp_at_slash_mcp_behind_its_keys(sample_encoded, reference, tmp_path):
    import httpx

    writable = copy_index(sample_encoded, tmp_path / "index")
    with serving(writable, "--api-key", ADMIN, "--search-key", SEARCHER) as url:
        refused = httpx.post(url + "/mcp", json={}, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_required"

        async def as_searcher(session):
            tools = check_schemas((await session.list_tools()).tools)
            assert "index" not in tools["search"].input_schema["properties"]  # one index
            await check_reads(session, reference, {})
            record = {"documents": [{"id": "http-1", "text": "written over MCP"}]}
            assert "not the api key" in error(await session.call_tool("add_documents", record))

        async def as_admin(session):
            return answer(
                await session.call_tool("add_documents", {"documents": [{"id": "http-1", "text": "x"}]})
            )

        run(http_session(url, SEARCHER, as_searcher))
        assert run(http_session(url, ADMIN, as_admin))["documents"] == 301
    with Index.open(writable) as index:
        assert index.store.existing_ids(["http-1"])


def test_without_allow_writes_no_tool_writes(sample_encoded):
    """The tools an index is served with when writes are not allowed (in this process, on a reader thread)."""
    from functools import partial

    from semsearch.server.mcp_stdio import on_thread
    from semsearch.server.mcp_tools import Served, Tools
    from semsearch.server.workers import IndexThreads

    threads = IndexThreads(partial(Index.open, sample_encoded))
    try:
        tools = Tools([Served("index", on_thread(threads))])

        async def listed():
            names = [tool.name for tool in await tools.tools()]
            refused = await tools.call("add_documents", {"documents": [{"id": "1", "text": "x"}]})
            return names, refused

        names, refused = run(listed())
        assert names == ["search", "get_document", "describe_index"]
        assert "no tool 'add_documents'" in error(refused)
    finally:
        threads.close()
