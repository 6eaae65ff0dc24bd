"""A first ingest's resume points: the documents stored so far, committed as they go, so that a first ingest
killed before it completes, run again, takes up after the last point instead of storing everything again (at
ten million given vectors the documents stage alone is most of an hour).

Only a first ingest has them: it writes into a partial directory no reader sees (first.py), so committing
before the whole write is done shows nothing half-made. A resume point, every POINT_SECONDS of storing:
the raw vectors spooled so far fsynced (SegmentWriter.sync), the running statistics saved under the point's
number, then the SQLite transaction committed with the point's counts in the store's state table; the
statistics of the point before are then removed. A kill between these steps leaves the last committed point
whole: the spool is cut back to its rows, its statistics file is there.

A resume skips the documents already stored without parsing them (`Source.entries(skip)`), so only a source
that knows itself again has them: a JSONL file (and its .npy of vectors), by path, size and modification
time (`Source.identity`). Its identity is written first (SOURCE); a partial directory that holds points of
another source (or other options) starts afresh (`start_afresh`)."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from ..storage import resumestate
from ..storage.faults import fault_point, fault_testing
from ..storage.files import atomic_write_text
from ..storage.rawspool import SegmentWriter
from ..storage.store import DocumentStore
from ..transforms.stats import RunningStats
from .documents import Corpus, Document
from .pipeline import Added, Progress

log = logging.getLogger(__name__)

DIRECTORY = ".resume"
SOURCE = "source.json"
POINT_SECONDS = 30.0  # of storing between points: a point costs an fsync of the spool and a commit
COUNTS = ("point", "documents", "passages", "next_pk", "resumed")  # in the store (storage/resumestate.py)


def resume_points(path: Path, corpus: Corpus | None, count: int, store: DocumentStore) -> ResumePoints | None:
    """The resume points of an ingest into the index at `path` of `count` documents, where it is a first
    ingest (`corpus` given: its directory no reader sees) of a corpus that knows itself again."""
    identity = None if corpus is None or count else corpus.identity()
    return None if corpus is None or identity is None else ResumePoints(path, corpus, identity, store)


class ResumePoints:
    """The resume points of a first ingest into `path` of `corpus`, a source of this `identity`."""

    def __init__(self, path: Path, corpus: Corpus, identity: list, store: DocumentStore):
        self.directory = Path(path) / DIRECTORY
        self.corpus, self.identity, self.store = corpus, identity, store
        self.number = self.documents = 0
        self.last = time.monotonic()

    def taken_up(
        self, documents: Iterable[Document], stats: RunningStats, start: Added, progress: Progress | None
    ) -> tuple[Iterable[Document], RunningStats, Added]:
        """The documents still to store, the statistics and counts so far: where the last committed point of
        this source left them, else as given (and the source's identity is written now)."""
        counts = resumestate.counts(self.store, COUNTS)
        if not counts.get("point") or read_source(self.directory.parent) != self.identity:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.directory / SOURCE, json.dumps(self.identity))
            return documents, stats, start
        self.number, stored = counts["point"], counts["documents"]
        self.documents = stored
        log.info("resumed after %d documents stored before", stored)
        if progress:
            progress(stored)
        start = Added(stored, counts["passages"], resumed=counts["resumed"], next_pk=counts["next_pk"])
        return self.corpus.documents(skip=stored), RunningStats.load(self._stats(self.number)), start

    def reached(self, writer: SegmentWriter, stats: RunningStats, done: Added, last: bool = False) -> None:
        """After a partition is stored (`done` counts it): a point, if POINT_SECONDS have passed since the
        last (under a fault test, after every partition: faults.py ends the process at `resume-point`).
        `last`: every document is stored, and the spool is about to become its segment: a point now, unless
        the one before counts them all (a run resumed past this point finds that segment whole)."""
        documents = done.added + done.unchanged
        if last and documents == self.documents:
            return
        if not last and time.monotonic() - self.last < POINT_SECONDS and not fault_testing():
            return
        passages = writer.sync()
        number = self.number + 1
        stats.save(self._stats(number))
        counts = dict(
            point=number,
            documents=documents,
            passages=passages,
            next_pk=done.next_pk,
            resumed=done.resumed,
        )
        resumestate.commit_point(self.store, counts)
        self._stats(self.number).unlink(missing_ok=True)
        self.number, self.last, self.documents = number, time.monotonic(), documents
        fault_point("resume-point")

    def _stats(self, number: int) -> Path:
        return self.directory / f"stats-{number}.safetensors"

    def finish(self) -> None:
        """Inside the transaction that publishes the ingest: the points' counts go with it."""
        resumestate.forget(self.store)

    def clear(self) -> None:
        """The ingest is published: the points' files go."""
        shutil.rmtree(self.directory, ignore_errors=True)


def read_source(path: Path) -> list | None:
    try:
        return json.loads((Path(path) / DIRECTORY / SOURCE).read_text())
    except (OSError, ValueError):
        return None


def start_afresh(partial: Path, identity: list | None) -> bool:
    """A partial directory whose resume points are of another source than `identity` (or of none now) has
    nothing to resume: it is removed, and True said. One without points is left as it is (its resume cache of
    encoded vectors serves any source)."""
    kept = read_source(partial)
    if kept is None or kept == identity:
        return False
    shutil.rmtree(partial)
    return True
