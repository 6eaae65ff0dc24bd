"""The calibration's targets (calibration.py): the pseudo-queries' documents as the scratch copy holds them,
each without every sentence drawn from it: a document of one passage re-cut and its new passages re-encoded, a
document of several cropped (cropping.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..documents import Document
from ..storage.store import DocumentStore
from .cropping import cropped
from .drawing import PseudoQuery

Encode = Callable[[Sequence[str]], np.ndarray]
# The index's own cut of documents into passages (ingest's, handed in by the caller: a query stage does not
# reach up into ingest): each document's passages, each with its `embedding_text`.
Cut = Callable[[Sequence[Document]], Sequence[Sequence[Any]]]


@dataclass(frozen=True)
class Targets:
    """The pseudo-queries' documents as the scratch copy holds them: each re-cut without its sentences (every one
    drawn from it), its new passages taking its first rows (a document the removal would give more passages than
    it had is left out: rare, and its extra rows would belong to the next document), their texts encoded by
    `encoded`; or cropped (cropping.py). A document's queries share its one scratch text."""

    queries: list[PseudoQuery]
    rows: np.ndarray  # the new passages' vector rows, sorted
    texts: list[str]  # their texts to encode, in the order of `rows`
    dropped: np.ndarray  # every row the targets had, sorted
    vectors: np.ndarray | None = None  # their raw vectors, once encoded

    def encoded(self, encode: Encode) -> Targets:
        """These targets with their new passages' vectors."""
        return replace(self, vectors=encode(self.texts) if self.texts else np.zeros((0, 0), np.float32))

    @classmethod
    def drawn(cls, drawn: list[PseudoQuery], store: DocumentStore, cut: Cut) -> Targets:
        """Documents of one passage re-cut without the query (`of`); of several, cropped (cropping.py)."""
        counts = store.passages().counts_of(np.array([q.pk for q in drawn], dtype=np.int64))
        several = [(q, int(n)) for q, n in zip(drawn, counts) if n > 1]
        whole = cls.of([q for q, n in zip(drawn, counts) if n == 1], store, cut)
        if not several:
            return whole
        rows = list(dict.fromkeys(q.pk + i for q, n in several for i in range(n)))
        texts = {pk: row["text"] for pk, row in store.get([q.pk for q, _ in several]).items()}
        kept, dropped = cropped([q for q, _ in several], texts, [n for _, n in several], store.spans(rows))
        return replace(
            whole, queries=whole.queries + kept, dropped=np.sort(np.concatenate([whole.dropped, dropped]))
        )

    @classmethod
    def of(cls, drawn: list[PseudoQuery], store: DocumentStore, cut: Cut) -> Targets:
        """Documents of one passage re-cut without their sentences (all a document gave)."""
        rows_of = store.get([q.pk for q in drawn])
        if len({q.pk for q in drawn}) < len(drawn):  # a document's several sentences taken out together
            spans: dict[int, list[tuple[int, int]]] = {}
            for q in drawn:
                spans.setdefault(q.pk, []).append(q.span)
            rest = {pk: without(rows_of[pk]["text"], taken) for pk, taken in spans.items() if len(taken) > 1}
            drawn = [replace(q, rest=rest[q.pk]) if q.pk in rest else q for q in drawn]
        one = {q.pk: q for q in drawn}  # a document's queries share its rest
        parts_of = cut([Document(str(pk), q.rest, rows_of.get(pk, {}).get("title")) for pk, q in one.items()])
        had = store.passages().counts_of(np.array(list(one), dtype=np.int64))
        kept = {pk: (parts, int(n)) for pk, parts, n in zip(one, parts_of, had) if len(parts) <= n}
        rows = [pk + i for pk, (parts, _) in kept.items() for i in range(len(parts))]
        texts = [part.embedding_text for parts, _ in kept.values() for part in parts]
        dropped = [pk + i for pk, (_, n) in kept.items() for i in range(n)]
        order = np.argsort(rows, kind="stable").tolist()
        return cls(
            [q for q in drawn if q.pk in kept],
            np.asarray(rows, dtype=np.int64)[order],
            [texts[i] for i in order],
            np.sort(np.asarray(dropped, dtype=np.int64)),
        )


def without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text without these sentences (spans that do not overlap), as a pseudo-query's `rest` is cut."""
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + text[end:]
    return text.strip()
