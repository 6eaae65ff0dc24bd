"""The plain-FTS5 reference `bench` reports beside `--mode keyword` (issue 25): SQLite FTS5's bm25 over the index's
own keyword table (porter unicode61), the query's words quoted and ORed as they stand (no stopwords dropped, no
words merged, no title weight), so the keyword side's ranking is seen against a plain BM25 on every run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..retrieval.keywords import WORD
from ..storage.store import DocumentStore

REFERENCE = "plain FTS5 bm25"


def plain_expression(text: str) -> str | None:
    words = WORD.findall(text)
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words) if words else None


def plain_top(store: DocumentStore, text: str, n: int) -> list[tuple[int, float]]:
    """The n best document pks of the text by FTS5's own bm25 and the words as they stand."""
    expression = plain_expression(text)
    if expression is None:
        return []
    return store.plain_keyword_ranking(expression, n)


def reference_run(
    store: DocumentStore, query_ids: Sequence[str], texts: Sequence[str], timed: int, n: int = 100
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """The reference's run (query id -> document id -> score) and its p50/p90 ms over the first `timed` queries."""
    found, ms = [], []
    for text in texts:
        started = time.perf_counter()
        found.append(plain_top(store, text, n))
        ms.append(1000 * (time.perf_counter() - started))
    docs = store.get([pk for scored in found for pk, _ in scored])
    run = {
        query_id: {docs[pk]["id"]: score for pk, score in scored if pk in docs}
        for query_id, scored in zip(query_ids, found)
    }
    timings = np.array(ms[:timed])
    return run, {
        "search_ms": round(float(np.median(timings)), 3),
        "search_ms_p90": round(float(np.percentile(timings, 90)), 3),
    }


def reference_row(
    template: dict[str, Any], metrics: dict[str, float], timings: dict[str, float]
) -> dict[str, Any]:
    """A keyword row of bench's table made the reference's."""
    return {
        **template,
        "system": REFERENCE,
        **{name: round(float(value), 5) for name, value in metrics.items()},
        "query_ms": timings["search_ms"],
        "query_ms_p90": timings["search_ms_p90"],
        **timings,
    }
