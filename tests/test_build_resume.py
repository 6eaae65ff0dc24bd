"""A vector index build killed partway resumes (storage/buildcheckpoint.py): a first ingest of given vectors
into an ivf index, killed by a real process exit after its checkpoint of the rows filled so far, run again,
takes the trained and partly filled index up (it trains nothing: the `trained` fault point would end it) and
ends at the same index, byte for byte, with the same answers as an ingest never interrupted."""

import json
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
