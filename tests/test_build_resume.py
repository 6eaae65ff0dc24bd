"""A vector index build killed partway resumes (storage/buildcheckpoint.py): a first ingest of given vectors
into an ivf index, killed by a real process exit after its checkpoint of the rows filled so far, run again,
takes the trained and partly filled index up (it trains nothing: the `trained` fault point would end it) and
ends at the same index, byte for byte, with the same answers as an ingest never interrupted."""

import json
import shutil
import subprocess

import faiss
import numpy as np
from conftest import write_jsonl
from test_faults import semsearch

from semsearch import Index
from semsearch.ingest.first import partial_of
from semsearch.storage.buildcheckpoint import DIRECTORY
from semsearch.storage.faults import FAULT_EXIT
from semsearch.storage.rawvectors import BLOCK_ROWS

ROWS, DIM = 9_000, 16  # two raw blocks: a checkpoint after the first
STORED = 5_000  # three partitions of a first ingest (2048 documents each), with a resume point after each
OPTIONS = dict(model="none", index_type="ivf")


def ingest(corpus, vectors, index, fault: str) -> subprocess.CompletedProcess:
    args = ["ingest", corpus, "--vectors", vectors, "--index", index, "--quiet"]
    args += [f"--{name.replace('_', '-')}={value}" for name, value in OPTIONS.items()]
    # one thread: FAISS's k-means and adds sum in one order, so two builds can be compared byte for byte
    return semsearch(*args, fault=fault, OMP_NUM_THREADS="1")


def built(path, queries) -> tuple[bytes, list]:
    with Index.open(path) as index:
        answers = [[h.id for h in hits] for hits in index.search_vectors(queries, k=10, where=["group=3"])]
        return (index.generation_dir / "vectors.faiss").read_bytes(), answers


