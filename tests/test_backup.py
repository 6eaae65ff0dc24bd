"""`semsearch backup` and `restore` (issue 28): real indexes, real CLI processes, real kills and file-size limits.

A backup is an index of one published generation whose files match backup.json's checksums; an interrupted
one leaves no DEST; a restore puts a verified backup in place of a damaged index."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import command_here, copy_index

SEMSEARCH = [sys.executable, "-m", "semsearch"]
QUERIES = ["parse a date from a string", "read a csv file", "compress data with gzip", "random numbers"]


def run(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*SEMSEARCH, *map(str, args)], capture_output=True, text=True, timeout=300, **kwargs
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def here(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """A command in this process (conftest.command_here): where its message or its work is the test, not a
    process (every command here keeps real-process runs, and every kill and file-size limit is one)."""
    result = command_here(*args)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def top10(path: Path, queries=QUERIES) -> list[list[str]]:
    from semsearch import Index

    with Index.open(path) as index:
        return [[hit.id for hit in hits] for hits in index.search_many(queries, k=10)]


def healthy(path: Path) -> bool:
    from semsearch.operations.check import check_index

    return check_index(path).healthy


@pytest.fixture
def index_copy(sample_encoded, tmp_path):
    return copy_index(sample_encoded, tmp_path / "index")


def test_a_backup_is_an_index_that_check_verifies_by_its_checksums(index_copy, tmp_path):
    before = top10(index_copy)
    dest = tmp_path / "backup"
    result = run("backup", dest, "--index", index_copy)
    assert "backed up generation" in result.stderr and "hard-linked" in result.stderr
    record = json.loads((dest / "backup.json").read_text())
    manifest = json.loads((dest / "manifest.json").read_text())
    assert record["generation"] == manifest["generation"] and record["documents"] == 300
    assert {"documents.db", "manifest.json", "raw/seg-000000000000.npy"} <= set(record["files"])
    # segments are linked, not copied; the store is a copy of its own
    segment = "raw/seg-000000000000.npy"
    assert (dest / segment).stat().st_ino == (index_copy / segment).stat().st_ino
    assert (dest / "documents.db").stat().st_ino != (index_copy / "documents.db").stat().st_ino
    assert top10(dest) == before
    report = here("check", "--index", dest).stdout
    assert "checksum" in report and "damaged" not in report
    # a byte of the backup's own store changed: check names it by its checksum
    data = bytearray((dest / "documents.db").read_bytes())
    data[-100] ^= 0xFF
    (dest / "documents.db").write_bytes(bytes(data))
    damaged = here("check", "--index", dest, check=False)
    assert damaged.returncode == 1 and "documents.db" in damaged.stderr and "sha256" in damaged.stderr
    assert healthy(index_copy) and top10(index_copy) == before


def test_a_backup_does_not_wait_for_a_write_in_progress(index_copy, tmp_path):
    """A long write (another process holding the writer lock) does not hold a backup up: it pins the
    committed generation as a reader does."""
    from semsearch.storage.generations import WriterLock

    holder = WriterLock(index_copy)
    holder.acquire(1)  # this process stands for the writer (the backup is another process)
    try:
        started = time.perf_counter()
        run("backup", tmp_path / "backup", "--index", index_copy, "-q")
        assert time.perf_counter() - started < 60
    finally:
        holder.release()
    assert healthy(tmp_path / "backup") and top10(tmp_path / "backup") == top10(index_copy)


def test_backup_refuses_an_existing_dest_and_a_path_that_is_no_index(index_copy, tmp_path):
    (tmp_path / "taken").mkdir()
    result = here("backup", tmp_path / "taken", "--index", index_copy, check=False)
    assert result.returncode == 1 and "already exists" in result.stderr and "Traceback" not in result.stderr
    result = here("backup", tmp_path / "new", "--index", tmp_path / "taken", check=False)
    assert result.returncode == 1 and "not a semsearch index" in result.stderr
    result = here("backup", index_copy / "inside", "--index", index_copy, check=False)
    assert result.returncode == 1 and "inside the index" in result.stderr


def test_an_archive_restores_to_a_new_path_and_over_a_damaged_index(index_copy, tmp_path):
    before = top10(index_copy)
    archive = tmp_path / "index.tar.gz"
    run("backup", archive, "--index", index_copy, "--archive")
    assert archive.is_file() and not list(tmp_path.glob(".index.tar.gz.*"))
    run("restore", archive, "--index", tmp_path / "fresh")
    assert healthy(tmp_path / "fresh") and top10(tmp_path / "fresh") == before
    # a healthy index is replaced only with --force
    refused = here("restore", archive, "--index", index_copy, check=False)
    assert refused.returncode == 1 and "--force" in refused.stderr
    # damage: the store cut short and a raw segment removed
    store = index_copy / "documents.db"
    with open(store, "r+b") as handle:
        handle.truncate(store.stat().st_size // 3)
    (index_copy / "raw" / "seg-000000000000.npy").unlink()
    assert not healthy(index_copy)
    result = run("restore", archive, "--index", index_copy)
    assert "replaced an index that was damaged" in result.stderr
    assert healthy(index_copy) and top10(index_copy) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".index.")]  # no staging left


def test_restore_refuses_a_backup_that_fails_its_checksums(index_copy, tmp_path):
    dest = tmp_path / "backup"
    here("backup", dest, "--index", index_copy)
    with open(dest / "documents.db", "r+b") as handle:  # the store is the backup's own copy
        handle.seek(4096)
        handle.write(b"\x00" * 64)
    result = here("restore", dest, "--index", tmp_path / "restored", check=False)
    assert result.returncode == 1 and "fails its checksum" in result.stderr
    assert not (tmp_path / "restored").exists()
    not_a_backup = here("restore", index_copy, "--index", tmp_path / "restored", check=False)
    assert not_a_backup.returncode == 1 and "not a semsearch backup" in not_a_backup.stderr
    # a backup written to as an index (a delete: a new generation) is no longer one that can be verified
    moved_on = tmp_path / "moved-on"
    here("backup", moved_on, "--index", index_copy)
    here("delete", "argparse", "--index", moved_on)
    assert "damaged" not in here("check", "--index", moved_on).stdout  # as an index it is whole
    result = here("restore", moved_on, "--index", tmp_path / "restored", check=False)
    assert result.returncode == 1 and "written to after the backup" in result.stderr
    assert healthy(index_copy)


def limited(size: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def test_a_full_disk_during_backup_is_one_clear_line_and_loses_nothing(index_copy, tmp_path):
    before = top10(index_copy)
    dest = tmp_path / "backup"
    for archive in ((), ("--archive",)):
        # 100 KB: the store's copy (360 KB) cannot be written
        result = run(
            "backup", dest, "--index", index_copy, *archive, check=False, preexec_fn=limited(100_000)
        )
        assert result.returncode == 1, result.stderr
        message = result.stderr.strip().splitlines()[-1]
        assert message.startswith("Error: ") and "Traceback" not in result.stderr
        assert f"{dest} was not written" in message and "unchanged" in message
        assert not dest.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".backup")]
    assert healthy(index_copy) and top10(index_copy) == before
    run("backup", dest, "--index", index_copy)  # without the limit it works
    assert healthy(dest)


def test_a_full_disk_during_ingest_keeps_the_index(index_copy, tmp_path):
    from conftest import write_jsonl

    before = top10(index_copy)
    docs = [{"id": f"new-{i}", "text": f"a new document number {i} " * 10} for i in range(60)]
    corpus = write_jsonl(tmp_path / "more.jsonl", docs)
    size = 50_000  # below the vectors' 92 KB: their first file cannot be written
    result = run("ingest", corpus, "--index", index_copy, "-q", check=False, preexec_fn=limited(size))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert healthy(index_copy) and top10(index_copy) == before


def test_the_server_backs_up_under_the_admin_key_into_its_directory(index_copy, tmp_path):
    httpx = pytest.importorskip("httpx")
    from test_server import ADMIN, admin, running_server

    with running_server(index_copy, api_key=ADMIN) as url, httpx.Client(base_url=url, timeout=60) as client:
        disabled = client.post("/backup", headers=admin())
        assert disabled.status_code == 403 and disabled.json()["error"]["code"] == "backups_disabled"
    backups = tmp_path / "backups"
    backups.mkdir()
    settings = dict(api_key=ADMIN, backup_dir=str(backups))
    with running_server(index_copy, **settings) as url, httpx.Client(base_url=url, timeout=60) as client:
        assert client.post("/backup").status_code == 401
        assert client.post("/backup", headers=admin("wrong")).status_code == 403
        made = client.post("/backup", headers=admin())
        assert made.status_code == 200, made.text
        answer = made.json()["backup"]
        assert answer["documents"] == 300 and Path(answer["path"]).parent == backups
        packed = client.post("/backup", headers=admin(), json={"archive": True}).json()["backup"]
        assert packed["path"].endswith(".tar.gz") and Path(packed["path"]).is_file()
        assert client.post("/backup", headers=admin(), json={"archive": "yes"}).status_code == 400
    assert healthy(Path(answer["path"])) and top10(Path(answer["path"])) == top10(index_copy)


@pytest.mark.slow
def test_a_killed_backup_never_leaves_a_dest_that_checks_whole(index_copy, tmp_path):
    """Each fault point of a backup (a process ending there as a kill would), then SIGKILL at ten random
    moments of a real run. DEST either does not exist or checks healthy against its checksums, and
    the source is untouched."""
    from semsearch.storage.backup import BACKUP_STEPS

    before = top10(index_copy)
    manifest = (index_copy / "manifest.json").read_bytes()
    started = time.perf_counter()
    run("backup", tmp_path / "timed", "--index", index_copy)
    whole = time.perf_counter() - started
    rng = random.Random(28)
    outcomes = {"none": 0, "whole": 0}
    runs = [("fault", step) for step in BACKUP_STEPS] + [
        ("kill", rng.uniform(0.3, 1.1) * whole) for _ in range(10)
    ]
    for n, (how, what) in enumerate(runs):
        dest = tmp_path / f"dest-{n}"
        command = [*SEMSEARCH, "backup", str(dest), "--index", str(index_copy), "-q"]
        if how == "fault":
            result = subprocess.run(command, env={**os.environ, "SEMSEARCH_FAULT": what}, timeout=120)
            assert result.returncode == 86
        else:
            process = subprocess.Popen(command)
            time.sleep(what)
            process.send_signal(signal.SIGKILL)
            process.wait(60)
        if dest.exists():
            assert healthy(dest) and json.loads((dest / "backup.json").read_text())["documents"] == 300
            outcomes["whole"] += 1
        else:
            outcomes["none"] += 1
        for staging in tmp_path.glob(f".dest-{n}.backup-*"):  # what a kill leaves: no index until whole
            if (staging / "manifest.json").exists():
                assert (staging / "backup.json").is_file() and healthy(staging)
    assert outcomes["none"] >= len(BACKUP_STEPS)  # every fault point, at least
    assert (index_copy / "manifest.json").read_bytes() == manifest and healthy(index_copy)
    assert top10(index_copy) == before
    # the next backup to the same place clears a dead process's staging directory
    here("backup", tmp_path / "dest-0", "--index", index_copy)
    assert not list(tmp_path.glob(".dest-0.backup-*"))


WRITER = """
import json, sys
from semsearch import Index
path, log, rounds, queries = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
with Index.open(path, wait=60) as index, open(log, "a") as out:
    for i in range(rounds):
        index.add([
            {"id": f"loop-{i}", "text": f"loop document {i}: parse a date from a string, round {i}"},
            {"id": "counter", "text": f"the counter stands at version {i}"},
        ])
        top = [[hit.id for hit in hits] for hits in index.search_many(queries, k=10)]
        state = {"generation": index.state.generation, "count": len(index), "version": i, "top": top}
        out.write(json.dumps(state) + "\\n")
        out.flush()
