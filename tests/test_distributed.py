"""Ingest on a Dask cluster (distributed.py) against ingest in this process: the same documents, pks, raw vectors
bit for bit, statistics and search results, and an ivf or pq index filled on the workers byte for byte the one
filled here. Real worker processes: a LocalCluster of two, its scheduler also reached by address on loopback
from CLI processes and other clients; a worker killed mid-task, a driver killed after a partition arrived, an address
where no scheduler answers, and Dask missing."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE, command_here

from semsearch import Index
from semsearch.encoding import sessions
from semsearch.retrieval import calibration
from semsearch.storage.faults import FAULT_ENV, FAULT_EXIT

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed (make install)")

from semsearch.ingest.distributed import ClusterError, DaskExecutor, InProcess  # noqa: E402
from semsearch.retrieval.vectorindex import VectorIndex  # noqa: E402

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("distributed")

DOCUMENTS = (
    120  # of the sample: every property here holds at any size, and each test encodes them once or twice
)
PARTITION = 40  # 3 partitions: both workers get some
QUERIES = ["parse a date from a string", "read a file line by line", "sort a list", "random numbers"]


def semsearch(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *map(str, args)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != FAULT_ENV} | (env or {}),
        timeout=timeout,
    )


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr
    return result


def contents(path: Path) -> dict:
    """Everything that must not depend on where an index was encoded."""
    with Index.open(path) as index:
        raw = np.concatenate([block for _, block in index.raw.blocks()])
        rows = index.store.get(list(range(index.state.next_pk)))
        stats = index.stats()
        return {
            "documents": {pk: (row["id"], row["text"]) for pk, row in rows.items()},
            "raw": raw,
            "stats": (stats.count, stats.mean, stats.comoment),
            "hits": [[(h.id, h.score, h.passage) for h in index.search(q, k=8)] for q in QUERIES],
            "passages": index.state.passages,
            "fidelity": index.state.quantize_fidelity,  # measured on a worker, on a cluster
        }


def assert_same(path: Path, reference: Path) -> None:
    got, want = contents(path), contents(reference)
    assert got["documents"] == want["documents"]  # same ids at the same pks, each once
    assert got["passages"] == want["passages"]
    assert got["raw"].tobytes() == want["raw"].tobytes()  # bit for bit
    assert got["stats"][0] == want["stats"][0]
    np.testing.assert_array_equal(got["stats"][1], want["stats"][1])
    np.testing.assert_array_equal(got["stats"][2], want["stats"][2])
    assert got["hits"] == want["hits"]
    assert got["fidelity"] == want["fidelity"] and got["fidelity"]["passages"] > 0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The sample's first DOCUMENTS documents."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(line + "\n" for line in SAMPLE.read_text().splitlines()[:DOCUMENTS]))
    return path


@pytest.fixture(scope="module")
def in_process(corpus, tmp_path_factory):
    """The corpus ingested here, in partitions of PARTITION documents."""
    path = tmp_path_factory.mktemp("in-process") / "index"
    with Index.create(path) as index:
        index.ingest(corpus, cluster=InProcess(PARTITION))
    return path


@pytest.fixture(scope="module")
def local_cluster():
    with DaskExecutor.local(2, partition_docs=PARTITION) as executor:
        yield executor


def test_a_local_cluster_gives_the_in_process_index(local_cluster, corpus, in_process, tmp_path):
    counted = []
    with Index.create(tmp_path / "index") as index:
        report = index.ingest(corpus, cluster=local_cluster, progress=counted.append)
    assert report.added == DOCUMENTS and report.resumed == 0
    assert sum(counted) == DOCUMENTS  # the progress bar counts documents across workers
    assert all(type(n) is int for n in counted), counted  # whole documents, as Progress says
    assert_same(tmp_path / "index", in_process)


def test_the_driver_loads_no_model_and_calibrates_as_here(local_cluster, corpus, tmp_path, monkeypatch):
    """Calibration's pseudo-queries and targets and the int8 fidelity check are encoded on the workers: the
    driver (this process) opens no ONNX session, and the figures are the ones measured here."""
    monkeypatch.setattr(calibration, "MIN_PASSAGES", 100)  # the corpus's ~260 passages are calibrated
    monkeypatch.setattr(calibration, "MIN_QUERIES", 20)
    monkeypatch.setattr(calibration, "QUERY_SHARE", 4)
    manifests = {}
    for where, executor in (("here", InProcess(PARTITION)), ("cluster", local_cluster)):
        sessions._SESSIONS.clear()  # the sessions other tests left in this process
        with Index.create(tmp_path / where) as index:
            index.ingest(corpus, cluster=executor)
            manifests[where] = index.state
        loaded = len(sessions._SESSIONS)
    assert loaded == 0, "the cluster's driver loaded a model"
    here, cluster = manifests["here"], manifests["cluster"]
    assert here.calibration is not None and here.calibration["queries"] >= 20
    drop_time = lambda calibrated: {k: v for k, v in calibrated.items() if k != "seconds"}  # noqa: E731
    assert drop_time(cluster.calibration) == drop_time(here.calibration)
    assert cluster.quantize_fidelity == here.quantize_fidelity


@pytest.mark.slow
def test_an_upsert_on_a_cluster_replaces_as_here(local_cluster, corpus, tmp_path):
    docs = [json.loads(line) for line in corpus.read_text().splitlines()]
    changed = tmp_path / "changed.jsonl"
    changed.write_text(
        "".join(json.dumps({**d, "text": d["text"] + " (revised)"}) + "\n" for d in docs[::15])
    )
    for name, cluster in (("here", InProcess(PARTITION)), ("cluster", local_cluster)):
        with Index.create(tmp_path / name) as index:
            index.ingest(corpus, cluster=cluster)
            report = index.ingest(changed, cluster=cluster)
            assert (report.added, report.replaced) == (8, 8)
    assert_same(tmp_path / "cluster", tmp_path / "here")


# ---- an ivf or pq index filled on the workers ----------------------------------------------------------------

DIM = 384
SHARD_INGESTS = (64, 64, 1200)  # documents per ingest; the index is young (build.young) until the last


def vector_corpora(directory: Path) -> list[tuple[Path, Path]]:
    """Vectors made elsewhere, around 40 centres, in ingests of SHARD_INGESTS documents. Each ingest of a young
    index fits and builds again over every row so far."""
    rng = np.random.default_rng(15)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    parts, first = [], 0
    for number, size in enumerate(SHARD_INGESTS):
        vectors = centres[rng.integers(0, len(centres), size)] + 0.7 * rng.standard_normal((size, DIM))
        np.save(directory / f"vectors-{number}.npy", vectors.astype(np.float32))
        (directory / f"corpus-{number}.jsonl").write_text(
            "".join(
                json.dumps({"id": f"d{i}", "text": f"document {i}"}) + "\n"
                for i in range(first, first + size)
            )
        )
        parts.append((directory / f"corpus-{number}.jsonl", directory / f"vectors-{number}.npy"))
        first += size
    return parts


@pytest.mark.parametrize("index_type", ["ivf", "pq"])
def test_an_ivf_or_pq_index_filled_on_the_workers_is_the_one_filled_here(
    local_cluster, tmp_path, index_type, monkeypatch
):
    """Trained here, each block added on a worker, the shards merged in order: the same FAISS index byte for
    byte, so the same ids and hits. Not compared: the tuned parameters, and on larger indexes the direct map
    saved with an ivf one: tuning chooses by timing, so two builds here may differ in them too (at this size it
    has no filtered levels and makes no direct map)."""
    from semsearch.ingest import build

    parts = vector_corpora(tmp_path)
    monkeypatch.setattr(build, "BLOCK_ROWS", 64)  # a build's blocks of live rows: several shards to merge
    with distributed.get_task_stream(client=local_cluster.client) as stream:
        for name, cluster in (("here", InProcess(PARTITION)), ("cluster", local_cluster)):
            with Index.create(tmp_path / name, model="none", dim=DIM, index_type=index_type) as index:
                for corpus, vectors in parts:
                    index.ingest(corpus, vectors=vectors, cluster=cluster)
    shards = [task for task in stream.data if str(task["key"]).startswith("semsearch-shard-")]
    rows = np.cumsum(SHARD_INGESTS)  # each ingest rebuilt from all its rows so far, a shard a block of 64
    assert len(shards) == sum(-(-int(count) // 64) for count in rows) == 1 + 2 + 21
    queries = np.load(parts[-1][1])[:20] + 0.3
    found = {}
    for name in ("here", "cluster"):
        with Index.open(tmp_path / name) as index:
            vectors = index.vectors
            assert vectors.kind == index_type and vectors.index.nlist > 10
            found[name] = {
                "file": (index.generation_dir / VectorIndex.FILE).read_bytes(),
                "bytes": vectors.to_bytes().tobytes(),
                "ids": vectors.ids(),
                "live": index.store.vector_pks(),
                "hits": vectors.search(index.transform.project(queries), 10, params={"nprobe": 4}),
            }
    here, cluster = found["here"], found["cluster"]
    assert cluster["file"] == here["file"] and cluster["bytes"] == here["bytes"]
    np.testing.assert_array_equal(cluster["ids"], here["ids"])
    np.testing.assert_array_equal(cluster["ids"], cluster["live"])
    assert cluster["hits"] == here["hits"] and all(len(hits) == 10 for hits in here["hits"])


def test_a_worker_killed_mid_task_is_replaced_and_every_document_lands_once(
    local_cluster, corpus, in_process, tmp_path
):
    client = local_cluster.client
    killed = []

    def kill_a_busy_worker(n):
        if killed:
            return
        busy = [address for address, keys in client.processing().items() if keys]
        if busy:
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    with Index.create(tmp_path / "index") as index:
        report = index.ingest(corpus, cluster=local_cluster, progress=kill_a_busy_worker)
    assert killed, "no worker was busy when the first progress arrived"
    assert report.added == DOCUMENTS
    assert_same(tmp_path / "index", in_process)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def test_an_unreachable_scheduler_is_a_clear_error_within_wait(tmp_path):
    port = free_port()
    started = time.perf_counter()
    result = semsearch(
        "ingest", SAMPLE, "--index", tmp_path / "index", "--cluster", f"tcp://127.0.0.1:{port}", "--wait", "2"
    )
    took = time.perf_counter() - started
    assert result.returncode != 0
    assert f"no Dask scheduler answered at tcp://127.0.0.1:{port} within 2 s" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "index").exists()  # nothing written
    assert took < 2 + 20, took  # the wait, plus starting Python and importing Dask on a busy machine
    with (
        Index.create(tmp_path / "api", wait=2) as index,
        pytest.raises(ClusterError, match="no Dask scheduler answered"),
    ):
        index.ingest(SAMPLE, cluster=f"tcp://127.0.0.1:{port}")


def test_without_dask_the_options_say_how_to_install_it(tmp_path):
    blocked = "import sys; sys.modules['distributed'] = None; from semsearch.cli import main; main()"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            blocked,
            "ingest",
            str(SAMPLE),
            "--index",
            str(tmp_path / "i"),
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "needs Dask: pip install 'semsearch[dask]'" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "i").exists()


def test_both_cluster_options_are_refused(tmp_path):
    result = command_here(
        "ingest", SAMPLE, "--index", tmp_path / "i", "--workers", "1", "--cluster", "tcp://x:1"
    )
    assert result.returncode == 2 and "--cluster or --workers, not both" in result.stderr


# ---- the cluster reached by address ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def scheduler(local_cluster):
    """The address of the LocalCluster's scheduler (its two worker processes, one thread each, on loopback),
    reached from other processes and clients by that address alone: one cluster for the module, whose idle
    scheduler and workers cost CPU for as long as they run."""
    local_cluster.client.wait_for_workers(2, timeout=60)  # a worker killed by an earlier test is back
    return local_cluster.client.scheduler.address


@pytest.fixture(scope="module")
def cli_reference(corpus, tmp_path_factory):
    """`semsearch ingest` of the corpus without a cluster (in this process: the index is the reference)."""
    path = tmp_path_factory.mktemp("cli-reference") / "index"
    ok(command_here("ingest", corpus, "--index", path, "--quiet"))
    return path


@pytest.mark.slow
def test_workers_reached_by_address_give_the_cli_index(scheduler, corpus, cli_reference, tmp_path):
    result = ok(semsearch("ingest", corpus, "--index", tmp_path / "index", "--cluster", scheduler))
    assert f"encoding on Dask at {scheduler} (2 workers, 2 threads)" in result.stderr
    assert f"{DOCUMENTS} documents added" in result.stderr
    assert_same(tmp_path / "index", cli_reference)


@pytest.mark.slow
def test_the_workers_at_an_address_share_partitions(scheduler, corpus, in_process, tmp_path):
    with DaskExecutor.connect(scheduler, 10, partition_docs=PARTITION) as executor:
        ran = executor.client.run(os.getpid)
        with Index.create(tmp_path / "index") as index:
            index.ingest(corpus, cluster=executor)
        assert len(ran) == 2
    assert_same(tmp_path / "index", in_process)


@pytest.mark.slow
def test_a_killed_driver_resumes_without_encoding_what_it_had_received(
    scheduler, corpus, cli_reference, tmp_path
):
    path = tmp_path / "index"
    killed = semsearch("ingest", corpus, "--index", path, "--cluster", scheduler, env={FAULT_ENV: "encoded"})
    assert killed.returncode == FAULT_EXIT, killed.stderr
    again = ok(semsearch("ingest", corpus, "--index", path, "--cluster", scheduler))
    with Index.open(cli_reference) as reference:  # every passage
        passages = reference.state.passages
    assert f"resumed: {passages} vectors from an interrupted ingest were reused" in again.stderr
    assert_same(path, cli_reference)
