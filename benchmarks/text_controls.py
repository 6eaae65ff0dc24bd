"""The text controls measured: typo tolerance and snippets; written to benchmarks/results/text-controls.md
and text-controls.json.

    python -m benchmarks text_controls controls [--sections typos,chinese,snippets] [--work DIR]

- typos: SciFact's test queries, each with one misspelled content word, built here (seeded): its rarest word of
  at least five letters (fewest documents holding its term) gets a deletion, insertion, substitution or
  transposition. nDCG@10 with typos on (the default, 2) and off (--typos 0), on the unaltered and the
  misspelled queries, and the share of the loss from misspelling that typo tolerance recovers: keyword search on
  the full corpus (stored as an ingest stores it; the keyword side reads only the store), with the corrections'
  weights swept; keyword and hybrid on SUBSET documents (the judged ones and a seeded draw,
  longdoc_sets.documents_subset) ingested with every default (encoding all 5,183 took too long on the shared
  machine that day). p50 ms of keyword search with and without typos, side by side.
- chinese: semsearch's keyword side (the store's FTS5 index and bm25 matrix, no encoding) over the four Chinese
  sets of zh_retrieval.py's keyword section (500 queries each), typos on and off: the analysis is unchanged for
  text without Hangul (these sets hold none), so typos off is last round's keyword side; typos on must stay
  within 0.005 of it.
- snippets: the SciFact subset and a mixed-topic long-document set (evaluation/longdoc_sets.py, 500 SciFact
  documents as 50 long ones): for every dense hit (k=10) whose snippet is of kind "meaning", whether its marked
  sentence is
  the part's sentence of highest cosine to the query, each sentence encoded alone (the brute force); the cost of
  snippets: p50 ms of a search at k=10 with them and without (the same search, snippets skipped), side by side,
  per mode, and a snippet's share (the difference over k) of the query's p50, and the share of the page's 10.

Part `zh-retrieval`: Chinese keyword (and dense) retrieval: which tokenization FTS5 should see for Chinese text, measured
on retrieval sets built from the Chinese sentence-pair files (semsearch.evaluation.zh_retrieval: a text1 as
query, its label-1 partners relevant, every other sentence of the file a distractor); written to
benchmarks/results/zh-retrieval.md.

    python -m benchmarks text_controls zh-retrieval [--queries 500] [--dense-pairs 2000] [--models minilm,multilingual]
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
import json
import os
import random
import re
import sqlite3
import statistics
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, REPO, Rows, command_line, markdown_table

CLAIM = "Typo tolerance, Chinese keyword search and snippets, and which tokenization FTS5 sees for Chinese"

SEED = 35
SUBSET = 1000
EDITS = ("deletion", "insertion", "substitution", "transposition")
WEIGHTS = ((0.5, 0.25), (0.8, 0.5), (1.0, 1.0))  # a correction's weight at one and two edits
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def built(corpus: Path, target: Path):
    """An index of the corpus with every default, made once in the work directory."""
    from semsearch import Index

    done = target.parent / (target.name + ".built")
    if not done.exists():
        started = time.perf_counter()
        with Index.open_or_create(target) as index:
            index.ingest(corpus)
        done.write_text(f"{time.perf_counter() - started:.0f} s\n")
    return Index.open(target)


def misspelled(text: str, frequency, rng: random.Random) -> tuple[str, str | None]:
    """The query with its rarest word of five letters or more misspelled by one seeded edit (and that word)."""
    from semsearch.retrieval.keywords import STOPWORDS

    words = [m for m in re.finditer(r"[A-Za-z]+", text) if len(m.group()) >= 5]
    words = [m for m in words if m.group().lower() not in STOPWORDS]
    if not words:
        return text, None
    rarest = min(words, key=lambda m: (frequency(m.group().lower()), m.start()))
    word = rarest.group()
    while True:
        edit, at = rng.choice(EDITS), rng.randrange(len(word))
        if edit == "deletion":
            wrong = word[:at] + word[at + 1 :]
        elif edit == "insertion":
            wrong = word[:at] + rng.choice(LETTERS) + word[at:]
        elif edit == "substitution":
            wrong = word[:at] + rng.choice(LETTERS.replace(word[at].lower(), "")) + word[at + 1 :]
        else:
            at = min(at, len(word) - 2)
            wrong = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        if wrong.lower() != word.lower():
            return text[: rarest.start()] + wrong + text[rarest.end() :], word


def ndcg(index, data, queries: dict[str, str], **options) -> tuple[float, float]:
    """nDCG@10 and p50 ms of the queries searched one at a time."""
    from semsearch.evaluation.metrics import evaluate_run

    run, times = {}, []
    for query_id, text in queries.items():
        started = time.perf_counter()
        hits = index.search(text, k=10, **options)
        times.append((time.perf_counter() - started) * 1000)
        run[query_id] = {hit.id: hit.score for hit in hits}
    return evaluate_run(data.qrels, run, ["ndcg@10"])["ndcg@10"], statistics.median(times)


def scifact(work: Path):
    from semsearch.evaluation.datasets import ensure_beir, load_beir

    return load_beir(ensure_beir(DATA / "scifact", work / "converted"))


def misspelled_queries(queries: dict[str, str], vocabulary) -> tuple[dict[str, str], list[str]]:
    from semsearch.storage.keywordterms import STEMMER

    def frequency(word: str) -> int:
        return min((vocabulary.documents.get(term, 0) for term in STEMMER.stems([word])), default=0)

    rng = random.Random(SEED)
    altered, examples = {}, []
    for query_id, text in queries.items():
        altered[query_id], word = misspelled(text, frequency, rng)
        if word:
            examples.append(f"{word} -> {altered[query_id]}")
    return altered, examples


def recovered(figures: dict, name: str = "typos 2") -> float | None:
    loss = figures["unaltered", "typos 0"][0] - figures["misspelled", "typos 0"][0]
    return (
        round((figures["misspelled", name][0] - figures["misspelled", "typos 0"][0]) / loss, 3)
        if loss
        else None
    )


def rows_of(label: str, figures: dict) -> list[dict]:
    rows = [
        {
            "set, mode": label,
            "queries": name,
            "typos": typo,
            "ndcg@10": round(value, 4),
            "p50 ms": round(ms, 2),
        }
        for (name, typo), (value, ms) in figures.items()
    ]
    return rows + [
        {"set, mode": label, "queries": "share of the loss recovered", "ndcg@10": recovered(figures)}
    ]


def keyword_full(work: Path, data) -> tuple[list[dict], list[str], int]:
    """Keyword search over the whole corpus as an ingest stores it (no encoding), corrections' weights swept."""
    from semsearch.documents import Document
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.retrieval import typos as typo_module
    from semsearch.retrieval.keywords import KeywordRetriever
    from semsearch.storage.store import DocumentStore

    docs = [json.loads(line) for line in data.corpus_path.read_text().splitlines()]
    for leftover in work.glob("scifact-keywords.db*"):
        leftover.unlink()
    store = DocumentStore(work / "scifact-keywords.db")
    with store.transaction():
        store.insert([Document(d["_id"], d["text"], d.get("title") or None) for d in docs], range(len(docs)))
    altered, examples = misspelled_queries(data.queries, KeywordRetriever(store, len(docs)).vocabulary())

    def measured(queries: dict[str, str], typos: int) -> tuple[float, float]:
        retriever = KeywordRetriever(store, len(docs), typos)
        retriever.top(["warm"], 10, None)
        run, times = {}, []
        for query_id, text in queries.items():
            started = time.perf_counter()
            hits = retriever.top([text], 10, None)[0]
            times.append((time.perf_counter() - started) * 1000)
            run[query_id] = {docs[pk]["_id"]: score for pk, score in hits}
        return evaluate_run(data.qrels, run, ["ndcg@10"])["ndcg@10"], statistics.median(times)

    saved = dict(typo_module.CORRECTION_WEIGHT)
    rows = []
    try:
        for one, two in WEIGHTS:
            typo_module.CORRECTION_WEIGHT.update({1: one, 2: two})
            figures = {
                (name, f"typos {typo}"): measured(queries, typo)
                for name, queries in (("unaltered", data.queries), ("misspelled", altered))
                for typo in (2, 0)
            }
            default = (one, two) == (saved[1], saved[2])
            label = f"SciFact (5,183), keyword, weights {one}/{two}" + (" (default)" if default else "")
            rows += rows_of(label, figures)
    finally:
        typo_module.CORRECTION_WEIGHT.update(saved)
    store.close()
    return rows, examples, sum(1 for q in data.queries if altered[q] != data.queries[q])


