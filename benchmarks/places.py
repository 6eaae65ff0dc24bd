"""What places cost (issue 52): a query's p50 at no cap (`per_document` 0) against the default document answer,
and the snippets' share of a query's time in every mode, text and vector queries, side by side in one run, on
the 117,791 WordNet glosses (one passage a document) and on a long-document set (mixed-topic documents made of
SciFact's, evaluation/longdoc_sets.py). Written to benchmarks/results/places-cost.md and .json.

    .venv/bin/python benchmarks/places.py [--work DIR] [--queries 200] [--scifact-docs 1500]

Each corpus is ingested once with the defaults (kept in --work). Each query runs every arm in turn (the arms
interleaved, so that the machine's swings touch them alike), warm, in one process: the default cap against no cap
in the index's default mode, dense, keyword and hybrid; snippets (crop 32, the default) against none (crop 0) for
text queries in each mode and for a query by vector (`search_vectors`, as LangChain with its own embeddings asks).
WordNet's queries are glosses' titles (a word or two, by a fixed seed); the long set's its BEIR queries.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, current_commit, markdown_table

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results"
DATA = REPO.parent / "shared" / "data"
SEED = 52


def ingested(corpus: Path, index: Path) -> Path:
    if not (index / "manifest.json").exists():
        subprocess.run(
            [sys.executable, "-m", "semsearch", "ingest", str(corpus), "--index", str(index)], check=True
        )
    return index


def wordnet(work: Path, count: int) -> tuple[Path, list[str]]:
    corpus = DATA / "wordnet" / "corpus.jsonl"
    titles = [json.loads(line)["title"] for line in corpus.open()]
    rng = np.random.default_rng(SEED)
    return ingested(corpus, work / "wordnet"), [
        titles[i] for i in rng.choice(len(titles), count, replace=False)
    ]


def long_set(work: Path, count: int, documents: int) -> tuple[Path, list[str]]:
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.longdoc_sets import mixed_topic

    beir = mixed_topic(DATA / "scifact", work / "scifact-long", subset=documents)
    queries = list(load_beir(beir).queries.values())
    return ingested(beir / "corpus.jsonl", work / "scifact-long-index"), queries[:count]


def sts_sentences(work: Path) -> Path:
    """STS-B dev's distinct sentences, a document each."""
    path = work / "sts-dev-sentences.jsonl"
    if not path.exists():
        rows = [line.split("\t") for line in (DATA / "stsb" / "sts-dev.csv").read_text().splitlines()]
        sentences = dict.fromkeys(sentence for row in rows for sentence in row[5:7])
        path.write_text(
            "".join(json.dumps({"id": f"s{n}", "text": t}) + "\n" for n, t in enumerate(sentences))
        )
    return path


CALIBRATION = """
import json, sys
from semsearch import Index
with Index.open(sys.argv[1]) as index:
    print(json.dumps(index.info().get("calibration")))
"""


