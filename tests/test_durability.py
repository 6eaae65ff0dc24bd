"""Crash safety, resume and concurrency, with real processes: SIGKILL at random moments of an ingest and a
refit, readers querying while another process writes, and a second writer."""

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import write_jsonl

from semsearch import Index
from semsearch.operations.check import check_index
from semsearch.storage.generations import Generations, WriterLock

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("durability")

SUBJECTS = [
    "the river",
    "a small bird",
    "the old engine",
    "our new library",
    "the winter storm",
    "a tired cat",
]
VERBS = ["carries", "watches", "breaks", "finds", "follows", "warms", "hides", "repairs"]
OBJECTS = ["the bridge", "a red kite", "the last train", "seven letters", "the garden gate", "a paper map"]
PLACES = ["near the harbour", "after midnight", "in the valley", "under the stairs", "by the station"]
QUERIES = ["a bird near the water", "trains at night", "repairing a broken machine", "a cat hiding"]


# Full whitening, named: the refit test goes back to exactly these settings.
INGEST = ("ingest", "--batch-size", "16", "--transform", "whiten")


def corpus(n: int, seed: int, prefix: str = "d") -> list[dict]:
    rng = random.Random(seed)
    return [
        {
            "id": f"{prefix}{i}",
            "text": " ".join(rng.choice(words) for words in (SUBJECTS, VERBS, OBJECTS, PLACES)) + f" ({i})",
            "group": i % 3,
        }
        for i in range(n)
    ]


