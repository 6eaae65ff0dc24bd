"""The command line on the real model, FAISS and SQLite: happy paths, and every bad input from the engine
issue, each failing with one clear message (file, line, field), no traceback, and the index untouched."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import write_jsonl

from semsearch.cli import main

GENRES = ["news", "sport", "science"]
DOCS = [
    {
        "id": f"doc-{i}",
        "title": title,
        "text": text,
        "genre": GENRES[i % 3],
        "year": 1990 + 2 * i,
        "metadata": {"source": f"feed-{i % 2}"},
    }
    for i, (title, text) in enumerate(
        [
            ("Election results", "The governing party lost its majority in the national election."),
            ("Cup final", "The home team won the cup final with a goal in extra time."),
            ("New exoplanet", "Astronomers found a rocky planet orbiting a nearby red dwarf star."),
            ("Budget vote", "Parliament approved the budget after a long night of debate."),
            ("Marathon record", "A runner broke the marathon world record in Berlin."),
            ("Gene editing", "A new gene editing method corrects mutations in human cells."),
            ("Storm warning", "Forecasters warned of a severe storm reaching the coast tonight."),
            ("Tennis upset", "The top seed lost in straight sets in the first round."),
            ("Quantum chip", "Engineers built a quantum processor with a thousand qubits."),
            ("Trade talks", "Ministers resumed trade talks between the two countries."),
            ("Transfer window", "The club signed a young striker for a record fee."),
            ("Ocean warming", "Sea surface temperatures reached the highest level on record."),
            ("Strike ends", "Rail workers ended their strike after a new pay offer."),
            ("Olympic bid", "The city submitted its bid to host the summer Olympic games."),
            ("Vaccine trial", "A malaria vaccine trial showed strong protection in children."),
            ("Court ruling", "The supreme court struck down the new voting law."),
            ("Cycling tour", "The favourite took the yellow jersey on the mountain stage."),
            ("Fusion milestone", "A fusion reactor produced more energy than it consumed."),
            ("Floods", "Heavy rain flooded villages along the river valley."),
            ("Chess champion", "The young challenger won the world chess championship."),
            ("Mars rover", "The rover collected rock samples from an ancient lake bed."),
            ("Housing prices", "House prices fell for the third month in a row."),
            ("Boxing title", "The champion defended the heavyweight title by knockout."),
            ("Bird migration", "Tracking shows songbirds crossing the desert in one night."),
        ]
    )
]


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def snapshot(index: Path) -> dict[str, bytes]:
    """Every file of an index and its bytes: an index 'exactly as it was' has the same snapshot."""
    return {
        str(p.relative_to(index)): p.read_bytes()
        for p in sorted(index.rglob("*"))
        # the lock file and SQLite's shared-memory index hold no data
        if p.is_file() and p.name != "writer.lock" and not p.name.endswith("-shm")
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    corpus = write_jsonl(root / "corpus.jsonl", DOCS)
    index = root / "index"
    result = run("ingest", corpus, "--index", index, "--transform", "pca", "--dims", "16")
    assert result.exit_code == 0, result.output
    assert "24 documents added" in result.output
    return index, corpus


@pytest.fixture
def index(built):
    """The shared index, checked unchanged after the test."""
    path, _ = built
    before = snapshot(path)
    yield path
    assert snapshot(path) == before


def query_json(index, *args):
    result = run("query", *args, "--index", index, "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


# ---- happy paths ------------------------------------------------------------------------------------


def test_query_prints_a_readable_ranked_list(index):
    result = run("query", "who won the football match", "--index", index, "-k", "3")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()[:2] in ("1.", "2.", "3.")]
    assert len(lines) == 3
    assert "Cup final" in lines[0] or "Transfer window" in lines[0]
    assert "genre=" in result.stdout


def test_query_json_one_object_per_line(index):
    hits = query_json(index, "planets and stars", "-k", "5")
    assert len(hits) == 5
    for hit in hits:
        assert set(hit) == {"id", "score", "title", "text", "metadata"}
        assert isinstance(hit["metadata"], dict) and {"genre", "year", "source"} <= set(hit["metadata"])
    assert hits[0]["id"] == "doc-2"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_where_returns_exactly_k_matching(index):
    hits = query_json(index, "planets and stars", "-k", "6", "--where", "genre=news")
    assert len(hits) == 6 and {h["metadata"]["genre"] for h in hits} == {"news"}
    hits = query_json(index, "sport", "-k", "4", "--where", "year>=2020", "--where", "genre!=sport")
    assert len(hits) == 4
    assert all(h["metadata"]["year"] >= 2020 and h["metadata"]["genre"] != "sport" for h in hits)
    nested = query_json(index, "sport", "-k", "30", "--where", "source=feed-1")
    assert len(nested) == 12 and {h["id"] for h in nested} == {f"doc-{i}" for i in range(1, 24, 2)}


def test_info_text_and_json(index):
    result = run("info", "--index", index)
    assert result.exit_code == 0
    for word in ("documents: 24", "pooling: mean", "transform: pca", "dims: 16", "index_type: flat"):
        assert word in result.stdout
    details = json.loads(run("info", "--index", index, "--json").stdout)
    assert details["documents"] == 24 and details["model_name"] == "all-MiniLM-L6-v2"
    assert details["power"] == 0 and details["bytes"]["total"] > 0 and details["created"]


def test_python_dash_m_and_help():
    result = subprocess.run([sys.executable, "-m", "semsearch", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "ingest" in result.stdout and "query" in result.stdout


def test_index_from_environment_and_default_location(built, tmp_path, monkeypatch):
    path, _ = built
    monkeypatch.chdir(tmp_path)
    result = run("info", "--json", env={"SEMSEARCH_INDEX": str(path)})
    assert json.loads(result.stdout)["path"] == str(path)
    # neither: indexes/default under the current directory
    result = run("info", env={"SEMSEARCH_INDEX": None})
    assert result.exit_code == 1 and str(Path("indexes") / "default") in result.output


def test_field_renames_and_beir_ids(tmp_path):
    renamed = write_jsonl(
        tmp_path / "renamed.jsonl",
        [{"key": "r1", "body": "A violin concerto in D major.", "heading": "Music"}]
        + [{"key": f"r{i}", "body": f"Weather report number {i}: rain later."} for i in range(2, 6)],
    )
    index = tmp_path / "renamed"
    result = run(
        "ingest",
        renamed,
        "--index",
        index,
        "--id-field",
        "key",
        "--text-field",
        "body",
        "--title-field",
        "heading",
        "--transform",
        "none",
        "-q",
    )
    assert result.exit_code == 0, result.output
    (top,) = query_json(index, "classical music", "-k", "1")
    assert (top["id"], top["title"], top["text"]) == ("r1", "Music", "A violin concerto in D major.")
    beir = write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "b1", "title": "T", "text": "beir text"}])
    result = run("ingest", beir, "--index", tmp_path / "beir", "--transform", "none", "-q")
    assert result.exit_code == 0, result.output
    assert query_json(tmp_path / "beir", "text", "-k", "1")[0]["id"] == "b1"


def test_delete_and_refit(built, tmp_path):
    path, _ = built
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(path), str(copy)], check=True)
    result = run("delete", "doc-2", "--index", copy)
    assert result.exit_code == 0 and "deleted 1 documents; 23 left" in result.output
    assert "doc-2" not in {h["id"] for h in query_json(copy, "planets and stars", "-k", "23")}
    result = run("refit", "--index", copy, "--transform", "whiten", "--dims", "8")
    assert result.exit_code == 0, result.output
    assert "whiten, 8 dims" in result.output
    result = run("delete", "--where", "genre=sport", "--index", copy)
    assert "deleted 8 documents; 15 left" in result.output


# ---- bad input: one clear message, no traceback, nothing lost ----------------------------------------


def fails(result, *expected):
    """A clean failure: a non-zero exit through click (not an escaped exception), no traceback."""
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for text in expected:
        assert text in result.output, result.output


def bad_corpus(tmp_path, content: bytes, name="bad.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


GOOD = b'{"id": "new-1", "text": "fine"}\n'
BAD_LINES = {
    "not_json": (GOOD + b'{"id": "x", "text": \n', ["line 2", "not valid JSON"]),
    "not_object": (GOOD + b"[1, 2]\n", ["line 2", "object"]),
    "no_id": (GOOD + b'{"text": "no id"}\n', ["line 2", "field 'id or _id'"]),
    "no_text": (GOOD + b'{"id": "y"}\n', ["line 2", "field 'text'"]),
    "empty_text": (GOOD + b'{"id": "y", "text": "   "}\n', ["line 2", "field 'text'", "empty"]),
    "duplicate_id": (GOOD + b'{"id": "new-1", "text": "again"}\n', ["line 2", "field 'id'", "twice"]),
    "not_utf8": (GOOD + b'{"id": "y", "text": "caf\xe9"}\n', ["line 2", "UTF-8"]),
    "empty_corpus": (b"", ["empty"]),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_bad_corpus_lines(index, tmp_path, case):
    content, expected = BAD_LINES[case]
    path = bad_corpus(tmp_path, content)
    fails(run("ingest", path, "--index", index), "bad.jsonl", *expected)


def test_missing_and_unreadable_files(index, tmp_path):
    fails(run("ingest", tmp_path / "nowhere.jsonl", "--index", index), "nowhere.jsonl")
    fails(run("ingest", tmp_path, "--index", index), str(tmp_path))  # a directory, not a file
    # a file that opens but cannot be read (EIO on Linux, whoever runs the test)
    if Path("/proc/self/mem").exists():
        fails(run("ingest", "/proc/self/mem", "--index", index), "/proc/self/mem, line 1", "cannot read")
    locked = bad_corpus(tmp_path, GOOD, "locked.jsonl")
    locked.chmod(0)
    if os.access(locked, os.R_OK):
        pytest.skip("running as root: a mode-000 file is still readable")
    fails(run("ingest", locked, "--index", index), "locked.jsonl", "cannot read")


def test_bad_settings(index, tmp_path, tiny_bert):
    good = bad_corpus(tmp_path, GOOD, "good.jsonl")
    fails(run("ingest", good, "--index", index, "--model", tmp_path), "not a model directory")
    fails(run("ingest", good, "--index", tmp_path / "new", "--dims", "0"), "--dims", "at least 1")
    fails(run("ingest", good, "--index", tmp_path / "new", "--dims", "385"), "--dims 385", "384")
    fails(run("query", "x", "--index", index, "-k", "0"), "-k", "at least 1")
    fails(run("ingest", good, "--index", index, "--pooling", "cls"), "pooling mean, not cls")
    fails(
        run("ingest", good, "--index", index, "--model", tiny_bert), "was built with model all-MiniLM-L6-v2"
    )
    assert not (tmp_path / "new").exists()


def test_query_on_what_is_not_an_index(tmp_path):
    fails(run("query", "x", "--index", tmp_path), "is not a semsearch index")
    fails(run("query", "x", "--index", tmp_path / "absent"), "does not exist")


def test_errors_reach_a_real_terminal_without_traceback(index, tmp_path):
    path = bad_corpus(tmp_path, BAD_LINES["no_text"][0])
    result = subprocess.run(
        [sys.executable, "-m", "semsearch", "ingest", str(path), "--index", str(index)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"Error: {path}, line 2, field 'text': no text"
