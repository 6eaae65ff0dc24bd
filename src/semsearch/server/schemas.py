"""The API's requests declared once per route: each operation's query parameters and JSON body fields (type,
bounds, required), which both check a request (the 400 answers of protocol.py's readers, in the order declared)
and are the operation's part of the OpenAPI document (openapi.py), with the schemas of its answers.

A handler reads its request with `Operation.query(request.query_params)` or `Operation.body(json)`, and is marked
with `described(GET=operation, ...)`, which openapi.py finds on the routes of the running app."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..retrieval.hits import QUERY_OPTIONS
from ..settings import FACET_VALUES, MAX_FACET_VALUES, Fusion, SearchMode
from .answers import BATCH, COUNT, ERROR, JSON_RPC, SEARCHED, SIMILAR, answer
from .protocol import ApiError, ServerSettings, bounded_float, bounded_int, flag, string_list

MAX_GENERATION = (1 << 63) - 1
MAX_CROP = 1_000  # words of a snippet
MAX_TYPOS = 2
BUCKETS, MAX_BUCKETS = 5, 20  # GET /facets/ranges

INTEGER, NUMBER, TEXT, STRING, STRINGS, FLAG, BOOLEAN, WHERE, QUERIES = (
    "integer",
    "number",
    "text",  # a non-empty string
    "string",
    "strings",  # one string or a list of them (a query string's repeated parameter)
    "flag",  # true or false (a query string's true/false/1/0)
    "boolean",  # a JSON true or false only
    "where",  # conditions of the --where language: strings, or a JSON object of them
    "queries",  # a non-empty list of non-empty strings, at most `high`
)


@dataclass(frozen=True)
class Param:
    """A query parameter or a body field; `read` checks and converts a value as sent (None: not sent)."""

    name: str
    kind: str
    description: str = ""
    low: float | None = None
    high: float | None = None
    required: bool = False
    choices: tuple[str, ...] = ()  # a string's only values
    empty: str | None = None  # for a list that may not be empty: the message when it is

    def read(self, value: Any) -> Any:
        if self.kind == INTEGER:
            return bounded_int(value, self.name, int(self.low), int(self.high))
        if self.kind == NUMBER:
            return None if value in (None, "") else bounded_float(value, self.name, self.low, self.high)
        if self.kind == TEXT:
            if not isinstance(value, str) or not value.strip():
                raise ApiError(400, "bad_parameter", f"{self.name} must be a non-empty string")
            return value
        if self.kind == STRING:
            if value is not None and not isinstance(value, str):
                raise ApiError(400, "bad_parameter", f"{self.name} must be a string")
            if value and self.choices and value not in self.choices:
                message = f"{self.name} must be one of {', '.join(self.choices)}, not {value!r}"
                raise ApiError(400, "bad_parameter", message)
            return value or None
        if self.kind == FLAG:
            return value if isinstance(value, bool) else flag(value, self.name)
        if self.kind == BOOLEAN:
            if value is not None and not isinstance(value, bool):
                raise ApiError(400, "bad_parameter", f"{self.name} must be true or false")
            return value
        if self.kind == WHERE and isinstance(value, dict):
            return value
        if self.kind == QUERIES:
            return queries(value, int(self.high))
        values = string_list(value, self.name)
        if self.empty and not values:
            raise ApiError(400, "bad_parameter", self.empty)
        return values

    @property
    def many(self) -> bool:
        """Repeated in a query string (`where=a&where=b`)."""
        return self.kind in (STRINGS, WHERE)

    def schema(self, in_query: bool) -> dict[str, Any]:
        """Its JSON Schema, as a query string's value (`in_query`) or as a JSON body's."""
        text = {"type": "string", "minLength": 1, "pattern": r"\S"}
        if self.kind in (INTEGER, NUMBER):
            schema: dict[str, Any] = {"type": self.kind, "minimum": self.low, "maximum": self.high}
        elif self.kind == TEXT:
            schema = text
        elif self.kind == STRING:
            schema = {"type": "string", **({"enum": list(self.choices)} if self.choices else {})}
        elif self.kind in (FLAG, BOOLEAN):
            schema = {"type": "boolean"}
        elif self.kind == QUERIES:
            schema = {"type": "array", "items": text, "minItems": 1, "maxItems": int(self.high)}
        else:
            many = {"type": "array", "items": {"type": "string"}, **({"minItems": 1} if self.empty else {})}
            schema = many if in_query else {"anyOf": [{"type": "string"}, many]}
            if self.kind == WHERE and not in_query:
                schema["anyOf"].append({"type": "object"})
        return {**schema, "description": self.description} if self.description else schema


def queries(value: Any, most: int) -> list[str]:
    """POST /search/batch's `queries`."""
    if not isinstance(value, list) or not value:
        raise ApiError(400, "bad_parameter", "queries must be a non-empty list of strings")
    if len(value) > most:
        raise ApiError(400, "bad_parameter", f"queries: at most {most}, got {len(value)}")
    return [Param("each query", TEXT).read(q) for q in value]


