"""The keyword side's ranking on every query style and its engine's speed; written to
benchmarks/results/keyword-engine.md and keyword-engine.json.

    python -m benchmarks keyword_engine [--sections quality,latency] [--work DIR] [--wordnet-index DIR]

- quality: SciFact and Cranfield stored as an ingest stores them (no encoding: the keyword side reads only the
  store), queried in each style of semsearch.evaluation.query_styles (as they are, short, paragraph-long,
  repeating words): nDCG@10 and p50 ms of semsearch's keyword search (bm25 matrix; stopwords dropped, repeats
  kept), the same with stopwords kept, with words deduplicated (as the engine before this one did), FTS5's own ranking of the
  same query (the engine before), and the plain-FTS5 reference: the query's words quoted and ORed as they stand,
  `ORDER BY bm25(keywords)`, and that with the title weighted 2.
- latency: the 117,791 WordNet glosses ingested with the defaults (HNSW, 128 dims, rerank 100), one process,
  warm `Index.search`, k=10, one query at a time: dense, keyword and hybrid with the matrix engine, and keyword
  and hybrid with FTS5 ranking (the engine before), p50 / p90 ms, for short queries (a gloss's first 4-6 words)
  and paragraph-long ones (Cranfield's paragraph-style queries, query_styles.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, REPO, Rows, command_line, markdown_table, require

CLAIM = "The keyword side's ranking on every query style, and its engine's speed at 117k documents"

SETS = {"scifact": DATA / "scifact", "cranfield": DATA / "cranfield"}


def beir(name: str, work: Path):
    from semsearch.evaluation.datasets import ensure_beir, load_beir

    return load_beir(ensure_beir(SETS[name], work / "converted"))


@contextmanager
def fts5_engine():
    """The keyword side ranked by FTS5 itself (the engine before the matrix), for comparison."""
    from semsearch.retrieval import keywords

    saved = keywords.KeywordRetriever.matrix
    keywords.KeywordRetriever.matrix = lambda self: None
    try:
        yield
    finally:
        keywords.KeywordRetriever.matrix = saved


@contextmanager
def patched(name: str, value):
    from semsearch.retrieval import keywords

    saved = getattr(keywords, name)
    setattr(keywords, name, value)
    try:
        yield
    finally:
        setattr(keywords, name, saved)


def deduplicated(text: str) -> list[str]:
    from semsearch.retrieval import keywords

    words = list(dict.fromkeys(word.lower() for word in keywords.WORD.findall(text)))
    return [word for word in words if word not in keywords.STOPWORDS] or words


def plain_fts5(store, title_weight: float = 1.0):
    """FTS5 bm25 (porter unicode61), the query's words quoted and ORed as they stand."""
    from semsearch.retrieval.keywords import WORD

    def top(text: str) -> list[tuple[int, float]]:
        expression = " OR ".join('"' + word.replace('"', '""') + '"' for word in WORD.findall(text))
        sql = "SELECT rowid, bm25(keywords, ?, 1.0) AS s FROM keywords WHERE keywords MATCH ? ORDER BY s LIMIT 100"
        return [(pk, -score) for pk, score in store.db.execute(sql, [title_weight, expression])]

    return top


def quality(work: Path) -> list[dict]:
    rows = []
    for name, path in SETS.items():
        if not path.exists():
            print(f"skipped {name}: {path} not found", file=sys.stderr)
            continue
        rows += quality_of(name, work)
    return rows


