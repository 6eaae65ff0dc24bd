"""Filtered and unfiltered search at scale (issue 12): semsearch beside chromadb (where installed) on the same
vectors in the same run, written to benchmarks/results/filter.md and filter.json (sizes merge, so one can be
re-run alone), each size with the machine's 5-minute load average at its start and end (timings, not recall,
rise with other work).

    .venv/bin/python benchmarks/filter.py [--sizes 200000,1000000] [--queries 100] [--peer-max 200000]
                                          [--types auto] [--work DIR]

Data: SciFact's corpus (5,183 abstracts) and its queries encoded once with the bundled all-MiniLM-L6-v2
(cached in --work), resampled: document i is a random SciFact document plus Gaussian noise with the corpus's own
covariance (x 0.7^2; cosine to its source about 0.84), normalised. Metadata `b` uniform in 0..999; filters
b<100, b<20, b<5, b<1 keep 10%, 2%, 0.5%, 0.1%. Queries: 100 SciFact queries (claims, not documents).

- semsearch: `semsearch ingest --vectors` (a whole process: seconds and peak RSS), then warm `search_vectors`
  one query at a time (transform, search, join with SQLite; rerank 0), p50 / p99 over the queries. recall@10
  against brute force in the index's own space over the matching documents (numpy, float32). Each further type
  in --types is a `semsearch refit --index-type` of the same index (a whole process too).
  Up to --none-max documents the index keeps the vectors as they are (--transform none: the same cosine space as
  the peer); above, the defaults (whitened to 128 dims), and recall is in that space.
- filter SQL: the rows of each filter read from SQLite with the cache emptied (the first query of a new filter
  pays it; later ones reuse the rows).
- chromadb (an optional peer, up to --peer-max documents): a persistent collection (cosine space, its default
  HNSW), ids and metadata `b`, `collection.query(..., where={"b": {"$lt": N}})`, in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scale import PYTHON, SEMSEARCH, command_line, disk_mib, markdown_table, measure

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
OUT = REPO / "benchmarks" / "results"
FILTERS = [None, 100, 20, 5, 1]  # b < N; None: unfiltered
NOISE = 0.7
K = 10


def encoded_scifact(work: Path) -> tuple[np.ndarray, np.ndarray]:
    """SciFact's documents and queries as the bundled model encodes them (int8 ONNX, the defaults), cached."""
    docs_path, queries_path = work / "scifact-docs.npy", work / "scifact-queries.npy"
    if not docs_path.is_file():
        from semsearch import Index

        shutil.rmtree(work / "scifact-index", ignore_errors=True)
        with Index.create(work / "scifact-index", transform="none", chunk_tokens=0) as index:
            index.ingest(SCIFACT / "corpus.jsonl")
            np.save(docs_path, index.raw.get(index.store.all_pks()))
            texts = [
                json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines()
            ]
            np.save(queries_path, index.encoder.encode(texts))
    return np.load(docs_path), np.load(queries_path)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def resampled(work: Path, n: int) -> tuple[Path, Path, np.ndarray]:
    """n documents resampled from SciFact with noise (see the top), their metadata, and the queries."""
    docs, queries = encoded_scifact(work)
    docs = unit(docs)
    vectors_path, corpus = work / f"vectors-{n}.npy", work / f"corpus-{n}.jsonl"
    rng = np.random.default_rng(n)
    picked = rng.choice(len(queries), 100, replace=False)
    if not vectors_path.is_file():
        factor = np.linalg.cholesky(np.cov(docs.T) + 1e-6 * np.eye(docs.shape[1])).astype(np.float32)
        array = np.lib.format.open_memmap(vectors_path, mode="w+", dtype="<f4", shape=(n, docs.shape[1]))
        for begin in range(0, n, 100_000):
            rows = min(100_000, n - begin)
            noise = rng.standard_normal((rows, docs.shape[1]), dtype=np.float32) @ factor.T
            array[begin : begin + rows] = unit(docs[rng.integers(0, len(docs), rows)] + NOISE * noise)
        array.flush()
        del array
        b = np.random.default_rng(n + 1).integers(0, 1000, n)
        with open(corpus, "w") as handle:
            for i in range(n):
                handle.write(f'{{"id": "{i}", "text": "document {i}", "b": {int(b[i])}}}\n')
    return vectors_path, corpus, unit(queries[picked])