def typos(work: Path) -> dict:
    from semsearch.evaluation.datasets import load_beir
    from semsearch.retrieval.keywords import KeywordRetriever

    data = scifact(work)
    rows, examples, changed = keyword_full(work, data)
    subset = load_beir(documents_subset_of(work))
    index = built(subset.corpus_path, work / "scifact-subset")
    altered, _ = misspelled_queries(subset.queries, KeywordRetriever(index.store, len(index)).vocabulary())
    index.search("warm up", k=1)
    for mode in ("keyword", "hybrid"):
        figures = {
            (name, f"typos {typo}"): ndcg(index, subset, queries, mode=mode, typos=typo)
            for name, queries in (("unaltered", subset.queries), ("misspelled", altered))
            for typo in (2, 0)
        }
        rows += rows_of(f"SciFact subset ({SUBSET}), {mode}", figures)
    index.close()
    return {"rows": rows, "misspelled": changed, "queries": len(data.queries), "examples": examples[:5]}


def documents_subset_of(work: Path) -> Path:
    from semsearch.evaluation.longdoc_sets import documents_subset

    return documents_subset(DATA / "scifact", work / "scifact-subset-set", SUBSET)


@contextmanager
def without_snippets():
    from semsearch.retrieval import hits

    saved = hits.snippets_of
    hits.snippets_of = lambda parts, *args, **kwargs: [None] * len(parts)
    try:
        yield
    finally:
        hits.snippets_of = saved


