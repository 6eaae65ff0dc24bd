"""Issue 30, nothing lost: every CORPUS read once whatever it is (a FIFO, a process substitution, a Unix socket),
the last line of an ingest counting what was read, added, replaced and refused, `--skip-invalid`, ids and keys
refused when no command could reach them again, a first ingest that leaves no index when interrupted, and a
delete that counts, tries out and asks. Real processes where the source or the crash needs one."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLE, command_here, copy_index, write_jsonl

from semsearch.cli import main
from semsearch.storage.faults import FAULT_ENV

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("no_loss")

SEMSEARCH = [sys.executable, "-m", "semsearch"]
DOCUMENTS = 60
SUMMARY = re.compile(
    r"read (\d+) documents, (\d+) refused: (\d+) documents added \((\d+) replaced, (\d+) unchanged"
)


def cli(*args, env=None, **options) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src"), **(env or {})}
    return subprocess.run(
        [*SEMSEARCH, *map(str, args)], capture_output=True, text=True, env=environment, timeout=300, **options
    )


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def summary(stderr: str) -> tuple[int, ...]:
    """(read, refused, added, replaced, unchanged) from the last line, which must be the summary."""
    found = SUMMARY.match(stderr.strip().splitlines()[-1])
    assert found, stderr
    return tuple(map(int, found.groups()))


def count(index: Path) -> int:
    from semsearch import Index

    with Index.open(index) as opened:
        return len(opened)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    lines = SAMPLE.read_text().splitlines()[:DOCUMENTS]
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- every source read once ---------------------------------------------------------------------------------


def test_a_fifo_is_ingested_whole(corpus, tmp_path):
    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(corpus.read_bytes()))
    writer.start()
    result = cli("ingest", fifo, "--index", tmp_path / "index")
    writer.join(10)
    assert result.returncode == 0, result.stderr
    assert summary(result.stderr) == (DOCUMENTS, 0, DOCUMENTS, 0, 0)
    assert count(tmp_path / "index") == DOCUMENTS


def test_a_process_substitution_is_ingested_whole(corpus, tmp_path):
    """`ingest <(cat corpus)` in bash: a /dev/fd/N pipe, read twice before (0 of 400 ingested, exit 0)."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    command = f'"{sys.executable}" -m semsearch ingest <(cat "{corpus}") --index "{tmp_path / "index"}"'
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=environment, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert summary(result.stderr) == (DOCUMENTS, 0, DOCUMENTS, 0, 0)
    assert count(tmp_path / "index") == DOCUMENTS


def test_a_unix_socket_is_ingested_whole(corpus, tmp_path):
    address = tmp_path / "corpus.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(address))
    server.listen(1)

    def send():
        connection, _ = server.accept()
        with connection:
            connection.sendall(corpus.read_bytes())

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    result = cli("ingest", address, "--index", tmp_path / "index")
    server.close()
    assert result.returncode == 0, result.stderr
    assert summary(result.stderr)[:3] == (DOCUMENTS, 0, DOCUMENTS)
    assert count(tmp_path / "index") == DOCUMENTS


# ---- --skip-invalid and what is refused at ingest -----------------------------------------------------------


BAD_LINES = [
    ({"id": "dotted", "text": "a key with a dot", "a.b": 1}, "field 'a.b': the metadata key 'a.b'"),
    ({"id": "nul\u0000id", "text": "an id with a NUL"}, "the id holds a control character (U+0000)"),
    ({"id": "tab\tid", "text": "an id with a tab"}, "control character (U+0009)"),
    ({"id": "no-text", "title": ""}, "field 'text': no text"),  # as Cranfield's two empty documents
    ({"id": "deep", "text": "deep", "x": json.loads("[" * 150 + "]" * 150)}, "nested deeper than 100 levels"),
    ({"id": "op", "text": "a key with an operator", "a<b": 1}, "'<' in a key cannot be written"),
]


def test_skip_invalid_reports_each_bad_line_and_ingests_the_rest(tmp_path):
    good = [{"id": f"g{n}", "text": f"a good document number {n}"} for n in range(20)]
    records = good[:10] + [record for record, _ in BAD_LINES] + good[10:]
    path = write_jsonl(tmp_path / "mixed.jsonl", records)
    with path.open("a") as handle:
        handle.write('{"id": "broken", "text": \n')  # not JSON
        handle.write("[" * 5000 + "]" * 5000 + "\n")  # deeper than Python's parser goes
    index = tmp_path / "index"

    refused = run("ingest", path, "--index", index)  # without the flag: the whole file, nothing made
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert f"{path}, line 11, field 'a.b'" in refused.stderr
    assert not index.exists() and not list(tmp_path.glob(".index*"))

    result = run("ingest", path, "--index", index, "--skip-invalid")
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == len(BAD_LINES) + 2
    for (_, reason), line, number in zip(BAD_LINES, skipped, range(11, 11 + len(BAD_LINES))):
        assert f"{path}, line {number}" in line and reason in line, line
    assert "not valid JSON" in skipped[-2] and "nested deeper" in skipped[-1]
    assert summary(result.stderr) == (28, 8, 20, 0, 0)
    assert count(index) == 20