@dataclass(frozen=True)
class Operation:
    """One method of one route: what it reads (`params` from the query string, `fields` of a JSON object
    body; `body`: another body's schema), who may call it (`access`: "open" to all, "read", "write", or
    "admin": the api key where one is set, else a read's) and what it answers (`answer`: its 2xx body's
    schema, `media` its type; `errors`: the error statuses of its own, `error` their schema)."""

    summary: str
    params: tuple[Param, ...] = ()
    fields: tuple[Param, ...] | None = None
    body: dict[str, Any] | None = None
    access: str = "read"
    answer: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    media: str = "application/json"
    errors: tuple[int, ...] = (400,)
    error: dict[str, Any] = field(default_factory=lambda: ERROR)  # an error answer's schema

    def values(self, sent: Mapping[str, Any]) -> dict[str, Any]:
        """The params' values from a mapping of them as sent, read in the order declared."""
        return {p.name: p.read(sent.get(p.name)) for p in self.params}

    def query(self, params: Any) -> dict[str, Any]:
        """The query string's values, read in the order declared (the first wrong one answered 400)."""
        return {p.name: p.read(params.getlist(p.name) if p.many else params.get(p.name)) for p in self.params}

    def json(self, body: Any) -> dict[str, Any]:
        """A JSON object body's fields, read in the order declared; a field not declared is a 400."""
        fields = self.fields or ()
        if not isinstance(body, dict):
            raise ApiError(400, "bad_parameter", "the body must be a JSON object")
        known = {p.name for p in fields}
        if unknown := sorted(set(body) - known):
            message = f"unknown field {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            raise ApiError(400, "bad_parameter", message)
        return {p.name: p.read(body.get(p.name)) for p in fields}

    def body_schema(self) -> dict[str, Any] | None:
        if self.fields is None:
            return self.body
        return {
            "type": "object",
            "properties": {p.name: p.schema(in_query=False) for p in self.fields},
            "required": [p.name for p in self.fields if p.required],
            "additionalProperties": False,
        }


def described(**operations: Operation) -> Callable:
    """Marks a handler with its operations by method (GET, POST, ...), for openapi.py."""

    def mark(handler: Callable) -> Callable:
        handler.operations = operations  # type: ignore[attr-defined]
        return handler

    return mark


# ---- the operations -----------------------------------------------------------------------------------------