def meaning_agreement(index, queries: dict[str, str]) -> tuple[int, int]:
    """Dense hits of kind meaning whose marked sentence is the brute-force argmax (and how many there were)."""
    from semsearch.retrieval.snippets import sentence_spans

    agree = total = 0
    for text in queries.values():
        query = index.encoder.encode([text])[0]
        for hit in index.search(text, k=10, mode="dense", crop=10_000):
            if hit.snippet["kind"] != "meaning":
                continue
            part = hit.passage["text"] if hit.passage else hit.text
            sentences = [part[s:e] for s, e in sentence_spans(part)]
            vectors = np.stack([index.encoder.encode([sentence])[0] for sentence in sentences])
            cosines = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
            ((start, end),) = hit.snippet["highlights"]
            agree += hit.snippet["text"][start:end] == sentences[int(np.argmax(cosines))]
            total += 1
    return agree, total


def snippet_cost(index, queries: list[str], mode: str) -> dict:
    """p50 ms at k=10 with and without snippets, alternating query by query (the machine's swings hit both)."""
    with_times, without_times, kinds = [], [], {"words": 0, "passage": 0}
    for text in queries:
        started = time.perf_counter()
        hits = index.search(text, k=10, mode=mode)
        with_times.append((time.perf_counter() - started) * 1000)
        for hit in hits:
            kinds[hit.snippet["kind"]] += 1
        with without_snippets():
            started = time.perf_counter()
            index.search(text, k=10, mode=mode)
            without_times.append((time.perf_counter() - started) * 1000)
    p50_with, p50_without = statistics.median(with_times), statistics.median(without_times)
    per_snippet = (p50_with - p50_without) / 10
    return {
        "mode": mode,
        "p50 ms with snippets": round(p50_with, 2),
        "p50 ms without": round(p50_without, 2),
        "a snippet, ms": round(per_snippet, 3),
        "a snippet / query p50": round(per_snippet / p50_without, 3),
        "a page's 10 snippets / query p50": round((p50_with - p50_without) / p50_without, 3),
        "passage snippets": f"{kinds['passage']} of {sum(kinds.values())}",
    }


