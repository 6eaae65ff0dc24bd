"""Long documents (issue 13): a BEIR set of long documents made from a BEIR set of short ones, searched truncated
(one vector per document, cut at the model's 256 tokens) and chunked (passages, a document scored by its best),
written to benchmarks/results/longdocs.md and longdocs.json.

    python -m benchmarks longdocs [--beir ../shared/data/scifact] [--work DIR] [--seed 13]
                                            [--configs 0/0,256/0,256/32,256/64,128/16]

The long set: the source's documents in a fixed random order (--seed), each "Title. text", concatenated into
documents of 1,500 to 3,000 words (lengths drawn uniformly, the same seed); a query is relevant to a long
document when one of its pieces was relevant to it (the highest grade). Every configuration (chunk tokens /
overlap; 0/0 is truncation) is an ingest with the defaults (int8 encoder, whitening P=0.5 to 128 dims, rerank
100) into its own index, timed as a whole (documents/s and passages/s), then searched dense, keyword and hybrid
(alpha 0.5): nDCG@10 and recall@100 by pytrec_eval. Keyword search reads the whole document whatever the
chunking: its figure is the same in every row, shown as the reference it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.suite import OUT, REPO, Rows, command_line, markdown_table, require

CLAIM = "Long documents: truncated against chunked passages (a document scored by its best)"

MODES = ("dense", "keyword", "hybrid")


def make_long_set(source: Path, target: Path, seed: int) -> Path:
    """The long-document BEIR directory (made once per seed)."""
    from semsearch.evaluation.datasets import load_beir, read_qrels

    if (target / "qrels" / "test.tsv").is_file():
        return target
    data = load_beir(source)
    docs = [json.loads(line) for line in data.corpus_path.read_text().splitlines()]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(docs))
    owner: dict[str, str] = {}
    long_docs, current, words, goal = [], [], 0, int(rng.integers(1500, 3001))
    for i in order:
        doc = docs[i]
        piece = (f"{doc['title']}. " if doc.get("title") else "") + doc["text"]
        current.append(piece)
        owner[doc["_id"]] = f"long-{len(long_docs)}"
        words += len(piece.split())
        if words >= goal:
            long_docs.append({"_id": f"long-{len(long_docs)}", "title": "", "text": "\n".join(current)})
            current, words, goal = [], 0, int(rng.integers(1500, 3001))
    if current:
        long_docs.append({"_id": f"long-{len(long_docs)}", "title": "", "text": "\n".join(current)})
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with open(target / "corpus.jsonl", "w") as out:
        out.writelines(json.dumps(d) + "\n" for d in long_docs)
    shutil.copy(source / "queries.jsonl", target / "queries.jsonl")
    qrels: dict[tuple[str, str], int] = {}
    for query, judged in read_qrels(source / "qrels" / "test.tsv").items():
        for doc_id, grade in judged.items():
            key = (query, owner[doc_id])
            qrels[key] = max(grade, qrels.get(key, 0))
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for (q, d), g in qrels.items()]
    (target / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return target


def measure(directory: Path, work: Path, chunk_tokens: int, overlap: int) -> list[dict]:
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.metrics import evaluate_run

    data = load_beir(directory)
    path = work / f"index-{chunk_tokens}-{overlap}"
    shutil.rmtree(path, ignore_errors=True)
    started = time.perf_counter()
    with Index.create(path, chunk_tokens=chunk_tokens, chunk_overlap=overlap) as index:
        report = index.ingest(data.corpus_path)
        seconds = time.perf_counter() - started
        ids = list(data.queries)
        texts = [data.queries[q] for q in ids]
        vectors = index.encoder.encode(texts)
        rows = []
        for mode in MODES:
            results = index.search_vectors(vectors, k=100, texts=texts, mode=mode)
            run = {q: {h.id: h.score for h in hits} for q, hits in zip(ids, results)}
            metrics = evaluate_run(data.qrels, run, ["ndcg@10", "recall@100"])
            rows.append(
                {
                    "chunk_tokens": chunk_tokens,
                    "chunk_overlap": overlap,
                    "mode": mode,
                    "ndcg@10": round(metrics["ndcg@10"], 4),
                    "recall@100": round(metrics["recall@100"], 4),
                    "documents": len(index),
                    "passages": index.state.rows,
                    "ingest_s": round(seconds, 1),
                    "docs_per_s": round(len(index) / seconds, 2),
                    "passages_per_s": round(index.state.rows / seconds, 1),
                    "added": report.added,
                }
            )
    shutil.rmtree(path, ignore_errors=True)
    return rows


def write(rows: list[dict], command: str, source: Path, long_set: Path) -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    words = [
        len(json.loads(line)["text"].split()) for line in (long_set / "corpus.jsonl").read_text().splitlines()
    ]
    lines = [
        "# Long documents: truncated against chunked",
        "",
        f"`{command}` ({stamp}; load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}). "
        "Machine: 2 cores, no GPU; timings are of whole ingests on a machine shared with other work.",
        "",
        f"Data: {source.name}'s documents concatenated into {len(words)} long documents of {min(words)}-{max(words)}"
        f" words (mean {np.mean(words):.0f}); queries and judgements carried over (benchmarks/longdocs.py). "
        "chunk_tokens 0 is one vector per document, truncated at the model's 256 tokens; otherwise passages of "
        "that many tokens (title and special tokens included) overlapping by chunk_overlap, a document scored by "
        "its best passage. Defaults otherwise (int8, whiten P=0.5 to 128 dims, rerank 100; hybrid alpha 0.5).",
        "",
        *markdown_table(rows),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "longdocs.md").write_text("\n".join(lines))
    (OUT / "longdocs.json").write_text(
        json.dumps({"command": command, "at": stamp, "rows": rows}, indent=1) + "\n"
    )
    print("\n".join(lines))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beir", type=Path, default=REPO.parent / "shared" / "data" / "scifact")
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "longdocs")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--configs", default="0/0,256/0,256/32,256/64,128/16")


def run(config: argparse.Namespace) -> Rows:
    require(config.beir / "corpus.jsonl", "BEIR directory")
    long_set = make_long_set(config.beir, config.work / f"{config.beir.name}-long-{config.seed}", config.seed)
    rows = []
    for setting in config.configs.split(","):
        tokens, overlap = (int(part) for part in setting.split("/"))
        print(f"chunk {tokens}/{overlap} ...", file=sys.stderr, flush=True)
        rows += measure(long_set, config.work, tokens, overlap)
    command = command_line()
    write(rows, command.strip(), config.beir, long_set)
    return rows
