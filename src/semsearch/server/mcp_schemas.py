"""The MCP tools' names, descriptions and argument schemas (mcp_tools.py runs them): written for a model to call
right the first time, the `where` grammar spelled out with an example from the index's own fields, the limits
said where they apply. Every schema refuses unknown arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..settings import SearchMode

MAX_K = 50  # hits a search answers
MAX_OFFSET = 1000  # hits a search may skip (paging)
MAX_HIT_TEXT = 1000  # characters of a hit's passage
MAX_DOCUMENT_TEXT = 20_000  # characters of a document's text in one get_document call
MAX_ADD = 1000  # documents in one add_documents call
MAX_WHERE = 20  # conditions in one filter
MAX_QUERY = 4000  # characters of a query (the model reads its first 256 tokens; keyword search all its words)
LIMITS = {"k": MAX_K, "offset": MAX_OFFSET, "hit_text": MAX_HIT_TEXT, "document_text": MAX_DOCUMENT_TEXT}

HIT_SHAPE = (
    "Answers {hits: [{id (the document's), title, score (higher is better), passage: {start, end, text (the "
    f"passage that answers, at most {MAX_HIT_TEXT} characters; truncated: true when cut)}}, location (file line "
    "or page, where the document came from a file), snippet, metadata}]}: each hit one place, several places "
    "of one long document where per_document allows; get_document(id) reads a whole document."
)


@dataclass(frozen=True)
class Tool:
    """A tool as listed; `run` names the Tools method that answers it."""

    name: str
    description: str
    schema: dict[str, Any]
    run: str
    writes: bool = False
    validator: Any = field(default=None, compare=False, repr=False)

    def listed(self):
        import mcp_types

        hints = mcp_types.ToolAnnotations(
            read_only_hint=not self.writes, destructive_hint=self.name.startswith("delete")
        )
        return mcp_types.Tool(
            name=self.name, description=self.description, input_schema=self.schema, annotations=hints
        )


def tool_list(fields: dict[str, dict[str, Any]], names: list[str], writes: bool) -> list[Tool]:
    """The tools for indexes `names` (the first the default), the filter example from `fields` (the default
    index's metadata: describe_index's), the writing tools with `writes`."""
    where = where_schema(where_example(fields))
    several = index_schema(names)
    text = {"type": "string", "minLength": 1}
    mode = {
        "type": "string",
        "enum": [m.value for m in SearchMode],
        "description": "dense (meaning), keyword (BM25 over the words: exact names, codes, quoted phrases) or "
        "hybrid (both fused). Default: the index's own (describe_index says which).",
    }
    paging = {"k": k_schema(), "where": where, "offset": offset_schema()}
    places = {
        "per_document": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_K,
            "description": "At most this many hits of one document (0: no cap). Default: a document once, at "
            "its best place, while at least k documents match; where fewer do, their further places fill k.",
        },
        "full_text": {
            "type": "boolean",
            "default": False,
            "description": "Each hit with its document's whole text as `text` (else its passage only).",
        },
    }
    query = {**text, "maxLength": MAX_QUERY, "description": "What to look for, in words."}
    document_offset = {
        "type": "integer",
        "minimum": 0,
        "default": 0,
        "description": "The text's first character.",
    }
    tools = [
        Tool(
            "search",
            "Search the documents for passages that answer a question or match a topic, best first. Returns at "
            f"most {MAX_K} hits a call; use offset for more. " + HIT_SHAPE,
            obj({"query": query, **paging, "mode": mode, **places, **several}, "query"),
            "search",
        ),
        Tool(
            "get_document",
            "Read one document by its id (from a search hit): its title, metadata and text, at most "
            f"{MAX_DOCUMENT_TEXT:,} characters a call from `offset`; next_offset (null at the end) reads on.",
            obj(
                {"id": {**text, "description": "The document's id."}, "offset": document_offset, **several},
                "id",
            ),
            "get_document",
        ),
        Tool(
            "describe_index",
            "What the index holds: how many documents, the metadata fields with their kinds (text, integer, "
            "real, boolean, array, object), how many documents have each and an example value (what `where` "
            "can filter on), the model and the languages it reads, the search modes and the limits.",
            obj(dict(several)),
            "describe_index",
        ),
    ]
    return tools + (write_tools(several, where) if writes else [])


def write_tools(several: dict[str, Any], where: dict[str, Any]) -> list[Tool]:
    document = {
        "type": "object",
        "properties": {
            "id": {"type": ["string", "integer"], "description": "Unique; an existing id is replaced."},
            "text": {"type": "string", "minLength": 1},
            "title": {"type": "string"},
        },
        "required": ["id", "text"],
        "additionalProperties": True,
        "description": "Every other field is metadata to filter on later (numbers, text, true/false, lists, "
        "nested objects).",
    }
    documents = {"type": "array", "items": document, "minItems": 1, "maxItems": MAX_ADD}
    ids = {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": MAX_ADD}
    confirm = {"type": "boolean", "default": False, "description": "Needed for a large delete."}
    return [
        Tool(
            "add_documents",
            f"Add or replace documents (at most {MAX_ADD} a call), each {{id, text, title?, ...metadata}}, all "
            "validated first: a bad one is named and nothing is written. Answers the counts added (replaced "
            "ones included), replaced (same id, new content) and unchanged, and the documents the index holds.",
            obj({"documents": documents, **several}, "documents"),
            "add_documents",
            writes=True,
        ),
        Tool(
            "delete_documents",
            "Delete documents by id and/or by filter (both given: those matching both). Deleting most of the "
            "index needs confirm=true; without it the error says how many would go. Answers how many were "
            "deleted and how many remain.",
            obj({"ids": ids, "where": where, "confirm": confirm, **several}),
            "delete_documents",
            writes=True,
        ),
    ]


def where_example(fields: dict[str, dict[str, Any]]) -> str:
    """A filter written with the index's own fields: a text's =, a number's >=, a flag's =; else a generic one."""
    for wanted, operator in (("text", "="), ("integer", ">="), ("real", ">="), ("boolean", "=")):
        for path, kinds in fields.items():
            example = kinds.get(wanted, {}).get("example")
            if path in ("id", "title") or example is None:
                continue
            value = str(example).lower() if wanted == "boolean" else str(example)
            if wanted != "text" or (len(value) < 40 and '"' not in value and "\n" not in value):
                return f'["{path}{operator}{value}"]'
    return '["year>=2020", "lang=en"]'


def where_schema(example: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "maxItems": MAX_WHERE,
        "description": "Filter on metadata first: conditions 'FIELD OP VALUE', all must hold. OP is = or != "
        "(text, numbers, true/false, null), or <, <=, >, >= (numbers only). A list field matches when one "
        "member does ('tags=a'); a nested field is dotted ('address.city=Oslo'); 'x=null' matches documents "
        "without x; 'id' and 'title' work too. The fields: describe_index. "
        f"Example: {example}.",
    }


def index_schema(names: list[str]) -> dict[str, dict[str, Any]]:
    if len(names) < 2:
        return {}
    return {"index": {"type": "string", "enum": names, "description": f"Which index (default {names[0]!r})."}}


def obj(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def k_schema() -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_K,
        "default": 10,
        "description": f"Hits (1-{MAX_K}).",
    }


def offset_schema() -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 0,
        "maximum": MAX_OFFSET,
        "default": 0,
        "description": "Hits to skip, for the next page (offset=10 with k=10: hits 11-20).",
    }