def metadata_b(corpus: Path) -> np.ndarray:
    return np.array([json.loads(line)["b"] for line in corpus.read_text().splitlines()], dtype=np.int64)


def truth(space: np.ndarray, queries: np.ndarray, rows: np.ndarray) -> list[set[int]]:
    """Brute force: the K best of `rows` for each query (inner product of normalised vectors)."""
    scores = queries @ space[rows].T
    top = np.argpartition(-scores, min(K, len(rows) - 1), axis=1)[:, :K]
    return [set(rows[t].tolist()) for t in top]


def recall(found: list[list[int]], exact: list[set[int]]) -> float:
    return float(np.mean([len(set(f) & e) / max(1, min(K, len(e))) for f, e in zip(found, exact)]))


def percentiles(seconds: list[float]) -> tuple[float, float]:
    return round(1000 * float(np.median(seconds)), 3), round(1000 * float(np.percentile(seconds, 99)), 3)


def semsearch_rows(target: Path, queries: np.ndarray, b: np.ndarray, kind: str, build: dict) -> list[dict]:
    """One row per filter: p50 / p99, recall@10 against brute force in the index's space, the path taken."""
    from semsearch import Index
    from semsearch.retrieval import strategy
    from semsearch.retrieval.search import allowed_rows

    with Index.open(target) as index:
        space = np.empty((index.vectors.count, index.vectors.dim), dtype=np.float32)
        for pks, block in index.raw.blocks():
            space[pks] = index.transform.project(block)
        projected = index.transform.project(queries)
        details = index.info()
        rows = []
        for cut in FILTERS:
            where = [f"b<{cut}"] if cut else None
            allowed = np.flatnonzero(b < cut) if cut else np.arange(len(b))
            index.store._allowed().clear()
            started = time.perf_counter()
            allowed_rows(index.store, where)
            sql_ms = 1000 * (time.perf_counter() - started) if cut else 0.0
            seconds, found = [], []
            for query in queries:
                started = time.perf_counter()
                hits = index.search_vectors(query[None], K, where=where, rerank=0)[0]
                seconds.append(time.perf_counter() - started)
                found.append([int(h.id) for h in hits])
            p50, p99 = percentiles(seconds)
            plan = strategy.plan(index.vectors, len(allowed)) if cut else index.vectors.search_params
            rows.append(
                {
                    "system": f"semsearch {kind}",
                    "filter": f"b<{cut} ({100 * len(allowed) / len(b):g}%)" if cut else "none",
                    "p50_ms": p50,
                    "p99_ms": p99,
                    "recall@10": round(recall(found, truth(space, projected, allowed)), 4),
                    "path": ("exact" if plan is None else f"approximate {plan}") if cut else f"ann {plan}",
                    "filter_sql_ms_uncached": round(sql_ms, 2),
                }
            )
            print(rows[-1], file=sys.stderr)
        rows[0].update(
            structure=details["index_structure"],
            build_s=round(build["seconds"], 1),
            build_peak_rss_mib=round(build["peak_rss_mib"], 1),
            measured_recall=details["measured_recall"],
            index_dir_mib=round(disk_mib(target), 1),
        )
    return rows


CHROMA = r"""
import json, sys, time, numpy as np, chromadb
vectors, corpus, queries, path, filters = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
X = np.load(vectors, mmap_mode="r"); Q = np.load(queries)
b = [json.loads(line)["b"] for line in open(corpus)]
client = chromadb.PersistentClient(path=path)
collection = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
started = time.perf_counter()
step = client.get_max_batch_size()
for begin in range(0, len(b), step):
    end = min(len(b), begin + step)
    collection.add(ids=[str(i) for i in range(begin, end)], embeddings=np.asarray(X[begin:end]),
                   metadatas=[{"b": v} for v in b[begin:end]])
out = {"build_s": time.perf_counter() - started, "filters": {}}
for cut in filters:
    where = {"b": {"$lt": cut}} if cut else None
    seconds, found = [], []
    for q in Q:
        t = time.perf_counter()
        r = collection.query(query_embeddings=[q.tolist()], n_results=10, where=where)
        seconds.append(time.perf_counter() - t)
        found.append([int(i) for i in r["ids"][0]])
    out["filters"][str(cut)] = {"seconds": seconds, "found": found}
print(json.dumps(out))
"""