def test_a_dotted_key_nested_is_reachable_by_where(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "n", "text": "nested field", "a": {"b": 1}}])
    ok = run("ingest", path, "--index", tmp_path / "index", "--transform", "none")
    assert ok.exit_code == 0, ok.output
    hits = run("query", "nested", "--where", "a.b=1", "--index", tmp_path / "index", "--json")
    assert [json.loads(line)["id"] for line in hits.stdout.splitlines()] == ["n"]


# ---- a first ingest is one step ----------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["creating", "encoded", "committed"])
def test_an_interrupted_first_ingest_leaves_no_index_and_resumes(corpus, tmp_path, step):
    index = tmp_path / "index"
    crashed = cli("ingest", corpus, "--index", index, env={FAULT_ENV: step})
    assert crashed.returncode == 86, crashed.stderr
    assert not index.exists()
    checked = run("check", "--index", index)
    assert checked.exit_code != 0 and "Traceback" not in checked.output
    assert "a first ingest into it was interrupted; run it again to resume" in checked.output
    again = command_here("ingest", corpus, "--index", index)  # the crash was a real process's
    assert again.returncode == 0, again.stderr
    assert summary(again.stderr)[0] == DOCUMENTS and count(index) == DOCUMENTS
    assert not (tmp_path / ".index.partial").exists()


