"""Ten million passages on this machine: ingest of given vectors with keyword search and filters,
measured as whole processes and written to benchmarks/results/ten-million.md and ten-million.json.

    python -m benchmarks ten_million [--rows 10000000] [--stages encode,generate,ingest,query,sweep]
                                               [--work DIR] [--noise-share 0.5] [--index-type pq]

Every stage is resumable: it keeps its output in --work and a stage whose output is there is skipped, so a
killed run started again goes on where it stopped (delete --work, or a stage's files, to measure again).

- encode: the 117,791 WordNet glosses with the default model (the one benchmark preparation that encodes;
  SEMSEARCH_ENCODING_CACHE may serve it), their vectors kept as the real corpus.
- generate: ROWS synthetic vectors (+ QUERIES held back) drawn from the real vectors: x = mu + a (v - mu) + e,
  v a real vector drawn uniformly, e ~ N(0, s Sigma) with s the noise share and a = sqrt(1 - s), so that
  E[x] = mu and Cov[x] = (1 - s) Sigma + s Sigma = Sigma: the real corpus's mean and covariance, with clusters
  around each real vector (s = 1: the Gaussian worst case of scale.py's million). The moments of the set
  written are measured against the corpus's. Each row's text is its source's WordNet title (head words), with a
  `group` field 0-49 (group 0 is the 2% filter).
- ingest: `semsearch ingest --vectors` into a new index, one whole process: wall time, its own peak RSS and an
  RSS timeline sampled every second beside the stage each log line names; disk by part.
- query: dense p50 and recall@10 against exact search (every row scored in the index's space) on the held-back
  queries, hybrid p50, and a 2% filter's p50 and recall@10 against exact search over the filtered rows.
- sweep: dense search at other nprobe and k_factor than tuned (the same at every depth), recall and p50.
- lists: per kind of query (held back, given for tuning, tuning's rule), how many lists hold its exact 10 best.
The results so far are at 1M (docs/performance.md says why not 10M yet): run with --rows 1000000 --noise-share
0.5 --work DIR.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import LAUNCHER, OUT, PYTHON, WORDNET, Rows, command_line, require, write_sections

CLAIM = "Ten million passages on this machine: ingest of given vectors with keyword search and filters, query times"

QUERIES = 500  # held back: generated like the rows, never ingested
TUNING_QUERIES = 500  # drawn alike from a seed of their own, for tuning (`ingest --tuning-queries`)
TUNING_SEED = 1 << 30  # beside the blocks' seeds (block numbers)
GROUPS = 50  # `group` 0 .. 49: group 0 is the 2% filter
GENERATE_BLOCK = 100_000


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def done(path: Path) -> bool:
    """A stage's output is complete (each stage writes its `.done` marker last)."""
    return path.with_name(path.name + ".done").is_file()


def mark(path: Path, record: dict | None = None) -> None:
    path.with_name(path.name + ".done").write_text(json.dumps(record or {}))


def record_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".done").read_text())


# ---- encode: the real corpus ----------------------------------------------------------------------------


def encode(args, work: Path) -> dict:
    """The WordNet glosses as the default model encodes them (float32), and their titles."""
    vectors, titles = work / "wordnet.npy", work / "wordnet-titles.json"
    if not done(vectors):
        from semsearch.encoding import Encoder
        from semsearch.settings import DEFAULT_QUANTIZE

        with open(args.wordnet / "corpus.jsonl") as lines:
            docs = [json.loads(line) for line in lines]
        texts = [f"{d['title']} {d['text']}" if d.get("title") else d["text"] for d in docs]
        started = time.perf_counter()
        encoded = Encoder(None, quantize=DEFAULT_QUANTIZE).encode(texts)
        np.save(vectors, encoded.astype(np.float32), allow_pickle=False)
        titles.write_text(json.dumps([d.get("title") or d["text"][:40] for d in docs]))
        mark(vectors, {"rows": len(texts), "seconds": round(time.perf_counter() - started, 1)})
    return {"wordnet_vectors": record_of(vectors)}


# ---- generate: synthetic rows with the corpus's moments -------------------------------------------------