def quality_of(name: str, work: Path) -> list[dict]:
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.evaluation.query_styles import STYLES, judged, query_styles
    from semsearch.ingest.documents import Document
    from semsearch.retrieval import keywords
    from semsearch.storage.store import DocumentStore

    rows = []
    data = beir(name, work)
    docs = [json.loads(line) for line in data.corpus_path.read_text().splitlines()]
    store_path = work / f"{name}-keywords.db"
    for leftover in work.glob(f"{name}-keywords.db*"):
        leftover.unlink()
    store = DocumentStore(store_path)
    with store.transaction():
        store.insert([Document(d["_id"], d["text"], d.get("title") or None) for d in docs], range(len(docs)))
    retriever = keywords.KeywordRetriever(store, len(docs))
    styles = query_styles(data)
    systems = {
        "semsearch keyword (bm25 matrix)": (lambda t: retriever.top([t], 100, None)[0], {}),
        "keyword, stopwords kept": (
            lambda t: retriever.top([t], 100, None)[0],
            {"STOPWORDS": frozenset()},
        ),
        "keyword, words deduplicated (before)": (
            lambda t: retriever.top([t], 100, None)[0],
            {"query_words": deduplicated},
        ),
        "keyword by FTS5 ranking (engine before)": (lambda t: retriever._top(t, 100, None), {}),
        "plain FTS5 (reference)": (plain_fts5(store), {}),
        "plain FTS5, title weight 2": (plain_fts5(store, 2.0), {}),
    }
    for style in STYLES:
        queries = judged(styles, style)
        ids, texts = list(queries), list(queries.values())
        for system, (search, patches) in systems.items():
            with contextlib_patches(patches):
                search(texts[0])  # the matrix read once the store is seen unchanged
                search(texts[0])
                found, ms = timed(search, texts)
            run = {q: {docs[pk]["_id"]: score for pk, score in hits} for q, hits in zip(ids, found)}
            metrics = evaluate_run(data.qrels, run, ["ndcg@10"])
            rows.append(
                {
                    "dataset": name,
                    "style": style,
                    "words": round(float(np.mean([len(keywords.WORD.findall(t)) for t in texts])), 1),
                    "system": system,
                    "ndcg@10": round(metrics["ndcg@10"], 4),
                    "p50_ms": round(float(np.median(ms)), 3),
                    "p90_ms": round(float(np.percentile(ms, 90)), 3),
                }
            )
            print(rows[-1], file=sys.stderr)
    store.close()
    return rows


@contextmanager
def contextlib_patches(patches: dict):
    if not patches:
        yield
        return
    (name, value), *rest = patches.items()
    with patched(name, value), contextlib_patches(dict(rest)):
        yield


def timed(search, texts):
    found, ms = [], []
    for text in texts:
        started = time.perf_counter()
        found.append(search(text))
        ms.append(1000 * (time.perf_counter() - started))
    return found, ms


def latency(work: Path, path: Path | None) -> list[dict]:
    from semsearch import Index
    from semsearch.evaluation.query_styles import judged, query_styles

    path = path or work / "wordnet-117k"
    if not (path / "manifest.json").is_file():
        shutil.rmtree(path, ignore_errors=True)
        with Index.create(path) as index:
            index.ingest(DATA / "wordnet" / "corpus.jsonl")
    glosses = [
        json.loads(line)["text"] for line in (DATA / "wordnet" / "corpus.jsonl").read_text().splitlines()
    ]
    picked = np.random.default_rng(7).choice(len(glosses), 200, replace=False)
    short = [" ".join(glosses[i].split()[: 4 + i % 3]) for i in picked]
    paragraph = list(judged(query_styles(beir("cranfield", work)), "paragraph").values())[:200]
    variants = [  # (mode, keyword engine, patches of keywords.py)
        ("dense", "", {}),
        ("keyword", "bm25 matrix", {}),
        ("hybrid", "bm25 matrix", {}),
        ("keyword", "bm25 matrix, stopwords kept", {"STOPWORDS": frozenset()}),
        ("hybrid", "bm25 matrix, stopwords kept", {"STOPWORDS": frozenset()}),
        ("keyword", "FTS5 ranking (before)", {"fts5": True}),
        ("hybrid", "FTS5 ranking (before)", {"fts5": True}),
    ]
    rows = []
    with Index.open(path) as index:
        for queries, style in ((short, "short"), (paragraph, "paragraph")):
            words = round(float(np.mean([len(q.split()) for q in queries])), 1)
            # every variant searched in turn for each query: the machine's load swings hit them alike
            ms: list[list[float]] = [[] for _ in variants]
            for n, query in enumerate(queries[:20] + queries):  # the first 20: warm (model, matrix, pages)
                for i, (mode, _, patches) in enumerate(variants):
                    with engine(patches):
                        started = time.perf_counter()
                        index.search(query, k=10, mode=mode)
                        if n >= 20:
                            ms[i].append(1000 * (time.perf_counter() - started))
            dense = float(np.median(ms[0]))
            for (mode, name, _), timings in zip(variants, ms):
                rows.append(
                    {
                        "documents": len(index),
                        "queries": f"{style} ({words} words)",
                        "mode": mode,
                        "keyword engine": name,
                        "p50_ms": round(float(np.median(timings)), 2),
                        "p90_ms": round(float(np.percentile(timings, 90)), 2),
                        "p50_vs_dense": f"{float(np.median(timings)) / dense:.2f}x",
                    }
                )
                print(rows[-1], file=sys.stderr)
        rows.append(matrix_cost(index))
    return rows


