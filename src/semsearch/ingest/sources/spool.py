"""Documents parsed once, kept in a temporary file for the second read: a directory's files are parsed while
the corpus is checked, and the ingest streams what the check kept instead of parsing every file again."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator

import numpy as np

from ...documents import Document, Location, Section


class Spool:
    def __init__(self) -> None:
        handle, self.path = tempfile.mkstemp(prefix="semsearch-parsed-", suffix=".jsonl")
        self._out = os.fdopen(handle, "w", encoding="utf-8")

    def add(self, doc: Document) -> None:
        record = {"id": doc.id, "text": doc.text, "title": doc.title, "metadata": doc.metadata}
        if doc.sections is not None:
            record["sections"] = [[s.start, s.end, s.location.to_json()] for s in doc.sections]
        if doc.vector is not None:
            record["vector"] = np.asarray(doc.vector, dtype=np.float32).tolist()
        self._out.write(json.dumps(record, ensure_ascii=False) + "\n")

    def close_writing(self) -> None:
        if not self._out.closed:
            self._out.close()

    def documents(self) -> Iterator[Document]:
        with open(self.path, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                sections = record.get("sections")
                vector = record.get("vector")
                yield Document(
                    id=record["id"],
                    text=record["text"],
                    title=record["title"],
                    metadata=record["metadata"],
                    vector=None if vector is None else np.asarray(vector, dtype=np.float32),
                    sections=None
                    if sections is None
                    else tuple(Section(a, b, Location.from_json(place)) for a, b, place in sections),
                )

    def __del__(self) -> None:
        self.close_writing()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
