"""Crash recovery at every named step of a write (faults.py), with real processes: the CLI is run with
SEMSEARCH_FAULT=STEP and exits at that step as a kill would. Afterwards the index opens at once and answers
exactly as before the write (a crash before SQLite commits) or exactly as after it (a crash after: rolled
forward on open), and running the same command again ends with the results of an uninterrupted run."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, command_here, write_jsonl

from semsearch import Index
from semsearch.errors import IndexStateError
from semsearch.storage.faults import FAULT_ENV, FAULT_EXIT
from semsearch.storage.manifest import PENDING

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("faults")

SAMPLE = REPO / "examples" / "sample.jsonl"
QUERIES = ["parse a date from a string", "read a file line by line", "sort a list", "random numbers"]
BEFORE_COMMIT = ("encoded", "generation-written")
AFTER_COMMIT = ("committed", "published")
# documents of the sample in the base index: each case encodes them up to twice, in a new process
BASE = 60


def semsearch(*args, fault: str | None = None, **variables: str) -> subprocess.CompletedProcess:
    """A semsearch process, exiting at the fault point `fault` if given, with these environment variables."""
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV} | variables
    if fault:
        env[FAULT_ENV] = fault
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr
    return result


def answers(path: Path) -> tuple[int, list]:
    with Index.open(path) as index:
        hits = [[(h.id, round(h.score, 4)) for h in index.search(q, k=8)] for q in QUERIES]
        filtered = [[h.id for h in index.search(q, k=5, where=["kind=function"])] for q in QUERIES]
        return len(index), hits + filtered


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("fault-corpora")
    docs = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    more = docs[BASE : BASE + 20] + [
        {**doc, "text": doc["text"] + " (revised)"} for doc in docs[:5]
    ]  # 5 upserts
    return write_jsonl(root / "base.jsonl", docs[:BASE]), write_jsonl(root / "more.jsonl", more)


@pytest.fixture(scope="module")
def base(corpora, tmp_path_factory):
    """An index of the first BASE sample documents (defaults), and what it answers."""
    path = tmp_path_factory.mktemp("fault-base") / "index"
    ok(command_here("ingest", corpora[0], "--index", path, "--quiet"))
    return path, answers(path)


OPERATIONS = {
    # name: (arguments after the index is given, whether it starts from the base index)
    "first-ingest": (lambda c: ("ingest", c[0], "--quiet"), False),
    "ingest-and-upsert": (lambda c: ("ingest", c[1], "--quiet"), True),
    "delete": (lambda c: ("delete", "--where", "kind=module"), True),  # again after a commit: deletes 0
    "refit": (lambda c: ("refit", "--transform", "pca", "--dims", "64"), True),
}


@pytest.fixture(scope="module")
def uninterrupted(corpora, base, tmp_path_factory):
    """What each operation gives when nothing interrupts it."""
    out = {}
    for name, (arguments, from_base) in OPERATIONS.items():
        path = tmp_path_factory.mktemp(f"ref-{name}") / "index"
        if from_base:
            shutil.copytree(base[0], path)
        ok(command_here(*arguments(corpora), "--index", path))
        out[name] = answers(path)
    return out


def steps(operation: str) -> list[str]:
    encodes = operation in ("first-ingest", "ingest-and-upsert")
    creates = ["creating"] if operation == "first-ingest" else []
    return creates + [s for s in BEFORE_COMMIT + AFTER_COMMIT if encodes or s != "encoded"]


CASES = [(operation, step) for operation in OPERATIONS for step in steps(operation)]


@pytest.mark.parametrize("operation, step", CASES, ids=[f"{o}@{s}" for o, s in CASES])
def test_a_crash_at_each_step_leaves_the_old_or_the_new_state(
    operation, step, corpora, base, uninterrupted, tmp_path
):
    arguments, from_base = OPERATIONS[operation]
    path = tmp_path / "index"
    if from_base:
        shutil.copytree(base[0], path)
    crashed = semsearch(*arguments(corpora), "--index", path, fault=step)
    assert crashed.returncode == FAULT_EXIT, (crashed.returncode, crashed.stderr)

    if operation == "first-ingest":
        # Built beside its target and moved into place when complete (ingest/first.py): no index at the path
        # whatever the step; the work so far is in the partial directory, which the re-run resumes.
        with pytest.raises(IndexStateError, match="does not exist"):
            Index.open(path)
        assert (path.parent / ".index.partial").is_dir()
    elif step == "creating":
        # Killed while the index was being made: not an index yet, and the re-run makes it over the leftovers.
        with pytest.raises(IndexStateError, match="not a semsearch index"):
            Index.open(path)
    elif step in AFTER_COMMIT:
        # SQLite committed: the write happened; the next open rolls the manifest forward.
        assert answers(path) == uninterrupted[operation]
        assert not (path / PENDING).exists()
    else:
        # As if the write had never started.
        assert answers(path) == base[1]
        assert not (path / PENDING).exists()

    again = ok(command_here(*arguments(corpora), "--index", path))  # the crash was the real process's
    assert answers(path) == uninterrupted[operation]
    if step == "encoded":
        # The vectors encoded before the crash came from the resume cache, not from the encoder.
        assert "resumed:" in again.stderr, again.stderr
    generations = sorted(p.name for p in path.glob("gen-*"))
    assert len(generations) <= 2, generations  # the current one and the one before it
