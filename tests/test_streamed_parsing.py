"""A folder's files are parsed while the documents before them are encoded (issue 34, "parsing never limits
ingest"): the pool of parsing processes keeps the files' order and runs only a bounded number of files ahead of
its reader; an ingest hands its first documents to the real encoder before the walk has reached the last file;
a file found unreadable during the encoding still refuses the ingest with every bad file named and nothing
written. The parse and encode rates: benchmarks/files.py (benchmarks/results/files.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from semsearch import Index
from semsearch.errors import DataError
from semsearch.ingest.documents import Corpus
from semsearch.ingest.sources.files import (
    AHEAD_PER_WORKER,
    POOL_FROM,
    DirectorySource,
    FileTask,
    parsed_in_order,
)

pytestmark = pytest.mark.xdist_group("streamed_parsing")
FILES = 56  # more than the first partition (32) and the files the pool runs ahead (16)


def write_notes(root: Path, count: int = FILES) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        path = root / f"note-{n:03d}.md"
        path.write_text(f"# Note {n}\n\nThe {n}th note is about topic number {n * 7 % 13}.\n")
        paths.append(path)
    return paths


def test_the_pool_keeps_the_order_and_runs_a_bounded_way_ahead(tmp_path):
    paths = write_notes(tmp_path / "notes", 60)
    tasks = [FileTask(str(p), p.name, p.as_posix(), "markdown") for p in paths]
    pulled = []

    def listed():
        for task in tasks:
            pulled.append(task)
            yield task

    results = parsed_in_order(listed(), workers=2)
    first_task, (outcome, first_doc) = next(results)
    assert len(pulled) <= max(POOL_FROM, 2 * AHEAD_PER_WORKER) + 1 < len(tasks)  # not all submitted at once
    rest = list(results)
    assert [task for task, _ in [(first_task, None), *rest]] == tasks
    texts = [first_doc.text] + [doc.text for _, (_, doc) in rest]
    assert texts == [p.read_text() for p in paths]  # each its own file's text, in order


class Walked(DirectorySource):
    """A directory source that notes each file its walk hands on (the check's walk, then the ingest's)."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.handed: list[str] = []

    def tasks(self):
        self.handed = []
        for task in super().tasks():
            self.handed.append(task.id)
            yield task


def test_encoding_starts_before_the_last_file_is_parsed_and_a_late_refusal_writes_nothing(tmp_path):
    root, index_path = tmp_path / "notes", tmp_path / "index"
    paths = write_notes(root)
    source = Walked(root)
    handed_at_first_encode: list[int] = []

    def progress(done: int) -> None:
        if not handed_at_first_encode:
            handed_at_first_encode.append(len(source.handed))

    with Index.create(index_path) as index:
        report = index.ingest(Corpus(source), progress=progress)
        assert report.added == len(index) == FILES
        # the first partition (32 files) went to the encoder with at most a bounded few more files walked
        assert handed_at_first_encode and handed_at_first_encode[0] < FILES
        assert source.handed == [p.name for p in paths]

        # a changed file early, an unreadable one last: found while the change is encoded, it undoes the write
        paths[0].write_text("# Note 0\n\nRewritten: a note about sailing boats.\n")
        (root / "zz-latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
        with pytest.raises(DataError) as refused:
            index.ingest(root)
        assert str(refused.value).splitlines() == [
            f"{root.as_posix()}/zz-latin1.md: bytes that are not UTF-8 at line 1",
            "1 file refused: nothing written (--skip-invalid ingests the rest)",
        ]
        assert len(index) == FILES
        assert list(index.search("sailing boats", k=5, mode="keyword")) == []  # the old text kept
