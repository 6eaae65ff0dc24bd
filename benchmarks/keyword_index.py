"""The keyword index (issue 13): quality against a standard BM25, query latency at 117k documents, and what it
costs an ingest; written to benchmarks/results/keyword_index.md and keyword_index.json.

    .venv/bin/python benchmarks/keyword_index.py [--sections quality,latency,ingest] [--work DIR]
                                           [--docs 20000] [--rounds 2] [--wordnet-index DIR]

- quality: semsearch's keyword search (SQLite FTS5 bm25, porter stemming, query words quoted and ORed, Lucene's
  English stopwords dropped from queries; keywords.py) on the documents of SciFact and Cranfield, stored as an
  ingest stores them (no encoding: the keyword side reads only the store), against bm25s 0.3 (Lucene's BM25
  variant, its English stopwords, PyStemmer's English stemmer: a standard BM25 with an IDF that never floors),
  and FTS5 with every query word kept: nDCG@10 (pytrec_eval) and p50 ms per query, one at a time.
- latency: the 117,791 WordNet glosses ingested with the defaults (its index kept in --work), warm p50 / p99 of
  `Index.search` in each mode over 200 glosses' first words as queries (2-4 words), one at a time, k=10.
- ingest: --docs WordNet glosses ingested with the defaults, as is and with the keyword index's triggers
  dropped before the ingest (no keyword index: what it costs), alternated --rounds times, whole ingests timed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results"
SETS = {"scifact": DATA / "scifact", "cranfield": DATA / "cranfield"}


def beir(name: str, work: Path):
    from semsearch.evaluation.datasets import ensure_beir, load_beir

    return load_beir(ensure_beir(SETS[name], work / "converted"))


def quality(work: Path) -> list[dict]:
    rows = []
    for name, path in SETS.items():
        if not path.exists():
            print(f"skipped {name}: {path} not found", file=sys.stderr)
            continue
        rows += quality_of(name, work)
    return rows


def quality_of(name: str, work: Path) -> list[dict]:
    import bm25s
    import Stemmer

    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.ingest.documents import Document
    from semsearch.retrieval import keywords
    from semsearch.storage.store import DocumentStore

    rows = []
    data = beir(name, work)
    docs = [json.loads(line) for line in data.corpus_path.read_text().splitlines()]
    store_path = work / f"{name}-keywords.db"
    store_path.unlink(missing_ok=True)
    store = DocumentStore(store_path)
    with store.transaction():
        store.insert([Document(d["_id"], d["text"], d.get("title") or None) for d in docs], range(len(docs)))
    retriever = keywords.KeywordRetriever(store)
    ids, texts = list(data.queries), list(data.queries.values())

    def run_of(found):
        return {q: {docs[pk]["_id"]: score for pk, score in hits} for q, hits in zip(ids, found)}

    for label, stop in (("semsearch keyword (FTS5 bm25)", True), ("FTS5 bm25, stopwords kept", False)):
        saved = keywords.STOPWORDS
        keywords.STOPWORDS = keywords.STOPWORDS if stop else frozenset()
        try:
            found, ms = timed(lambda text: retriever.top([text], 100, None)[0], texts)
        finally:
            keywords.STOPWORDS = saved
        rows.append(row(name, label, evaluate_run(data.qrels, run_of(found), ["ndcg@10"]), ms))
    stemmer = Stemmer.Stemmer("english")
    model = bm25s.BM25(method="lucene")
    corpus = [(d.get("title") or "") + " " + d["text"] for d in docs]
    model.index(
        bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )

    def bm25s_top(text):
        tokens = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        found, scores = model.retrieve(tokens, k=100, show_progress=False)
        return [(int(pk), float(s)) for pk, s in zip(found[0], scores[0]) if s > 0]

    found, ms = timed(bm25s_top, texts)
    rows.append(
        row(name, "bm25s 0.3 (Lucene BM25)", evaluate_run(data.qrels, run_of(found), ["ndcg@10"]), ms)
    )
    store.close()
    return rows


def timed(search, texts):
    found, seconds = [], []
    for text in texts:
        started = time.perf_counter()
        found.append(search(text))
        seconds.append(time.perf_counter() - started)
    return found, 1000 * float(np.median(seconds))


def row(dataset: str, system: str, metrics: dict, p50_ms: float) -> dict:
    return {
        "dataset": dataset,
        "system": system,
        "ndcg@10": round(metrics["ndcg@10"], 4),
        "p50_ms": round(p50_ms, 3),
    }


def wordnet_corpus(work: Path, n: int | None) -> Path:
    source = DATA / "wordnet" / "corpus.jsonl"
    if n is None:
        return source
    path = work / f"wordnet-{n}.jsonl"
    if not path.is_file():
        with open(source) as lines, open(path, "w") as out:
            for _, line in zip(range(n), lines):
                out.write(line)
    return path


def latency(work: Path, path: Path | None) -> list[dict]:
    from semsearch import Index

    path = path or work / "wordnet-117k"
    if not (path / "manifest.json").is_file():
        shutil.rmtree(path, ignore_errors=True)
        with Index.create(path) as index:
            index.ingest(wordnet_corpus(work, None))
    glosses = [
        json.loads(line)["text"] for line in (DATA / "wordnet" / "corpus.jsonl").read_text().splitlines()
    ]
    picked = np.random.default_rng(7).choice(len(glosses), 200, replace=False)
    queries = [" ".join(glosses[i].split()[: 2 + i % 3]) for i in picked]
    rows = []
    with Index.open(path) as index:
        for mode in ("keyword", "dense", "hybrid"):
            for query in queries[:20]:
                index.search(query, k=10, mode=mode)  # warm: model loaded, pages cached
            seconds = []
            for query in queries:
                started = time.perf_counter()
                index.search(query, k=10, mode=mode)
                seconds.append(time.perf_counter() - started)
            ms = 1000 * np.array(seconds)
            rows.append(
                {
                    "documents": len(index),
                    "mode": mode,
                    "p50_ms": round(float(np.median(ms)), 3),
                    "p99_ms": round(float(np.percentile(ms, 99)), 3),
                    "queries": len(queries),
                }
            )
    return rows


def ingest_cost(work: Path, docs: int, rounds: int) -> list[dict]:
    from semsearch import Index

    corpus = wordnet_corpus(work, docs)
    seconds: dict[str, list[float]] = {"with keyword index": [], "without (triggers dropped)": []}
    for _ in range(rounds):
        for label in seconds:
            path = work / "ingest-cost"
            shutil.rmtree(path, ignore_errors=True)
            index = Index.create(path)
            if label.startswith("without"):
                with sqlite3.connect(path / "documents.db") as db:
                    for trigger in ("keywords_insert", "keywords_delete", "keywords_update"):
                        db.execute(f"DROP TRIGGER {trigger}")
            started = time.perf_counter()
            index.ingest(corpus)
            seconds[label].append(time.perf_counter() - started)
            index.close()
    shutil.rmtree(work / "ingest-cost", ignore_errors=True)
    stored = store_seconds(corpus, work)
    base = np.median(seconds["without (triggers dropped)"])
    return [
        {
            "documents": docs,
            "ingest": label,
            "seconds_each": " / ".join(f"{s:.1f}" for s in runs),
            "docs_per_s": round(docs / float(np.median(runs)), 1),
            "cost_vs_without": f"{100 * (np.median(runs) / base - 1):+.1f}%",
            "store_insert_s": stored[label],
        }
        for label, runs in seconds.items()
    ]


def store_seconds(corpus: Path, work: Path) -> dict[str, float]:
    """The documents' SQLite insert alone (no encoding), with and without the keyword index's triggers: the
    keyword index's own cost, free of the encoder's noise (median of 3)."""
    from semsearch.ingest.documents import Corpus, FieldNames
    from semsearch.storage.store import DocumentStore

    docs = list(Corpus(corpus, FieldNames()).documents())
    out = {}
    for label in ("with keyword index", "without (triggers dropped)"):
        runs = []
        for _ in range(3):
            path = work / "store-cost.db"
            for leftover in work.glob("store-cost.db*"):
                leftover.unlink()
            store = DocumentStore(path)
            if label.startswith("without"):
                for trigger in ("keywords_insert", "keywords_delete", "keywords_update"):
                    store.db.execute(f"DROP TRIGGER {trigger}")
            started = time.perf_counter()
            with store.transaction():
                store.insert(docs, range(len(docs)))
            runs.append(time.perf_counter() - started)
            store.close()
        out[label] = round(float(np.median(runs)), 2)
    for leftover in work.glob("store-cost.db*"):
        leftover.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sections", default="quality,latency,ingest")
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "keyword")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--wordnet-index",
        type=Path,
        help="An index of all WordNet glosses made with the defaults (default: made)",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    sections = args.sections.split(",")
    if ("latency" in sections or "ingest" in sections) and not (DATA / "wordnet").exists():
        sys.exit(f"skipped: {DATA / 'wordnet'} not found (benchmarks read ../shared/data beside the repo)")
    command = command_line()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results = (
        json.loads((OUT / "keyword_index.json").read_text()) if (OUT / "keyword_index.json").is_file() else {}
    )
    titles = {
        "quality": "Quality against a standard BM25",
        "latency": "Query latency, 117,791 WordNet glosses (warm)",
        "ingest": "What the keyword index costs an ingest",
    }
    for section in sections:
        rows = {
            "quality": lambda: quality(args.work),
            "latency": lambda: latency(args.work, args.wordnet_index),
            "ingest": lambda: ingest_cost(args.work, args.docs, args.rounds),
        }[section]()
        results[section] = {"command": command.strip(), "at": stamp, "load": load(), "rows": rows}
    lines = [
        "# The keyword index",
        "",
        "Machine: 2 cores, no GPU. See benchmarks/keyword_index.py for what each section does.",
        "",
    ]
    for section in ("quality", "latency", "ingest"):
        if section in results:
            done = results[section]
            lines += [
                f"## {titles[section]}",
                "",
                f"`{done['command']}` ({done['at']}; load average {done['load']})",
                "",
            ]
            lines += markdown_table(done["rows"])
    (OUT / "keyword_index.md").write_text("\n".join(lines))
    (OUT / "keyword_index.json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(lines))


def load() -> str:
    import os

    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
