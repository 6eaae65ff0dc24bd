"""The Model Context Protocol tools: one or more indexes for an assistant or a coding agent, on the official
`mcp` SDK (the `mcp` extra), over stdio (`semsearch mcp`, cli/mcp.py) or streamable HTTP (`semsearch serve`'s
/mcp, app.py). A layer like the HTTP API: each tool checks its arguments against its JSON schema, makes one call
on an open Index (on the index's own thread, never on the event loop) and answers JSON; every error is a tool
error of one line, and the server goes on answering.

Tools: search, get_document, describe_index; add_documents and delete_documents only where writes are allowed. Outputs are bounded (mcp_schemas.py: MAX_K hits, MAX_HIT_TEXT
characters of a hit's passage, MAX_DOCUMENT_TEXT of a document a call), and the descriptions say so."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import SemsearchError
from ..ingest.jsonl import MAX_DEPTH, depth
from ..operations.language import model_languages
from ..placeurl import with_place_url
from ..retrieval.hits import results_json
from ..settings import SearchMode
from . import documents
from .documents import get_document, text_searchable
from .mcp_schemas import LIMITS, MAX_DOCUMENT_TEXT, MAX_HIT_TEXT, Tool, tool_list
from .protocol import ApiError

if TYPE_CHECKING:
    import mcp_types

    from ..index import Index

log = logging.getLogger(__name__)

SERVER_NAME = "semsearch"

Job = Callable[
    ..., Any
]  # fn(index, *args), run where the index lives (its reader thread, the writer process)


@dataclass(frozen=True)
class Served:
    """One index the tools answer for: its name, and how a job reaches it (`read`, and `write` where writes
    are allowed) with the HTTP request it came in (None over stdio), so a runner can check its keys."""

    name: str
    read: Callable[[Any, Job, Any], Awaitable[Any]]
    write: Callable[[Any, Job, Any], Awaitable[Any]] | None = None


class ToolError(Exception):
    """A tool's arguments or answer at fault: its message is the tool error the client sees."""


# ---- what the tools do, on the index's thread -----------------------------------------------------------------


def search_job(
    index: Index, query: str, k: int, where: list[str], mode: str | None, page: dict, place_urls: bool
) -> dict:
    """A page of hits in hits.py's shape, each passage cut to MAX_HIT_TEXT characters (`page`: offset,
    per_document, full_text); `place_urls`: each hit's `location.url` where its file is served."""
    if mode != SearchMode.KEYWORD.value:
        text_searchable(index)
    options = {"mode": mode} if mode else {}
    hits = index.search(query, k=k, where=where, **options, **page)
    out = results_json(hits, MAX_HIT_TEXT)
    if place_urls:
        out["hits"] = [with_place_url(hit) for hit in out["hits"]]
    return {**out, "k": k}


def document_job(index: Index, doc_id: str, offset: int) -> dict:
    document = get_document(index, doc_id)["document"]
    text = document["text"]
    if offset > len(text):
        raise ToolError(f"offset {offset} is past the text's end ({len(text)} characters)")
    end = min(len(text), offset + MAX_DOCUMENT_TEXT)
    return {
        "id": document["id"],
        "title": document["title"],
        "text": text[offset:end],
        "offset": offset,
        "text_length": len(text),
        "next_offset": end if end < len(text) else None,
        "metadata": document["metadata"],
    }


def kinds_of(index: Index) -> dict[str, dict[str, Any]]:
    """Each metadata field with its kinds (true and false as boolean), their counts and an example value."""
    fields: dict[str, dict[str, Any]] = {}
    for path, kinds in index.field_examples().items():
        merged: dict[str, Any] = {}
        for kind, seen in kinds.items():
            name = "boolean" if kind in ("true", "false") else kind
            if name in merged:
                merged[name] = {**merged[name], "documents": merged[name]["documents"] + seen["documents"]}
            else:
                merged[name] = seen if name != "boolean" else {**seen, "example": kind == "true"}
        fields[path] = merged
    return fields


def describe_job(index: Index) -> dict:
    index.refresh()
    settings = index.settings
    modes = [mode.value for mode in index.text_modes]
    return {
        "documents": len(index),
        "passages": index.state.rows,
        "fields": {"id": {"text": {}}, "title": {"text": {}}, **kinds_of(index)},
        "model": settings.model,
        "languages": model_languages(settings.model),
        "modes": modes,
        "default_mode": index.default_mode.value,
        "limits": LIMITS,
    }


def description_job(index: Index) -> dict[str, dict[str, Any]]:
    """What the tools' descriptions read of an index: its fields."""
    return kinds_of(index)


