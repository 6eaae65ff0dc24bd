"""A corpus to ingest: any source's documents (sources/: JSONL, a directory, a file, a table), validated whole
before anything is written (files: all but their parsing, which runs as they are encoded), then streamed; with
`skip_invalid`, an entry that is not a valid document is left out and listed. Vectors made elsewhere come with them (a vector field, or an .npy file beside a JSONL file)."""

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
from .vectorfiles import read_query_vector, read_vector_file

__all__ = [
    "MAX_LINE_BYTES",
    "Corpus",
    "Document",
    "checked",
    "refusal",
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
    """Documents to ingest from one or more paths (or a Source): checked whole by `check` before anything is
    written, then streamed by `documents`. A source that parses files (not `rereadable`) is `streamed`: the
    check reads what is known without parsing (each file's id, the tables met in a walk), and the files are
    parsed as `documents` reads them, while the documents before them are encoded; a file found unreadable
    there refuses the ingest (its write undone) after every other unreadable one is named. `skip_invalid`: an
    entry that is not a valid document is left out and listed in `refused` (the whole corpus is refused
    otherwise)."""

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

    name = property(lambda self: self.source.name)
    path = property(lambda self: getattr(self.source, "path", self.source.name))
    export = property(lambda self: self.source.export)
    vectors = property(lambda self: self.source.vectors)
    fields = property(lambda self: getattr(self.source, "fields", FieldNames()))
    ignored = property(lambda self: self.source.ignored)
    needs_ocr = property(lambda self: self.source.needs_ocr)
    blank_pages = property(lambda self: self.source.blank_pages)
    streamed = property(lambda self: not self.source.rereadable)

    def identity(self) -> list | None:
        """What a resumed first ingest knows this corpus again by (ingest/resume.py), or None."""
        return None if self.skip_invalid else self.source.identity()

    def documents(self, skip: int = 0) -> Iterator[Document]:
        """The documents; `skip`: the first so many passed over unparsed (a source with an `identity`)."""
        known = {str(error) for error in self.refused}  # named by the check already
        # a skip is only asked of a source with an identity, whose `entries` takes one (base.Source.identity)
        entries = self.source.entries(skip) if skip else self.source.entries()  # type: ignore[call-arg]
        for _, doc in entries:
            if not isinstance(doc, DataError):
                yield doc
            elif self.skip_invalid:
                if str(doc) not in known:
                    self.refused.append(doc)
                    known.add(str(doc))
            elif self.streamed:  # found as its file was parsed: the others named too, then nothing written
                self.refused.append(doc)
                self.refused += [error for _, error in entries if isinstance(error, DataError)]
                raise self._refusal()
            else:
                raise doc

    def check(self) -> CorpusSummary:
        """Validate the whole corpus (once; later calls return the same summary). Raises DataError naming the
        file, line and field of the first problem (with `skip_invalid`, of a problem no entry alone shows)."""
        if self._summary is not None:
            return self._summary
        self.refused = []
        read_entries = self.source.planned if self.streamed else self.source.entries

        def first_read() -> Iterator[Document]:  # lists the entries refused
            for _, doc in read_entries():
                if isinstance(doc, DataError):
                    if not self.skip_invalid and not self.streamed:
                        raise doc
                    self.refused.append(doc)  # files: every one named before the corpus is refused
                    continue
                yield doc

        def kept() -> Iterator[tuple[Place, Document]]:
            return ((where, doc) for where, doc in read_entries() if not isinstance(doc, DataError))

        def place(ordinal: int) -> Place:  # only on an error's path
            for number, (where, _) in enumerate(kept(), start=1):
                if number == ordinal:
                    return where
            return Place(self.name)

        reads = 0

        def read() -> Iterator[Document]:
            nonlocal reads
            reads += 1
            return first_read() if reads == 1 else (doc for _, doc in kept())

        field = self.fields.vector or "vector"
        try:
            summary = validate_documents(read, path=self.name, vector_field=field, place=place)
        except DataError as error:
            if self.refused and not self.skip_invalid:
                self.refused.append(error)
                raise self._refusal() from None
            if error.reason == "no documents" and self.source.needs_ocr:  # only pictures, and no engine
                from .ocr import needs_ocr_line

                raise DataError(
                    f"no documents: {needs_ocr_line(self.source.needs_ocr)}", path=self.name
                ) from None
            raise
        if self.refused and not self.skip_invalid:
            raise self._refusal()
        self._summary = summary
        return self._summary

    def checked_as_stored(self) -> CorpusSummary | None:
        """For a first ingest (whose directory goes if its corpus is refused) of a JSONL file whose vectors are
        all in an .npy file, nothing to encode: the summary the .npy knows (its rows and width), and the lines
        checked as they are stored instead of in a read of their own (at ten million lines it is a quarter of
        the ingest): a line refused as it is read, an id met twice (`repeat_refused`), a count that differs
        from the .npy's rows. None where the corpus is not such (it is then checked whole first)."""
        if self.vectors is None or self.identity() is None or self.export:
            return None
        rows, width = read_vector_file(self.vectors).shape
        self._summary = CorpusSummary(rows, width)
        return self._summary

    def repeat_refused(self, doc_id: str) -> DataError:
        """The error of an id met twice as the documents were stored (checked_as_stored): the whole check's,
        which names both places."""
        self._summary = None
        try:
            self.check()
        except DataError as error:
            return error
        return DataError(f"id {doc_id!r} appears twice", field="id", path=self.name)

    def _refusal(self) -> DataError:
        return refusal(self.refused)


def refusal(errors: Sequence[DataError]) -> DataError:
    """Every file that cannot be read, a line each, as one error: nothing is written."""
    count = len(errors)
    ending = f"{count} file{'s' * (count != 1)} refused: nothing written (--skip-invalid ingests the rest)"
    return DataError("\n".join([*map(str, errors), ending]))


def checked(documents: Iterable[Document], *, path: str | Path, dim: int | None) -> Iterator[Document]:
    """Documents validated as they pass on to the ingest (a folder's files as they are parsed): an id met
    twice, or a vector not `dim` wide, raises DataError there (the ingest's write is then undone)."""
    first: dict[str, Any] = {}
    for doc in documents:
        where = doc.metadata.get("path") or path
        if doc.id in first:
            raise DataError(f"id {doc.id!r} appears twice (first at {first[doc.id]})", field="id", path=where)
        first[doc.id] = where
        width = None if doc.vector is None else doc.vector.shape[-1]
        if width is not None and dim is not None and width != dim:
            raise DataError(f"a vector of width {width}, expected {dim}", field="vector", path=where)
        yield doc


def read_corpus(
    path: str | Path, fields: FieldNames = FieldNames(), vectors: str | Path | None = None
) -> Iterator[Document]:
    """The documents of a corpus (any source), the first invalid entry raised."""
    for _, doc in open_source(path, fields, vectors).entries():
        if isinstance(doc, DataError):
            raise doc
        yield doc
