"""Damaged files, on a real index (the sample corpus's first 60 documents, ingested as 40 then 20 more with the
defaults): each file cut to half its size or to nothing makes `query`, `info` and `check` fail with one line
naming the file and what repairs it, never a traceback, and the repair it names works: derived files come back
from the raw vectors and the documents (`check --repair`), exactly as they answered before; lost raw vectors are
dropped only when asked (`--drop-missing`) and the documents can then be ingested again; a damaged document
store, the one file nothing else records, says to restore it or start a new index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, SAMPLE, write_jsonl

from semsearch.cli import main

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("damage")

QUERIES = ["parse a date from a string", "read a file line by line", "sort a list"]
DERIVED = ["vectors.faiss", "stats.safetensors", "transform.safetensors"]
DAMAGES = ["half", "empty"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def fails_naming(result, name: str, *also: str) -> str:
    """A clean failure naming `name` (and the phrases `also`) in its one error line, which it returns."""
    assert result.exit_code == 1, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("Error: "), result.stderr
    for phrase in (name, *also):
        assert phrase in errors[0], errors[0]
    return errors[0]


def answers(index: Path) -> list:
    out = []
    for text in QUERIES:
        lines = ok(run("query", text, "--index", index, "-k", "5", "--json")).stdout.splitlines()
        out.append([(hit["id"], round(hit["score"], 4)) for hit in map(json.loads, lines)])
    return out


def files(index: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(index)): p.read_bytes()
        for p in sorted(index.rglob("*"))
        if p.is_file() and p.name != "writer.lock" and not p.name.endswith("-shm")
    }


def generation_dir(index: Path) -> Path:
    return index / f"gen-{json.loads((index / 'manifest.json').read_text())['generation']:06d}"


def damage(path: Path, how: str) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2 if how == "half" else 0)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(index, the 60-document corpus, the answers to QUERIES): two ingests, so two raw segments."""
    root = tmp_path_factory.mktemp("damage")
    docs = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:60]]
    first, corpus = write_jsonl(root / "first.jsonl", docs[:40]), write_jsonl(root / "all.jsonl", docs)
    index = root / "index"
    ok(run("ingest", first, "--index", index, "--quiet"))
    ok(run("ingest", corpus, "--index", index, "--quiet"))
    assert len([p for p in (index / "raw").glob("seg-*.npy") if not p.name.endswith(".scale.npy")]) == 2
    return index, corpus, answers(index)


def second_segment(built) -> str:
    """The raw segment of the second ingest (named by its first row: 40 documents' passages before it)."""
    return json.loads((built[0] / "manifest.json").read_text())["segments"][1]["name"]


def repaired_as_before(index: Path, name: str, built) -> None:
    """`check --repair` says it repaired `name`, the index then checks healthy and answers as before the damage."""
    repaired = ok(run("check", "--index", index, "--repair"))
    assert any(line.startswith("repaired") and name in line for line in repaired.stdout.splitlines()), (
        repaired.stdout
    )
    ok(run("check", "--index", index))
    assert answers(index) == built[2]


def copy(built, target: Path) -> Path:
    shutil.copytree(built[0], target, ignore=shutil.ignore_patterns("writer.lock"))
    return target


def every_reader_fails(index: Path, name: str, *also: str) -> str:
    """query, info and check each fail naming the file, and leave every file as it was."""
    before = files(index)
    messages = {
        command: fails_naming(run(*command, "--index", index), name, *also)
        for command in (("query", QUERIES[0]), ("info",), ("check",))
    }
    assert files(index) == before
    return messages[("info",)]


def test_a_healthy_index_checks_ok(built):
    result = ok(run("check", "--index", built[0]))
    lines = result.stdout.splitlines()
    assert lines and all(line.split()[0] == "ok" for line in lines), result.stdout
    named = " ".join(lines)
    for name in ("manifest.json", "documents.db", "seg-000000000000.npy", second_segment(built), *DERIVED):
        assert name in named, result.stdout
    report = json.loads(ok(run("check", "--index", built[0], "--json")).stdout)
    assert report["healthy"] and {f["status"] for f in report["files"]} == {"ok"}
    assert json.loads(ok(run("info", "--index", built[0], "--json")).stdout)["health"] == "ok"


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("name", DERIVED)
def test_a_damaged_derived_file_is_named_and_rebuilt(built, tmp_path, name, how):
    index = copy(built, tmp_path / "index")
    damage(generation_dir(index) / name, how)
    message = every_reader_fails(index, name, "semsearch check --repair")
    assert "damaged" in message
    repaired_as_before(index, name, built)


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_manifest_is_restored_from_its_generation(built, tmp_path, how):
    index = copy(built, tmp_path / "index")
    damage(index / "manifest.json", how)
    every_reader_fails(index, "manifest.json", "semsearch check --repair")
    repaired_as_before(index, "manifest.json", built)


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_document_store_says_to_restore_it(built, tmp_path, how):
    index = copy(built, tmp_path / "index")
    damage(index / "documents.db", how)
    every_reader_fails(index, "documents.db", "restore it from a backup", "re-ingest")
    before = files(index)
    # Nothing derived can stand in for it: the repair and a write refuse with the same words, changing nothing.
    fails_naming(run("check", "--index", index, "--repair"), "documents.db", "restore it from a backup")
    fails_naming(
        run("ingest", built[1], "--index", index, "--quiet"), "documents.db", "restore it from a backup"
    )
    assert files(index) == before


