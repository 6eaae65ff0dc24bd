"""Speed and scale, measured with whole processes on this machine and written to
benchmarks/results/scale.md and scale.json (sections merge, so one can be re-run alone).

    python -m benchmarks scale [--sections profile,throughput,memory,types,latency,million]
                                          [--wordnet DIR] [--docs 20000] [--rounds 3] [--million 1000000]

- profile: where ingest time goes on 5,000 WordNet glosses (tokenizer, forward pass by batch size and
  order, torch threads, the rest of the ingest).
- throughput: `semsearch ingest` (whiten, fp32 and --quantize int8) against sentence-transformers encoding
  the same texts (batch 32) and txtai indexing them, alternated rounds, medians and ratios.
- memory: peak RSS of `semsearch ingest` at 20k, 60k and all 117,791 documents.
- types: flat, hnsw, ivf, pq on the full WordNet index: build, recall@10 against flat, query ms, bytes.
- latency: warm Index.search p50/p99 on the full index, and cold `semsearch query` processes.
- million: 1,000,000 synthetic vectors with WordNet's mean and covariance, ingested with --vectors.
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
    SEMSEARCH,
    WORDNET,
    Rows,
    disk_mib,
    first_documents,
    measure,
    require,
    section_stamp,
    texts_of,
    write_sections,
)

CLAIM = "Ingest throughput against sentence-transformers and txtai, peak memory, index types and latency on WordNet"


ST_SCRIPT = """
import json, sys, time
from sentence_transformers import SentenceTransformer
from semsearch.encoding import resolve_model_path
docs = [json.loads(line) for line in open(sys.argv[1])]
texts = [f"{d['title']} {d['text']}" if d.get("title") else d["text"] for d in docs]
model = SentenceTransformer(str(resolve_model_path(None)), device="cpu")
started = time.perf_counter()
model.encode(texts, batch_size=32)
print(json.dumps({"encode_seconds": time.perf_counter() - started}))
"""

TXTAI_SCRIPT = """
import json, statistics, sys, time
from txtai import Embeddings
from semsearch.encoding import resolve_model_path
docs = [json.loads(line) for line in open(sys.argv[1])]
rows = [(d["id"], f"{d['title']} {d['text']}" if d.get("title") else d["text"], None) for d in docs]
embeddings = Embeddings(path=str(resolve_model_path(None)), backend="faiss", batch=32, encodebatch=32)
started = time.perf_counter()
embeddings.index(rows)
index_seconds = time.perf_counter() - started
timings = []
for _, text, _ in rows[:: max(1, len(rows) // 200)][:200]:
    started = time.perf_counter()
    embeddings.search(text.split(" ", 1)[0], 10)
    timings.append(time.perf_counter() - started)
print(json.dumps({"index_seconds": index_seconds, "query_ms_p50": 1000 * statistics.median(timings)}))
"""


# ---- sections --------------------------------------------------------------------------------------------


def profile(args, work: Path) -> dict:
    """Where the time of an ingest goes, in one process, on the first 5,000 documents."""
    from semsearch import Index
    from semsearch.encoding import Encoder

    corpus = first_documents(min(5000, args.docs), work, args.wordnet)
    texts = texts_of(corpus)
    encoders = {
        (backend, quantize): Encoder(None, backend=backend, quantize=quantize).load()
        for backend in ("onnx", "torch")
        for quantize in ("none", "int8")
    }
    encoder = encoders["onnx", "none"]
    rows = []

    def timed(label: str, func) -> float:
        started = time.perf_counter()
        func()
        seconds = time.perf_counter() - started
        rows.append(
            {"step": label, "seconds": round(seconds, 2), "docs_per_s": round(len(texts) / seconds, 1)}
        )
        return seconds

    token_ids = []
    timed("tokenize all (fast tokenizer, one call)", lambda: token_ids.extend(encoder.tokenize(texts)))
    lengths = np.array([len(t) for t in token_ids])
    for (backend, quantize), each in encoders.items():
        timed(
            f"encode, {backend} {quantize}, token budget 2,048 (the default)", lambda e=each: e.encode(texts)
        )
    for batch in (32, 128):
        encoder.batch_size = batch
        timed(f"encode, onnx, length-sorted, batch {batch}", lambda: encoder.encode(texts))
    encoder.batch_size = None

    def forward(order, threads: int = 0):
        for begin in range(0, len(order), 32):
            encoder._encode_batch([token_ids[i] for i in order[begin : begin + 32]], threads)

    timed("forward only, onnx, input order (unsorted), batch 32", lambda: forward(np.arange(len(texts))))
    order = np.argsort(lengths, kind="stable")
    timed("forward only, onnx, length-sorted, batch 32", lambda: forward(order))
    timed("forward only, onnx, length-sorted, batch 32, 1 thread", lambda: forward(order, 1))
    target = work / "profile-index"
    shutil.rmtree(target, ignore_errors=True)

    def ingest():
        with Index.create(target, transform="whiten") as index:
            index.ingest(corpus)

    timed("whole ingest in-process (whiten, onnx): encode + stats + SQLite + FAISS", ingest)
    padding = 1 - lengths.sum() / (len(lengths) * lengths.max())
    return {
        "rows": rows,
        "tokens_mean": round(float(lengths.mean()), 1),
        "tokens_max": int(lengths.max()),
        "padding_if_one_batch": round(float(padding), 3),
        "documents": len(texts),
    }


# semsearch settings compared in the throughput section (all: whiten, whole `semsearch ingest` processes).
SEMSEARCH_RUNS = {
    "semsearch": ["--quantize", "none"],
    "semsearch int8": ["--quantize", "int8"],  # the default
    "semsearch torch": ["--backend", "torch", "--quantize", "none"],
    "semsearch torch int8": ["--backend", "torch", "--quantize", "int8"],
}
RUN_LABELS = {
    "semsearch": "onnx, fp32",
    "semsearch int8": "onnx, int8, the default",
    "semsearch torch": "torch, fp32",
    "semsearch torch int8": "torch, int8",
}
ONCE = ("txtai", "semsearch torch", "semsearch torch int8")  # slow or secondary: one round each


def throughput(args, work: Path) -> dict:
    corpus = first_documents(args.docs, work, args.wordnet)
    runs: dict[str, list[dict]] = {"sentence-transformers": [], **{name: [] for name in SEMSEARCH_RUNS}}
    runs["txtai"] = []
    # The onnx backend exports the model once per machine into its cache: done here, timed, not in the runs.
    shutil.rmtree(work / "onnx-cache", ignore_errors=True)
    export = {}
    for name, extra in SEMSEARCH_RUNS.items():
        target = work / "throughput-warm"
        shutil.rmtree(target, ignore_errors=True)
        small = first_documents(100, work, args.wordnet)
        export[name] = round(
            measure([*SEMSEARCH, "ingest", str(small), "--index", str(target), "-q", *extra])["seconds"], 1
        )
    for round_ in range(args.rounds):
        for name in runs:
            if name in ONCE and round_ > 0:
                continue
            target = work / "throughput-index"
            shutil.rmtree(target, ignore_errors=True)
            if name == "sentence-transformers":
                result = measure([PYTHON, "-c", ST_SCRIPT, str(corpus)])
                result.update(json.loads(result.pop("stdout").splitlines()[-1]))
            elif name == "txtai":
                result = measure([PYTHON, "-c", TXTAI_SCRIPT, str(corpus)])
                result.update(json.loads(result.pop("stdout").splitlines()[-1]))
            else:
                command = [*SEMSEARCH, "ingest", str(corpus), "--index", str(target), "--transform", "whiten"]
                result = measure([*command, "--quiet", *SEMSEARCH_RUNS[name]])
                result.pop("stdout")
            print(f"throughput round {round_ + 1}: {name}: {result}", file=sys.stderr)
            runs[name].append(result)

    def median(name: str, key: str) -> float:
        return float(np.median([r[key] for r in runs[name]]))

    n = args.docs
    st_encode = n / median("sentence-transformers", "encode_seconds")
    st_process = n / median("sentence-transformers", "seconds")
    table = [
        {"system": "sentence-transformers encode (in-process, batch 32)", "docs_per_s": round(st_encode, 1)},
        {"system": "sentence-transformers whole process", "docs_per_s": round(st_process, 1)},
        {"system": "txtai index (in-process)", "docs_per_s": round(n / median("txtai", "index_seconds"), 1)},
    ]
    for name in SEMSEARCH_RUNS:
        table.append(
            {
                "system": f"semsearch ingest whole process (whiten, {RUN_LABELS[name]})",
                "docs_per_s": round(n / median(name, "seconds"), 1),
            }
        )
    for row in table:
        row["vs_st_encode"] = round(row["docs_per_s"] / st_encode, 2)
    return {
        "documents": n,
        "rounds": args.rounds,
        "rounds_of_txtai_and_torch_backend": 1,
        "table": table,
        "txtai_query_ms_p50": round(runs["txtai"][0]["query_ms_p50"], 2),
        "first_ingest_with_export_s_100_docs": export,
        "peak_rss_mib": {name: round(max(r["peak_rss_mib"] for r in rs), 1) for name, rs in runs.items()},
        "runs": runs,
    }


def memory(args, work: Path) -> dict:
    rows = []
    for n in (20000, 60000, 117791):
        corpus = first_documents(n, work, args.wordnet)
        target = work / f"memory-{n}"
        shutil.rmtree(target, ignore_errors=True)
        result = measure([*SEMSEARCH, "ingest", str(corpus), "--index", str(target), "--quiet"])
        rows.append(
            {
                "documents": n,
                "seconds": round(result["seconds"], 1),
                "docs_per_s": round(n / result["seconds"], 1),
                "peak_rss_mib": round(result["peak_rss_mib"], 1),
                "disk_mib": round(disk_mib(target), 1),
            }
        )
        print(f"memory: {rows[-1]}", file=sys.stderr)
    full = work / "memory-117791"
    keep = work / "wordnet-full"
    shutil.rmtree(keep, ignore_errors=True)
    full.rename(keep)
    from semsearch import Index

    with Index.open(keep) as index:
        details = index.info()
    index_bytes = details["bytes"]["vector_index"] / details["documents"]
    growth = (rows[-1]["peak_rss_mib"] - rows[0]["peak_rss_mib"]) * 2**20
    documents = rows[-1]["documents"] - rows[0]["documents"]
    return {
        "rows": rows,
        "settings": "defaults: " + _settings(details),
        "peak_rss_growth_bytes_per_doc": round(growth / documents, 1),
        "vector_index_bytes_per_doc_at_full_size": round(index_bytes, 1),
        "what_must_be_in_memory": "the FAISS index being built and then written (it grows with the "
        "corpus: compare the two figures above), the encoder (ONNX Runtime, int8 weights), one chunk of "
        "4,096 documents and their vectors, SQLite's page cache. The raw vectors are streamed to disk while "
        "encoding and read back a block at a time to build the index.",
    }


def _settings(d: dict) -> str:
    """The settings an index was built with, from its info."""
    return (
        f"{d['transform']} P={d['power']} {d['dims']} dims, rerank {d['rerank']}, {d['index_type']} "
        f"({d['index_structure']}), backend {d['backend']}, quantize {d['quantize']}"
    )


def _queries(index, count: int) -> list[str]:
    """Query texts: the head words of documents spread over the corpus (WordNet titles)."""
    pks = np.linspace(0, len(index) - 1, count).astype(int)
    rows = index.store.get(pks.tolist())
    return [rows[pk]["title"].split(",")[0] for pk in pks if pk in rows]


def types(args, work: Path) -> dict:
    from semsearch import Index

    source = work / "wordnet-full"
    flat_copy = work / "types-flat"
    shutil.rmtree(flat_copy, ignore_errors=True)
    shutil.copytree(source, flat_copy)
    flat_build = measure([*SEMSEARCH, "refit", "--index", str(flat_copy), "--index-type", "flat"])
    rows = []
    with Index.open(flat_copy) as flat:
        texts = _queries(flat, 500)
        queries = flat.encoder.encode(texts)
        exact = [[h.id for h in hits] for hits in flat.search_vectors(queries, k=10, rerank=0)]
        where = ["pos=adv"]
        expected_filtered = len(flat.search_vectors(queries[:1], k=10, where=where, rerank=0)[0])
    for kind in ("flat", "hnsw", "ivf", "pq"):
        target = work / f"types-{kind}"
        if kind != "flat":
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(flat_copy, target)
        result = (
            flat_build
            if kind == "flat"
            else measure([*SEMSEARCH, "refit", "--index", str(target), "--index-type", kind])
        )
        with Index.open(target) as index:
            got = [[h.id for h in hits] for hits in index.search_vectors(queries, k=10, rerank=0)]
            recall = float(np.mean([len(set(g) & set(e)) / 10 for g, e in zip(got, exact)]))
            timings = []
            for query in queries:
                started = time.perf_counter()
                index.search_vectors(query[None], k=10, rerank=0)
                timings.append(time.perf_counter() - started)
            filtered = [len(h) for h in index.search_vectors(queries[:50], k=10, where=where, rerank=0)]
            details = index.info()
            rows.append(
                {
                    "index_type": kind,
                    "structure": details["index_structure"],
                    "build_s": round(result["seconds"], 1),
                    "build_peak_rss_mib": round(result["peak_rss_mib"], 1),
                    "recall@10_vs_flat": round(recall, 4),
                    "search_ms_p50": round(1000 * float(np.median(timings)), 3),
                    "search_ms_p99": round(1000 * float(np.percentile(timings, 99)), 3),
                    "bytes_per_doc": round(details["bytes"]["vector_index"] / len(index), 1),
                    "where_exact_k": all(n == expected_filtered for n in filtered),
                }
            )
        print(f"types: {rows[-1]}", file=sys.stderr)
    return {
        "documents": 117791,
        "dims": 128,
        "queries": len(texts),
        "rows": rows,
        "note": "build_s is a whole `semsearch refit --index-type` process (transform refit + index build)",
    }


def latency(args, work: Path) -> dict:
    from semsearch import Index

    source = work / "wordnet-full"
    out = {}
    with Index.open(source) as index:
        details = index.info()
        texts = _queries(index, 500)
        for rerank in (index.settings.rerank, 0):
            index.search(texts[0], k=10, rerank=rerank)  # warm: model loaded, files mapped
            timings = []
            for text in texts:
                started = time.perf_counter()
                index.search(text, k=10, rerank=rerank)
                timings.append(time.perf_counter() - started)
            out[f"warm_search_rerank_{rerank}"] = {
                "p50_ms": round(1000 * float(np.median(timings)), 2),
                "p99_ms": round(1000 * float(np.percentile(timings, 99)), 2),
            }
        from semsearch.encoding import Encoder

        for label, encoder in (
            ("index's", index.encoder),
            ("onnx fp32", Encoder(None, quantize="none")),
            ("onnx int8", Encoder(None, quantize="int8")),
            ("torch fp32", Encoder(None, quantize="none", backend="torch")),
        ):
            encoder.encode(texts[:1])
            timings = []
            for text in texts:
                started = time.perf_counter()
                encoder.encode([text])
                timings.append(time.perf_counter() - started)
            out[f"encode_only_p50_ms ({label})"] = round(1000 * float(np.median(timings)), 2)
    cold = [
        measure([*SEMSEARCH, "query", texts[i], "--index", str(source), "-k", "10"])["seconds"]
        for i in range(5)
    ]
    out["cold_cli_query_s_median"] = round(float(np.median(cold)), 2)
    help_runs = [measure([*SEMSEARCH, "--help"])["seconds"] for _ in range(5)]
    out["cli_help_s_median"] = round(float(np.median(help_runs)), 3)
    info_runs = [measure([*SEMSEARCH, "info", "--index", str(source)])["seconds"] for _ in range(5)]
    out["cli_info_s_median"] = round(float(np.median(info_runs)), 3)
    out["settings"] = "defaults: " + _settings(details) + "; k=10; 500 queries (WordNet head words)"
    return out


def million(args, work: Path) -> dict:
    """Synthetic vectors with the real corpus's mean and covariance (its spectrum), 1M rows."""
    from semsearch import Index

    n = args.million
    with Index.open(work / "wordnet-full") as index:
        stats = index.stats()
        mean, covariance = stats.mean, stats.covariance()
    values, basis = np.linalg.eigh(covariance)
    factor = (basis * np.sqrt(np.clip(values, 0, None))).astype(np.float32)
    vectors_path = work / "million.npy"
    corpus = work / "million.jsonl"
    rng = np.random.default_rng(0)
    array = np.lib.format.open_memmap(vectors_path, mode="w+", dtype="<f4", shape=(n, len(mean)))
    for begin in range(0, n, 100_000):
        rows = min(100_000, n - begin)
        array[begin : begin + rows] = (
            rng.standard_normal((rows, len(mean)), dtype=np.float32) @ factor.T + mean
        )
    array.flush()
    del array
    with open(corpus, "w") as handle:
        for i in range(n):
            handle.write(f'{{"id": "s{i}", "text": "synthetic vector {i}", "group": {i % 1000}}}\n')
    queries = rng.standard_normal((200, len(mean)), dtype=np.float32) @ factor.T + mean.astype(np.float32)
    rows = []
    target = work / "million-index"
    shutil.rmtree(target, ignore_errors=True)
    command = [*SEMSEARCH, "ingest", str(corpus), "--vectors", str(vectors_path), "--index", str(target)]
    result = measure(
        [
            *command,
            "--transform",
            "whiten",
            "--power",
            "0.5",
            "--dims",
            "128",
            "--index-type",
            "flat",
            "--quiet",
        ]
    )
    build = {"flat": result}
    exact: list[list[str]] = []
    for kind in ("flat", "ivf", "pq", "hnsw"):
        if kind != "flat":
            build[kind] = measure([*SEMSEARCH, "refit", "--index", str(target), "--index-type", kind])
        with Index.open(target) as index:
            found = [[h.id for h in hits] for hits in index.search_vectors(queries, k=10)]
            exact = exact if kind != "flat" else found
            recall = float(np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, exact)]))
            timings = []
            for query in queries:
                started = time.perf_counter()
                index.search_vectors(query[None], k=10)
                timings.append(time.perf_counter() - started)
            details = index.info()
        rows.append(
            {
                "index_type": kind,
                "structure": details["index_structure"],
                "build_s": round(build[kind]["seconds"], 1),
                "peak_rss_mib": round(build[kind]["peak_rss_mib"], 1),
                "vector_index_mib": round(details["bytes"]["vector_index"] / 2**20, 1),
                "index_dir_mib": round(disk_mib(target), 1),
                "search_ms_p50": round(1000 * float(np.median(timings)), 3),
                "recall@10_vs_flat": round(recall, 4),
            }
        )
        print(f"million: {rows[-1]}", file=sys.stderr)
    return {
        "vectors": n,
        "dims_in": int(len(mean)),
        "dims_indexed": 128,
        "rows": rows,
        "note": "flat build_s is the whole ingest (JSONL + --vectors into SQLite, statistics, whitening fit, "
        "index); the others a refit to that type. search_ms includes the transform and the metadata join. Recall is "
        "a worst case: Gaussian vectors have the corpus's spectrum but none of its clusters (the real 117k "
        "WordNet vectors: see types).",
    }


SECTIONS = {
    "profile": profile,
    "throughput": throughput,
    "memory": memory,
    "types": types,
    "latency": latency,
    "million": million,
}


def write_report(results: dict, out: Path) -> None:
    header = "Machine: 2 cores, no GPU; torch 2.13.0 CPU. Each section lists the command that made it."
    write_sections(results, out, "scale", "Speed and scale", header, SECTIONS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--wordnet", type=Path, default=WORDNET)
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--million", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "semsearch-scale")
    parser.add_argument("--out", type=Path, default=OUT)


def run(config: argparse.Namespace) -> Rows:
    require(config.wordnet / "corpus.jsonl", "WordNet corpus (--wordnet DIR)")
    config.work.mkdir(parents=True, exist_ok=True)
    # The onnx backend's exported graphs: kept with the benchmark's work, so its export is measured.
    os.environ["SEMSEARCH_CACHE"] = str(config.work / "onnx-cache")
    results = (
        json.loads((config.out / "scale.json").read_text()) if (config.out / "scale.json").is_file() else {}
    )
    for name in config.sections.split(","):
        print(f"== {name}", file=sys.stderr)
        results[name] = section_stamp()
        results[name].update(SECTIONS[name](config, config.work))
        write_report(results, config.out)
    return results
