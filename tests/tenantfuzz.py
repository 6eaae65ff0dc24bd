"""Tenant isolation, fuzzed: one index of SciFact documents split among three tenants by a `tenant` field, a
key for each (scoped by `tenant=NAME`; two may write) and an admin key, and a seeded generator of hostile
requests over every route a key reaches (searches in the three modes with wheres that try to widen the scope,
facets on the tenant, pages, similar and documents of other tenants' ids, deletes by id and by filter, adds
outside the scope, MCP calls). Each answer is checked against an independent record of who owns what (read
from the JSONL written here, followed through the generator's own writes), for three faults:

- holding: a string of the answer (anywhere in its JSON) is another tenant's document id or name;
- counting: a count (facets, /info, describe_index, a delete) exceeds or differs from the key's own documents;
- confirming: a request naming another tenant's id is answered otherwise than the same request naming an id no
  document has (status, error code, message with the id replaced).

Used by tests/test_tenants.py (a few thousand requests) and benchmarks/tenants.py (more, timed)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TENANTS = ("acme", "globex", "initech")
WRITERS = {"globex", "initech"}
KEYS = {tenant: f"{tenant}-tenant-key-0123456789" for tenant in TENANTS}
ADMIN = "admin-key-for-tenant-tests-0123"
INDEX = "notes"
WORDS = (
    "cancer risk",
    "protein folding",
    "cell",
    "gene expression",
    "mortality",
    "vitamin D",
    "immune response",
    "mutation",
    "brain",
    "diabetes",
    "bacteria infection",
    "stem cells",
)
MODES = ("dense", "keyword", "hybrid")
TEXT_CHARACTERS = 400  # of an abstract: a passage or two each, so the index is built in seconds
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def tenant_corpus(source: Path, target: Path, documents: int) -> Path:
    """The first `documents` SciFact documents (their texts' first TEXT_CHARACTERS), each given a tenant (in turn), a year and a batch."""
    records = []
    with source.open() as handle:
        for n, line in enumerate(handle):
            if n == documents:
                break
            doc = json.loads(line)
            records.append(
                {
                    "id": doc["_id"],
                    "title": doc.get("title") or None,
                    "text": doc["text"][:TEXT_CHARACTERS],
                    "tenant": TENANTS[n % len(TENANTS)],
                    "year": 2000 + n % 7,
                    "batch": "corpus",
                }
            )
    target.write_text("".join(json.dumps(r) + "\n" for r in records))
    return target


def owners_of(corpus: Path) -> dict[str, str]:
    """Each document id's tenant, read straight from the JSONL (not through the index)."""
    return {r["id"]: r["tenant"] for r in map(json.loads, corpus.read_text().splitlines())}


def keys_file(path: Path) -> Path:
    entries = [
        {"key": KEYS[t], "name": t, "indexes": [INDEX], "write": t in WRITERS, "where": [f"tenant={t}"]}
        for t in TENANTS
    ]
    path.write_text(json.dumps({"keys": [*entries, {"key": ADMIN, "name": "admin", "write": True}]}))
    return path


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@dataclass
class Call:
    """One request: who sends it, how, and (for `confirm` pairs) the other tenant's id it names."""

    tenant: str
    method: str
    url: str
    options: dict[str, Any] = field(default_factory=dict)
    named: str | None = None  # another tenant's id in the request: answered as an absent id is
    kind: str = ""


@dataclass
class Faults:
    requests: int = 0
    found: list[str] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    def add(self, call: Call, what: str) -> None:
        self.found.append(f"{call.kind} {call.method} {call.url} {call.options} by {call.tenant}: {what}")


class Fuzzer:
    """The generator and the checks over `client` (an httpx-like client of the app), `owners` the record."""

    def __init__(self, client: Any, owners: dict[str, str], seed: int = 0, prefix: str = ""):
        self.client, self.owners, self.random, self.prefix = client, dict(owners), random.Random(seed), prefix
        self.absent = 0
        self.added: dict[str, list[str]] = {t: [] for t in TENANTS}  # the fuzz documents each tenant added
        self.faults = Faults()
        self.written = 0  # documents added by the generator's writes
        self.planted: list[str] = []  # ids of the documents it tried to add outside a scope

    # ---- the record

    def own(self, tenant: str) -> set[str]:
        return {doc_id for doc_id, owner in self.owners.items() if owner == tenant}

    def others(self, tenant: str) -> list[str]:
        return sorted(doc_id for doc_id, owner in self.owners.items() if owner != tenant)

    # ---- the requests

    def hostile_where(self, tenant: str) -> list[str]:
        other = self.random.choice([t for t in TENANTS if t != tenant])
        other_id = self.random.choice(self.others(tenant))
        return self.random.choice(
            [
                [],
                [f"tenant!={tenant}"],
                [f"tenant={other}"],
                [f"tenant={tenant} OR tenant={other}"],
                [f"tenant={tenant}' OR '1'='1"],
                [f'tenant="{other}"'],
                ["tenant=null"],
                ["tenant!=null"],
                [f"id={other_id}"],
                [f"id!={other_id}"],
                ["year>=0"],
                [f"tenant={tenant}", f"tenant={other}"],
                [f" tenant = {other} "],
                [f"tenant={other.upper()}"],
                ["batch=fuzz"],
                [f"title!={tenant}"],
            ]
        )

    def search(self, tenant: str) -> Call:
        r = self.random
        where = self.hostile_where(tenant)
        params = {
            "q": r.choice(WORDS),
            "mode": r.choice(MODES),
            "k": r.choice([1, 10, 50, 200]),
            "offset": r.choice([0, 0, 5, 40]),
        }
        how = r.random()
        if how < 0.45:
            facets = r.choice([[], ["tenant"], ["tenant", "year"], ["batch"]])
            query = [*params.items(), *(("where", w) for w in where), *(("facets", f) for f in facets)]
            return Call(tenant, "GET", "/search", {"params": query}, kind="search")
        if how < 0.7:
            other = r.choice([t for t in TENANTS if t != tenant])
            body = {**params, "where": r.choice([where, {"tenant": other}]), "facets": ["tenant"]}
            return Call(tenant, "POST", "/search", {"json": body}, kind="post-search")
        if how < 0.85:
            body = {
                "queries": r.sample(WORDS, 3),
                "where": where,
                "mode": params["mode"],
                "facets": ["tenant"],
            }
            return Call(tenant, "POST", "/search/batch", {"json": body}, kind="batch")
        query = [("fields", "year"), *(("where", w) for w in where)]
        if r.random() < 0.5:
            query.append(("q", params["q"]))
        return Call(tenant, "GET", "/facets/ranges", {"params": query}, kind="ranges")

    def by_id(self, tenant: str) -> Call:
        """A request naming one other tenant's id (answered as an absent id is)."""
        r = self.random
        other = r.choice(self.others(tenant))
        mine = r.choice(sorted(self.own(tenant)))
        choices = [
            ("GET", "/documents/{id}", {}),
            ("GET", "/documents/{id}/similar", {"params": {"k": 10}}),
            ("GET", f"/documents/{mine}/similar", {"params": {"not": "{id}"}}),
            ("POST", "/similar", {"json": {"ids": ["{id}"], "k": 5}}),
            ("POST", "/similar", {"json": {"ids": [mine], "not": ["{id}"]}}),
            ("POST", "/similar", {"json": {"ids": [mine, "{id}"]}}),
        ]
        if tenant in WRITERS:
            choices += [
                ("DELETE", "/documents/{id}", {}),
                ("DELETE", "/documents", {"params": {"id": "{id}"}}),
            ]
        method, url, options = r.choice(choices)
        return Call(tenant, method, url, options, named=other, kind="by-id")

    def mcp(self, tenant: str) -> Call:
        r = self.random
        if r.random() < 0.5:
            arguments = {
                "query": r.choice(WORDS),
                "where": self.hostile_where(tenant),
                "mode": r.choice(MODES),
            }
            name, named = "search", None
        elif r.random() < 0.7:
            arguments, name, named = {"id": "{id}"}, "get_document", r.choice(self.others(tenant))
        else:
            arguments, name, named = {}, "describe_index", None
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return Call(tenant, "POST", "/mcp", {"json": body, "headers": MCP_HEADERS}, named=named, kind="mcp")

    def write(self, tenant: str) -> Call:
        r = self.random
        other = r.choice([t for t in TENANTS if t != tenant])
        n = len(self.added[tenant])
        choice = r.random()
        if choice < 0.4:
            doc = {
                "id": f"fuzz-{tenant}-{n}",
                "text": f"{r.choice(WORDS)} in {tenant}",
                "tenant": tenant,
                "batch": "fuzz",
            }
            return Call(tenant, "POST", "/documents", {"json": [doc]}, kind="add")
        if choice < 0.6:
            bad = {"id": f"fuzz-{tenant}-x{n}", "text": "planted", "tenant": other, "batch": "fuzz"}
            return Call(tenant, "POST", "/documents", {"json": [bad]}, kind="add-outside")
        if choice < 0.8:
            where = r.choice(
                [[f"tenant={other}"], [f"tenant!={tenant}"], ["batch=fuzz"], [f"id={self.others(tenant)[0]}"]]
            )
            params = [("confirm", "true"), *(("where", w) for w in where)]
            return Call(tenant, "DELETE", "/documents", {"params": params}, kind="delete-where")
        return Call(tenant, "GET", "/info", kind="info")

    def calls(self, count: int) -> Iterator[Call]:
        for _ in range(count):
            tenant = self.random.choice(TENANTS)
            draw = self.random.random()
            if draw < 0.55:
                yield self.search(tenant)
            elif draw < 0.8:
                yield self.by_id(tenant)
            elif draw < 0.93:
                yield self.mcp(tenant)
            elif tenant in WRITERS and draw < 0.97:
                yield self.write(tenant)
            else:
                yield Call(tenant, "GET", self.random.choice(["/info", "/indexes"]), kind="info")

    # ---- sending and checking

    def send(self, call: Call, named: str | None = None) -> Any:
        def filled(value: Any) -> Any:
            if isinstance(value, str):
                return value.replace("{id}", named or "")
            if isinstance(value, list):
                return [filled(v) for v in value]
            if isinstance(value, tuple):
                return tuple(filled(v) for v in value)
            if isinstance(value, dict):
                return {k: filled(v) for k, v in value.items()}
            return value

        options = filled(call.options)
        headers = {**options.pop("headers", {}), **bearer(KEYS[call.tenant])}
        url = self.prefix + filled(call.url) if call.url != "/indexes" else call.url
        return self.client.request(call.method, url, headers=headers, **options)

    def run(self, count: int) -> Faults:
        for call in self.calls(count):
            self.check(call)
        return self.faults

    def check(self, call: Call) -> None:
        faults = self.faults
        response = self.send(call, call.named)
        faults.requests += 1
        faults.statuses[response.status_code] = faults.statuses.get(response.status_code, 0) + 1
        body = answer_of(response)
        if response.status_code >= 500:
            faults.add(call, f"status {response.status_code}: {response.text[:200]}")
        if call.named is not None:
            self.absent += 1
            absent = f"absent-{self.absent}"
            twin = self.send(call, absent)
            faults.requests += 1
            if shape(response, call.named) != shape(twin, absent):
                faults.add(
                    call,
                    f"another's id answered {shape(response, call.named)}, an absent one {shape(twin, absent)}",
                )
        self.follow(call, response, body)
        for text in strings(body):
            if text in self.owners and self.owners[text] != call.tenant:
                faults.add(call, f"holds {text!r} of {self.owners[text]}")
            elif text in TENANTS and text != call.tenant:
                faults.add(call, f"names the tenant {text!r}")
        for where, count in counts(body):
            if count > len(self.own(call.tenant)):
                faults.add(
                    call, f"counts {count} at {where}, over its {len(self.own(call.tenant))} documents"
                )
        documents = described(body)
        if documents is not None and documents != len(self.own(call.tenant)):
            faults.add(call, f"says {documents} documents, not its {len(self.own(call.tenant))}")

    def follow(self, call: Call, response: Any, body: Any) -> None:
        """The record follows the generator's writes; a write outside the scope must have been refused."""
        if call.kind == "add" and response.status_code == 200:
            doc_id = call.options["json"][0]["id"]
            self.owners[doc_id] = call.tenant
            self.added[call.tenant].append(doc_id)
            self.written += 1
        elif call.kind == "add-outside":
            self.planted.append(call.options["json"][0]["id"])
            if response.status_code != 403:
                self.faults.add(call, f"an add outside the scope answered {response.status_code}")
        elif call.kind == "delete-where" and response.status_code == 200:
            where = [v for k, v in call.options["params"] if k == "where"]
            expected = self.added[call.tenant] if where == ["batch=fuzz"] else []
            if body.get("deleted") != len(expected):
                self.faults.add(call, f"deleted {body.get('deleted')}, its own matching are {len(expected)}")
            for doc_id in expected:
                del self.owners[doc_id]
            if where == ["batch=fuzz"]:
                self.added[call.tenant] = []
        elif call.method == "DELETE" and call.named is not None and response.status_code == 200:
            self.faults.add(call, "deleted another tenant's document")


def answer_of(response: Any) -> Any:
    try:
        body = response.json()
    except ValueError:
        return {}
    result = body.get("result") if isinstance(body, dict) and "jsonrpc" in body else None
    if isinstance(result, dict):  # an MCP answer: its JSON, or its message
        text = " ".join(c.get("text", "") for c in result.get("content", []))
        try:
            return {"mcp": json.loads(text), "error": result.get("isError")}
        except ValueError:
            return {"mcp_message": text, "error": result.get("isError")}
    return body


def shape(response: Any, named: str) -> tuple:
    """What an answer tells of the id it names: its status, error code and message (the id replaced)."""
    body = answer_of(response)
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else error
    message = error.get("message", "") if isinstance(error, dict) else body.get("mcp_message", "")
    return response.status_code, code, message.replace(named, "ID")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from strings(inner)


def counts(value: Any, at: str = "") -> Iterator[tuple[str, int]]:
    """Every facet count and every `documents` / `count` / `deleted` number of an answer."""
    if isinstance(value, dict):
        for key, inner in value.items():
            here = f"{at}.{key}"
            if key == "facets" and isinstance(inner, dict):
                for name, values in inner.items():
                    for facet_value, n in values.items() if isinstance(values, dict) else []:
                        if isinstance(n, int):
                            yield f"{here}.{name}.{facet_value}", n
            elif key in ("documents", "count", "deleted", "passages") and isinstance(inner, int):
                yield here, inner
            else:
                yield from counts(inner, here)
    elif isinstance(value, list):
        for inner in value:
            yield from counts(inner, at)


def described(body: Any) -> int | None:
    """The documents an /info or describe_index answer says the key has."""
    if isinstance(body, dict) and "mcp" in body and isinstance(body["mcp"], dict) and "modes" in body["mcp"]:
        return body["mcp"].get("documents")
    if isinstance(body, dict) and "server" in body:
        return body.get("documents")
    return None