@pytest.mark.parametrize("how", DAMAGES)
def test_lost_raw_vectors_name_their_documents_and_are_dropped_only_when_asked(built, tmp_path, how):
    index = copy(built, tmp_path / "index")
    segment = index / "raw" / second_segment(built)  # the second ingest's 20 documents (their passages)
    damage(segment, how)
    every_reader_fails(index, segment.name, "--drop-missing")
    result = run("check", "--index", index)
    assert "20 documents" in result.stdout, result.stdout
    before = files(index)
    fails_naming(run("check", "--index", index, "--repair"), segment.name, "--drop-missing")
    assert files(index) == before
    ok(run("check", "--index", index, "--repair", "--drop-missing"))
    ok(run("check", "--index", index))
    assert json.loads(ok(run("info", "--index", index, "--json")).stdout)["documents"] == 40
    # Ingested again, they come back with new raw vectors and the index answers as before the damage.
    assert "20 documents added" in ok(run("ingest", built[1], "--index", index)).stderr
    assert answers(index) == built[2]


def test_a_damaged_transform_kept_since_the_last_fit_comes_back_from_the_previous_generation(tmp_path):
    """An add keeps a grown index's transform: the previous generation holds the same one, and the repair takes
    it from there once the intact vector index confirms it (a refit on every document would answer otherwise)."""
    docs = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:60]]
    first, corpus = (
        write_jsonl(tmp_path / "first.jsonl", docs[:40]),
        write_jsonl(tmp_path / "all.jsonl", docs),
    )
    index = tmp_path / "index"
    ok(run("ingest", first, "--index", index, "--quiet", "--dims", "8"))
    ok(run("ingest", corpus, "--index", index, "--quiet"))
    before = answers(index)
    damage(generation_dir(index) / "transform.safetensors", "half")
    repaired = ok(run("check", "--index", index, "--repair")).stdout
    assert "transform.safetensors: taken from gen-000001" in repaired, repaired
    assert answers(index) == before


def test_an_index_without_copies_of_its_manifest_says_what_is_left(tmp_path):
    """The previous release kept no copy of the manifest in its generations: a damaged one is for a backup."""
    index = shutil.copytree(REPO / "tests" / "data" / "legacy-v1" / "index", tmp_path / "index")
    damage(index / "manifest.json", "half")
    message = fails_naming(
        run("check", "--index", index, "--repair"), "manifest.json", "restore it from a backup"
    )
    assert "check --repair" not in message


def test_damaged_flow_files_are_named_and_rebuilt(tmp_path):
    corpus = write_jsonl(
        tmp_path / "corpus.jsonl", [json.loads(line) for line in SAMPLE.read_text().splitlines()[:60]]
    )
    index = tmp_path / "index"
    ok(run("ingest", corpus, "--index", index, "--quiet", "--transform", "flow", "--dims", "16"))
    before = answers(index)
    for name, how in (("flow.json", "half"), ("flow.safetensors", "empty")):
        damage(generation_dir(index) / name, how)
        every_reader_fails(index, name, "semsearch check --repair")
        ok(run("check", "--index", index, "--repair"))
        assert answers(index) == before


def test_the_store_opens_where_sqlite3_names_no_result_codes(tmp_path):
    """Python 3.10's sqlite3 names none of SQLite's result codes (3.11 added them): the store imports and opens
    a file there all the same, with SQLite's own numbers for the codes it reads."""
    import sqlite3
    import subprocess
    import sys

    from semsearch.storage import store

    names = ["SQLITE_READONLY", "SQLITE_CORRUPT", "SQLITE_CANTOPEN", "SQLITE_NOTADB"]
    if hasattr(sqlite3, "SQLITE_READONLY"):  # Python 3.11 on
        assert [getattr(store, name) for name in names] == [getattr(sqlite3, name) for name in names]
    script = (
        "import sqlite3, sys\n"
        f"for name in {names!r}:\n"
        "    delattr(sqlite3, name)\n"
        "from semsearch.storage.store import DocumentStore\n"
        "DocumentStore(sys.argv[1]).close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "documents.db")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "documents.db").is_file()
