"""Where passages are in their files, as the store keeps them: a document's sections (JSON in its row, what an
export carries) and a row per vector row of a document with sections, its passage's location
(documents.passage_locations: the first section it covers, the lines of its own text)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from ..documents import Document, Span, passage_locations, section_places


def sections_json(doc: Document) -> str | None:
    """A document's sections as stored (and exported): [[start, end, location], ...]; None without."""
    if not doc.sections:
        return None
    return json.dumps(section_places(doc.sections), ensure_ascii=False)


def location_rows(
    documents: Sequence[Document], pks: Sequence[int], spans: Sequence[Sequence[Span]]
) -> Iterator[tuple[int, str]]:
    """(vector row, location JSON) of each passage of the documents with sections (a document of one passage:
    its whole text), made as they are taken."""
    return (
        (pk + i, json.dumps(location.to_json(), ensure_ascii=False))
        for doc, pk, parts in zip(documents, pks, spans)
        if doc.sections
        for i, location in enumerate(passage_locations(doc, parts or [(0, len(doc.text))]))
        if location is not None  # always, for a document with sections
    )