"""

READER = """
import json, sys, pathlib, time
from semsearch import Index
path, stop, queries = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
searches = 0
with Index.open(path) as index:
    while not stop.exists():
        assert all(len(hits) == 10 for hits in index.search_many(queries, k=10))
        searches += 1
        time.sleep(0.02)  # searching all along, not holding a core the writer and the backups need
print(searches)
"""


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_a_backup_while_a_writer_upserts_and_readers_search_holds_one_published_state(index_copy, tmp_path):
    from semsearch import Index

    initial = {"generation": Index.open(index_copy).state.generation, "count": 300, "version": None}
    initial["top"] = top10(index_copy)
    log, stop = tmp_path / "published.jsonl", tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(index_copy), str(log), "12", json.dumps(QUERIES)]
    )
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(index_copy), str(stop), json.dumps(QUERIES)],
        stdout=subprocess.PIPE,
        text=True,
    )
    backups = []
    try:
        while writer.poll() is None and len(backups) < 6:
            published_before = lines(log)
            dest = tmp_path / f"backup-{len(backups)}"
            # in this process, beside the writer's and the reader's
            here("backup", dest, "--index", index_copy, "-q")
            backups.append(dest)
            # the next backup once the writer has published again, so that they catch different generations
            while writer.poll() is None and lines(log) == published_before:
                time.sleep(0.05)
        assert writer.wait(600) == 0
    finally:
        stop.touch()
        searches = reader.communicate(timeout=120)[0]
    assert reader.returncode == 0 and int(searches) > 0
    published = {state["generation"]: state for state in map(json.loads, log.read_text().splitlines())}
    published[initial["generation"]] = initial
    seen = set()
    for dest in backups:
        assert healthy(dest)
        generation = json.loads((dest / "backup.json").read_text())["generation"]
        state = published[generation]  # a generation the writer published, whole
        seen.add(generation)
        with Index.open(dest) as backup:
            ids = backup.store.ids()
        assert len(ids) == state["count"]
        rounds = 0 if state["version"] is None else state["version"] + 1
        assert {i for i in ids if i.startswith("loop-")} == {f"loop-{i}" for i in range(rounds)}
        if rounds:
            with Index.open(dest) as backup:
                pk = backup.store.existing_ids(["counter"])["counter"][0]
                assert backup.store.get([pk])[pk]["text"] == f"the counter stands at version {rounds - 1}"
        assert top10(dest) == state["top"]
    assert len(seen) >= 2  # the backups caught the writer at different generations
