"""A folder's files are parsed while the documents before them are encoded (issue 34, "parsing never limits
ingest"): the pool of parsing processes keeps the files' order and runs only a bounded number of files ahead of
its reader; an ingest walks and parses the files after its first partition while the real encoder runs;
a file found unreadable during the encoding still refuses the ingest with every bad file named and nothing
written. The parse and encode rates: benchmarks/files.py (benchmarks/results/files.md)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from semsearch import Index
from semsearch.errors import DataError
from semsearch.ingest.documents import Corpus
from semsearch.ingest.sources.files import (
    AHEAD_PER_WORKER,
    PARSE_WORKERS,
    POOL_FROM,
    DirectorySource,
    FileTask,
    parsed_in_order,
)
from semsearch.operations import adding

pytestmark = pytest.mark.xdist_group("streamed_parsing")


def write_notes(root: Path, count: int) -> list[Path]:
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
    first_task, (outcome, first_doc, _) = next(results)
    assert len(pulled) <= max(POOL_FROM, 2 * AHEAD_PER_WORKER) + 1 < len(tasks)  # not all submitted at once
    rest = list(results)
    assert [task for task, _ in [(first_task, None), *rest]] == tasks
    texts = [first_doc.text] + [read.value.text for _, read in rest]
    assert texts == [p.read_text() for p in paths]  # each its own file's text, in order
    # one core (no pool): every file too, past the first POOL_FROM (it once stopped there)
    alone = [read.value.text for _, read in parsed_in_order(iter(tasks), workers=1)]
    assert alone == texts


class Gated(DirectorySource):
    """A directory whose ingest walk (its second: the check's is first) stops at file `gate` until the encoder
    has encoded something, or 30 s have passed: it resumes early only if parsing runs beside the encoding."""

    def __init__(self, root: Path, gate: int):
        super().__init__(root)
        self.gate, self.walks, self.held = gate, 0, []
        self.encoding = threading.Event()

    def tasks(self):
        self.walks += 1
        for n, task in enumerate(super().tasks()):
            if n == self.gate and self.walks == 2:
                self.held.append(self.encoding.wait(timeout=30))
            yield task


def test_files_are_parsed_while_the_encoder_runs_and_a_late_refusal_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(
        adding, "STREAMED_FIRST_PARTITION", 8
    )  # a first partition of 8 files, for a small test
    gate = max(POOL_FROM, 8 + PARSE_WORKERS * AHEAD_PER_WORKER) + 1  # past what the pool takes in at once
    root, index_path = tmp_path / "notes", tmp_path / "index"
    paths = write_notes(root, gate + 4)
    source = Gated(root, gate)
    with Index.create(index_path) as index:
        report = index.ingest(Corpus(source), progress=lambda done: source.encoding.set())
        assert report.added == len(index) == len(paths)
        assert source.held == [True]  # the walk went on because the first files were being encoded

        # a changed file early, an unreadable one last: found while the change is encoded, it undoes the write
        paths[0].write_text("# Note 0\n\nRewritten: a note about sailing boats.\n")
        (root / "zz-latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
        with pytest.raises(DataError) as refused:
            index.ingest(root)
        assert str(refused.value).splitlines() == [
            f"{root.as_posix()}/zz-latin1.md: bytes that are not UTF-8 at line 1",
            "1 file refused: nothing written (--skip-invalid ingests the rest)",
        ]
        assert len(index) == len(paths)
        assert list(index.search("sailing boats", k=5, mode="keyword")) == []  # the old text kept
