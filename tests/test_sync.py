"""Sync (issue 34): `ingest DIR` again reads and encodes only what changed, equals a fresh ingest of the folder,
`--prune` removes only the documents of its own gone files, and `--watch` follows edits, deletions and a change
made while a write runs. Real model, real files, a real watching process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLE, write_jsonl
from folders import contents, differences, edit, note, records, write_folder

from semsearch import Index
from semsearch.cli import main
from semsearch.ingest.sources import open_source
from semsearch.ingest.sync import DirectoryFolder, scan
from semsearch.storage.generations import WriterLock

pytestmark = pytest.mark.xdist_group("sync")
CORPUS = records(SAMPLE, 60)


def ingest(*args: str) -> str:
    result = CliRunner().invoke(main, ["ingest", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def counts(output: str) -> tuple[int, ...]:
    """(added, changed, unchanged, gone) files from an ingest's summary line."""
    found = re.search(r"(\d+) files added, (\d+) changed, (\d+) unchanged, (\d+) gone", output)
    assert found, output
    return tuple(int(n) for n in found.groups())


class CountedReads(DirectoryFolder):
    """The folder as `ingest DIR` reads it, counting the files it parses."""

    parsed = 0

    def read(self, files):
        self.parsed += len(files)
        return super().read(files)


def test_sync_reads_only_what_changed_and_equals_a_fresh_ingest(tmp_path):
    folder, index = tmp_path / "notes", tmp_path / "index"
    paths = write_folder(folder, CORPUS, files=8, per_note=2)
    assert counts(ingest(folder, "--index", index)) == (8, 0, 0, 0)
    again = ingest(folder, "--index", index)
    assert counts(again) == (0, 0, 8, 0) and "read 8 documents, 0 refused: 0 documents added" in again

    edit(paths[0])  # content: re-encoded
    stat = paths[1].stat()
    os.utime(paths[1], ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # time only
    paths[2].unlink()
    (folder / "part-0" / "new.md").write_text(note(CORPUS[50:52]))
    synced = ingest(folder, "--index", index, "--prune")
    assert counts(synced) == (1, 1, 6, 1)
    assert "read 8 documents, 0 refused: 2 documents added (1 replaced, 6 unchanged" in synced
    assert "1 documents removed" in synced

    reader = CountedReads(open_source(folder))  # untouched, or touched only: hashed at most, never parsed
    os.utime(paths[3], ns=(stat.st_atime_ns, stat.st_mtime_ns + 9_000_000_000))
    with Index.open(index) as opened:
        changes = scan(reader, opened.store)
    assert (reader.parsed, changes.unchanged, len(changes.documents)) == (0, 8, 0)

    ingest(folder, "--index", tmp_path / "fresh")
    synced_docs, fresh_docs = contents(index), contents(tmp_path / "fresh")
    assert differences(synced_docs, fresh_docs) == []
    assert len(synced_docs) == 8 and any("passages" in doc for doc in synced_docs.values())


def test_a_row_inserted_above_moves_the_rows_below_without_encoding_them(tmp_path):
    import csv

    folder, index, fresh = tmp_path / "table", tmp_path / "index", tmp_path / "fresh"
    folder.mkdir()
    texts = [" ".join(text.split()[:40]) for _, text in CORPUS[:8]]
    rows = [[f"r{i}", text, "note"] for i, text in enumerate(texts)]
    rows[4][1] = rows[4][1].replace(" ", "\n", 3)  # a quoted field over several lines: rows below span more

    def write(table):
        with open(folder / "rows.csv", "w", newline="") as handle:
            csv.writer(handle).writerows([["id", "text", "kind"], *table])

    write(rows)
    ingest(folder, "--index", index)
    with Index.open(index) as opened:
        vector_rows = opened.state.next_pk
    rows[6][2] = "changed"  # metadata only
    write([["new", " ".join(CORPUS[40][1].split()[:40]), "note"], *rows])
    synced = ingest(folder, "--index", index)
    assert counts(synced) == (0, 1, 0, 0)
    assert "1 documents added (0 replaced, 0 unchanged, 8 moved (place or metadata only" in synced
    with Index.open(index) as opened:  # one vector row made: the new row's (the others kept theirs)
        assert opened.state.next_pk == vector_rows + 1

    ingest(folder, "--index", fresh)
    assert differences(contents(index), contents(fresh)) == []  # rows, lines, metadata, vectors
    with Index.open(index) as moved, Index.open(fresh) as made:
        counted = [index.search("a note", k=1, facets=["kind"]).facets for index in (moved, made)]
        assert counted[0] == counted[1] and counted[0]["kind"]["changed"] == 1
        for text in texts[::2]:
            query = " ".join(text.split()[:8])
            for mode in ("keyword", "dense"):
                ours, theirs = moved.search(query, k=3, mode=mode), made.search(query, k=3, mode=mode)
                assert [(h.id, h.location) for h in ours] == [(h.id, h.location) for h in theirs], mode
                assert all(hit.location["row"] == int(hit.id[1:]) + 2 for hit in ours if hit.id != "new")


def test_prune_counts_first_and_removes_only_its_own_files(tmp_path):
    ours, theirs, index = tmp_path / "ours", tmp_path / "theirs", tmp_path / "index"
    for root, parts in ((ours, CORPUS[:4]), (theirs, CORPUS[4:7])):
        root.mkdir()
        for i, part in enumerate(parts):
            (root / f"{root.name}-{i}.md").write_text(note([part]))
    ingest(ours, "--index", index)
    ingest(theirs, "--index", index)
    replaced = write_jsonl(tmp_path / "other.jsonl", [{"id": "ours-1.md", "text": "Now from elsewhere."}])
    ingest(replaced, "--index", index)  # ours-1.md is no longer the file's document
    unique = CORPUS[0][1].split("\n")[0]
    for name in ("ours/ours-0.md", "ours/ours-1.md", "theirs/theirs-0.md"):
        (tmp_path / name).unlink()

    dry = ingest(ours, "--index", index, "--prune", "--dry-run")
    assert "would remove 1 of 7 documents: ours-0.md" in dry
    with Index.open(index) as opened:
        assert len(opened) == 7
    pruned = ingest(ours, "--index", index, "--prune")
    assert counts(pruned) == (0, 0, 2, 2) and "1 documents removed" in pruned
    with Index.open(index) as opened:
        assert opened.store.ids() == {
            "ours-1.md",
            "ours-2.md",
            "ours-3.md",
            *(f"theirs-{i}.md" for i in range(3)),
        }
        for mode in ("keyword", "dense"):
            hits = opened.search(unique, k=len(opened), mode=mode)
            assert "ours-0.md" not in {hit.id for hit in hits}, mode
    assert counts(ingest(ours, "--index", index, "--prune")) == (0, 0, 2, 0)  # forgotten once pruned


def test_watch_follows_edits_deletions_and_changes_during_a_write(tmp_path):
    folder, index = tmp_path / "notes", tmp_path / "index"
    paths = write_folder(folder, CORPUS, files=3)
    ingest(folder, "--index", index)
    hold = tmp_path / "hold"  # while it exists, a write waits before it commits (storage/faults.py)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SEMSEARCH_PAUSE": f"generation-written:{hold}"}
    command = [
        sys.executable,
        "-m",
        "semsearch",
        "ingest",
        str(folder),
        "--index",
        str(index),
        "--watch",
        "--prune",
    ]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
    try:
        until(lambda: any("watching" in line for line in lines), "the watch to start", lines)
        edit(paths[0], "Quokkas live on Rottnest Island.")
        until(lambda: "Quokkas" in text_of(index, "part-0/note-0000.md"), "the edit", lines)
        paths[1].unlink()
        until(lambda: "part-1/note-0001.md" not in ids(index), "the deletion", lines)

        hold.touch()
        (folder / "new.md").write_text(note(CORPUS[10:11]))
        lock = WriterLock(index)
        until(lock.held_elsewhere, "the write to start", lines, step=0.01)
        edit(paths[2], "Axolotls regrow their limbs.")  # while the write is held open
        assert lock.held_elsewhere(), "the write ended before the change"
        hold.unlink()
        until(
            lambda: "new.md" in ids(index) and "Axolotls" in text_of(index, "part-0/note-0002.md"),
            "both",
            lines,
        )

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0, lines
    finally:
        process.kill()


def until(condition, what: str, lines: list[str], timeout: float = 20, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s: {lines}"
        time.sleep(step)


def ids(index: Path) -> set[str]:
    with Index.open(index) as opened:
        return opened.store.ids()


def text_of(index: Path, doc_id: str) -> str:
    with Index.open(index) as opened:
        found = opened.store.existing_ids([doc_id])
        return opened.store.get([found[doc_id][0]])[found[doc_id][0]]["text"] if found else ""
