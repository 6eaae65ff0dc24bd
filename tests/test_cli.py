"""The command line on the real model, FAISS and SQLite: happy paths, and every bad input, each failing with
one clear message (file, line, field where there is one), a non-zero exit, no traceback, and an existing index
left exactly as it was.

One small index (30 short documents, the index defaults) is built per module and shared; tests that write
work on a copy of it."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import write_jsonl

from semsearch.cli import main

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("cli")

GENRES = ["news", "sport", "science"]
STORIES = [
    ("Viking raid", "Raiders from the north sacked the monastery on the island."),
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
    ("Bridge reopens", "The old bridge reopened to traffic after two years of repairs."),
    ("Swimming gold", "She won gold in the 200 metres freestyle at the championships."),
    ("Bee decline", "Wild bee populations are shrinking as meadows disappear."),
    ("Museum opens", "A new museum of modern art opened in the city centre."),
    ("Ski jump", "The ski jumper landed a record leap on the final day."),
    ("Volcano", "The volcano erupted, sending ash high into the sky."),
]
# year 800 for the first: as a string "800" >= "2000", so only a numeric comparison leaves it out.
DOCS = [
    {
        "id": f"doc-{i}",
        "title": title,
        "text": text,
        "genre": GENRES[i % 3],
        "year": 800 if i == 0 else 1985 + i,
        "metadata": {"source": f"feed-{i % 2}"},
    }
    for i, (title, text) in enumerate(STORIES)
]
QUERY = "who won the football match"
GOOD = b'{"id": "new-1", "text": "a fine new document"}\n'


def run(*args, **kwargs):
    return CliRunner().invoke(main, [str(a) for a in args], **kwargs)


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def query_json(index, *args):
    result = ok(run("query", *args, *(["--index", index] if index else []), "--json"))
    return [json.loads(line) for line in result.stdout.splitlines()]


def info_json(index=None):
    return json.loads(ok(run("info", *(["--index", index] if index else []), "--json")).stdout)


def state(index: Path) -> dict:
    """Everything observable of an index: every file's bytes, the mtimes of the manifest and the document
    store, the generation, `info --json`, and the results of a query. An index 'exactly as it was' has the
    same state."""
    files = {
        str(p.relative_to(index)): p.read_bytes()
        for p in sorted(index.rglob("*"))
        # the writer lock names its last holder; SQLite's shared-memory file holds no data
        if p.is_file() and p.name != "writer.lock" and not p.name.endswith("-shm")
    }
    return {
        "files": files,
        "mtimes": {name: (index / name).stat().st_mtime_ns for name in ("manifest.json", "documents.db")},
        "generation": json.loads((index / "manifest.json").read_text())["generation"],
        "info": info_json(index),
        "hits": query_json(index, QUERY, "-k", "5"),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(index path, corpus path, ingest result, state) of the shared index, made with the defaults."""
    root = tmp_path_factory.mktemp("cli")
    corpus = write_jsonl(root / "corpus.jsonl", DOCS)
    index = root / "index"
    result = ok(run("ingest", corpus, "--index", index))
    return index, corpus, result, state(index)


@pytest.fixture
def index(built):
    """The shared index, checked exactly as it was after the test."""
    path, _, _, before = built
    yield path
    assert state(path) == before


def copy_of(built, target: Path) -> Path:
    shutil.copytree(built[0], target, ignore=shutil.ignore_patterns("writer.lock"))
    return target


def fails(result, message: str | re.Pattern, exit_code: int = 1) -> None:
    """A clean failure: the exit code, handled by click (not an escaped exception), no traceback, nothing
    on stdout, and exactly one error line, which is `message` (or matches it, a compiled pattern)."""
    assert result.exit_code == exit_code, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, result.stderr
    if isinstance(message, re.Pattern):
        assert message.fullmatch(errors[0][len("Error: ") :]), result.stderr
    else:
        assert errors == [f"Error: {message}"], result.stderr


def usage_fails(result, message: str) -> None:
    """A bad option value: click's usage error (exit 2) with our one-line explanation."""
    fails(result, message, exit_code=2)
    assert result.stderr.startswith("Usage: ")


# ---- happy paths -----------------------------------------------------------------------------------------


