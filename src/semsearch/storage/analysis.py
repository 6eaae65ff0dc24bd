"""The one text analysis before FTS5's tokenizer (porter unicode61): a document's title and text on their way into
the keyword index (the store's triggers call it as the SQL function `semsearch_analyze`, schema.py) and a query's
text (keywords.py) pass through `analyze`: Chinese runs become their character bigrams and characters (cjk.py,
chosen by measurement: benchmarks/results/zh-retrieval.md), so a two-character word is found; Hangul runs their
bigrams, so a bare Korean noun finds the word with its particle; other text is unchanged.

Changing what it returns for text already indexed needs the keyword index rebuilt (a schema migration): FTS5
takes a document's old tokens out by analysing its old text again. Schema 5 (Hangul) re-analyses the documents
holding Hangul: their old tokens out by the analysis before it (`semsearch_analyze_v4`), the new ones in."""

from __future__ import annotations

import sqlite3

from ..cjk import HANGUL_RUN, segment

SQL_FUNCTION = "semsearch_analyze"


def analyze(text: str) -> str:
    """Text as the keyword index is to see it."""
    return segment(text)


def _sql_analyze(text: str | None) -> str | None:
    return None if text is None else analyze(text)


def _sql_analyze_v4(text: str | None) -> str | None:
    return None if text is None else segment(text, hangul=False)


def _sql_has_hangul(text: str | None) -> bool:
    return text is not None and HANGUL_RUN.search(text) is not None


def register(connection: sqlite3.Connection) -> sqlite3.Connection:
    """The connection, with `semsearch_analyze(text)` callable in its SQL (the keyword triggers need it), and
    the analysis of schema 4 and a Hangul test (for migration 5)."""
    connection.create_function(SQL_FUNCTION, 1, _sql_analyze, deterministic=True)
    connection.create_function("semsearch_analyze_v4", 1, _sql_analyze_v4, deterministic=True)
    connection.create_function("semsearch_has_hangul", 1, _sql_has_hangul, deterministic=True)
    return connection