def chroma_rows(work: Path, vectors: Path, corpus: Path, queries: np.ndarray, b: np.ndarray) -> list[dict]:
    try:
        import chromadb  # noqa: F401
    except ImportError:
        print("chromadb is not installed: no peer rows", file=sys.stderr)
        return []
    path = work / f"chroma-{len(b)}"
    shutil.rmtree(path, ignore_errors=True)
    np.save(work / "queries.npy", queries)
    result = measure(
        [
            PYTHON,
            "-c",
            CHROMA,
            str(vectors),
            str(corpus),
            str(work / "queries.npy"),
            str(path),
            json.dumps(FILTERS),
        ]
    )
    out = json.loads(result["stdout"])
    space = np.load(vectors, mmap_mode="r")
    rows = []
    for cut in FILTERS:
        got = out["filters"][str(cut)]
        allowed = np.flatnonzero(b < cut) if cut else np.arange(len(b))
        p50, p99 = percentiles(got["seconds"])
        rows.append(
            {
                "system": f"chromadb {__import__('chromadb').__version__}",
                "filter": f"b<{cut} ({100 * len(allowed) / len(b):g}%)" if cut else "none",
                "p50_ms": p50,
                "p99_ms": p99,
                "recall@10": round(recall(got["found"], truth(np.asarray(space), queries, allowed)), 4),
            }
        )
    rows[0].update(
        build_s=round(out["build_s"], 1),
        build_peak_rss_mib=round(result["peak_rss_mib"], 1),
        index_dir_mib=round(disk_mib(path), 1),
    )
    shutil.rmtree(path, ignore_errors=True)
    return rows


def run_size(args, n: int) -> dict:
    vectors, corpus, queries = resampled(args.work, n)
    b = metadata_b(corpus)
    target = args.work / f"index-{n}"
    shutil.rmtree(target, ignore_errors=True)
    same_space = n <= args.none_max
    transform = ["--transform", "none"] if same_space else []
    build = measure(
        [
            *SEMSEARCH,
            "ingest",
            str(corpus),
            "--vectors",
            str(vectors),
            "--index",
            str(target),
            *transform,
            "--quiet",
        ]
    )
    rows = []
    for kind in args.types.split(","):
        if kind != "auto":
            build = measure([*SEMSEARCH, "refit", "--index", str(target), "--index-type", kind])
        rows += semsearch_rows(target, queries, b, kind, build)
    if same_space and n <= args.peer_max:
        rows += chroma_rows(args.work, vectors, corpus, queries, b)
    return {
        "documents": n,
        "space": "as encoded (384 dims, --transform none)"
        if same_space
        else "whitened to 128 dims (defaults)",
        "rows": rows,
    }


def write_report(results: dict, out: Path) -> None:
    from semsearch.storage.files import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "filter.json", json.dumps(results, indent=1) + "\n")
    lines = [
        "# Filtered search at scale",
        "",
        "Machine: 2 cores, no GPU. See benchmarks/filter.py for the data.",
        "",
    ]
    for size, section in sorted(results.items(), key=lambda item: int(item[0])):
        lines += [
            f"## {int(size):,} documents, {section['space']}",
            "",
            f"`{section['command']}` ({section['when']}; load average {section.get('load', 'not recorded')}: "
            "other work on the machine raises the timings, not the recall)",
            "",
        ]
        lines += markdown_table(section["rows"])
    atomic_write_text(out / "filter.md", "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--types", default="auto", help="auto, then each named type refitted (e.g. auto,ivf)")
    parser.add_argument("--peer-max", type=int, default=200_000)
    parser.add_argument("--none-max", type=int, default=200_000)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "semsearch-filter")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = (
        json.loads((args.out / "filter.json").read_text()) if (args.out / "filter.json").is_file() else {}
    )
    command = command_line()
    for n in map(int, args.sizes.split(",")):
        print(f"== {n}", file=sys.stderr)
        section = {"command": command, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        before = os.getloadavg()[1]
        results[str(n)] = {**section, **run_size(args, n)}
        results[str(n)]["load"] = f"{before:.1f} at the start, {os.getloadavg()[1]:.1f} at the end (5 min)"
        write_report(results, args.out)


if __name__ == "__main__":
    main()