def test_ingest_summary(built):
    _, _, result, before = built
    assert re.search(r"30 documents added \(0 replaced, 0 unchanged\) to .* in [\d.]+ s", result.stderr)
    assert result.stdout == ""
    assert before["info"]["documents"] == 30 and before["generation"] >= 1


def test_query_prints_a_readable_ranked_list(index):
    result = ok(run("query", QUERY, "--index", index, "-k", "3"))
    lines = result.stdout.splitlines()
    ranked = [re.match(r"^\s+(\d+)\. \[(-?\d\.\d{3})\] (\S+)  (.+)$", line) for line in lines[0::3]]
    assert [m.group(1) for m in ranked] == ["1", "2", "3"], result.stdout
    scores = [float(m.group(2)) for m in ranked]
    assert scores == sorted(scores, reverse=True)
    top = next(d for d in DOCS if d["id"] == ranked[0].group(3))
    assert top["genre"] == "sport" and ranked[0].group(4).startswith(f"{top['title']}: {top['text'][:20]}")
    # its snippet below it (piped: plain text), then its metadata (the nested `metadata` object's fields
    # flattened into it)
    assert lines[1].strip() in " ".join(top["text"].split())
    shown = set(lines[2].strip().split(", "))
    assert shown == {"genre=sport", f"year={top['year']}", f"source={top['metadata']['source']}"}
    assert len(lines) == 9


def test_query_json_one_object_per_line(index):
    hits = query_json(index, "planets and stars", "-k", "5")
    assert len(hits) == 5
    for hit in hits:
        assert set(hit) == {
            "id",
            "score",
            "title",
            "metadata",
            "passage",
            "scores",
            "snippet",
            "location",
            "text",
        }
        assert isinstance(hit["metadata"], dict) and set(hit["metadata"]) == {"genre", "year", "source"}
        assert isinstance(hit["score"], float) and isinstance(hit["passage"]["text"], str)
    assert hits[0]["id"] == "doc-2" and hits[0]["title"] == "New exoplanet"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_where_returns_exactly_k_matching(index):
    hits = query_json(index, "planets and stars", "-k", "4", "--where", "genre=news")
    assert len(hits) == 4 and {h["metadata"]["genre"] for h in hits} == {"news"}
    # more asked than match: every match, and only those
    hits = query_json(index, "planets and stars", "-k", "30", "--where", "genre=news")
    assert sorted(h["id"] for h in hits) == sorted(d["id"] for d in DOCS if d["genre"] == "news")
    # a field of the nested metadata object
    hits = query_json(index, "sport", "-k", "30", "--where", "source=feed-1")
    assert {h["id"] for h in hits} == {f"doc-{i}" for i in range(1, 30, 2)}


def test_where_compares_numbers_as_numbers(index):
    hits = query_json(index, "sport", "-k", "5", "--where", "year>=2000")
    assert len(hits) == 5 and all(h["metadata"]["year"] >= 2000 for h in hits)
    hits = query_json(index, "sport", "-k", "30", "--where", "year>=2000")
    assert {h["id"] for h in hits} == {d["id"] for d in DOCS if d["year"] >= 2000}  # not doc-0, year 800
    assert [h["id"] for h in query_json(index, "sport", "-k", "30", "--where", "year<1000")] == ["doc-0"]
    hits = query_json(index, "x", "-k", "30", "--where", "genre=news", "--where", "year>=2000")
    assert sorted(h["id"] for h in hits) == ["doc-15", "doc-18", "doc-21", "doc-24", "doc-27"]


def test_info_text(index):
    result = ok(run("info", "--index", index))
    fields = dict(line.strip().split(": ", 1) for line in result.stdout.splitlines())
    assert fields["documents"] == "30" and fields["model_name"] == "all-MiniLM-L6-v2"
    assert (fields["pooling"], fields["transform"], fields["power"]) == ("mean", "whiten", "0.5")
    assert (fields["dims_requested"], fields["rerank"], fields["index_type"]) == ("128", "100", "auto")
    assert re.fullmatch(r"documents [\d.]+ [KM]?B, raw_vectors .*, total [\d.]+ [KM]?B", fields["bytes"])
    assert fields["created"][:2] == "20" and fields["updated"] >= fields["created"]


