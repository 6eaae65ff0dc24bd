"""An index on storage that cannot be written answers queries, `info` and `check` exactly as a writable one,
and refuses writes with a clear message.

Really read-only: as root, permissions do not stop a write, so the CLI runs in a private mount namespace where
the index directory is bind-mounted read-only over itself (`unshare -m`, then `mount -o remount,ro,bind`): a
write there fails with EROFS whoever makes it. Where that is not allowed, it runs as the unprivileged user
`nobody` (`setpriv`) on a world-readable copy that it cannot write (SEMSEARCH_TEST_READ_ONLY=user picks it
here). The tests skip where neither works."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLE, commands_in_one_process, write_jsonl

from semsearch import Index
from semsearch.cli import main
from semsearch.storage.faults import FAULT_ENV

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("readonly")

QUERIES = ["parse a date from a string", "read a file line by line", "sort a list"]
MOUNT = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'


def cli(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr
    return result


class ReadOnly:
    """Runs the CLI on an index it cannot write, by the first method that works on this machine."""

    METHODS = ("mount", "user")

    def __init__(self, root: Path):
        self.root = root
        asked = os.environ.get("SEMSEARCH_TEST_READ_ONLY")  # one of METHODS, to test that one
        self.method = next((m for m in ([asked] if asked else self.METHODS) if self._works(m)), None)

    def _works(self, method: str) -> bool:
        probe = Path(tempfile.mkdtemp(dir=self._shared() if method == "user" else self.root))
        probe.chmod(0o755)
        try:
            result = subprocess.run(
                [
                    *self._prefix(method, probe),
                    "sh",
                    "-c",
                    f'! touch "{probe}/x" 2>/dev/null && ls "{probe}"',
                ],
                capture_output=True,
                timeout=60,
            )
            return result.returncode == 0 and not (probe / "x").exists()
        except (OSError, subprocess.SubprocessError):
            return False
        finally:
            shutil.rmtree(probe, ignore_errors=True)

    def _shared(self) -> Path:
        """A world-readable directory (pytest's own are private to root) for the `user` method."""
        if not hasattr(self, "_shared_dir"):
            self._shared_dir = Path(tempfile.mkdtemp(prefix="semsearch-ro-"))
            self._shared_dir.chmod(0o755)
        return self._shared_dir

    def _prefix(self, method: str, index: Path) -> list[str]:
        if method == "mount":
            return ["unshare", "-m", "--", "sh", "-c", MOUNT, str(index)]
        return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]

    def prepare(self, index: Path) -> Path:
        """An index (or a file) as the read-only runs will see it (for `user`: a copy, and the encoder's
        cache)."""
        if self.method != "user":
            return index
        target = Path(tempfile.mkdtemp(dir=self._shared())) / index.name
        (shutil.copytree if index.is_dir() else shutil.copy)(index, target)
        cache = os.environ.get("SEMSEARCH_CACHE")
        if cache and not (self._shared() / "cache").exists():
            shutil.copytree(cache, self._shared() / "cache")
        subprocess.run(["chmod", "-R", "a+rX,go-w", str(self._shared())], check=True)
        return target

    def _env(self) -> dict:
        return {"SEMSEARCH_CACHE": str(self._shared() / "cache")} if self.method == "user" else {}

    def run(self, index: Path, *args, module: bool = True) -> subprocess.CompletedProcess:
        """The CLI (or, not `module`, python with these arguments) on `index`, which it cannot write."""
        semsearch = ["-m", "semsearch"] if module else []
        return subprocess.run(
            [*self._prefix(self.method, index), sys.executable, *semsearch, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, **self._env()},
        )

    def run_all(self, index: Path, commands) -> list[subprocess.CompletedProcess]:
        """CLI commands in turn by one process that cannot write `index` (each read in a process of its own
        is what `run` and the crash tests' real processes show; here they would only add imports)."""
        return commands_in_one_process(commands, self._prefix(self.method, index), self._env())

    def cleanup(self) -> None:
        if hasattr(self, "_shared_dir"):
            shutil.rmtree(self._shared_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def read_only(tmp_path_factory):
    runner = ReadOnly(tmp_path_factory.mktemp("read-only"))
    if runner.method is None:
        pytest.skip("neither a read-only bind mount (unshare -m) nor running as nobody (setpriv) works here")
    yield runner
    runner.cleanup()


def reading(index: Path) -> list[list]:
    """The commands whose answers `answers` reads: QUERIES, `info --json` and `check --json`."""
    queries = [["query", text, "--index", index, "-k", "5", "--json"] for text in QUERIES]
    return [*queries, ["info", "--index", index, "--json"], ["check", "--index", index, "--json"]]


def answers(results: list[subprocess.CompletedProcess]) -> dict:
    """What the readers say of an index: the results of its `reading` commands."""
    *queried, described, checked = (ok(result).stdout for result in results)
    hits = [[(h["id"], h["score"]) for h in map(json.loads, lines.splitlines())] for lines in queried]
    details, report = json.loads(described), json.loads(checked)
    for volatile in ("path", "read_only"):
        details.pop(volatile)
    # SQLite's log, folded into the main file by a writable close, and what a write leaves beside the files
    # (`other`: a pending manifest, the lock): their bytes, and those per passage, depend on how it was opened
    for part in (details["bytes"], details["bytes_per_passage"]):
        for volatile in ("documents", "total", "other"):
            part.pop(volatile)
    return {"hits": hits, "info": details, "check": [(f["file"], f["status"]) for f in report["files"]]}


def writable(commands) -> list[subprocess.CompletedProcess]:
    """The commands run here, in this process, on a writable index: what read-only runs must equal."""
    ran = [CliRunner().invoke(main, [str(a) for a in command]) for command in commands]
    return [subprocess.CompletedProcess(c, r.exit_code, r.stdout, r.stderr) for c, r in zip(commands, ran)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(index, a corpus of 20 more documents, what a writable open answers)."""
    root = tmp_path_factory.mktemp("ro-index")
    docs = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:80]]
    corpus, more = write_jsonl(root / "first.jsonl", docs[:60]), write_jsonl(root / "more.jsonl", docs[60:])
    index = root / "index"
    ok(cli("ingest", corpus, "--index", index, "--quiet"))
    return index, more, answers(writable(reading(index)))


def copy(built, target: Path) -> Path:
    shutil.copytree(built[0], target)
    return target


def test_an_index_that_cannot_be_written_answers_and_refuses_writes(built, read_only, tmp_path):
    index = read_only.prepare(copy(built, tmp_path / "index"))
    before = sorted(p.name for p in index.iterdir())
    writes = [
        ("ingest", read_only.prepare(built[1])),
        ("delete", "--where", "kind=function"),
        ("refit",),
        ("check", "--repair"),
    ]
    # the reads, then every write refused, then the reads again: a refusal changes nothing a reader sees
    ran = read_only.run_all(
        index, [*reading(index), *([*w, "--index", index] for w in writes), *reading(index)]
    )
    reads = len(reading(index))
    assert answers(ran[:reads]) == answers(ran[-reads:]) == built[2]
    assert json.loads(ran[reads - 2].stdout)["read_only"]
    for result in ran[reads:-reads]:
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and f"{index} is read-only" in errors[0], result.stderr
    assert sorted(p.name for p in index.iterdir()) == before
    print(f"read-only by: {read_only.method}")


def test_a_write_ahead_log_left_beside_the_store_is_read(built, read_only, tmp_path):
    """documents.db with committed changes still in documents.db-wal (copied while another connection held
    it): a read-only open reads them through the log, not the stale main file."""
    index = copy(built, tmp_path / "index")
    holder = sqlite3.connect(index / "documents.db")
    holder.execute("SELECT count(*) FROM documents").fetchone()  # keeps the log from being checkpointed away
    try:
        with Index.open(index) as writer:
            writer.ingest(built[1])
        assert (index / "documents.db-wal").stat().st_size > 0
        frozen = shutil.copytree(index, tmp_path / "frozen", ignore=shutil.ignore_patterns("writer.lock"))
    finally:
        holder.close()
    unreadable = shutil.copytree(frozen, tmp_path / "no-shm", ignore=shutil.ignore_patterns("*-shm"))
    expected = answers(writable(reading(copy((frozen, None), tmp_path / "expected"))))
    frozen = read_only.prepare(frozen)
    assert answers(read_only.run_all(frozen, reading(frozen))) == expected
    assert expected["info"]["documents"] == 80
    # Without its -shm file and a directory to make one in, SQLite cannot read the log: said, not missed.
    unreadable = read_only.prepare(unreadable)
    result = read_only.run(unreadable, "query", QUERIES[0], "--index", unreadable)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert result.returncode == 1 and len(errors) == 1 and "documents.db-wal" in errors[0], result.stderr


@pytest.mark.parametrize("step, deleted", [("generation-written", False), ("committed", True)])
def test_a_write_that_crashed_is_read_as_committed(built, read_only, tmp_path, step, deleted):
    """A pending manifest left by a write killed before or after SQLite committed: nothing can be rolled forward
    on read-only storage, and readers answer with the committed state, as a writable open would."""
    index = copy(built, tmp_path / "index")
    first = built[2]["hits"][0][0][0]
    crashed = cli("delete", first, "--index", index, env={FAULT_ENV: step})
    assert crashed.returncode != 0 and (index / "manifest.pending.json").exists(), crashed.stderr
    expected = answers(writable(reading(copy((index, None), tmp_path / "expected"))))
    assert (first in {hit[0] for hit in expected["hits"][0]}) != deleted
    index = read_only.prepare(index)
    assert answers(read_only.run_all(index, reading(index))) == expected
    assert (index / "manifest.pending.json").exists()


def test_a_store_that_fails_to_open_for_writing_opens_to_read(built, read_only, tmp_path):
    """Without being told (no permission check first), the document store tries a writable open, which SQLite
    refuses here, and falls back to reading."""
    index = read_only.prepare(copy(built, tmp_path / "index"))
    probe = (
        "import sys; from semsearch.storage.store import DocumentStore; "
        "store = DocumentStore(sys.argv[1] + '/documents.db', create=False); "
        "print(store.read_only, store.count())"
    )
    result = read_only.run(index, "-c", probe, str(index), module=False)
    assert result.returncode == 0 and result.stdout.split() == ["True", "60"], result.stderr
