"""What a delete would remove, before it does: the count and the first ids (`delete --dry-run`), and the rule
for a delete large enough to ask first, the same in the CLI and the server.

The rule: a delete that would remove every document of the index, or more than half of an index when that is
over BULK documents, must be confirmed (the CLI asks on a terminal and otherwise needs --yes; the server's
DELETE /documents needs `confirm=true`). A filter that matches more than meant (`x=null` where no document
has `x` matches all of them) is then caught before it runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..retrieval.search import Where, allowed_rows
from . import writes
from .directory import IndexDirectory

BULK = 100  # more than half of an index is "large" only past this many documents
SHOWN = 10  # ids a dry run lists


@dataclass(frozen=True)
class Preview:
    count: int  # documents the delete removes
    total: int  # documents in the index
    first_ids: list[str]

    @property
    def needs_confirmation(self) -> bool:
        return self.count > 0 and (
            self.count == self.total or (self.count * 2 > self.total and self.count > BULK)
        )

    def describe(self) -> str:
        share = "every document" if self.count == self.total else f"{self.count} of {self.total} documents"
        return f"this delete removes {share} of the index"


def preview(index: IndexDirectory, ids: Sequence[str] = (), where: Where = None) -> Preview:
    """The documents `Index.delete(ids, where)` would remove now (an unknown id is an error, as there)."""
    index.refresh()
    if index.state.count == 0:
        return Preview(0, 0, [])
    pks = writes.chosen(index, ids, allowed_rows(index.store, where))
    rows = index.store.get(pks[:SHOWN])
    return Preview(len(pks), index.state.count, [rows[pk]["id"] for pk in pks[:SHOWN] if pk in rows])