class Requests:
    """Every operation of the API, with the bounds of a server's settings."""

    def __init__(self, settings: ServerSettings):
        most = settings.max_k
        self.page = (
            Param("k", INTEGER, "Hits per page (default 10)", 1, most),
            Param("where", WHERE, "Conditions FIELD=VALUE (FIELD>=N, ...), all must hold"),
            Param("rerank", INTEGER, "Candidates the cross-encoder reranks (0: none)", 0, most),
            Param("offset", INTEGER, "Where the page starts", 0, settings.max_offset),
            Param(
                "generation", INTEGER, "The index generation a first page was read from", 0, MAX_GENERATION
            ),
            Param("per_document", INTEGER, "Passages of one document at most (0: all)", 0, most),
            Param("full_text", FLAG, "Each hit's text is its document's whole text"),
        )
        self.search_options = (
            *self.page,
            Param("facets", STRINGS, "Fields whose values are counted among the matches"),
            Param(
                "facet_values",
                INTEGER,
                f"Values shown per facet (default {FACET_VALUES})",
                1,
                MAX_FACET_VALUES,
            ),
            Param(
                "mode",
                STRING,
                "dense, keyword or hybrid (default: the index's)",
                choices=tuple(SearchMode.names()),
            ),
            Param("alpha", NUMBER, "Hybrid: the dense side's weight", 0.0, 1.0),
            Param("fusion", STRING, "Hybrid: convex or rrf", choices=tuple(Fusion.names())),
            Param("typos", INTEGER, "Keyword: typos forgiven per word", 0, MAX_TYPOS),
            Param("crop", INTEGER, "Words of each hit's snippet (0: none)", 0, MAX_CROP),
        )
        q = Param("q", TEXT, "The query", required=True)
        self.get_search = Operation("Search", (q, *self.search_options), answer=SEARCHED)
        self.post_search = Operation(
            "Search (a JSON body)", fields=(q, *self.search_options), answer=SEARCHED
        )
        batch = Param("queries", QUERIES, "The queries", high=settings.max_batch, required=True)
        self.batch = Operation("Several searches at once", fields=(batch, *self.search_options), answer=BATCH)
        negative = Param("not", STRINGS, "Ids of documents to move away from")
        self.get_similar = Operation(
            "Documents like this one", (negative, *self.page), answer=SIMILAR, errors=(400, 404)
        )
        ids = Param(
            "ids",
            STRINGS,
            "Ids of documents to find more like",
            required=True,
            empty="ids must name at least one document",
        )
        self.post_similar = Operation(
            "Documents like these", fields=(ids, negative, *self.page), answer=SIMILAR, errors=(400, 404)
        )
        self.get_document = Operation(
            "A document by id", answer=answer(["document"], document={"type": "object"}), errors=(404,)
        )
        deleted = answer(["deleted", "documents"], deleted=COUNT, documents=COUNT)
        self.delete_document = Operation(
            "Delete a document by id", access="write", answer=deleted, errors=(404, 503, 507)
        )
        self.delete_where = Operation(
            "Delete documents by id or filter",
            (
                Param("id", STRINGS, "Ids of the documents to delete"),
                Param("where", STRINGS, "Conditions the documents to delete meet"),
                Param("confirm", FLAG, "Needed to delete many"),
            ),
            access="write",
            answer=deleted,
            errors=(400, 404, 409, 503, 507),
        )
        document = {
            "type": "object",
            "description": "A document as ingest reads a JSON line (id, text, metadata fields)",
        }
        self.add = Operation(
            "Add or replace documents",
            body={"type": "array", "items": document, "minItems": 1},
            access="write",
            answer=answer(["added", "unchanged", "documents"], added=COUNT, unchanged=COUNT, documents=COUNT),
            errors=(413, 422, 503, 507),
        )
        self.info = Operation(
            "What the index is and holds", answer=answer(["server"], server={"type": "object"})
        )
        status = {"type": "string", "enum": ["ok", "starting"]}
        self.health = Operation(
            "Whether the index is there",
            answer=answer(["status"], status=status),
            access="open",
            errors=(503,),
        )
        self.backup = Operation(
            "Back the index up into the server's backup directory",
            fields=(Param("archive", BOOLEAN, "One .tar.gz instead of a directory"),),
            access="write",
            answer=answer(["backup"], backup={"type": "object"}),
            errors=(400, 413),
        )
        ranges = answer(["ranges"], ranges={"type": "object"})
        self.facet_ranges = Operation(
            "A number or date field's values among a search's documents, as ranges",
            (
                Param("fields", STRINGS, "The fields", empty="name the fields: fields=FIELD"),
                Param("buckets", INTEGER, f"Ranges per field (default {BUCKETS})", 2, MAX_BUCKETS),
                Param("mode", STRING, "The search's mode", choices=tuple(SearchMode.names())),
                Param("q", STRING, "The search (none: every document)"),
                Param("where", STRINGS, "The search's conditions"),
            ),
            answer=ranges,
        )
        self.metrics = Operation(
            "The server's figures, in Prometheus's text format",
            access="admin",
            answer={"type": "string"},
            media="text/plain",
            errors=(),
        )
        self.file = Operation(
            "A file the index ingested",
            (Param("raw", STRING, "1: the bytes, not a page of lines"),),
            answer={},
            media="*/*",
            errors=(404,),
        )
        self.page_of_search = Operation(
            "The search page", access="open", answer={"type": "string"}, media="text/html", errors=()
        )
        self.openapi = Operation("This document", access="open", errors=())
        names = {"type": "array", "items": {"type": "string"}}
        self.indexes = Operation(
            "The indexes the key may search, the default first",
            answer=answer(["indexes", "default"], indexes=names, default={"type": ["string", "null"]}),
            errors=(),
        )
        self.mcp = Operation(
            "The Model Context Protocol (streamable HTTP, JSON-RPC)",
            body={"type": "object"},
            answer={},
            errors=(),
            error={"anyOf": [ERROR, JSON_RPC]},  # the MCP SDK answers its own errors
        )


def page_arguments(values: Mapping[str, Any]) -> dict[str, Any]:
    """What search and similar pass Index.search and Index.similar, from the values read."""
    return {
        "k": values["k"] or 10,
        "where": values["where"],
        "rerank": values["rerank"],
        "offset": values["offset"] or 0,
        "generation": values["generation"],
        "per_document": values["per_document"],
        "full_text": values["full_text"],
    }


def search_arguments(values: Mapping[str, Any]) -> dict[str, Any]:
    """Index.search's keyword arguments, from the values read; a query option only when the client sent it."""
    options = page_arguments(values)
    if values["facets"]:
        options["facets"] = values["facets"]
        options["facet_values"] = values["facet_values"] or FACET_VALUES
    return options | {name: values[name] for name in QUERY_OPTIONS if values[name] is not None}


def search_options(values: Mapping[str, Any], settings: ServerSettings) -> dict[str, Any]:
    """Index.search's keyword arguments from a search's parameters as sent (a query string's or a JSON
    body's), checked."""
    return search_arguments(Operation("", Requests(settings).search_options).values(values))