def snippets(work: Path) -> dict:
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.longdoc_sets import mixed_topic

    data = load_beir(documents_subset_of(work))
    longdocs = load_beir(mixed_topic(DATA / "scifact", work / "mixed-topic", subset=500))
    out = {"agreement": [], "cost": []}
    started_load = os.getloadavg()[0]
    for name, corpus, queries, directory in (
        (f"SciFact subset ({SUBSET})", data, data.queries, "scifact-subset"),
        ("mixed-topic long documents (500 as 50)", longdocs, longdocs.queries, "mixed-topic-index"),
    ):
        index = built(corpus.corpus_path, work / directory)
        index.search("warm up", k=1)
        sample = dict(list(queries.items())[:100])
        agree, total = meaning_agreement(index, sample)
        out["agreement"].append(
            {"set": name, "queries": len(sample), "meaning hits": total, "argmax equal": agree}
        )
        for mode in ("dense", "hybrid", "keyword"):
            out["cost"].append({"set": name, **snippet_cost(index, list(sample.values()), mode)})
        index.close()
    out["load"] = f"{started_load:.1f} and {os.getloadavg()[0]:.1f}"
    return out


def chinese(work: Path) -> list[dict]:
    from semsearch.documents import Document
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.evaluation.zh_retrieval import read_pairs, retrieval_set, without_own
    from semsearch.retrieval.keywords import KeywordRetriever
    from semsearch.storage.store import DocumentStore

    rows = []
    for name, relative in FILES.items():
        data = retrieval_set(name, read_pairs(ZH_DATA / relative), max_queries=500)
        ids = list(data.corpus)
        for leftover in work.glob(f"zh-{name}.db*"):
            leftover.unlink()
        store = DocumentStore(work / f"zh-{name}.db")
        with store.transaction():
            store.insert([Document(doc, data.corpus[doc]) for doc in ids], range(len(ids)))
        row = {"set": name, "queries": len(data.queries), "documents": len(ids)}
        for typos in (0, 2):
            retriever = KeywordRetriever(store, len(ids), typos)
            run = {
                query_id: {ids[pk]: score for pk, score in retriever.top([text], 100, None)[0]}
                for query_id, text in data.queries.items()
            }
            metric = evaluate_run(data.qrels, without_own(run, data.own), ("ndcg@10",))["ndcg@10"]
            row[f"keyword, typos {typos}"] = round(metric, 4)
        row["difference"] = round(row["keyword, typos 2"] - row["keyword, typos 0"], 4)
        rows.append(row)
        store.close()
    return rows


def controls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default="typos,chinese,snippets")
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-text-controls"))


