"""A hit shaped once for every surface: a place (places.py) joined with its document (`join`), its snippet
(`snippets_of`), and as JSON (`hit_json`, `results_json`) for the CLI's --json, the HTTP API, the MCP tools
and LangChain alike.

A hit's JSON is one place: `id`, `title`, `metadata` (the document's), `score`, `passage` ({"start", "end",
"text"}: the place's passage; a document of one passage is its own), `location` (where the passage is in its
file, as known: page, line_start, line_end, anchor, headings, row), `snippet`, `scores` (hybrid's sides), and
`text`: the place's passage again (what a client that reads one text per hit wants), the document's whole text
only where full text is asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..storage.store import DocumentStore
from . import snippets
from .places import Found, placed

# The options a search takes beside its query, k, where and rerank, by name, how it answers (QueryOptions) and
# what its page holds (Page): each surface (Index.search_vectors, the HTTP API, LangChain's search_kwargs) passes
# these on as given.
QUERY_OPTIONS = ("mode", "alpha", "fusion", "typos", "crop")
SEARCH_OPTIONS = (*QUERY_OPTIONS, "per_document", "full_text")


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # The place's passage of a document cut into several: {"start", "end"} (character offsets in text) and
    # "text"; None: the document is one passage, its text.
    passage: dict[str, Any] | None = None
    # hybrid: each side's own score of the place (None: not among that side's candidates)
    scores: dict[str, float | None] | None = None
    # Where the passage (or the document) is in its file: Location.to_json() (page, line_start, line_end, anchor,
    # headings, each only where known); None for a document without sections.
    location: dict[str, Any] | None = None
    # The part that answers, cropped, with what matched marked: {"text", "highlights", "kind"} (snippets.py)
    snippet: dict[str, Any] | None = None
    row: int | None = field(default=None, compare=False)  # the passage's vector row (not in the JSON)

    def to_json(self, full_text: bool = False) -> dict[str, Any]:
        return hit_json(self, full_text)


class Results(list):
    """One query's hits (a list of Hit) and what the answer was read from: the index `generation`, the page's
    `offset`, whether its JSON carries the documents' whole text (`full_text`), and with facets asked their
    counts (`facets`, `facet_stats`: facets.py)."""

    def __init__(
        self, hits: Sequence[Hit] = (), *, generation: int = 0, offset: int = 0, full_text: bool = False
    ):
        super().__init__(hits)
        self.generation, self.offset, self.full_text = generation, offset, full_text
        self.facets: dict[str, dict[str, int]] | None = None
        self.facet_stats: dict[str, dict[str, int | float]] | None = None


def hit_json(hit: Hit, full_text: bool = False, passage_limit: int | None = None) -> dict[str, Any]:
    """The hit as JSON-ready fields (shallow: a deep copy cost 0.1 ms a page). `passage_limit`: the passage's
    text cut to so many characters (`"truncated": true` when cut)."""
    passage = hit.passage or {"start": 0, "end": len(hit.text), "text": hit.text}
    if passage_limit is not None and len(passage["text"]) > passage_limit:
        passage = {**passage, "text": passage["text"][:passage_limit], "truncated": True}
    out = {
        "id": hit.id,
        "score": hit.score,
        "title": hit.title,
        "metadata": hit.metadata,
        "passage": passage,
        "location": hit.location,
        "snippet": hit.snippet,
        "scores": hit.scores,
    }
    # `text`: the place's passage (as cut), or with full text the document's whole text
    out["text"] = hit.text if full_text else passage["text"]
    return out


def results_json(results: Results, passage_limit: int | None = None) -> dict[str, Any]:
    """A query's answer: its page's hits, where the page starts, the generation read, the facets if asked."""
    hits = [hit_json(hit, results.full_text, passage_limit) for hit in results]
    out = {"offset": results.offset, "generation": results.generation, "hits": hits}
    if results.facets is not None:
        out |= {"facets": results.facets, "facet_stats": results.facet_stats}
    return out


def error_json(code: str, message: str) -> dict[str, Any]:
    """An error as every surface answers it: `{"error": {"code", "message"}}`."""
    return {"error": {"code": code, "message": message}}


def join(
    store: DocumentStore,
    found: list[Found],
    texts: Sequence[str] | None,
    crop: int = 0,
    terms: Sequence[Mapping[str, Any]] | None = None,
) -> list[list[Hit]]:
    """Hits with their documents, fetched in one query, each with its place's passage (a keyword side's
    document: the one holding most of the query's words), location and, where `crop` asks, snippet (`snippets_of`:
    each query's `terms` marked); rows deleted meanwhile are left out."""
    found = placed(store, found, texts)
    pks = [match.pk for matches in found for match in matches]
    docs = store.get(pks)
    rows = [match.row for matches in found for match in matches]
    spans = store.spans(rows) if rows else {}
    locations = store.locations(rows)
    out = []
    for query, matches in enumerate(found):
        kept = [match for match in matches if match.pk in docs]
        passages = []
        for match in kept:
            passage = None
            if match.row in spans:
                start, end = spans[match.row]
                passage = {"start": start, "end": end, "text": docs[match.pk]["text"][start:end]}
            passages.append(passage)
        parts = [
            passage["text"] if passage else docs[match.pk]["text"] for match, passage in zip(kept, passages)
        ]
        cut = snippets_of(parts, crop, terms[query] if terms else {})
        out.append(
            [
                Hit(
                    score=match.score,
                    **docs[match.pk],
                    passage=passage,
                    scores=match.sides,
                    location=locations.get(match.row),
                    snippet=snippet,
                    row=match.row,
                )
                for match, passage, snippet in zip(kept, passages, cut)
            ]
        )
    return out


def snippets_of(parts: Sequence[str], crop: int, terms: Mapping[str, Any]) -> list[dict[str, Any] | None]:
    """Each part's snippet (snippets.py): the words the keyword side matched marked in it; where none is there (a
    query by meaning, or by vector alone), its opening, kind "passage" (the place was found by meaning: nothing
    is encoded at query time). None each where `crop` is 0."""
    if not crop:
        return [None] * len(parts)
    marked = snippets.marks_of(parts, terms)
    return [
        snippets.snippet(part, marks, crop, "words" if marks else "passage")
        for part, marks in zip(parts, marked)
    ]