def test_a_killed_build_resumes_at_its_checkpoint_and_ends_at_the_same_index(tmp_path):
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((100, DIM))
    rows = (centres[rng.integers(0, 100, ROWS)] + 0.3 * rng.standard_normal((ROWS, DIM))).astype(np.float32)
    vectors = tmp_path / "vectors.npy"
    np.save(vectors, rows)
    docs = [{"id": f"d{i}", "text": f"row {i}", "group": i % 50} for i in range(ROWS)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)

    target = tmp_path / "resumed"
    killed = ingest(corpus, vectors, target, fault="filled")
    assert killed.returncode == FAULT_EXIT, killed.stderr
    record = json.loads((partial_of(target) / DIRECTORY / "checkpoint.json").read_text())
    assert (record["stage"], record["rows"]) == ("filled", BLOCK_ROWS)
    again = ingest(corpus, vectors, target, fault="trained")  # it would exit at once if it trained again
    assert again.returncode == 0, again.stderr
    assert not (target / DIRECTORY).exists()  # cleared once published

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        with Index.create(tmp_path / "whole", dim=DIM, **OPTIONS) as index:
            index.ingest(corpus, vectors=vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    whole, resumed = built(tmp_path / "whole", rows[::500]), built(target, rows[::500])
    assert resumed[0] == whole[0]  # the FAISS index, byte for byte
    assert resumed[1] == whole[1] and all(len(hits) == 10 for hits in resumed[1])


def resume_counts(target) -> dict:
    import sqlite3

    with sqlite3.connect(partial_of(target) / "documents.db") as db:
        rows = db.execute("SELECT key, value FROM state WHERE key LIKE 'resume%'").fetchall()
    return dict(rows)


def stored(path) -> list:
    import sqlite3

    with sqlite3.connect(path / "documents.db") as db:
        return [
            db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in ("documents", "fields", "meta")
        ]


def test_a_killed_first_ingest_resumes_after_its_last_resume_point_and_ends_at_the_same_index(tmp_path):
    """ingest/resume.py: the documents stored so far are committed at resume points (under a fault test, after
    every partition of 2048). Killed after its second point, run again: it stores from document 4096 on (the
    last 904 and its segment), trains and is killed; run again: it stores nothing, keeps that segment, and ends
    at the same store, statistics, raw segment and FAISS index as an ingest never interrupted. A corpus
    changed since a kill starts afresh."""
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((STORED, DIM)).astype(np.float32)
    vectors = tmp_path / "vectors.npy"
    np.save(vectors, rows)
    docs = [{"id": f"d{i}", "text": f"row {i} of {STORED}", "group": i % 50} for i in range(STORED)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    target = tmp_path / "resumed"

    assert ingest(corpus, vectors, target, fault="resume-point@2").returncode == FAULT_EXIT
    assert resume_counts(target)["resume_documents"] == 4096
    spool = partial_of(target) / "raw" / ".spool-000000000000-resumable"
    assert spool.stat().st_size == 4096 * DIM * 4
    at_second_point = shutil.copytree(partial_of(target), tmp_path / "at-second-point")
    # its first point is after all 5000 documents: one at 2048 would say it stored the first ones again
    assert ingest(corpus, vectors, target, fault="trained").returncode == FAULT_EXIT
    assert resume_counts(target)["resume_documents"] == STORED and not spool.exists()
    # a run of the release before took no point after its last documents: its spool became the segment of
    # all 5000 rows while its last point counted 4096
    legacy = tmp_path / "legacy"
    shutil.copytree(partial_of(target), partial_of(legacy))
    shutil.rmtree(partial_of(legacy) / ".resume")
    shutil.copytree(at_second_point / ".resume", partial_of(legacy) / ".resume")
    for store in partial_of(legacy).glob("documents.db*"):
        store.unlink()
    for store in at_second_point.glob("documents.db*"):
        shutil.copy2(store, partial_of(legacy) / store.name)
    finished = ingest(corpus, vectors, target, fault="resume-point")  # it would exit if it stored any
    assert finished.returncode == 0, finished.stderr
    assert not partial_of(target).exists() and not (target / ".resume").exists()
    resumed = ingest(corpus, vectors, legacy, fault="")  # the last 904 again, the segment's head kept
    assert resumed.returncode == 0, resumed.stderr

    whole = tmp_path / "whole"
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        with Index.create(whole, dim=DIM, **OPTIONS) as index:
            index.ingest(corpus, vectors=vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    for index in (target, legacy):
        assert stored(index) == stored(whole)
        for name in ("stats.safetensors", "vectors.faiss"):
            assert (index / "gen-000001" / name).read_bytes() == (whole / "gen-000001" / name).read_bytes()
        for segment in (whole / "raw").glob("seg-*"):
            assert (index / "raw" / segment.name).read_bytes() == segment.read_bytes()

    again = tmp_path / "again"
    assert ingest(corpus, vectors, again, fault="resume-point@2").returncode == FAULT_EXIT
    cut = partial_of(again) / "raw" / ".spool-000000000000-resumable"
    with open(cut, "r+b") as spool:  # a spool shorter than its point: the rows it lost cannot be made up
        spool.truncate(4095 * DIM * 4)
    refused = ingest(corpus, vectors, again, fault="")
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        f"Error: {cut}: the raw vectors of the last resume point are {4095 * DIM * 4:,} bytes, "
        f"{4096 * DIM * 4:,} needed; the partial ingest is removed, run the ingest again to start afresh"
    ]
    assert not partial_of(again).exists() and not again.exists()
    write_jsonl(corpus, docs[:-1] + [{**docs[-1], "text": "changed"}])  # a corpus changed since
    assert ingest(corpus, vectors, again, fault="resume-point@1").returncode == FAULT_EXIT
    assert resume_counts(again)["resume_documents"] == 2048  # started afresh


def test_a_first_ingest_of_given_vectors_checks_its_lines_as_it_stores_them(tmp_path):
    """Corpus.checked_as_stored: no read of its own, yet a repeated id (in a later partition, or the same one)
    and a line refused near the end are one-line errors naming the line, and leave no index behind."""
    from click.testing import CliRunner

    from semsearch.cli import main

    rows = np.random.default_rng(3).standard_normal((2100, DIM)).astype(np.float32)
    vectors = tmp_path / "vectors.npy"
    np.save(vectors, rows)
    docs = [{"id": f"d{i}", "text": f"row {i}"} for i in range(2100)]
    cases = {
        "far": ({2060: {"id": "d7", "text": "again"}}, "line 2061, field 'id': id 'd7' appears twice (first at line 8)"),
        "near": ({2061: {"id": "d2060", "text": "again"}}, "line 2062, field 'id': id 'd2060' appears twice (first at line 2061)"),
        "bad": ({2090: {"id": "x", "text": 5}}, "line 2091, field 'text': the text must be a string, got int"),
    }  # fmt: skip
    for name, (changes, message) in cases.items():
        corpus = write_jsonl(tmp_path / f"{name}.jsonl", [changes.get(i, doc) for i, doc in enumerate(docs)])
        target = tmp_path / name
        arguments = ["ingest", str(corpus), "--vectors", str(vectors), "--index", str(target), "--quiet"]
        refused = CliRunner().invoke(main, arguments)
        assert refused.exit_code == 1 and refused.output.strip().splitlines() == [
            f"Error: {corpus}, {message}"
        ]
        assert not target.exists() and not partial_of(target).exists()