def matrix_cost(index) -> dict:
    """What reading the bm25 matrix (after a write, or on a process's first queries) costs, and its size."""
    from semsearch.retrieval.bm25matrix import Bm25Matrix

    started = time.perf_counter()
    matrix = Bm25Matrix.read(index.store)
    seconds = time.perf_counter() - started
    arrays = (matrix.starts, matrix.pks, matrix.weights, matrix.idf)
    return {
        "documents": len(index),
        "queries": "(reading the matrix once)",
        "mode": "keyword",
        "keyword engine": "bm25 matrix",
        "p50_ms": round(1000 * seconds, 1),
        "p90_ms": "",
        "p50_vs_dense": f"{len(matrix.pks):,} postings, {sum(a.nbytes for a in arrays) / 2**20:.0f} MiB",
    }


@contextmanager
def engine(patches: dict):
    patches = dict(patches)
    if patches.pop("fts5", False):
        with fts5_engine(), contextlib_patches(patches):
            yield
    else:
        with contextlib_patches(patches):
            yield


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default="quality,latency")
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "keyword-engine")
    parser.add_argument(
        "--wordnet-index",
        type=Path,
        help="An index of all WordNet glosses made with the defaults (default: made)",
    )


def run(config: argparse.Namespace) -> Rows:
    from semsearch.storage.files import atomic_write_text

    config.work.mkdir(parents=True, exist_ok=True)
    sections = config.sections.split(",")
    if "latency" in sections:
        require(DATA / "wordnet", "WordNet")
    command = command_line()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results_path = OUT / "keyword-engine.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    titles = {
        "quality": "Ranking by query style (nDCG@10; p50/p90 ms per query, one at a time)",
        "latency": "Query latency, 117,791 WordNet glosses, defaults, warm `Index.search`, k=10",
    }
    for section in sections:
        rows = quality(config.work) if section == "quality" else latency(config.work, config.wordnet_index)
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        results[section] = {"command": command, "when": f"{stamp}; load average {load}", "rows": rows}
    atomic_write_text(results_path, json.dumps(results, indent=1) + "\n")
    lines = [
        "# The keyword engine",
        "",
        "Machine: 2 cores, no GPU, shared with other jobs. See benchmarks/keyword_engine.py.",
        "",
    ]
    for section in ("quality", "latency"):
        if section in results:
            got = results[section]
            lines += [f"## {titles[section]}", "", f"`{got['command']}` ({got['when']})", ""]
            lines += markdown_table(got["rows"])
    atomic_write_text(OUT / "keyword-engine.md", "\n".join(lines))
    print("\n".join(lines))
    return rows
