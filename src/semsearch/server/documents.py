"""The reads and writes of documents that the HTTP API and the MCP tools share (app.py, mcp_tools.py): one
rule for a missing id, a text query on an index without a model, an add's counts and a large delete's
confirmation. Each takes an open Index first, so it runs on a reader thread or in the writer process
(workers.py: module-level, picklable)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..settings import NO_MODEL, SearchMode
from .protocol import ApiError

if TYPE_CHECKING:
    from ..index import Index


def text_searchable(index: Index) -> None:
    """An index of vectors made elsewhere has no model to encode a text query: the request's fault, a 400."""
    if index.settings.model == NO_MODEL and index.default_mode is not SearchMode.KEYWORD:
        raise ApiError(
            400, "no_model", "this index holds vectors made elsewhere and has no model to encode a text query"
        )


def stored(index: Index, ids: list[str]) -> None:
    """A 404 naming the ids that are not stored."""
    if missing := index.missing(ids):
        raise ApiError(404, "not_found", f"no document with id {', '.join(map(repr, missing[:5]))}")


def get_document(index: Index, doc_id: str) -> dict[str, Any]:
    """The whole document stored under `doc_id` (404 when there is none)."""
    found = index.get([doc_id])
    if doc_id not in found:
        stored(index, [doc_id])
    return {"document": found[doc_id]}


def add_documents(index: Index, records: list[Any]) -> dict[str, Any]:
    report = index.add(records)
    return {**dataclasses.asdict(report), "refit_advised": report.refit_advised, "documents": len(index)}


def delete_documents(index: Index, ids: list[str], where: list[str], confirm: bool = True) -> dict[str, Any]:
    """Delete; a large delete (operations/deleting.py's rule) only with `confirm`."""
    if ids:
        stored(index, ids)
    plan = index.preview_delete(ids, where)
    if plan.needs_confirmation and not confirm:
        message = f"{plan.describe()}: send confirm=true to delete them"
        raise ApiError(409, "confirm_required", message)
    return {"deleted": index.delete(ids, where, expect=plan.count), "documents": len(index)}
