"""The schemas of the API's answers (the JSON Schema of each 2xx body, and of every error), for the operations
of schemas.py and so the OpenAPI document: the shapes retrieval/hits.py, documents.py and app.py make."""

from __future__ import annotations

from typing import Any

NULLABLE_OBJECT = {"type": ["object", "null"]}
HIT = {
    "type": "object",
    "required": ["id", "score", "text"],
    "properties": {
        "id": {"type": "string"},
        "score": {"type": "number"},
        "title": {"type": ["string", "null"]},
        "metadata": NULLABLE_OBJECT,
        "passage": NULLABLE_OBJECT,
        "location": NULLABLE_OBJECT,
        "snippet": {
            "type": ["object", "null"],
            "required": ["text", "highlights"],
            "properties": {
                "text": {"type": "string"},
                "highlights": {"type": "array"},
                "kind": {"type": "string"},
            },
        },
        "scores": NULLABLE_OBJECT,
        "text": {"type": "string"},
    },
}
PAGE = {
    "offset": {"type": "integer", "minimum": 0},
    "generation": {"type": "integer", "minimum": 0},
    "hits": {"type": "array", "items": HIT},
    "facets": {"type": "object", "additionalProperties": {"type": "object"}},
    "facet_stats": {"type": "object"},
}
PAGE_REQUIRED = ["offset", "generation", "hits"]
TOOK = {"took_ms": {"type": "number", "minimum": 0}}
ERROR = {
    "type": "object",
    "required": ["error", "took_ms"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
        **TOOK,
    },
}
JSON_RPC = {
    "type": "object",
    "required": ["jsonrpc", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}},
        },
    },
}
ERRORS = {
    400: "A bad parameter or body",
    401: "No key sent where one is needed",
    403: "A wrong key, or writes (backups) not enabled",
    404: "Nothing there",
    409: "A large delete without confirm=true, or a page of a generation the index has left",
    413: "A body over the limit",
    422: "An invalid document",
    503: "Starting, another writer holds the index, or no index there now",
    507: "The disk is full (nothing written)",
}


def answer(required: list[str], **properties: Any) -> dict[str, Any]:
    """A JSON object answer's schema (every answer carries took_ms)."""
    return {"type": "object", "required": [*required, "took_ms"], "properties": {**properties, **TOOK}}


STRING_LIST = {"type": "array", "items": {"type": "string"}}
SEARCHED = answer(["q", "k", *PAGE_REQUIRED], q={"type": "string"}, k={"type": "integer"}, **PAGE)
BATCH = answer(
    ["k", "results"],
    k={"type": "integer"},
    results={
        "type": "array",
        "items": {
            "type": "object",
            "required": ["q", *PAGE_REQUIRED],
            "properties": {"q": {"type": "string"}, **PAGE},
        },
    },
)
SIMILAR = answer(
    ["ids", "not", "k", *PAGE_REQUIRED],
    ids=STRING_LIST,
    **{"not": STRING_LIST},
    k={"type": "integer"},
    **PAGE,
)
COUNT = {"type": "integer", "minimum": 0}