def semsearch(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "semsearch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def results(path: Path) -> list[list[tuple[str, float]]]:
    with Index.open(path) as index:
        return [[(hit.id, hit.score) for hit in index.search(q, k=10)] for q in QUERIES]


def same_results(a, b) -> bool:
    return all(
        [i for i, _ in x] == [i for i, _ in y] and all(abs(s - t) < 1e-4 for (_, s), (_, t) in zip(x, y))
        for x, y in zip(a, b)
    )


def check_after_kill(path: Path, allowed_counts: set[int]) -> None:
    """A killed write leaves the last committed state: the index opens at once and answers."""
    if not (path / "manifest.json").exists():
        return  # killed before the index was created (the re-run creates it)
    with Index.open(path) as index:
        assert len(index) in allowed_counts
        if len(index):
            assert len(index.search(QUERIES[0], k=5)) == 5


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("durability")
    path = write_jsonl(root / "corpus.jsonl", corpus(600, seed=1))
    reference = root / "reference"
    started = time.perf_counter()
    run = semsearch(*INGEST, str(path), "--index", str(reference), "--quiet")
    _, err = run.communicate()
    assert run.returncode == 0, err
    return path, reference, results(reference), time.perf_counter() - started


def test_ingest_killed_at_random_moments_resumes_to_the_same_index(docs, tmp_path):
    path, _, expected, duration = docs
    target = tmp_path / "index"
    rng = random.Random(7)
    resumed_runs = 0
    for attempt in range(3):
        run = semsearch(*INGEST, str(path), "--index", str(target), "--quiet")
        if attempt == 1:
            # once, kill it right after it has made encoding progress, so the re-run must resume
            keys = target / "raw" / "resume.keys"
            while run.poll() is None and not (keys.exists() and keys.stat().st_size > 0):
                time.sleep(0.02)
        else:
            time.sleep(rng.uniform(0.2, 0.9) * duration)
        run.send_signal(signal.SIGKILL)
        run.wait()
        check_after_kill(target, {0, 600})
    final = semsearch(*INGEST, str(path), "--index", str(target))
    _, err = final.communicate()
    assert final.returncode == 0, err
    resumed_runs += "resumed:" in err
    assert resumed_runs == 1 or "0 documents added" in err, err
    assert not (target / "raw" / "resume.keys").exists()  # cleared once committed
    with Index.open(target) as index:
        assert len(index) == 600
        assert set(index.store.existing_ids([f"d{i}" for i in range(600)])) == {f"d{i}" for i in range(600)}
    assert same_results(results(target), expected)


def test_refit_killed_at_random_moments_leaves_old_or_new_state(docs, tmp_path):
    path, reference, expected, _ = docs
    target = tmp_path / "index"
    subprocess.run(["cp", "-r", str(reference), str(target)], check=True)
    to_pca = ("refit", "--index", str(target), "--transform", "pca", "--dims", "32")
    back = ("refit", "--index", str(target), "--transform", "whiten", "--dims", "all")

    def refit(*args: str) -> float:
        started = time.perf_counter()
        run = semsearch(*args)
        assert run.wait() == 0, run.stderr.read()
        return time.perf_counter() - started

    # A whole refit process, timed, so the kills land inside one (most of it is starting Python and torch).
    duration = refit(*to_pca)
    refit(*back)
    assert same_results(results(target), expected)
    rng = random.Random(3)
    for attempt in range(3):
        run = semsearch(*(to_pca if attempt % 2 == 0 else back))
        time.sleep(rng.uniform(0.5, 1.0) * duration)
        run.send_signal(signal.SIGKILL)
        run.wait()
        with Index.open(target) as index:
            assert (index.settings.transform, index.settings.dims_requested) in {
                ("whiten", None),
                ("pca", 32),
            }
            assert len(index.search(QUERIES[0], k=5)) == 5
    # and back, uninterrupted: the same results as the index never refitted
    refit(*back)
    assert same_results(results(target), expected)


def test_readers_never_fail_while_another_process_writes(docs, tmp_path):
    path, reference, _, _ = docs
    target = tmp_path / "index"
    subprocess.run(["cp", "-r", str(reference), str(target)], check=True)
    # Enough to write that readers get many turns during it (the int8 encoder takes 200 documents in 0.4 s).
    more = write_jsonl(tmp_path / "more.jsonl", corpus(400, seed=2, prefix="m"))
    long_lived = Index.open(target)
    errors, searches, counts = [], 0, set()
    writer = semsearch(
        "ingest", str(more), "--index", str(target), "--refit", "always", "--batch-size", "16", "--quiet"
    )
    while writer.poll() is None:
        try:
            with Index.open(target) as fresh:
                assert len(fresh.search(QUERIES[1], k=10)) == 10
                counts.add(len(fresh))
            assert len(long_lived.search(QUERIES[2], k=10)) == 10
            searches += 1
        except Exception as error:  # any error at all is a failure: count it
            errors.append(repr(error))
    assert writer.returncode == 0, writer.stderr.read()
    assert errors == []
    assert searches > 5
    assert counts <= {600, 1000}
    long_lived.search(QUERIES[0], k=1)
    assert len(long_lived) == 1000  # the long-lived reader caught up with the write
    long_lived.close()


def test_a_write_committed_between_a_readers_manifest_and_its_store_is_taken_up(docs, tmp_path, monkeypatch):
    """The window the test above hits now and then, made certain: a reader has read manifest.json when another
    process commits and publishes the next generation, before the reader reads the store. That is no
    inconsistency, to an open (which takes up the new generation) or to `check`."""
    _, reference, _, _ = docs
    target = tmp_path / "index"
    subprocess.run(["cp", "-r", str(reference), str(target)], check=True)
    real_current, writes, armed = Generations.current, [], []

    def a_write_lands_after(self, lock):
        manifest = real_current(self, lock)
        if armed:  # once per reader: its first reading of the manifest
            armed.clear()
            more = write_jsonl(
                tmp_path / f"more{len(writes)}.jsonl", corpus(20, seed=3, prefix=f"w{len(writes)}")
            )
            command = [
                sys.executable,
                "-m",
                "semsearch",
                "ingest",
                str(more),
                "--index",
                str(target),
                "--quiet",
            ]
            writes.append(subprocess.run(command, capture_output=True, text=True))
            assert writes[-1].returncode == 0, writes[-1].stderr
        return manifest

    monkeypatch.setattr(Generations, "current", a_write_lands_after)
    armed.append(True)
    with Index.open(target) as index:
        assert len(index) == 620
        assert len(index.search(QUERIES[0], k=5)) == 5
    armed.append(True)
    report = check_index(target)
    assert report.healthy, report.lines()
    assert len(writes) == 2
    with Index.open(target) as index:
        assert len(index) == 640


def test_a_search_reads_the_store_as_the_generation_it_searches_committed_it(docs, tmp_path, monkeypatch):
    """Another process deletes the best hit while a search runs (after it took up its generation, before it read
    any document): the search answers from that generation whole, its k hits the ones the generation holds (it
    read the store in one snapshot; before, the deleted hit's row was found and its document was not: another
    list, or k - 1 hits), and the next search takes up the delete."""
    from semsearch.retrieval.keywords import KeywordRetriever

    _, reference, _, _ = docs
    target = tmp_path / "index"
    subprocess.run(["cp", "-r", str(reference), str(target)], check=True)
    with Index.open(target) as index:
        before = [hit.id for hit in index.search(QUERIES[0], k=5)]
        real_init, deletes = KeywordRetriever.__init__, []

        def a_write_lands_first(self, *args, **kwargs):
            if not deletes:
                command = [sys.executable, "-m", "semsearch", "delete", "--index", str(target), before[0]]
                deletes.append(subprocess.run(command, capture_output=True, text=True))
                assert deletes[0].returncode == 0, deletes[0].stderr
            real_init(self, *args, **kwargs)

        monkeypatch.setattr(KeywordRetriever, "__init__", a_write_lands_first)
        assert [hit.id for hit in index.search(QUERIES[0], k=5)] == before
        after = [hit.id for hit in index.search(QUERIES[0], k=5)]
        assert len(deletes) == 1 and len(after) == 5 and before[0] not in after and len(index) == 599


def test_a_second_writer_fails_with_a_clear_message(docs, tmp_path):
    _, reference, _, _ = docs
    target = tmp_path / "index"
    subprocess.run(["cp", "-r", str(reference), str(target)], check=True)
    lock = WriterLock(target)
    lock.acquire(timeout=0)
    try:
        run = semsearch("delete", "d1", "--index", str(target), "--wait", "0.5")
        out, err = run.communicate()
        assert run.returncode == 1
        assert f"is being written by pid {os.getpid()}" in err and "waited 0.5 s" in err
        assert "Traceback" not in err
        # a writer that waits long enough goes ahead once the first has finished
        run = semsearch("delete", "d1", "--index", str(target), "--wait", "30")
        threading.Timer(1.0, lock.release).start()
        _, err = run.communicate()
        assert run.returncode == 0, err
    finally:
        lock.release()
    with Index.open(target) as index:
        assert len(index) == 599


def test_a_file_sqlite_holds_open_is_never_opened_by_other_code(tmp_path, monkeypatch):
    """POSIX locks belong to the process: closing any descriptor of a file drops SQLite's locks on it, after which
    another process's last close can delete the write-ahead log under the live connections (SQLite's "How to
    corrupt", 2.2). So the store reads its file's header itself (damage.sqlite_problem: open, read, close) only
    while no store of this process has the file open; the real check, watched."""
    from semsearch.storage import store

    opened: list[str] = []
    real = store.sqlite_problem
    monkeypatch.setattr(store, "sqlite_problem", lambda path: opened.append(str(path)) or real(path))
    documents = write_jsonl(tmp_path / "docs.jsonl", corpus(40, seed=2))
    path = tmp_path / "index"
    with Index.create(path, transform="none") as first:
        first.ingest(documents)
        with Index.open(path) as second, Index.open(path) as third:
            assert len(second) == len(third) == 40 and opened == []
            first.add([{"id": "late", "text": "written after the others opened"}])
            assert second.search("written after the others opened", k=1, mode="keyword")[0].id == "late"
    with Index.open(
        path
    ) as reopened:  # alone in the process again: the header is read before SQLite opens it
        assert len(opened) == 1 and reopened.store.integrity() is None and len(reopened) == 41
