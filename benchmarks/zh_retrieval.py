"""Chinese keyword (and dense) retrieval (issue 27): which tokenization FTS5 should see for Chinese text, measured
on retrieval sets built from the Chinese sentence-pair files (semsearch.evaluation.zh_retrieval: a text1 as
query, its label-1 partners relevant, every other sentence of the file a distractor); written to
benchmarks/results/zh-retrieval.md.

    .venv/bin/python benchmarks/zh_retrieval.py [--queries 500] [--dense-pairs 2000] [--models minilm,multilingual]
        [--semsearch multilingual] [--ingest-rounds 2]

- keyword: plain SQLite FTS5 (unicode61, bm25, no stemming), the same segmentation applied to documents and
  queries, query words quoted and ORed: unsegmented (what unicode61 alone does), character bigrams, jieba
  search-mode words. nDCG@10 (pytrec_eval), the whole file's sentences as the corpus.
- dense (when --models is given): each model over the first --dense-pairs pairs' sentences, cosine top 10,
  beside the keyword side on the same smaller set and their fusion (min-max normalised, dense weights 0.3,
  0.5, 0.7).
- semsearch (--semsearch MODEL): each set of SEMSEARCH_SETS ingested by semsearch itself with that model and
  its defaults (calibration included), its dense, keyword and default searches beside plain FTS5: issue 27's
  targets.
- ingest (--ingest-rounds N): whole ingests by the bundled and the multilingual model, alternated.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "zh"
OUT = REPO / "benchmarks" / "results"
FILES = {
    "ATEC-test": "ATEC/ATEC.test.data",
    "BQ-valid": "BQ/BQ.valid.data",
    "LCQMC-valid": "LCQMC/LCQMC.valid.data",
    "PAWSX-test": "PAWSX/PAWSX.test.data",
}
# The sets semsearch's own search is measured on: file, the label from which a pair is a paraphrase, and how
# many sentences a document holds (1: the sentences themselves; more: evaluation.zh_retrieval.grouped).
SEMSEARCH_SETS = {
    "ATEC-test": ("ATEC/ATEC.test.data", 1.0, 1),
    "ATEC-valid": ("ATEC/ATEC.valid.data", 1.0, 1),
    "BQ-valid": ("BQ/BQ.valid.data", 1.0, 1),
    "LCQMC-valid": ("LCQMC/LCQMC.valid.data", 1.0, 1),
    "PAWSX-test": ("PAWSX/PAWSX.test.data", 1.0, 1),
    "PAWSX-valid": ("PAWSX/PAWSX.valid.data", 1.0, 1),
    "STS-B-test (label >= 4)": ("STS-B/STS-B.test.data", 4.0, 1),
    "LCQMC-valid, 5 sentences a document": ("LCQMC/LCQMC.valid.data", 1.0, 5),
    "BQ-valid, 5 sentences a document": ("BQ/BQ.valid.data", 1.0, 5),
}
METHODS = ("none", "bigram", "jieba", "bigram+unigram", "jieba+unigram")
DEPTH = 100
ALPHAS = (0.3, 0.5, 0.7)  # dense weights of the fusion shown


def analyzer(method: str):
    from semsearch.cjk import segment

    return (lambda text: text) if method == "none" else (lambda text: segment(text, method))


def keyword_run(data, method: str, depth: int = DEPTH) -> tuple[dict, float]:
    """FTS5 over the set's corpus, `method`'s words in documents and queries; the run and seconds to index."""
    analyze = analyzer(method)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='unicode61')")
    ids = list(data.corpus)
    began = time.perf_counter()
    db.executemany(
        "INSERT INTO docs(rowid, text) VALUES (?, ?)",
        ((n, analyze(data.corpus[doc])) for n, doc in enumerate(ids)),
    )
    seconds = time.perf_counter() - began
    run = {}
    for query_id, text in data.queries.items():
        words = dict.fromkeys(analyze(text).split())
        expression = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        if not expression:
            continue
        rows = db.execute(
            "SELECT rowid, -bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
            (expression, depth),
        ).fetchall()
        run[query_id] = {ids[rowid]: float(score) for rowid, score in rows}
    return run, seconds


def ndcg(data, run: dict) -> float:
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.evaluation.zh_retrieval import without_own

    return round(evaluate_run(data.qrels, without_own(run, data.own), ("ndcg@10",))["ndcg@10"], 4)


def keyword_section(queries: int) -> list[dict]:
    from semsearch.evaluation.zh_retrieval import read_pairs, retrieval_set

    rows = []
    for name, relative in FILES.items():
        data = retrieval_set(name, read_pairs(DATA / relative), max_queries=queries)
        row = {"set": name, "queries": len(data.queries), "documents": len(data.corpus)}
        for method in METHODS:
            run, seconds = keyword_run(data, method)
            row[f"{method} nDCG@10"] = ndcg(data, run)
            row[f"{method} index s"] = round(seconds, 2)
        rows.append(row)
        print(row, flush=True)
    return rows


def dense_run(data, model: str, depth: int = DEPTH) -> tuple[dict, float]:
    from semsearch.encoding import Encoder

    encoder = Encoder(None if model == "minilm" else model, quantize="int8")
    ids = list(data.corpus)
    began = time.perf_counter()
    docs = encoder.encode([data.corpus[d] for d in ids])
    per_second = len(ids) / (time.perf_counter() - began)
    query_ids = list(data.queries)
    queries = encoder.encode([data.queries[q] for q in query_ids])  # USE: no query prefix
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scores = queries @ docs.T
    run = {}
    for row, query_id in enumerate(query_ids):
        top = np.argsort(-scores[row])[:depth]
        run[query_id] = {ids[i]: float(scores[row, i]) for i in top}
    return run, per_second


def fused(dense: dict, keyword: dict, alpha: float = 0.5) -> dict:
    """Min-max normalised scores mixed with dense weight alpha (a document missing from a side scores 0 there)."""

    def scaled(scores: dict) -> dict:
        if not scores:
            return {}
        low, high = min(scores.values()), max(scores.values())
        return {d: (s - low) / (high - low) if high > low else 1.0 for d, s in scores.items()}

    out = {}
    for query_id in dense.keys() | keyword.keys():
        a, b = scaled(dense.get(query_id, {})), scaled(keyword.get(query_id, {}))
        out[query_id] = {d: alpha * a.get(d, 0.0) + (1 - alpha) * b.get(d, 0.0) for d in a.keys() | b.keys()}
    return out


def dense_section(models: list[str], pairs: int, queries: int) -> list[dict]:
    from semsearch.evaluation.zh_retrieval import read_pairs, retrieval_set

    rows = []
    for name, relative in FILES.items():
        data = retrieval_set(name, read_pairs(DATA / relative, limit=pairs), max_queries=queries)
        keyword = {method: keyword_run(data, method)[0] for method in ("bigram+unigram", "jieba")}
        for model in models:
            dense, per_second = dense_run(data, model)
            row = {"set": name, "model": model, "queries": len(data.queries), "documents": len(data.corpus)}
            row["dense"] = ndcg(data, dense)
            for method, run in keyword.items():
                row[f"{method}"] = ndcg(data, run)
                for alpha in ALPHAS:
                    row[f"dense+{method} ({alpha})"] = ndcg(data, fused(dense, run, alpha))
            row["docs/s"] = round(per_second, 1)
            rows.append(row)
            print(row, flush=True)
    return rows


def semsearch_section(model: str, pairs: int | None, queries: int, work: Path) -> list[dict]:
    """Each set ingested whole by semsearch (Index.create with `model`, every other setting its default, so the
    index calibrates itself), searched by its dense side, its keyword side and its default; beside plain FTS5
    over bigrams and over jieba's words on the same corpus (the keyword targets' baselines)."""
    import shutil

    from semsearch.evaluation.zh_retrieval import grouped, read_pairs, retrieval_set
    from semsearch.index import Index

    rows = []
    for name, (relative, relevant_at, size) in SEMSEARCH_SETS.items():
        data = retrieval_set(name, read_pairs(DATA / relative, limit=pairs), queries, relevant_at)
        data = grouped(data, size) if size > 1 else data
        shutil.rmtree(work / "index", ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        row = {"set": name, "queries": len(data.queries), "documents": len(data.corpus)}
        for method in ("bigram", "jieba"):
            row[f"FTS5 {method}"] = ndcg(data, keyword_run(data, method)[0])
        with Index.create(work / "index", model=model) as index:
            began = time.perf_counter()
            index.add({"id": doc_id, "text": text} for doc_id, text in data.corpus.items())
            row["ingest s"] = round(time.perf_counter() - began, 1)
            calibration = index.info().get("calibration") or {}
            query_ids = list(data.queries)
            texts = [data.queries[q] for q in query_ids]
            for mode in ("dense", "keyword", None):
                hits = index.search_many(texts, k=DEPTH, mode=mode)
                run = {q: {hit.id: float(hit.score) for hit in found} for q, found in zip(query_ids, hits)}
                row[mode or "default"] = ndcg(data, run)
        row["calibrated"] = (
            f"{calibration.get('mode')} {calibration.get('alpha')} ({calibration.get('queries')} queries)"
            if calibration.get("mode")
            else f"no: {calibration.get('skipped', '?')}"
        )
        best_side = max(row["dense"], row["keyword"])
        row["default - better side"] = round(row["default"] - best_side, 4)
        row["default - keyword"] = round(row["default"] - row["keyword"], 4)
        row["keyword - better FTS5"] = round(row["keyword"] - max(row["FTS5 bigram"], row["FTS5 jieba"]), 4)
        rows.append(row)
        print(row, flush=True)
    return rows


def _targets(rows: list[dict]) -> list[str]:
    """How many sets meet each target, in a sentence each."""
    counts = [
        (
            "keyword within 0.01 of the better plain FTS5",
            sum(r["keyword - better FTS5"] >= -0.01 for r in rows),
        ),
        ("default at least the better side", sum(r["default - better side"] >= 0 for r in rows)),
        ("default within 0.005 of the better side", sum(r["default - better side"] >= -0.005 for r in rows)),
        ("default 0.02 above keyword", sum(r["default - keyword"] >= 0.02 for r in rows)),
    ]
    return ["", *(f"- {what}: {n} of {len(rows)} sets" for what, n in counts), ""]


def ingest_section(rounds: int, work: Path) -> list[dict]:
    """Whole ingests (Index.ingest, the defaults but the model) of short Chinese sentences and English abstracts
    by each model, alternated `rounds` times: docs/s and the multilingual model's ratio to the bundled one."""
    import itertools
    import json
    import shutil

    from semsearch.evaluation.zh_retrieval import read_pairs
    from semsearch.index import Index

    pairs = read_pairs(DATA / FILES["LCQMC-valid"])
    chinese = list(dict.fromkeys(t for p in pairs for t in (p.text1, p.text2)))[:3000]
    with (REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl").open() as handle:
        english = [json.loads(line)["text"] for line in itertools.islice(handle, 300)]
    rows = []
    for name, texts in (
        ("short Chinese sentences (LCQMC)", chinese),
        ("English abstracts (SciFact)", english),
    ):
        corpus = work / "corpus.jsonl"
        work.mkdir(parents=True, exist_ok=True)
        corpus.write_text("".join(json.dumps({"id": str(n), "text": t}) + "\n" for n, t in enumerate(texts)))
        rates: dict[str, list[float]] = {"bundled": [], "multilingual": []}
        for _ in range(rounds):
            for model in rates:
                shutil.rmtree(work / "index", ignore_errors=True)
                options = {} if model == "bundled" else {"model": model}
                with Index.create(work / "index", **options) as index:
                    rates[model].append(index.ingest(corpus).docs_per_second)
        row = {"corpus": name, "documents": len(texts)}
        row.update({f"{m} docs/s": " / ".join(f"{r:.1f}" for r in v) for m, v in rates.items()})
        row["multilingual / bundled"] = round(
            float(np.median(np.array(rates["multilingual"]) / rates["bundled"])), 2
        )
        rows.append(row)
        print(row, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--dense-pairs", type=int, default=2000)
    parser.add_argument("--models", default="")
    parser.add_argument("--ingest-rounds", type=int, default=0, help="0: no ingest speed section")
    parser.add_argument("--semsearch", default="", help="a model: each set ingested by semsearch with it")
    parser.add_argument("--semsearch-pairs", type=int, default=0, help="0: every pair of each file")
    parser.add_argument("--work", type=Path, default=Path("/tmp/zh-retrieval-bench"))
    args = parser.parse_args()
    command = command_line()
    lines = [
        "# Chinese retrieval (issue 27)",
        "",
        f"`{command.strip()}` ({datetime.now(timezone.utc):%Y-%m-%d}; 2 cores, SQLite {sqlite3.sqlite_version})",
        "",
        "Sets built by semsearch.evaluation.zh_retrieval from ../shared/data/zh: a text1 with a label-1 partner",
        "is a query (the first --queries of them), its label-1 partners relevant, every other sentence of the",
        "file a distractor (the query's own sentence left out of its ranking). nDCG@10.",
        "",
        "## Keyword: plain FTS5 (unicode61, bm25) over each segmentation, documents and queries alike",
        "",
        *markdown_table(keyword_section(args.queries)),
    ]
    models = [m for m in args.models.split(",") if m]
    if models:
        lines += [
            f"## Dense beside keyword, first {args.dense_pairs} pairs of each file",
            "",
            "Fusion: min-max normalised scores, dense weights 0.3, 0.5, 0.7 (no calibration). docs/s: encoding the",
            "set's sentences (short Chinese sentences), one process on 2 busy cores.",
            "",
            *markdown_table(dense_section(models, args.dense_pairs, args.queries)),
        ]
    if args.semsearch:
        pairs = args.semsearch_pairs or None
        rows = semsearch_section(args.semsearch, pairs, args.queries, args.work)
        lines += [
            f"## semsearch itself, --model {args.semsearch}, every other setting its default",
            "",
            "Each set ingested whole by semsearch (64-token passages, whitening P = 0.5 to 128 dims, rerank 100,",
            "the corpus's own calibration), then searched by its dense side, its keyword side (`--mode keyword`,",
            "the bm25 matrix over bigrams and characters) and its default; plain FTS5 over bigrams and over jieba's",
            "words on the same corpus beside it. Targets (issue 27): keyword within 0.01 of the better plain",
            "FTS5 (`keyword - better FTS5` >= -0.01); the default at least the better side (`default - better",
            "side` >= 0) and 0.02 above keyword (`default - keyword` >= 0.02). The five-sentence sets glue",
            "unrelated sentences (evaluation.zh_retrieval.grouped): multi-sentence Chinese documents.",
            "",
            *markdown_table(rows),
            *_targets(rows),
        ]
    if args.ingest_rounds:
        lines += [
            "## Ingest speed: --model multilingual against the bundled model",
            "",
            "Whole ingests (encoding, whitening fit, FAISS, SQLite), the defaults but the model, alternated per",
            "round (each round's figures listed); ratio: median of the rounds' multilingual / bundled docs/s.",
            "",
            *markdown_table(ingest_section(args.ingest_rounds, args.work)),
        ]
    from semsearch.storage.files import atomic_write_text

    OUT.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT / "zh-retrieval.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