def test_a_dangling_symlink_as_index_is_one_line(corpus, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    for args in (("ingest", corpus), ("query", "x"), ("info",), ("check",), ("delete", "x")):
        result = run(*args, "--index", link)
        assert result.exit_code in (1, 2) and isinstance(result.exception, SystemExit), (args, result.output)
        assert "Traceback" not in result.output and str(link) in result.output, (args, result.output)


# ---- delete counts, tries out and asks -----------------------------------------------------------------------


@pytest.fixture
def sample_copy(sample_encoded, tmp_path):
    return copy_index(sample_encoded, tmp_path / "index")


def test_delete_dry_run_counts_and_removes_nothing(sample_copy):
    result = run("delete", "--where", "kind=odd", "--dry-run", "--index", sample_copy)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("would delete 150 of 300 documents: ")
    assert count(sample_copy) == 300


def test_a_delete_of_everything_is_refused_without_yes_off_a_terminal(sample_copy):
    """`x=null` where no document has x matches all of them: refused, then done with --yes."""
    refused = run("delete", "--where", "year!=-1", "--index", sample_copy)
    assert refused.exit_code == 1 and "this delete removes every document" in refused.stderr
    assert "--yes" in refused.stderr and count(sample_copy) == 300
    large = run("delete", "--where", "year>2001", "--index", sample_copy)  # 270 of 300: over half and 100
    assert large.exit_code == 1 and "270 of 300 documents" in large.stderr and count(sample_copy) == 300
    small = run("delete", "--where", "year=2003", "--index", sample_copy)
    assert small.exit_code == 0 and "deleted 15 documents; 285 left" in small.stderr
    done = run("delete", "--where", "year!=-1", "--index", sample_copy, "--yes")
    assert done.exit_code == 0 and "deleted 285 documents; 0 left" in done.stderr


# ---- a full disk --------------------------------------------------------------------------------------------


def limited(size: int):
    """For a child process: files can grow to `size` bytes, and a write past it fails with EFBIG (SIGXFSZ,
    which would end the process, ignored), as on a disk that is full."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def answers(index: Path) -> tuple[int, list]:
    from semsearch import Index

    with Index.open(index) as opened:
        hits = [
            [(h.id, round(h.score, 4)) for h in opened.search(q, k=5)]
            for q in ("parse a date", "sort a list")
        ]
        return len(opened), hits


@pytest.mark.parametrize(
    "size, args",
    [
        (20_000, ("ingest", "{more}")),  # SQLite's first write
        (200_000, ("ingest", "{more}")),  # the generation's files
        (200_000, ("refit", "--transform", "pca", "--dims", "64")),
        (100_000, ("delete", "--where", "year=2003")),
    ],
    ids=["ingest-db", "ingest-generation", "refit", "delete"],
)
def test_a_full_disk_is_one_line_and_the_index_answers_as_before(sample_copy, tmp_path, size, args):
    lines = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:30]]
    more = write_jsonl(tmp_path / "more.jsonl", [{**doc, "id": f"new-{doc['id']}"} for doc in lines])
    before = answers(sample_copy)
    args = [str(more) if arg == "{more}" else arg for arg in args]
    full = cli(*args, "--index", sample_copy, preexec_fn=limited(size))
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
    errors = [line for line in full.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and re.search(r"no space left|disk I/O error", errors[0]), full.stderr
    assert answers(sample_copy) == before
    after = command_here("ingest", more, "--index", sample_copy)
    assert after.returncode == 0 and summary(after.stderr)[2] == 30, after.stderr


# ---- the server follows its index directory -----------------------------------------------------------------


def test_the_server_reopens_a_replaced_index_and_answers_503_while_there_is_none(sample_encoded, tmp_path):
    """A restore or a re-ingest moved into place replaces the directory: the server answers from the new one;
    while none is there, /health and /search answer 503, then recover."""
    httpx = pytest.importorskip("httpx")
    from test_server import ADMIN, running_server

    served = copy_index(sample_encoded, tmp_path / "index")
    other = tmp_path / "other"
    small = write_jsonl(
        tmp_path / "small.jsonl", [{"id": f"s{n}", "text": f"small corpus {n}"} for n in range(5)]
    )
    assert command_here("ingest", small, "--index", other, "-q").returncode == 0
    with running_server(served, api_key=ADMIN) as url, httpx.Client(base_url=url, timeout=60) as client:
        assert client.get("/search", params={"q": "parse a date"}).json()["hits"][0]["id"] != "s0"
        served.rename(tmp_path / "old")
        for path in ("/health", "/search?q=parse+a+date"):
            gone = client.get(path)
            assert gone.status_code == 503 and gone.json()["error"]["code"] == "index_unavailable", gone.text
        other.rename(served)  # a new index moved into place
        assert client.get("/health").status_code == 200
        hits = client.get("/search", params={"q": "small corpus", "k": 10}).json()["hits"]
        assert {hit["id"] for hit in hits} == {f"s{n}" for n in range(5)}
        assert client.get("/info").json()["documents"] == 5
        refused = client.delete(
            "/documents", params={"where": "id!=x"}, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "confirm_required"
        confirmed = client.delete(
            "/documents",
            params={"where": "id!=x", "confirm": "true"},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert confirmed.status_code == 200 and confirmed.json()["deleted"] == 5, confirmed.text


def test_a_repeated_id_after_skipped_lines_names_its_own_line(tmp_path):
    """--skip-invalid leaves a repeated id refusing the file (which of the two to keep is the user's call); its
    line numbers count the lines skipped before it."""
    from semsearch.errors import DataError
    from semsearch.ingest.documents import Corpus

    records = [{"id": "a", "text": "one"}, {"id": "b", "text": "two", "x.y": 1}, {"id": "a", "text": "again"}]
    with pytest.raises(DataError, match=r"line 3, field 'id': id 'a' appears twice \(first at line 1\)"):
        Corpus(write_jsonl(tmp_path / "c.jsonl", records), skip_invalid=True).check()


@pytest.mark.slow
def test_the_beir_style_cranfield_corpus_ingests_with_its_two_empty_documents_skipped(tmp_path):
    """Cranfield as BEIR exports it: two of its 1,400 documents have neither title nor text (ingested: those
    two among every 70th document, in file order; the whole file's ingest is in test_calibration's fixture)."""
    from conftest import shared_data

    from semsearch.evaluation.datasets import read_smart

    source = shared_data("cranfield", "cran.all.1400")
    records = [
        {"_id": doc_id, "title": fields.get("T", ""), "text": fields.get("W", "")}
        for doc_id, fields in read_smart(source)
    ]
    empty = [r["_id"] for r in records if not r["title"].strip() and not r["text"].strip()]
    assert len(records) == 1400 and len(empty) == 2
    records = [r for n, r in enumerate(records) if n % 70 == 0 or r["_id"] in empty]
    corpus = write_jsonl(tmp_path / "cranfield.jsonl", records)
    refused = command_here("ingest", corpus, "--index", tmp_path / "index", "-q")
    assert refused.returncode == 1 and "field 'text': empty text" in refused.stderr
    result = cli("ingest", corpus, "--index", tmp_path / "index", "--skip-invalid")
    assert result.returncode == 0, result.stderr
    assert summary(result.stderr) == (len(records), 2, len(records) - 2, 0, 0)