def generate(args, work: Path) -> dict:
    """ROWS + QUERIES vectors (float16 .npy: half the bytes to read, the moments measured on what is written),
    the JSONL of their texts, the held-back queries. Written a block at a time, each block from its own seed:
    a killed run starts again at its last finished block and writes the same rows."""
    vectors = work / f"vectors-{args.rows}.npy"
    if done(vectors):
        tuning_queries(args, work)
        return {"generate": record_of(vectors)}
    real, mean, covariance, factor = moments(work)
    titles = json.loads((work / "wordnet-titles.json").read_text())
    share = args.noise_share
    dim, total = real.shape[1], args.rows + QUERIES
    sources_path, progress_path = work / f"sources-{args.rows}.npy", work / f"generate-{args.rows}.npz"
    if not vectors.is_file():
        header = {"descr": "<f2", "fortran_order": False, "shape": (total, dim)}
        with open(vectors, "wb") as out:
            np.lib.format.write_array_header_1_0(out, header)
            out.truncate(out.tell() + total * dim * 2)  # sparse until written
    offset = np.load(vectors, mmap_mode="r").offset
    sources = np.zeros(total, dtype=np.int32) if not sources_path.is_file() else np.load(sources_path)
    sums, products, blocks_done = np.zeros(dim), np.zeros((dim, dim)), 0
    if progress_path.is_file():
        kept = np.load(progress_path)
        sums, products, blocks_done = kept["sums"], kept["products"], int(kept["blocks"])
    blocks = (total + GENERATE_BLOCK - 1) // GENERATE_BLOCK
    started = time.perf_counter()
    with open(vectors, "r+b") as out:
        for block in range(blocks_done, blocks):
            begin = block * GENERATE_BLOCK
            rows = min(GENERATE_BLOCK, total - begin)
            chosen, made = drawn(real, mean, factor, share, np.random.default_rng([args.seed, block]), rows)
            out.seek(offset + begin * dim * 2)
            out.write(made.tobytes())
            sources[begin : begin + rows] = chosen
            if begin < args.rows:  # the moments of the rows ingested
                counted = made[: max(0, min(rows, args.rows - begin))].astype(np.float64)
                sums += counted.sum(axis=0)
                products += counted.T @ counted
            out.flush()
            np.save(sources_path, sources, allow_pickle=False)
            with open(progress_path, "wb") as handle:
                np.savez(handle, sums=sums, products=products, blocks=block + 1)
            if block % 10 == 0:
                log(f"generate: block {block + 1}/{blocks}")
    set_mean = sums / args.rows
    set_covariance = (products - args.rows * np.outer(set_mean, set_mean)) / (args.rows - 1)
    queries_path = work / f"queries-{args.rows}.npy"
    if not queries_path.is_file():
        queries = np.load(vectors, mmap_mode="r")[args.rows :].astype(np.float32)
        np.save(queries_path, queries, allow_pickle=False)
    held_back(vectors, args.rows, dim, offset)
    query_texts = [titles[j] for j in sources[args.rows :]]
    (work / f"queries-{args.rows}.json").write_text(json.dumps(query_texts))
    with open(work / f"corpus-{args.rows}.jsonl", "w") as handle:
        for begin in range(0, args.rows, GENERATE_BLOCK):
            handle.write(
                "".join(
                    json.dumps({"id": f"s{i}", "text": titles[sources[i]], "group": i % GROUPS}) + "\n"
                    for i in range(begin, min(args.rows, begin + GENERATE_BLOCK))
                )
            )
    # How near a row is to its source (cosine), on a sample: how tight the clusters are.
    sample = np.load(vectors, mmap_mode="r")[: min(args.rows, 20000)].astype(np.float64)
    source = real[sources[: len(sample)]]
    cosines = np.sum(sample * source, 1) / np.linalg.norm(sample, axis=1) / np.linalg.norm(source, axis=1)
    record = {
        "rows": args.rows,
        "held_back_queries": QUERIES,
        "noise_share": share,
        "seconds": round(time.perf_counter() - started, 1),
        "mean_max_abs_error": float(np.abs(set_mean - mean).max()),
        "mean_norm": float(np.linalg.norm(mean)),
        "covariance_relative_frobenius_error": float(
            np.linalg.norm(set_covariance - covariance) / np.linalg.norm(covariance)
        ),
        "covariance_trace_ratio": float(np.trace(set_covariance) / np.trace(covariance)),
        "cosine_to_source_median": round(float(np.median(cosines)), 3),
        "vectors_file_gib": round(vectors.stat().st_size / 2**30, 2),
    }
    mark(vectors, record)
    progress_path.unlink()
    tuning_queries(args, work)
    return {"generate": record}


