"""The one text analysis before FTS5's tokenizer (porter unicode61): a document's title and text on their way into
the keyword index (the store's triggers call it as the SQL function `semsearch_analyze`, schema.py) and a query's
text (keywords.py) pass through `analyze`: Chinese runs become their character bigrams and characters (cjk.py,
chosen by measurement: benchmarks/results/zh-retrieval.md), so a two-character word is found; other text is
unchanged.

Changing what it returns for text already indexed needs the keyword index rebuilt (a schema migration): FTS5
takes a document's old tokens out by analysing its old text again."""

from __future__ import annotations

import sqlite3

from ..cjk import segment

SQL_FUNCTION = "semsearch_analyze"


def analyze(text: str) -> str:
    """Text as the keyword index is to see it."""
    return segment(text)


def _sql_analyze(text: str | None) -> str | None:
    return None if text is None else analyze(text)


def register(connection: sqlite3.Connection) -> sqlite3.Connection:
    """The connection, with `semsearch_analyze(text)` callable in its SQL (the keyword triggers need it)."""
    connection.create_function(SQL_FUNCTION, 1, _sql_analyze, deterministic=True)
    return connection