def test_info_json(index, built):
    details = info_json(index)
    assert details["path"] == str(index) and details["documents"] == 30
    assert details["model"] == "bundled:all-MiniLM-L6-v2" and details["model_name"] == "all-MiniLM-L6-v2"
    assert details["pooling"] == "mean" and details["encoder_dim"] == 384
    # the defaults: whitening with power 0.5 keeping up to 128 dims (30 documents span 29), rerank 100
    assert (details["transform"], details["power"], details["dims_requested"]) == ("whiten", 0.5, 128)
    assert 1 <= details["dims"] <= 29 and details["rerank"] == 100
    assert (details["index_type"], details["index_structure"]) == ("auto", "Flat")
    assert (details["backend"], details["quantize"]) == ("onnx", "int8")  # the defaults
    # what int8 changed, measured on the first documents' passages against the fp32 model (every one of 30
    # short documents' passages: fewer than the sample's 32)
    fidelity = details["quantize_fidelity"]
    assert 30 <= fidelity["passages"] <= 32 and 0.97 < fidelity["min_cosine"] <= fidelity["mean_cosine"] < 1
    sizes = details["bytes"]
    assert set(sizes) == {"documents", "raw_vectors", "vector_index", "transform", "other", "total"}
    # the parts add up to every file under the directory, counted here by walking it (but SQLite's shared
    # memory of open connections, gone with the last)
    files = [path for path in Path(index).rglob("*") if path.is_file() and not path.name.endswith("-shm")]
    on_disk = sum(path.stat().st_size for path in files)
    assert sizes["total"] == sum(v for k, v in sizes.items() if k != "total") == on_disk
    # raw vectors in int4 (the default): half a byte a dimension and a float32 scale a row, with .npy headers
    passages = details["passages"]
    assert passages * (192 + 4) < sizes["raw_vectors"] < passages * (192 + 4) + 1024
    per_passage = details["bytes_per_passage"]
    assert per_passage["total"] == round(on_disk / passages) and set(per_passage) == set(sizes)
    assert details["created"] <= details["updated"] and details["created"].startswith("20")


def test_ingesting_the_same_corpus_again_changes_nothing(index, built):
    result = ok(run("ingest", built[1], "--index", index))
    assert "0 documents added (0 replaced, 30 unchanged)" in result.stderr


