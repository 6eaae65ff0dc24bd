"""A corpus to ingest: any source's documents (sources/: JSONL, a directory, a file, a table), validated whole
before anything is written, then streamed; with `skip_invalid`, an entry that is not a valid document is left
out and listed. Vectors made elsewhere come with them (a vector field, or an .npy file beside a JSONL file)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..documents import Document
from ..errors import DataError
from .idcheck import RepeatedIds
from .jsonl import MAX_LINE_BYTES, STDIN
from .sources import Source, open_source
from .sources.base import Place
from .sources.fields import FieldNames, parse_document
from .sources.spool import Spool
from .vectorfiles import read_query_vector, read_vector_file

__all__ = [
    "MAX_LINE_BYTES",
    "Corpus",
    "Document",
    "FieldNames",
    "parse_document",
    "read_corpus",
    "read_query_vector",
    "read_vector_file",
    "validate_documents",
]


class CorpusSummary:
    """What a full read of a corpus found: how many documents, the width of their vectors (None: none)."""

    def __init__(self, count: int, vector_width: int | None = None):
        self.count, self.vector_width = count, vector_width


def validate_documents(
    documents: Sequence[Document] | Callable[[], Iterable[Document]],
    *,
    path: str | Path | None = None,
    dim: int | None = None,
    vector_field: str = "vector",
    place: Callable[[int], Place] | None = None,
) -> CorpusSummary:
    """Read the documents (a sequence, or what streams them, read again only to confirm a repeated id) for what
    one record cannot show alone: repeated ids, no documents, vectors made elsewhere of differing widths (`dim`:
    the width they must have, if known; `vector_field`: where they came from; `place`: where the n-th document
    came from, for the message)."""
    read, ids, count = (documents if callable(documents) else lambda: documents), RepeatedIds(), 0

    def at(ordinal: int) -> dict[str, Any]:
        return place(ordinal).where() if place else {"path": path}

    for count, doc in enumerate(read(), start=1):
        ids.add(doc.id)
        if doc.vector is not None:
            width = doc.vector.shape[-1]
            dim = dim or width
            if width != dim:
                raise DataError(f"a vector of width {width}, expected {dim}", field=vector_field, **at(count))
    if count == 0:
        raise DataError("no documents", path=path)
    if repeat := ids.first_repeat(lambda: (doc.id for doc in read())):
        again, first, doc_id = repeat
        if place is None:
            where = f"document {first}"
        else:
            before, now = place(first), place(again)
            where = before.within()
            if before.path != now.path and (before.line or before.row):
                where = f"{before.path}, {where}"
        raise DataError(f"id {doc_id!r} appears twice (first at {where})", field="id", **at(again))
    return CorpusSummary(count, dim)


class Corpus:
    """Documents to ingest from one or more paths (or a Source): read once in full by `check`, which validates
    every entry before anything is written, then streamed by `documents`. A source costly to read twice (files
    parsed) is spooled by the check and streamed from the spool. `skip_invalid`: an entry that is not a valid
    document is left out and listed in `refused` (the whole corpus is refused otherwise)."""

    STDIN = STDIN

    def __init__(
        self,
        path: str | Path | Sequence[str | Path] | Source,
        fields: FieldNames = FieldNames(),
        vectors: str | Path | None = None,
        skip_invalid: bool = False,
        **walk: Any,
    ):
        self.source = path if isinstance(path, Source) else open_source(path, fields, vectors, **walk)
        self.skip_invalid = skip_invalid
        self.refused: list[DataError] = []
        self._summary: CorpusSummary | None = None
        self._spool: Spool | None = None

    name = property(lambda self: self.source.name)
    path = property(lambda self: getattr(self.source, "path", self.source.name))
    export = property(lambda self: self.source.export)
    vectors = property(lambda self: self.source.vectors)
    fields = property(lambda self: getattr(self.source, "fields", FieldNames()))
    ignored = property(lambda self: self.source.ignored)

    def documents(self) -> Iterator[Document]:
        if self._spool is not None:
            yield from self._spool.documents()
            return
        for _, doc in self.source.entries():
            if isinstance(doc, DataError):
                if not self.skip_invalid:
                    raise doc
                continue
            yield doc

    def check(self) -> CorpusSummary:
        """Validate the whole corpus (once; later calls return the same summary). Raises DataError naming the
        file, line and field of the first problem (with `skip_invalid`, of a problem no entry alone shows)."""
        if self._summary is not None:
            return self._summary
        self.refused, places = [], []
        spool = None if self.source.rereadable else Spool()

        def first_read() -> Iterator[Document]:  # lists the entries refused, spools what is costly to read
            for where, doc in self.source.entries():
                if isinstance(doc, DataError):
                    if not self.skip_invalid and spool is None:
                        raise doc
                    self.refused.append(doc)  # files: every one named before the corpus is refused
                    continue
                if spool is not None:
                    spool.add(doc)
                    places.append(where)
                yield doc

        def place(ordinal: int) -> Place:  # only on an error's path
            if places:
                return places[ordinal - 1]
            kept = (where for where, doc in self.source.entries() if not isinstance(doc, DataError))
            for number, where in enumerate(kept, start=1):
                if number == ordinal:
                    return where
            return Place(self.name)

        reads = 0

        def read() -> Iterator[Document]:
            nonlocal reads
            reads += 1
            if reads == 1:
                return first_read()
            if spool is None:
                return self.documents()
            spool.close_writing()  # all written: read back whole
            return spool.documents()

        field = self.fields.vector or "vector"
        try:
            summary = validate_documents(read, path=self.name, vector_field=field, place=place)
        except DataError as error:
            if self.refused and not self.skip_invalid:
                self.refused.append(error)
                raise self._refusal() from None
            raise
        finally:
            if spool is not None:
                spool.close_writing()
        if self.refused and not self.skip_invalid:
            raise self._refusal()
        self._summary = summary
        self._spool = spool
        return self._summary

    def _refusal(self) -> DataError:
        """Every file that cannot be read, a line each, as one error: nothing is written."""
        lines = [str(error) for error in self.refused]
        count = len(lines)
        lines.append(
            f"{count} file{'s' * (count != 1)} refused: nothing written (--skip-invalid ingests the rest)"
        )
        return DataError("\n".join(lines))


def read_corpus(
    path: str | Path, fields: FieldNames = FieldNames(), vectors: str | Path | None = None
) -> Iterator[Document]:
    """The documents of a corpus (any source), the first invalid entry raised."""
    for _, doc in open_source(path, fields, vectors).entries():
        if isinstance(doc, DataError):
            raise doc
        yield doc
