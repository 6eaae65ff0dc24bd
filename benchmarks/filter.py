"""Filtered and unfiltered search at scale: semsearch beside chromadb (where installed) on the
same vectors in the same run, written to benchmarks/results/filter.md and filter.json (sections merge, so one
can be re-run alone), each section with the machine's 5-minute load average at its start and end (timings, not
recall, rise with other work).

    python -m benchmarks filter [--sizes 200000,1000000] [--data scifact,anisotropic]
                                          [--raw-precisions default,int4] [--peer-max 200000]
                                          [--types auto] [--work DIR]

Data, 384 dims, metadata `b` uniform in 0..999 (filters b<100, b<20, b<5, b<1 keep 10%, 2%, 0.5%, 0.1%):
- scifact: SciFact's corpus (5,183 abstracts) and its queries encoded once with the bundled all-MiniLM-L6-v2
  (cached in --work), resampled: document i is a random SciFact document plus Gaussian noise with the corpus's
  own covariance (x 0.7^2; cosine to its source about 0.84), normalised. Queries: 100 SciFact queries (claims).
- anisotropic: built differently, no model: 2,000 centres and noise drawn in a randomly rotated basis whose
  scales fall as i^-0.8 (a few directions carry most of the variance), plus a little isotropic noise;
  queries are centres plus 1.7x the noise.

- semsearch: `semsearch ingest --vectors` (a whole process: seconds and peak RSS; `--raw-precision` where the
  row names one, else the defaults), then warm `search_vectors` one query at a time (transform, search, join
  with SQLite; rerank 0), p50 / p99 over the queries. `recall@10`: against brute force over the matching
  documents' vectors as given (float32, numpy), in the index's space (the given vectors projected by its
  transform: themselves, normalised, with --transform none); `kept`: against brute force over the raw vectors
  as the index keeps them; `rerank100`: the same queries with `rerank=100`, recall@10 as `recall@10`;
  `x_chroma`: chromadb's p50 over semsearch's, same filter, same run. Each further type in --types is a
  `semsearch refit --index-type` of the same index (a whole process too). Up to --none-max documents the index
  keeps the vectors as they are (--transform none: the same cosine space as the peer); above, the defaults
  (whitened to 128 dims).
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

from benchmarks.suite import (
    OUT,
    PYTHON,
    REPO,
    SEMSEARCH,
    Rows,
    command_line,
    disk_mib,
    markdown_table,
    measure,
)

CLAIM = (
    "Filtered and unfiltered search at 200k-1M vectors: recall against brute force and speed beside chromadb"
)

SCIFACT = REPO.parent / "shared" / "data" / "scifact"
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
        write_corpus(corpus, n)
    return vectors_path, corpus, unit(queries[picked])


ANISOTROPY, CENTRES = 0.8, 2000


def anisotropic(work: Path, n: int, dim: int = 384) -> tuple[Path, Path, np.ndarray]:
    """n clustered vectors in an anisotropic basis plus noise (see the top), their metadata, and the queries."""
    rng = np.random.default_rng(n + 53)
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    basis = (rotation * np.arange(1, dim + 1) ** -ANISOTROPY).astype(np.float32)
    centres = rng.standard_normal((CENTRES, dim)).astype(np.float32) @ basis.T

    def drawn(count: int, noise: float) -> np.ndarray:
        spread = rng.standard_normal((count, dim), dtype=np.float32) @ basis.T
        flat = 0.01 * rng.standard_normal((count, dim), dtype=np.float32)
        return unit(centres[rng.integers(0, CENTRES, count)] + noise * spread + flat)

    vectors_path, corpus = work / f"anisotropic-{n}.npy", work / f"anisotropic-{n}.jsonl"
    queries = drawn(100, 1.2)
    if not vectors_path.is_file():
        array = np.lib.format.open_memmap(vectors_path, mode="w+", dtype="<f4", shape=(n, dim))
        for begin in range(0, n, 100_000):
            array[begin : min(n, begin + 100_000)] = drawn(min(100_000, n - begin), 0.7)
        array.flush()
        del array
        write_corpus(corpus, n)
    return vectors_path, corpus, queries


def write_corpus(corpus: Path, n: int) -> None:
    b = np.random.default_rng(n + 1).integers(0, 1000, n)
    with open(corpus, "w") as handle:
        for i in range(n):
            handle.write(f'{{"id": "{i}", "text": "document {i}", "b": {int(b[i])}}}\n')


DATA = {"scifact": "resampled", "anisotropic": "anisotropic"}


def metadata_b(corpus: Path) -> np.ndarray:
    return np.array([json.loads(line)["b"] for line in corpus.read_text().splitlines()], dtype=np.int64)


def truth_of(space: np.ndarray, queries: np.ndarray, rows: np.ndarray) -> list[set[int]]:
    """Brute force: the K best of `rows` for each query (inner product of normalised vectors)."""
    scores = queries @ space[rows].T
    top = np.argpartition(-scores, min(K, len(rows) - 1), axis=1)[:, :K]
    return [set(rows[t].tolist()) for t in top]


def recall(found: list[list[int]], exact: list[set[int]]) -> float:
    return float(np.mean([len(set(f) & e) / max(1, min(K, len(e))) for f, e in zip(found, exact)]))


def percentiles(seconds: list[float]) -> tuple[float, float]:
    return round(1000 * float(np.median(seconds)), 3), round(1000 * float(np.percentile(seconds, 99)), 3)


def semsearch_rows(
    target: Path, given: Path, queries: np.ndarray, b: np.ndarray, label: str, build: dict
) -> list[dict]:
    """One row per filter: p50 / p99, recall@10 against brute force over the given vectors and over the raw
    vectors as kept (both in the index's space), with rerank 100 too, and the path taken."""
    from semsearch import Index
    from semsearch.retrieval import strategy
    from semsearch.retrieval.search import allowed_rows

    with Index.open(target) as index:
        space = np.empty((index.vectors.count, index.vectors.dim), dtype=np.float32)
        kept = np.empty_like(space)
        source = np.load(given, mmap_mode="r")
        for pks, block in index.raw.blocks():
            kept[pks] = index.transform.project(block)
            space[pks] = index.transform.project(np.asarray(source[pks]))
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
            reranked = [
                [int(h.id) for h in hits]
                for hits in index.search_vectors(queries, K, where=where, rerank=100)
            ]
            p50, p99 = percentiles(seconds)
            plan = strategy.plan(index.vectors, len(allowed)) if cut else index.vectors.search_params
            truth = truth_of(space, projected, allowed)
            rows.append(
                {
                    "system": f"semsearch {label}",
                    "filter": f"b<{cut} ({100 * len(allowed) / len(b):g}%)" if cut else "none",
                    "p50_ms": p50,
                    "p99_ms": p99,
                    "recall@10": round(recall(found, truth), 4),
                    "kept": round(recall(found, truth_of(kept, projected, allowed)), 4),
                    "rerank100": round(recall(reranked, truth), 4),
                    "path": ("exact" if plan is None else f"approximate {plan}") if cut else f"ann {plan}",
                    "filter_sql_ms_uncached": round(sql_ms, 2),
                }
            )
            print(rows[-1], file=sys.stderr)
        rows[0].update(
            structure=details["index_structure"],
            raw=index.settings.raw_precision,
            build_s=round(build["seconds"], 1),
            build_peak_rss_mib=round(build["peak_rss_mib"], 1),
            measured_recall=details["measured_recall"],
            index_dir_mib=round(disk_mib(target), 1),
            bytes_a_passage=round(disk_mib(target) * 2**20 / len(b)),
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
                "recall@10": round(recall(got["found"], truth_of(np.asarray(space), queries, allowed)), 4),
            }
        )
    rows[0].update(
        build_s=round(out["build_s"], 1),
        build_peak_rss_mib=round(result["peak_rss_mib"], 1),
        index_dir_mib=round(disk_mib(path), 1),
        bytes_a_passage=round(disk_mib(path) * 2**20 / len(b)),
    )
    shutil.rmtree(path, ignore_errors=True)
    return rows