def test_index_from_environment(index, built, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEMSEARCH_INDEX", str(index))
    assert info_json()["path"] == str(index)
    assert query_json(None, QUERY, "-k", "5") == built[3]["hits"]
    assert not (tmp_path / "indexes").exists()


def test_default_index_under_the_current_directory(built, tmp_path, monkeypatch):
    monkeypatch.delenv("SEMSEARCH_INDEX", raising=False)
    monkeypatch.chdir(tmp_path)
    fails(run("info"), f"{Path('indexes') / 'default'} does not exist")
    copy_of(built, tmp_path / "indexes" / "default")
    details = info_json()
    assert details["path"] == str(Path("indexes") / "default") and details["documents"] == 30
    assert query_json(None, QUERY, "-k", "5") == built[3]["hits"]


def test_field_renames(tmp_path):
    records = [{"key": "r1", "body": "A violin concerto in D major.", "heading": "Music", "lang": "en"}] + [
        {"key": f"r{i}", "body": f"Weather report number {i}: rain later."} for i in range(2, 5)
    ]
    corpus = write_jsonl(tmp_path / "renamed.jsonl", records)
    index = tmp_path / "renamed"
    args = ["--id-field", "key", "--text-field", "body", "--title-field", "heading", "--transform", "none"]
    assert ok(run("ingest", corpus, "--index", index, *args, "-q")).stderr == ""
    top = query_json(index, "classical music", "-k", "1")[0]
    assert top == {**top, "id": "r1", "title": "Music", "text": "A violin concerto in D major."}
    assert top["passage"]["text"] == "A violin concerto in D major."
    assert top["metadata"] == {"lang": "en"}  # the renamed fields are not metadata
    # the default field names do not apply once renamed
    fails(
        run("ingest", corpus, "--index", tmp_path / "other", "--id-field", "key"),
        f"{corpus}, line 1, field 'text': no text",
    )


@pytest.fixture(scope="module")
def beir_index(tmp_path_factory):
    """A BEIR corpus.jsonl as BEIR ships it (`_id`, `title`, `text`, extra fields), ingested as is."""
    root = tmp_path_factory.mktemp("beir")
    records = [
        {"_id": "4983", "title": "Microstructural development", "text": "Brain white matter in infants."},
        {"_id": "5836", "title": "", "text": "Induction of myelodysplasia by mutations.", "year": 2005},
        {"_id": "7912", "title": "Old", "text": "An old paper on stars, its year a string.", "year": "1995"},
    ]
    corpus = write_jsonl(root / "corpus.jsonl", records)
    result = ok(run("ingest", corpus, "--index", root / "index", "--transform", "none"))
    return root / "index", result


def test_beir_corpus_ingests_as_is(beir_index):
    index, result = beir_index
    assert "3 documents added" in result.stderr
    hits = query_json(index, "development of the infant brain", "-k", "3")
    assert hits[0]["id"] == "4983" and hits[0]["title"] == "Microstructural development"
    assert {h["id"] for h in hits} == {"4983", "5836", "7912"}
    assert next(h for h in hits if h["id"] == "5836")["title"] is None  # an empty title is no title


def test_numeric_where_on_string_values(beir_index):
    index, _ = beir_index
    hits = query_json(index, "stars", "-k", "3", "--where", "year>=2000")
    assert [h["id"] for h in hits] == ["5836"]


def test_python_dash_m_help():
    result = subprocess.run([sys.executable, "-m", "semsearch", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Usage: semsearch [OPTIONS] COMMAND")
    for command in ("ingest", "query", "info", "delete", "refit"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.M), command


def test_delete(built, tmp_path):
    copy = copy_of(built, tmp_path / "copy")
    assert "deleted 1 documents; 29 left" in ok(run("delete", "doc-2", "--index", copy)).stderr
    hits = query_json(copy, "planets and stars", "-k", "30")
    assert len(hits) == 29 and "doc-2" not in {h["id"] for h in hits}
    result = ok(run("delete", "--where", "genre=sport", "--index", copy))
    assert "deleted 10 documents; 19 left" in result.stderr
    assert info_json(copy)["documents"] == 19
    assert {h["metadata"]["genre"] for h in query_json(copy, "sport", "-k", "30")} == {"news", "science"}
    fails(run("delete", "doc-2", "--index", copy), f"no document with id 'doc-2' in {copy}")
    usage_fails(run("delete", "--index", copy), "name at least one ID or a --where filter")


def test_refit(built, tmp_path):
    copy = copy_of(built, tmp_path / "copy")
    result = ok(run("refit", "--index", copy, "--transform", "pca", "--dims", "8"))
    assert re.search(r"refitted .*: pca, 8 dims, 30 documents in [\d.]+ s", result.stderr)
    details = info_json(copy)
    assert (details["transform"], details["dims"], details["documents"]) == ("pca", 8, 30)
    assert json.loads((copy / "manifest.json").read_text())["generation"] == built[3]["generation"] + 1
    assert len(query_json(copy, QUERY, "-k", "5")) == 5
    ok(run("refit", "--index", copy, "--transform", "whiten", "--dims", "all"))
    assert info_json(copy)["transform"] == "whiten"


# ---- bad input: one clear message, no traceback, the index as it was ------------------------------------


def corpus_file(tmp_path, content: bytes, name="bad.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_missing_file(index, tmp_path):
    path = tmp_path / "nowhere.jsonl"
    fails(run("ingest", path, "--index", index), f"{path}: cannot read: No such file or directory")
    fails(run("ingest", path, "--index", tmp_path / "new"), f"{path}: cannot read: No such file or directory")
    assert not (tmp_path / "new").exists()


def test_unreadable_file(index, tmp_path):
    path = corpus_file(tmp_path, GOOD, "locked.jsonl")
    path.chmod(0)
    if os.access(path, os.R_OK):
        pytest.skip("a mode-000 file is still readable here (running as root)")
    fails(run("ingest", path, "--index", index), f"{path}: cannot read: Permission denied")


def test_file_that_fails_while_read(index):
    """Opens, then every read fails (EIO), whoever runs the test: the error names the line it stopped at."""
    if not Path("/proc/self/mem").exists():
        pytest.skip("no /proc/self/mem here")
    fails(
        run("ingest", "/proc/self/mem", "--index", index),
        "/proc/self/mem, line 1: cannot read: Input/output error",
    )


def test_corpus_that_is_an_empty_directory(index, tmp_path):
    (tmp_path / "empty").mkdir()
    fails(run("ingest", tmp_path / "empty", "--index", index), f"{tmp_path / 'empty'}: no documents")


BAD_CORPORA = {
    # name: (file content, the message after "PATH")
    # a record cut short (the column is left open: see test_json_error_column_points_into_the_line)
    "not_json": (
        GOOD + b'{"id": "x", "text": "cut short"\n',
        ", line 2: not valid JSON (Expecting ',' delimiter at column *)",
    ),
    "not_json_mid_line": (
        GOOD + b'{"id": "x" "text": "y"}\n',
        ", line 2: not valid JSON (Expecting ',' delimiter at column 12)",
    ),
    "not_an_object": (GOOD + b"[1, 2]\n", ", line 2: expected a JSON object, got list"),
    "no_id": (GOOD + b'{"text": "no id"}\n', ", line 2, field 'id or _id': no id"),
    "no_text": (GOOD + b'{"id": "y"}\n', ", line 2, field 'text': no text"),
    "empty_text": (GOOD + b'{"id": "y", "text": "  "}\n', ", line 2, field 'text': empty text"),
    "same_id_twice": (
        GOOD + b"\n" + b'{"id": "new-1", "text": "again"}\n',
        ", line 3, field 'id': id 'new-1' appears twice (first at line 1)",
    ),
    "not_utf8": (
        GOOD + b'{"id": "y", "text": "caf\xe9"}\n',
        ", line 2: bytes that are not UTF-8 at column 25",
    ),
    "empty_file": (b"", ": no documents"),
    "blank_lines_only": (b"\n  \n", ": no documents"),
}


@pytest.mark.parametrize("case", list(BAD_CORPORA))
def test_bad_corpus(index, tmp_path, case):
    content, message = BAD_CORPORA[case]
    path = corpus_file(tmp_path, content)
    expected = re.compile(re.escape(f"{path}{message}").replace(r"\*", r"\d+"))
    fails(run("ingest", path, "--index", index), expected)
    # validated before an index is made: no directory is left behind
    fails(run("ingest", path, "--index", tmp_path / "new"), expected)
    assert not (tmp_path / "new").exists()


def test_json_error_column_points_into_the_line(tmp_path):
    path = corpus_file(tmp_path, b'{"id": "x", "text": "cut short"\n')
    fails(
        run("ingest", path, "--index", tmp_path / "new"),
        f"{path}, line 1: not valid JSON (Expecting ',' delimiter at column 32)",
    )


def test_model_that_is_not_a_model(index, tmp_path):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    folder = tmp_path / "folder"
    folder.mkdir()
    message = f"--model {folder}: not a model directory (no config.json)"
    fails(run("ingest", good, "--index", index, "--model", folder), message)
    fails(run("ingest", good, "--index", tmp_path / "new", "--model", folder), message)
    assert not (tmp_path / "new").exists()


def test_model_with_broken_weights(tmp_path):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    model = tmp_path / "half-downloaded"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "bert", "hidden_size": 32}')
    (model / "model.safetensors").write_bytes(b"")
    result = run("ingest", good, "--index", tmp_path / "new", "--model", model)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1 and not (tmp_path / "new").exists()


def test_dims_zero(index, tmp_path):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    for target in (index, tmp_path / "new"):
        usage_fails(
            run("ingest", good, "--index", target, "--dims", "0"),
            "Invalid value for --dims: must be at least 1, got 0",
        )
    usage_fails(
        run("refit", "--index", index, "--dims", "0"),
        "Invalid value for '--dims': '0' is not a positive integer or 'all'",
    )
    assert not (tmp_path / "new").exists()


def test_dims_larger_than_the_model(index, tmp_path):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    fails(
        run("ingest", good, "--index", tmp_path / "new", "--dims", "385"),
        "--dims 385 is larger than the model's dimension 384",
    )
    assert not (tmp_path / "new").exists()
    fails(
        run("ingest", good, "--index", index, "--dims", "385"),
        f"{index} has dims 128 (asked 385): change it with `semsearch refit`, or use another index directory",
    )
    fails(
        run("refit", "--index", index, "--dims", "385"), "--dims 385 is larger than the model's dimension 384"
    )


def test_k_zero(index):
    usage_fails(
        run("query", QUERY, "--index", index, "-k", "0"), "Invalid value for -k: must be at least 1, got 0"
    )
    usage_fails(
        run("query", QUERY, "--index", index, "-k", "-3"), "Invalid value for -k: must be at least 1, got -3"
    )


def test_empty_query(index):
    for text in ("", "   "):
        fails(run("query", text, "--index", index), "the query text is empty")


def test_byte_order_mark_is_not_part_of_the_first_line(tmp_path):
    path = corpus_file(tmp_path, b"\xef\xbb\xbf" + GOOD, "bom.jsonl")
    ok(run("ingest", path, "--index", tmp_path / "new", "--transform", "none", "--quiet"))
    assert [h["id"] for h in query_json(tmp_path / "new", "a new document")] == ["new-1"]


def test_query_on_what_is_not_an_index(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    fails(run("query", "x", "--index", empty), f"{empty} is not a semsearch index (no manifest.json)")
    fails(run("info", "--index", tmp_path), f"{tmp_path} is not a semsearch index (no manifest.json)")
    fails(run("query", "x", "--index", tmp_path / "absent"), f"{tmp_path / 'absent'} does not exist")
    afile = corpus_file(tmp_path, GOOD, "a-file")
    usage_fails(
        run("query", "x", "--index", afile), f"Invalid value for '--index': Directory '{afile}' is a file."
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "empty"]


def test_ingest_into_a_directory_that_is_not_an_index(tmp_path):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    fails(run("ingest", good, "--index", tmp_path), f"{tmp_path} exists and is not an empty directory")
    assert [p.name for p in tmp_path.iterdir()] == ["good.jsonl"]


def test_ingest_with_another_pooling(index, tmp_path):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    fails(
        run("ingest", good, "--index", index, "--pooling", "cls"),
        f"{index} was built with pooling mean, not cls: use another index directory",
    )


def test_ingest_with_another_model(index, tmp_path, tiny_bert):
    good = corpus_file(tmp_path, GOOD, "good.jsonl")
    fails(
        run("ingest", good, "--index", index, "--model", tiny_bert),
        f"{index} was built with model all-MiniLM-L6-v2 (bundled:all-MiniLM-L6-v2), not {tiny_bert}: "
        "use another index directory, or the same model",
    )


def semsearch(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_a_real_process_prints_one_line_and_no_traceback(index, tmp_path):
    path = corpus_file(tmp_path, GOOD + b'{"id": "y"}\n')
    result = semsearch("ingest", path, "--index", index)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"Error: {path}, line 2, field 'text': no text\n"
    result = semsearch("query", "x", "--index", tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"Error: {tmp_path} is not a semsearch index (no manifest.json)\n"


def test_help_info_and_argument_errors_do_not_import_torch(index):
    """The CLI starts fast: only commands that encode (or train a flow) load torch."""
    script = (
        "import sys\n"
        "from semsearch.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:], prog_name='semsearch')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    for args in (
        ["--help"],
        ["info", "--index", str(index)],
        ["query", "x", "--index", str(index), "-k", "0"],
    ):
        result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
        assert result.stdout.strip().splitlines()[-1] == "[]", (args, result.stdout, result.stderr)


def test_index_type_option(built, tmp_path):
    corpus = built[1]
    target = tmp_path / "hnsw"
    ok(run("ingest", corpus, "--index", target, "--index-type", "hnsw", "--quiet"))
    details = info_json(target)
    assert (details["index_type"], details["index_structure"]) == ("hnsw", "HNSW32,Flat")
    assert len(query_json(target, QUERY, "-k", "5", "--where", "genre=sport")) == 5
    fails(
        run("ingest", corpus, "--index", target, "--index-type", "flat"),
        f"{target} has index_type hnsw (asked flat): change it with `semsearch refit`, or use another index directory",
    )
    fails(
        run("refit", "--index", target, "--index-type", "pq"),
        "a pq index trains its codes on at least 64 documents, and there are 30: use --index-type flat (or "
        "auto) until the corpus is larger",
    )
    ok(run("refit", "--index", target, "--index-type", "ivf"))
    assert info_json(target)["index_structure"] == "IVF1,Flat nprobe=1"


def test_mcp_without_its_extra_says_what_to_install(monkeypatch, tmp_path):
    import sys

    from click.testing import CliRunner

    from semsearch.cli import main

    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the mcp extra were not installed
    result = CliRunner().invoke(main, ["mcp", "--index", str(tmp_path)])
    assert result.exit_code == 1 and "pip install 'semsearch[mcp]'" in result.output