def calibration_before_and_after(work: Path, base: str) -> dict:
    """The calibration an ingest records with the code of commit `base` and with this tree's, on the same
    corpora (STS-B dev's sentences; Cranfield's documents): what it chose and its figures."""
    source = work / f"source-{base}"
    if not source.exists():
        source.mkdir()
        archive = subprocess.run(["git", "archive", base, "src"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    corpora = {"STS-B dev sentences": sts_sentences(work)}
    out = {}
    for name, corpus in corpora.items():
        if not corpus.exists():
            continue
        records = {}
        for side, src in (("before", source / "src"), ("after", REPO / "src")):
            index = work / f"calibration-{corpus.stem}-{side}"
            env = {**os.environ, "PYTHONPATH": str(src)}
            if not (index / "manifest.json").exists():
                ingest = [
                    sys.executable,
                    "-m",
                    "semsearch",
                    "ingest",
                    str(corpus),
                    "--index",
                    str(index),
                    "-q",
                ]
                subprocess.run(ingest, check=True, env=env)
            shown = subprocess.run(
                [sys.executable, "-c", CALIBRATION, str(index)], env=env, capture_output=True
            )
            records[side] = json.loads(shown.stdout)
        out[name] = records
    return out


CHOICE_KEYS = ("mode", "alpha", "sides", "sweep", "bands", "per_query")


def timed(run, n: int) -> float:
    started = time.perf_counter()
    run(n)
    return (time.perf_counter() - started) * 1000


def arms_of(index, queries: list[str]) -> dict[str, callable]:
    """Each arm: a function of the query number running one search."""
    vectors = index.encoder.encode(queries)
    default = index.default_mode.value
    arms = {
        f"{default} (default), default cap": lambda n: index.search(queries[n], k=10),
        f"{default} (default), per_document 0": lambda n: index.search(queries[n], k=10, per_document=0),
    }
    for mode in ("dense", "keyword", "hybrid"):
        arms[f"{mode}, text, snippets"] = lambda n, mode=mode: index.search(queries[n], k=10, mode=mode)
        arms[f"{mode}, text, no snippets"] = lambda n, mode=mode: index.search(
            queries[n], k=10, mode=mode, crop=0
        )
        arms[f"{mode}, text, per_document 0"] = lambda n, mode=mode: index.search(
            queries[n], k=10, mode=mode, per_document=0
        )
    arms["vector, snippets"] = lambda n: index.search_vectors(vectors[n : n + 1], k=10)
    arms["vector, no snippets"] = lambda n: index.search_vectors(vectors[n : n + 1], k=10, crop=0)
    arms["vector, per_document 0"] = lambda n: index.search_vectors(vectors[n : n + 1], k=10, per_document=0)
    return arms


class SnippetClock:
    """The time hits.snippets_of takes, call by call (wrapped around the module's own function)."""

    def __init__(self):
        from semsearch.retrieval import hits

        self.module, self.original, self.last = hits, hits.snippets_of, 0.0
        hits.snippets_of = self

    def __call__(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self.original(*args, **kwargs)
        finally:
            self.last = (time.perf_counter() - started) * 1000

    def close(self):
        self.module.snippets_of = self.original


def measure(path: Path, queries: list[str]) -> dict:
    from semsearch import Index

    clock = SnippetClock()
    with Index.open(path) as index:
        arms = arms_of(index, queries)
        for run in arms.values():  # warm: caches, the keyword matrix, FAISS's pages
            for n in range(min(5, len(queries))):
                run(n)
        times: dict[str, list[float]] = {name: [] for name in arms}
        shares: dict[str, list[float]] = {name: [] for name in arms if name.endswith(", snippets")}
        for n in range(len(queries)):
            for name, run in arms.items():
                clock.last = 0.0
                times[name].append(timed(run, n))
                if name in shares:  # the snippets' own time, of this query's
                    shares[name].append(clock.last / times[name][-1])
        info = {
            "documents": len(index),
            "passages": index.state.rows,
            "default_mode": index.default_mode.value,
        }
    clock.close()
    return {
        "info": info,
        "p50_ms": {name: float(np.median(ms)) for name, ms in times.items()},
        "snippet_share_p50": {name: float(np.median(share)) for name, share in shares.items()},
        "snippet_share_max": {name: float(np.max(share)) for name, share in shares.items()},
    }


def ratios(p50: dict[str, float]) -> dict[str, float]:
    default = next(name for name in p50 if name.endswith("(default), default cap"))
    out = {
        "per_document 0 / default cap (default mode)": p50[default.replace("default cap", "per_document 0")]
        / p50[default]
    }
    for mode in ("dense", "keyword", "hybrid"):
        out[f"{mode}: per_document 0 / default cap"] = (
            p50[f"{mode}, text, per_document 0"] / p50[f"{mode}, text, snippets"]
        )
        out[f"{mode}: 1 - p50 without snippets / with"] = (
            1 - p50[f"{mode}, text, no snippets"] / p50[f"{mode}, text, snippets"]
        )
    out["vector: per_document 0 / default cap"] = p50["vector, per_document 0"] / p50["vector, snippets"]
    out["vector: 1 - p50 without snippets / with"] = 1 - p50["vector, no snippets"] / p50["vector, snippets"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "places-bench")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scifact-docs", type=int, default=1500)
    parser.add_argument("--base", default="686b7d0", help="the commit whose calibration is compared (before)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    calibrations = calibration_before_and_after(args.work, args.base)
    corpora = {
        "WordNet glosses": wordnet(args.work, args.queries),
        "SciFact mixed-topic long documents": long_set(args.work, args.queries, args.scifact_docs),
    }
    results = {name: measure(path, queries) for name, (path, queries) in corpora.items()}
    for result in results.values():
        result["ratios"] = ratios(result["p50_ms"])
    commit = current_commit()
    header = [
        "# What places cost: no cap against the default answer, and snippets' share of a query",
        "",
        f"`{command_line()}` (commit {commit}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{args.queries} queries a corpus, k 10, every arm interleaved query by query in one process, "
        "OMP_NUM_THREADS as set).",
        "",
        "Targets: p50 at per_document 0 at most 1.3x the default cap's; snippets at most a fifth of a query.",
    ]
    body = []
    for name, result in results.items():
        info = result["info"]
        body += [
            "",
            f"## {name}: {info['documents']:,} documents, {info['passages']:,} passages "
            f"(default mode {info['default_mode']})",
            "",
        ]
        body += markdown_table([{"arm": arm, "p50 ms": f"{ms:.2f}"} for arm, ms in result["p50_ms"].items()])
        body += markdown_table(
            [{"ratio": arm, "value": f"{value:.2f}"} for arm, value in result["ratios"].items()]
        )
        body += ["Snippets' own time (hits.snippets_of, timed inside each query) over the query's:", ""]
        body += markdown_table(
            [
                {
                    "arm": arm,
                    "p50 share": f"{share:.3f}",
                    "max share": f"{result['snippet_share_max'][arm]:.3f}",
                }
                for arm, share in result["snippet_share_p50"].items()
            ]
        )
    body += ["", f"## Calibration before (commit {args.base}, documents as the unit) and after (places)", ""]
    rows = []
    for name, records in calibrations.items():
        for side, record in records.items():
            kept = {key: record.get(key) for key in ("mode", "alpha", "sides", "sweep")}
            rows.append({"corpus": name, "code": side, **{k: json.dumps(v) for k, v in kept.items()}})
        same = all(records["before"].get(key) == records["after"].get(key) for key in CHOICE_KEYS)
        rows.append(
            {"corpus": name, "code": "equal (mode, alpha, sides, sweep, bands, per_query)", "mode": same}
        )
    body += markdown_table(rows)
    results["calibration"] = calibrations
    OUT.mkdir(exist_ok=True)
    (OUT / "places-cost.md").write_text("\n".join(header + body) + "\n")
    (OUT / "places-cost.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(header + body))


if __name__ == "__main__":
    main()