def controls(config: argparse.Namespace) -> Rows:
    """Typo tolerance, Chinese keyword search and snippets (text-controls.md)."""
    config.work.mkdir(parents=True, exist_ok=True)
    sections = config.sections.split(",")
    path = OUT / "text-controls.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    made = {"typos": typos, "chinese": chinese, "snippets": snippets}
    for section in sections:
        results[section] = made[section](config.work)
        results.setdefault("commands", {})[section] = command_line()
    results["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    (OUT / "text-controls.md").write_text(report(results))
    print(report(results))
    return results


def report(results: dict) -> str:
    lines = [
        "# Text controls: typo tolerance and snippets",
        "",
        f"Made on {results['date']} by benchmarks/text_controls.py (its docstring says what each section measures):",
        *(
            f"`{command}` ({section})" + ("," if n < len(results["commands"]) - 1 else ".")
            for n, (section, command) in enumerate(results["commands"].items())
        ),
        "",
        "Timings: one process, warm, one query at a time, on a 2-core machine shared by nine agents (load average 28-31 during the run): read the timings as ratios within a row pair.",
        "",
    ]
    if "typos" in results:
        typo = results["typos"]
        lines += [
            "## Typos: SciFact with one misspelled content word per query",
            "",
            f"{typo['misspelled']} of {typo['queries']} queries misspelled (the rest have no word of five letters);"
            " e.g. "
            + "; ".join(f"`{e}`" for e in typo["examples"][:3])
            + ". The loss recovered: (misspelled,"
            " typos 2 - misspelled, typos 0) / (unaltered, typos 0 - misspelled, typos 0).",
            "",
            *markdown_table(typo["rows"]),
        ]
    if "chinese" in results:
        lines += [
            "## Chinese: the keyword side with typos on and off",
            "",
            "No Hangul in these sets: the analysis is last round's, so typos 0 is last round's keyword side.",
            "",
            *markdown_table(results["chinese"]),
        ]
    if "snippets" in results:
        snip = results["snippets"]
        lines += [
            "## Snippets: the meaning-kind sentence against brute force, and the cost",
            "",
            "A snippet of kind words costs the stemming of its part's words that can match a query term (one "
            "stemmer call a page, words seen before remembered) and the crop; one of kind meaning, the encoding "
            "of its part's sentences not encoded before (none for a part of one sentence; four at a time, by "
            "length): about a query's own encoding per sentence, most of a page's snippet cost here. Load "
            f"average (1 min) at the start and end of this section: {snip.get('load', '?')}.",
            "",
            *markdown_table(snip["agreement"]),
            *markdown_table(snip["cost"]),
            "",
            "The issue's target, \"a snippet costs at most 20% of the query's p50 at k=10\", is the column `a "
            "snippet / query p50`: one hit's snippet against the p50 of the query at k=10 (met in every row). "
            "A page's ten snippets cost more than the query where the dense side finds hits that share no word "
            "with the query (`a page's 10 snippets / query p50`): each such hit's sentences are encoded at query "
            "time so that the marked sentence is the one of highest cosine (the brute force above); `--crop 0` "
            "(HTTP `crop=0`) leaves snippets out.",
        ]
    return "\n".join(lines)


ZH_DATA = DATA / "zh"
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


def ndcg_at_10(data, run: dict) -> float:
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.evaluation.zh_retrieval import without_own

    return round(evaluate_run(data.qrels, without_own(run, data.own), ("ndcg@10",))["ndcg@10"], 4)


def keyword_section(queries: int) -> list[dict]:
    from semsearch.evaluation.zh_retrieval import read_pairs, retrieval_set

    rows = []
    for name, relative in FILES.items():
        data = retrieval_set(name, read_pairs(ZH_DATA / relative), max_queries=queries)
        row = {"set": name, "queries": len(data.queries), "documents": len(data.corpus)}
        for method in METHODS:
            run, seconds = keyword_run(data, method)
            row[f"{method} nDCG@10"] = ndcg_at_10(data, run)
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
        data = retrieval_set(name, read_pairs(ZH_DATA / relative, limit=pairs), max_queries=queries)
        keyword = {method: keyword_run(data, method)[0] for method in ("bigram+unigram", "jieba")}
        for model in models:
            dense, per_second = dense_run(data, model)
            row = {"set": name, "model": model, "queries": len(data.queries), "documents": len(data.corpus)}
            row["dense"] = ndcg_at_10(data, dense)
            for method, run in keyword.items():
                row[f"{method}"] = ndcg_at_10(data, run)
                for alpha in ALPHAS:
                    row[f"dense+{method} ({alpha})"] = ndcg_at_10(data, fused(dense, run, alpha))
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
        data = retrieval_set(name, read_pairs(ZH_DATA / relative, limit=pairs), queries, relevant_at)
        data = grouped(data, size) if size > 1 else data
        shutil.rmtree(work / "index", ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        row = {"set": name, "queries": len(data.queries), "documents": len(data.corpus)}
        for method in ("bigram", "jieba"):
            row[f"FTS5 {method}"] = ndcg_at_10(data, keyword_run(data, method)[0])
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
                row[mode or "default"] = ndcg_at_10(data, run)
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

    pairs = read_pairs(ZH_DATA / FILES["LCQMC-valid"])
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


def zh_retrieval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--dense-pairs", type=int, default=2000)
    parser.add_argument("--models", default="")
    parser.add_argument("--ingest-rounds", type=int, default=0, help="0: no ingest speed section")
    parser.add_argument("--semsearch", default="", help="a model: each set ingested by semsearch with it")
    parser.add_argument("--semsearch-pairs", type=int, default=0, help="0: every pair of each file")
    parser.add_argument("--work", type=Path, default=Path("/tmp/zh-retrieval-bench"))


def zh_retrieval(config: argparse.Namespace) -> Rows:
    """Which tokenization FTS5 sees for Chinese, and what the defaults give on Chinese (zh-retrieval.md)."""
    command = command_line()
    lines = [
        "# Chinese retrieval",
        "",
        f"`{command.strip()}` ({datetime.now(timezone.utc):%Y-%m-%d}; 2 cores, SQLite {sqlite3.sqlite_version})",
        "",
        "Sets built by semsearch.evaluation.zh_retrieval from ../shared/data/zh: a text1 with a label-1 partner",
        "is a query (the first --queries of them), its label-1 partners relevant, every other sentence of the",
        "file a distractor (the query's own sentence left out of its ranking). nDCG@10.",
        "",
        "The multilingual model's choice (USE multilingual v3 against multilingual-e5-small and the bundled "
        "model, on Chinese STS-B, LCQMC and BQ): [multilingual-candidates.md](multilingual-candidates.md).",
        "",
        "## Keyword: plain FTS5 (unicode61, bm25) over each segmentation, documents and queries alike",
        "",
        *markdown_table(keyword_section(config.queries)),
    ]
    models = [m for m in config.models.split(",") if m]
    if models:
        lines += [
            f"## Dense beside keyword, first {config.dense_pairs} pairs of each file",
            "",
            "Fusion: min-max normalised scores, dense weights 0.3, 0.5, 0.7 (no calibration). docs/s: encoding the",
            "set's sentences (short Chinese sentences), one process on 2 busy cores.",
            "",
            *markdown_table(dense_section(models, config.dense_pairs, config.queries)),
        ]
    if config.semsearch:
        pairs = config.semsearch_pairs or None
        rows = semsearch_section(config.semsearch, pairs, config.queries, config.work)
        lines += [
            f"## semsearch itself, --model {config.semsearch}, every other setting its default",
            "",
            "Each set ingested whole by semsearch (64-token passages, whitening P = 0.5 to 128 dims, rerank 100,",
            "the corpus's own calibration), then searched by its dense side, its keyword side (`--mode keyword`,",
            "the bm25 matrix over bigrams and characters) and its default; plain FTS5 over bigrams and over jieba's",
            "words on the same corpus beside it. Targets: keyword within 0.01 of the better plain",
            "FTS5 (`keyword - better FTS5` >= -0.01); the default at least the better side (`default - better",
            "side` >= 0) and 0.02 above keyword (`default - keyword` >= 0.02). The five-sentence sets glue",
            "unrelated sentences (evaluation.zh_retrieval.grouped): multi-sentence Chinese documents.",
            "",
            *markdown_table(rows),
            *_targets(rows),
        ]
    if config.ingest_rounds:
        lines += [
            "## Ingest speed: --model multilingual against the bundled model",
            "",
            "Whole ingests (encoding, whitening fit, FAISS, SQLite), the defaults but the model, alternated per",
            "round (each round's figures listed); ratio: median of the rounds' multilingual / bundled docs/s.",
            "",
            *markdown_table(ingest_section(config.ingest_rounds, config.work)),
        ]
    from semsearch.storage.files import atomic_write_text

    OUT.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT / "zh-retrieval.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return rows


PARTS = {
    "controls": (controls_arguments, controls),
    "zh-retrieval": (zh_retrieval_arguments, zh_retrieval),
}