def moments(work: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The real vectors (float64), their mean and covariance, and a factor of it (factor @ factor.T == cov)."""
    real = np.load(work / "wordnet.npy").astype(np.float64)
    covariance = np.cov(real, rowvar=False)
    values, basis = np.linalg.eigh(covariance)
    return real, real.mean(axis=0), covariance, (basis * np.sqrt(np.clip(values, 0, None))).astype(np.float32)


def drawn(real, mean, factor, share: float, rng, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """`rows` synthetic vectors (float16) and the real rows they are drawn around (the docstring's rule)."""
    chosen = rng.integers(0, len(real), rows)
    noise = rng.standard_normal((rows, real.shape[1]), dtype=np.float32) @ factor.T
    made = mean + np.sqrt(1 - share) * (real[chosen] - mean) + np.sqrt(share) * noise
    return chosen, made.astype("<f2")


def tuning_queries(args, work: Path) -> Path:
    """TUNING_QUERIES more draws like the held-back queries, from a seed of their own (neither ingested nor
    among the queries measured): the sample queries `ingest --tuning-queries` tunes the index on."""
    path = work / f"tuning-queries-{args.rows}.npy"
    if not path.is_file():
        real, mean, _, factor = moments(work)
        rng = np.random.default_rng([args.seed, TUNING_SEED])
        np.save(path, drawn(real, mean, factor, args.noise_share, rng, TUNING_QUERIES)[1], allow_pickle=False)
    return path


def held_back(vectors: Path, rows: int, dim: int, offset: int) -> None:
    """Cut the held-back queries off the vectors file: row i of an ingest's .npy is its i-th document."""
    with open(vectors, "r+b") as out:
        np.lib.format.write_array_header_1_0(
            out, {"descr": "<f2", "fortran_order": False, "shape": (rows, dim)}
        )
        if out.tell() != offset:
            raise SystemExit(f"{vectors}: the header changed length; generate again")
        out.truncate(offset + rows * dim * 2)


# ---- ingest: one whole process, its memory over time ---------------------------------------------------

# `semsearch ingest` with the stages' log lines (writes.py, build.py) on stderr, each with its time.
INGEST = """
import logging, sys
logging.basicConfig(level=logging.WARNING, format="%(created).2f %(message)s", stream=sys.stderr)
logging.getLogger("semsearch").setLevel(logging.INFO)
from semsearch.cli import main
main(prog_name="semsearch")
"""


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
                found += map(int, children)
                todo += map(int, children)
        except OSError:
            pass
    return found


def rss_mib(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(
        (int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:")), None
    )


def measured_ingest(command: list[str], timeline: list[tuple[float, float]]) -> dict:
    """Run the command under scale.py's launcher (its own peak RSS), sampling its RSS every second."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        started = time.time()
        run = subprocess.Popen(
            [PYTHON, "-c", LAUNCHER, str(report), *command], stderr=subprocess.PIPE, text=True
        )
        stages: list[tuple[float, str]] = []

        def read_stderr() -> None:
            for line in run.stderr:
                print(line, end="", file=sys.stderr)
                head, _, rest = line.partition(" ")
                with contextlib.suppress(ValueError):
                    stages.append((float(head) - started, rest.strip()))

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        while run.poll() is None:
            sizes = [rss_mib(pid) for pid in descendants(run.pid)]
            if any(sizes):
                timeline.append((round(time.time() - started, 1), round(max(s or 0 for s in sizes), 1)))
            time.sleep(1)
        reader.join()
        result = json.loads(report.read_text()) if report.is_file() else {"code": run.returncode}
        if run.returncode != 0 or result["code"] != 0:
            raise SystemExit(f"failed ({result}): {' '.join(command)}")
        return {
            "seconds": time.time() - started,
            "peak_rss_mib": result["maxrss_kib"] / 1024,
            "stages": stages,
        }


def part_bytes(index_dir: Path) -> dict:
    """Disk by part: documents and keyword index (SQLite), raw vectors, FAISS index, the rest."""
    from semsearch.storage.store import DocumentStore

    parts = {"documents_and_keyword_index": 0, "raw_vectors": 0, "vector_index": 0, "other": 0}
    for path in index_dir.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        if path.name.startswith(DocumentStore.FILE):  # with its -wal and -shm
            parts["documents_and_keyword_index"] += size
        elif "raw" in path.relative_to(index_dir).parts:
            parts["raw_vectors"] += size
        elif path.suffix == ".faiss":
            parts["vector_index"] += size
        else:
            parts["other"] += size
    return {name: round(size / 2**20, 1) for name, size in parts.items()}


def index_path(args, work: Path) -> Path:
    """The index a run builds: tuned on held-back sample queries (the default), or by tuning's own rule."""
    rule = "-rule" if args.tuning == "rule" else ""
    label = f"-{args.label}" if args.label else ""
    return work / f"index-{args.rows}-{args.index_type}{rule}{label}"


def ingest(args, work: Path) -> dict:
    """`semsearch ingest --vectors` of the generated rows into a new index. A killed ingest leaves no index
    (a write publishes whole or not at all): the stage starts it again on the files a create left."""
    target = index_path(args, work)
    if done(target):
        return {"ingest": {**record_of(target), "disk_mib": part_bytes(target)}}
    shutil.rmtree(target, ignore_errors=True)
    command = [
        PYTHON, "-c", INGEST, "ingest", str(work / f"corpus-{args.rows}.jsonl"),
        "--vectors", str(work / f"vectors-{args.rows}.npy"), "--index", str(target),
        "--index-type", args.index_type, "--quiet",
    ]  # fmt: skip
    if args.tuning == "held-back":
        command += ["--tuning-queries", str(tuning_queries(args, work))]
    timeline: list[tuple[float, float]] = []
    result = measured_ingest(command, timeline)
    times = [t for t, _ in timeline]
    stages, previous = [], 0.0
    for at, what in result["stages"]:
        window = [rss for t, rss in timeline if previous <= t <= at] or [0.0]
        stages.append({"until_s": round(at, 1), "stage": what, "seconds": round(at - previous, 1),
                       "peak_rss_mib_sampled": max(window)})  # fmt: skip
        previous = at
    tail = [rss for t, rss in timeline if t >= previous] or [0.0]
    stages.append({"until_s": round(result["seconds"], 1), "stage": "published (manifest, FAISS, SQLite)",
                   "seconds": round(result["seconds"] - previous, 1), "peak_rss_mib_sampled": max(tail)})  # fmt: skip
    from semsearch import Index

    with Index.open(target) as index:
        details = index.info()
    record = {
        "command": " ".join(["semsearch", *command[3:]]),
        "seconds": round(result["seconds"], 1),
        "peak_rss_mib": round(result["peak_rss_mib"], 1),
        "stages": stages,
        "disk_mib": part_bytes(target),
        "structure": details["index_structure"],
        "search_params": details.get("search_params"),
        "measured_recall": details.get("measured_recall"),
        "samples": len(times),
    }
    (work / f"timeline-{args.rows}-{args.index_type}.json").write_text(json.dumps(timeline))
    mark(target, record)
    return {"ingest": record}


# ---- query: against exact search ------------------------------------------------------------------------


def exact_answers(index, queries: np.ndarray, groups: int) -> dict:
    """The exact 10 best rows of each query, in the index's space (every row projected and scored, as tuning's
    truth is) over all rows and over the 2% filter's rows; by the raw vectors' cosine (not what a default query
    computes: its rerank re-scores the index's best DEFAULT_RERANK, and the raw space's best 10 need not be
    among them); and what the default rerank gives on exact candidates: the exact DEFAULT_RERANK best in the
    index's space re-scored by the raw vectors' cosine (the fair reference for a default query)."""
    from semsearch.retrieval.tuning import best
    from semsearch.settings import DEFAULT_RERANK
    from semsearch.transforms import normalize_rows

    projected = index.transform.project(queries)
    raw_queries = normalize_rows(queries)
    answers = {
        name: (
            np.full((len(queries), depth), -np.inf, np.float32),
            np.full((len(queries), depth), -1, np.int64),
        )
        for name, depth in (("dense", 10), ("filtered", 10), ("raw", 10), ("candidates", DEFAULT_RERANK))
    }
    for pks, block in index.raw.blocks(65536):
        scores = projected @ index.transform.project(block).T
        answers["dense"] = best(*answers["dense"], scores, pks)
        answers["candidates"] = best(*answers["candidates"], scores, pks)
        keep = pks % groups == 0
        answers["filtered"] = best(*answers["filtered"], scores[:, keep], pks[keep])
        answers["raw"] = best(*answers["raw"], raw_queries @ normalize_rows(block).T, pks)
    candidates = answers.pop("candidates")[1]
    reranked = []
    for query, rows in zip(raw_queries, candidates):
        cosines = normalize_rows(index.raw.read(rows)) @ query
        reranked.append(rows[np.argsort(-cosines, kind="stable")[:10]])
    return {"rerank_of_exact": np.array(reranked), **{name: ids for name, (_, ids) in answers.items()}}


def timed(search, count: int) -> tuple[list, float, float, float]:
    """Each query searched alone, after two warm-up queries: the answers, wall p50 and p99 ms, and the p50 of
    the CPU time the query took on its thread (single-threaded as a query runs): on a machine shared with other
    jobs, the wall time counts the waits for a core, the CPU time only the query's own work."""
    search(0), search(1)
    found, seconds, cpu = [], [], []
    for i in range(count):
        started, started_cpu = time.perf_counter(), time.thread_time()
        found.append(search(i))
        seconds.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - started_cpu)
    wall = [round(1000 * float(np.percentile(seconds, q)), 2) for q in (50, 99)]
    return found, wall[0], wall[1], round(1000 * float(np.median(cpu)), 2)


def recall(found: list, exact: np.ndarray) -> float:
    return round(float(np.mean([len({h.id for h in hits} & {f"s{pk}" for pk in want}) / 10
                                for hits, want in zip(found, exact)])), 4)  # fmt: skip


def query(args, work: Path) -> dict:
    from semsearch import Index

    target = index_path(args, work)
    queries = np.load(work / f"queries-{args.rows}.npy")
    texts = json.loads((work / f"queries-{args.rows}.json").read_text())
    truth_path = work / f"truth-{target.name}.npz"
    with Index.open(target) as index:
        if not truth_path.is_file():
            started = time.perf_counter()
            exact = exact_answers(index, queries, GROUPS)
            with open(truth_path, "wb") as handle:
                np.savez(handle, seconds=time.perf_counter() - started, **exact)
        exact = dict(np.load(truth_path))
        # pk i is document s{i} (one passage a document, ingested in order): checked on some answers
        pks = exact["dense"][:5].ravel()
        rows = index.store.get(pks.tolist())
        assert all(rows[pk]["id"] == f"s{pk}" for pk in pks.tolist()), "pk i is not document s{i}"
        count = len(queries)
        rss_open = rss_mib(os.getpid())
        rows_out = []
        for label, search, want in (
            ("dense, rerank 0", lambda i: index.search_vectors(queries[i : i + 1], k=10, rerank=0)[0], "dense"),
            ("dense, default rerank", lambda i: index.search_vectors(queries[i : i + 1], k=10)[0], "raw"),
            ("dense, default rerank: against rerank of exact candidates",
             lambda i: index.search_vectors(queries[i : i + 1], k=10)[0], "rerank_of_exact"),
            ("2% filter (group=0), rerank 0",
             lambda i: index.search_vectors(queries[i : i + 1], k=10, rerank=0, where=["group=0"])[0],
             "filtered"),
            ("hybrid (vector + its title's words)",
             lambda i: index.search_vectors(queries[i : i + 1], k=10, texts=texts[i : i + 1], mode="hybrid")[0],
             None),
            ("keyword (its title's words)", lambda i: index.search(texts[i], k=10, mode="keyword"), None),
        ):  # fmt: skip
            found, p50, p99, cpu = timed(search, count)
            row = {"query": label, "p50_ms": p50, "p99_ms": p99, "cpu_p50_ms": cpu}
            if want:
                row["recall@10_vs_exact"] = recall(found, exact[want])
            else:
                row["answered"] = sum(bool(hits) for hits in found)
            rows_out.append(row)
            log(f"query: {row}")
        record = {
            "queries": count,
            "rows": rows_out,
            "exact_scan_seconds": round(float(exact["seconds"]), 1),
            "rss_mib_open": rss_open,
            "rss_mib_after_queries": rss_mib(os.getpid()),
            "structure": index.info()["index_structure"],
        }
    return {"query": record}


SWEEP_NPROBE = (8, 16, 32, 64, 128, 256, 512, 1024)
SWEEP_K_FACTORS = (4, 16)


def sweep(args, work: Path) -> dict:
    """Dense search (rerank 0) at other nprobe and k_factor than tuned, the same at every depth: recall@10
    against exact search on the held-back queries and p50, the tradeoff the tuned point sits on."""
    from semsearch import Index

    queries = np.load(work / f"queries-{args.rows}.npy")[: args.sweep_queries]
    exact = np.load(work / f"truth-{index_path(args, work).name}.npz")["dense"]
    rows = []
    with Index.open(index_path(args, work)) as index:
        tuned = dict(index.vectors.params)
        for k_factor in SWEEP_K_FACTORS if index.vectors.kind == "pq" else (1,):
            for nprobe in SWEEP_NPROBE:
                # the same at every depth: a query's first window asks for search.PAGE_WINDOW (100) rows, and
                # the tuned parameters go from those at 10 towards the deep ones there (VectorIndex.at_depth)
                same = {"nprobe": nprobe, "k_factor": k_factor}
                index.vectors.params = {**tuned, **same, "deep": {**tuned.get("deep", {}), **same}}
                found, p50, p99, cpu = timed(
                    lambda i: index.search_vectors(queries[i : i + 1], k=10, rerank=0)[0], len(queries)
                )
                rows.append({"nprobe": nprobe, "k_factor": k_factor, "p50_ms": p50, "p99_ms": p99, "cpu_p50_ms": cpu,
                             "recall@10_vs_exact": recall(found, exact)})  # fmt: skip
                log(f"sweep: {rows[-1]}")
    return {"sweep": {"queries": len(queries), "tradeoff": rows}}


LISTS_QUERIES = 200  # of each kind


def lists(args, work: Path) -> dict:
    """Why tuning's own sample queries ask for more lists than the held-back queries need: for each kind of
    query (the held-back ones measured, the held-back draws given for tuning, the rule's rows plus noise), how
    near its nearest rows are (cosine, in the index's space) and how many of the index's lists, opened nearest
    first, hold 9 and all 10 of its exact 10 best rows (the nprobe it needs for recall 0.9 and 1.0)."""
    from semsearch import Index
    from semsearch.retrieval import tuning
    from semsearch.retrieval.tuning import best

    with Index.open(index_path(args, work)) as index:
        transform, raw, ivf = index.transform, index.raw, index.vectors.concrete
        kinds = {
            "held-back (measured)": transform.project(np.load(work / f"queries-{args.rows}.npy")),
            "held-back draws (--tuning-queries)": transform.project(np.load(tuning_queries(args, work))),
            "rule: a row plus noise": tuning.sample_queries(
                index.vectors.ids(), lambda pks: transform.project_float32(raw.read(pks))
            ),
        }
        queries = np.concatenate([q[:LISTS_QUERIES] for q in kinds.values()])
        scores = np.full((len(queries), 10), -np.inf, np.float32)
        ids = np.full((len(queries), 10), -1, np.int64)
        for pks, block in raw.blocks(65536):
            scores, ids = best(scores, ids, queries @ transform.project(block).T, pks)
        _, held_in = ivf.quantizer.search(transform.project_float32(raw.read(ids.ravel())), 1)
        _, order = ivf.quantizer.search(queries, ivf.nlist)  # each query's lists, nearest first
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(ivf.nlist)[None, :].repeat(len(queries), 0), 1)
        opened = np.sort(np.take_along_axis(rank, held_in.reshape(ids.shape), 1), axis=1) + 1
    rows = []
    for number, name in enumerate(kinds):
        part = slice(number * LISTS_QUERIES, (number + 1) * LISTS_QUERIES)
        rows.append({
            "queries": name, "cosine_to_nearest_median": round(float(np.median(scores[part, 0])), 3),
            "cosine_to_10th_median": round(float(np.median(scores[part, 9])), 3),
            "lists_for_9_of_10_median": int(np.median(opened[part, 8])),
            "lists_for_9_of_10_p90": int(np.percentile(opened[part, 8], 90)),
            "lists_for_10_of_10_median": int(np.median(opened[part, 9])),
            "lists_for_10_of_10_p90": int(np.percentile(opened[part, 9], 90)),
        })  # fmt: skip
        log(f"lists: {rows[-1]}")
    return {"lists": {"nlist": int(ivf.nlist), "queries_each": LISTS_QUERIES, "needed": rows}}


STAGES = {
    "encode": encode,
    "generate": generate,
    "ingest": ingest,
    "query": query,
    "sweep": sweep,
    "lists": lists,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--noise-share", type=float, default=0.5)
    parser.add_argument("--index-type", default="pq")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tuning",
        choices=("held-back", "rule"),
        default="held-back",
        help="tune on TUNING_QUERIES held-back draws (ingest --tuning-queries), or by tuning's own rule",
    )
    parser.add_argument("--sweep-queries", type=int, default=200)
    parser.add_argument(
        "--label",
        help="an index of its own (index-ROWS-TYPE-LABEL) and section: e.g. a copy rebuilt by `semsearch refit`",
    )
    parser.add_argument("--wordnet", type=Path, default=WORDNET)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "semsearch-ten-million")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--name", default="ten-million", help="results file name (NAME.md, NAME.json)")


def run(config: argparse.Namespace) -> Rows:
    require(config.wordnet / "corpus.jsonl", "WordNet corpus (--wordnet DIR)")
    config.work.mkdir(parents=True, exist_ok=True)
    results_path = config.out / f"{config.name}.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    section = f"{config.rows} rows, {config.index_type}, noise share {config.noise_share}"
    if config.tuning == "held-back":
        section += ", tuned on held-back sample queries"
    if config.label:
        section += f", {config.label}"
    # a section keeps what earlier runs measured (stages run on their own, or a killed run started again)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results[section] = {**results.get(section, {}), "command": command_line(), "when": when}
    for name in config.stages.split(","):
        log(f"== {name}")
        results[section].update(STAGES[name](config, config.work))
        results[section] = flatten(results[section])
        write_sections(results, config.out, config.name, "Ten million passages", HEADER, list(results))
    return results


HEADER = (
    "Machine: 2 cores (shared), 24 GB, no GPU. Synthetic rows drawn around the real WordNet vectors with "
    "their mean and covariance (benchmarks/ten_million.py's docstring says how). Each section lists "
    "the command that made it and is named by its rows: a size without a section was not measured "
    "(docs/performance.md, 'Ten million passages'). p50_ms is wall time, cpu_p50_ms the query's own CPU "
    "time on its thread: on a machine shared with other jobs the first counts the waits for a core."
)  # fmt: skip


def flatten(section: dict) -> dict:
    """A stage's record as write_sections shows it: its tables (lists of rows) and figures at the top level."""
    out = {}
    for key, value in section.items():
        if isinstance(value, dict) and key in STAGES:
            for inner, item in value.items():
                out[inner if isinstance(item, list) else f"{key}_{inner}"] = item
        else:
            out[key] = value
    return out