def run_size(args, data: str, n: int) -> dict:
    vectors, corpus, queries = globals()[DATA[data]](args.work, n)
    b = metadata_b(corpus)
    same_space = n <= args.none_max
    transform = ["--transform", "none"] if same_space else []
    rows = []
    for precision in args.raw_precisions.split(","):
        target = args.work / f"index-{data}-{n}-{precision}"
        shutil.rmtree(target, ignore_errors=True)
        asked = [] if precision == "default" else ["--raw-precision", precision]
        ingest = ["ingest", str(corpus), "--vectors", str(vectors), "--index", str(target)]
        build = measure([*SEMSEARCH, *ingest, *transform, *asked, "--quiet"])
        for kind in args.types.split(","):
            if kind != "auto":
                build = measure([*SEMSEARCH, "refit", "--index", str(target), "--index-type", kind])
            label = kind if precision == "default" else f"{kind}, raw {precision}"
            rows += semsearch_rows(target, vectors, queries, b, label, build)
        shutil.rmtree(target, ignore_errors=True)
    if same_space and n <= args.peer_max:
        peer = chroma_rows(args.work, vectors, corpus, queries, b)
        p50 = {row["filter"]: row["p50_ms"] for row in peer}
        for row in rows:
            if row["filter"] in p50:
                row["x_chroma"] = round(p50[row["filter"]] / max(row["p50_ms"], 1e-3), 1)
        rows += peer
    return {
        "documents": n,
        "data": data,
        "space": "as given (384 dims, --transform none)" if same_space else "whitened to 128 dims (defaults)",
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
    for _, section in sorted(results.items(), key=lambda item: (item[1]["documents"], item[0])):
        lines += [
            f"## {section.get('data', 'scifact')}: {section['documents']:,} documents, {section['space']}",
            "",
            f"`{section['command']}` ({section['when']}; load average {section.get('load', 'not recorded')}: "
            "other work on the machine raises the timings, not the recall)",
            "",
            *([section["note"], ""] if "note" in section else []),
        ]
        lines += markdown_table(section["rows"])
    atomic_write_text(out / "filter.md", "\n".join(lines))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--types", default="auto", help="auto, then each named type refitted (e.g. auto,ivf)")
    parser.add_argument("--data", default="scifact,anisotropic", help=f"of {', '.join(DATA)}")
    parser.add_argument(
        "--raw-precisions", default="default", help="an index for each: default (no option), int4, int8 ..."
    )
    parser.add_argument("--peer-max", type=int, default=200_000)
    parser.add_argument("--none-max", type=int, default=200_000)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "semsearch-filter")
    parser.add_argument("--out", type=Path, default=OUT)


def run(config: argparse.Namespace) -> Rows:
    config.work.mkdir(parents=True, exist_ok=True)
    results = (
        json.loads((config.out / "filter.json").read_text()) if (config.out / "filter.json").is_file() else {}
    )
    command = command_line()
    for n in map(int, config.sizes.split(",")):
        for data in config.data.split(","):
            print(f"== {data} {n}", file=sys.stderr)
            section = {"command": command, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            before = os.getloadavg()[1]
            key = f"{data}-{n}"
            results.pop(str(n) if data == "scifact" else key, None)  # sections of a release before: by size
            results[key] = {**section, **run_size(config, data, n)}
            results[key]["load"] = f"{before:.1f} at the start, {os.getloadavg()[1]:.1f} at the end (5 min)"
            write_report(results, config.out)
    return results