class Tools:
    """The tools over some named indexes (the first is the default); `allow_writes` adds the writing tools;
    `place_urls`: hits carry `location.url` (served over HTTP beside the /files route); `examples`: the
    descriptions' filter example is written with the default index's own fields and values."""

    def __init__(
        self,
        served: list[Served],
        allow_writes: bool = False,
        place_urls: bool = False,
        examples: bool = True,
    ):
        if not served:
            raise ValueError("no index to serve")
        self.served = {s.name: s for s in served}
        self.allow_writes, self.place_urls, self.examples = allow_writes, place_urls, examples
        self.listed: list[Tool] | None = None

    def index(self, arguments: dict[str, Any]) -> Served:
        return self.served[arguments.get("index") or next(iter(self.served))]

    async def tools(self, request: Any = None) -> list[Tool]:
        """The tools, described with the default index's own fields (the filter example), made at the first
        listing or call (a description does not follow later writes: the schemas are what matter)."""
        if self.listed is None:
            import jsonschema

            default = next(iter(self.served.values()))
            fields = await default.read(request, description_job) if self.examples else {}
            tools = tool_list(fields, list(self.served), self.allow_writes)
            self.listed = [replace(t, validator=jsonschema.Draft202012Validator(t.schema)) for t in tools]
        return self.listed

    # ---- running a call ----

    async def call(
        self, name: str, arguments: dict[str, Any] | None, request: Any = None
    ) -> mcp_types.CallToolResult:
        """A tool call's answer: its JSON, or a tool error of one line (never a traceback)."""
        import mcp_types

        try:
            tools = {tool.name: tool for tool in await self.tools(request)}
            if name not in tools:
                raise ToolError(f"no tool {name!r}; tools: {', '.join(tools)}")
            arguments = arguments or {}
            check_arguments(arguments, tools[name].validator)
            payload = await getattr(self, tools[name].run)(self.index(arguments), arguments, request)
        except Exception as error:  # every failure is the caller's answer; the server goes on
            message = error_message(error)
            return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=message)], is_error=True)
        text = json.dumps(payload, ensure_ascii=False)
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(text=text)], structured_content=payload
        )

    async def search(self, served: Served, a: dict[str, Any], request: Any) -> Any:
        where = a.get("where", [])
        page = {name: a[name] for name in ("offset", "per_document", "full_text") if name in a}
        args = (a["query"], a.get("k", 10), where, a.get("mode"), page, self.place_urls)
        if not a["query"].strip():
            raise ToolError("query: an empty query")
        return await served.read(request, search_job, *args)

    async def get_document(self, served: Served, a: dict[str, Any], request: Any) -> Any:
        return await served.read(request, document_job, a["id"], a.get("offset", 0))

    async def describe_index(self, served: Served, a: dict[str, Any], request: Any) -> Any:
        return await served.read(request, describe_job)

    async def add_documents(self, served: Served, a: dict[str, Any], request: Any) -> Any:
        records = a["documents"]
        for number, record in enumerate(records, start=1):
            if depth(record) > MAX_DEPTH:
                raise ToolError(f"documents[{number - 1}]: nested deeper than {MAX_DEPTH} levels")
        return await self.writer(served)(request, documents.add_documents, records)

    async def delete_documents(self, served: Served, a: dict[str, Any], request: Any) -> Any:
        ids, where = a.get("ids", []), a.get("where", [])
        if not ids and not where:
            raise ToolError("name the documents to delete: ids, where, or both")
        return await self.writer(served)(
            request, documents.delete_documents, ids, where, a.get("confirm", False)
        )

    def writer(self, served: Served) -> Callable[..., Awaitable[Any]]:
        if not self.allow_writes or served.write is None:
            raise ToolError("writes are not allowed on this server (start it with --allow-writes)")
        return served.write


def check_arguments(arguments: dict[str, Any], validator: Any) -> None:
    """The arguments against the tool's JSON schema: the first fault as one line naming the argument."""
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "arguments"
        raise ToolError(f"{where}: {error.message}")


def error_message(error: Exception) -> str:
    if isinstance(error, ApiError):
        return error.message
    if isinstance(error, SemsearchError):
        return error.naming(error.setting) if error.setting else str(error)
    if isinstance(error, ToolError):
        return str(error)
    log.exception("a tool call failed")  # to stderr: an error of ours, told in one line all the same
    return f"{type(error).__name__}: {error}".splitlines()[0]


# ---- the MCP server ------------------------------------------------------------------------------------------


def mcp_server(tools: Tools, instructions: str | None = None):
    """The SDK's low-level Server with the tools: list and call, the HTTP request handed on for its keys."""
    from importlib.metadata import version

    import mcp_types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx, params) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=[tool.listed() for tool in await tools.tools(ctx.request)])

    async def call_tool(ctx, params) -> mcp_types.CallToolResult:
        return await tools.call(params.name, params.arguments, ctx.request)

    about = instructions or (
        "Semantic search over local document indexes ("
        + ", ".join(tools.served)
        + "): search first, then get_document for a whole document; describe_index shows the fields to filter on."
    )
    return Server(
        SERVER_NAME,
        version=version("semsearch"),
        instructions=about,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
