"""Determinism benchmark: is an index the same whatever way its corpus was ingested? The same
SciFact documents go in with real `semsearch ingest` processes as one file, as three files (three ingests into
one index, then `semsearch refit` so the transform is fitted on all), and with --batch-size 1 and 512; the
same queries then run on each index and are compared with the one-file index's answers. Done for the int8
encoder of this release (per-row), of the previous one (dynamic: an index whose manifest says so, as every
index it made does) and fp32 (control). Also int8's speed and fidelity against fp32, and the candidates the
method was chosen from (measured once by the removed int8_candidates.py; determinism.json keeps them). Written to determinism.md and determinism.json (sections merge,
so one can be re-run alone).

    python -m benchmarks determinism [--sections cli,speed,quality] [--docs 600] [--queries 25]
                                               [--ingest-docs 10000] [--rounds 3] [--work DIR] [--out DIR]

Reads ../shared/data/scifact and ../shared/data/wordnet (skips, saying so, if absent). `--sections ''`
rewrites the report from the JSON."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, Rows, command_line, require
from semsearch import Index  # noqa: E402
from semsearch.encoding import Encoder  # noqa: E402

CLAIM = "An index is the same whatever way its corpus was ingested (one file, three, batch sizes), int8 encoder's speed and fidelity"

SEMSEARCH = [sys.executable, "-m", "semsearch"]
# (name, --quantize, int8_method written into the manifest)
METHODS = [("int8 per-row (now)", "int8", "per-row"), ("int8 dynamic (before)", "int8", "dynamic")]
CONTROL = ("fp32", "none", "per-row")
SELF_QUERIES = 5  # documents whose own text is also a query
SECTIONS = ("cli", "speed", "quality")
# The int8 methods the per-row one was chosen from: measured once (determinism.json keeps them), not again.
RECORDED = ("candidates",)


def semsearch(*args: str) -> float:
    """Run a whole `semsearch` process; its wall seconds."""
    started = time.perf_counter()
    run = subprocess.run([*SEMSEARCH, *args], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"semsearch {shlex.join(args)} failed:\n{run.stderr}")
    return time.perf_counter() - started


def new_index(path: Path, quantize: str, int8_method: str, batch_size: int | None = None) -> Path:
    """An empty index; for `dynamic` its manifest then says what a previous release's int8 index says."""
    Index.create(path, quantize=quantize, batch_size=batch_size).close()
    manifest = path / "manifest.json"
    data = json.loads(manifest.read_text())
    data["int8_method"] = int8_method
    manifest.write_text(json.dumps(data, indent=2) + "\n")
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


# ---- the CLI ingests --------------------------------------------------------------------------------------


def cli_section(work: Path, docs: int, query_count: int) -> dict:
    scifact = DATA / "scifact"
    records = [json.loads(line) for line in (scifact / "corpus.jsonl").open()][:docs]
    queries = [json.loads(line)["text"] for line in (scifact / "queries.jsonl").open()][:query_count]
    picked = records[:: max(1, docs // SELF_QUERIES)][:SELF_QUERIES]
    self_queries = {r["_id"]: f"{r['title']} {r['text']}" for r in picked}
    queries += list(self_queries.values())
    one = write_jsonl(work / "corpus.jsonl", records)
    thirds = [write_jsonl(work / f"part{i}.jsonl", records[i::3]) for i in range(3)]
    variants = {
        "one file": (None, [one]),
        "three files + refit": (None, thirds),
        "--batch-size 1": (1, [one]),
        "--batch-size 512": (512, [one]),
    }
    out: dict = {"docs": docs, "queries": len(queries), "self_queries": SELF_QUERIES, "methods": {}}
    for name, quantize, method in [*METHODS, CONTROL]:
        print(f"cli: {name}", flush=True)
        answers, seconds = {}, {}
        for variant, (batch_size, files) in variants.items():
            path = new_index(work / f"{quantize}-{method}-{len(answers)}", quantize, method, batch_size)
            seconds[variant] = sum(
                semsearch("ingest", str(f), "--index", str(path), "--quiet") for f in files
            )
            if len(files) > 1:
                seconds[variant] += semsearch("refit", "--index", str(path))
            with Index.open(path) as index:  # each query encoded alone, as a user's query is
                answers[variant] = [[(h.id, h.score) for h in index.search(q, k=10)] for q in queries]
            shutil.rmtree(path)
        base = answers["one file"]
        rows = {}
        for variant, found in answers.items():
            row = compare(base, found)
            selfs = [dict(hits).get(doc, 0.0) for doc, hits in zip(self_queries, found[-SELF_QUERIES:])]
            row.update(self_score_min=min(selfs), ingest_seconds=seconds[variant])
            rows[variant] = row
        out["methods"][name] = rows
    return out


def compare(base: list, found: list) -> dict:
    """Queries with the same top-10 ids in the same order, and the largest score difference of a document
    in both top-10s."""
    same = sum([i for i, _ in a] == [i for i, _ in b] for a, b in zip(base, found))
    differences = [abs(dict(a)[i] - s) for a, b in zip(base, found) for i, s in b if i in dict(a)]
    return {"identical_top10": int(same), "max_score_difference": float(max(differences))}


# ---- speed and fidelity --------------------------------------------------------------------------------


def speed_section(work: Path, ingest_docs: int, rounds: int) -> dict:
    wordnet, scifact = DATA / "wordnet" / "corpus.jsonl", DATA / "scifact" / "corpus.jsonl"
    glosses, abstracts = read_texts(wordnet, 0, 2000), read_texts(scifact, 0, 600)
    queries = [json.loads(line)["text"] for line in (DATA / "scifact" / "queries.jsonl").open()][:100]
    encoders = {
        "fp32": Encoder(),
        "int8 dynamic (before)": Encoder(quantize="int8", int8_method="dynamic"),
        "int8 per-row (now)": Encoder(quantize="int8"),
    }
    print("speed: fidelity", flush=True)
    exact = {"glosses": encoders["fp32"].encode(glosses), "abstracts": encoders["fp32"].encode(abstracts)}
    out: dict = {"encode": {}, "ingest": {}, "fidelity": {}, "load_before": load_average()}
    for name, encoder in encoders.items():
        if name != "fp32":
            out["fidelity"][name] = {
                kind: fidelity(encoder.encode(texts), exact[kind])
                for kind, texts in (("glosses", glosses), ("abstracts", abstracts))
            }
    print("speed: encoding", flush=True)
    out["encode"] = speeds(encoders, glosses, abstracts, queries, rounds)
    print("speed: whole ingests", flush=True)
    records = []
    with open(wordnet) as handle:
        for line in handle:
            records.append(json.loads(line))
            if len(records) == ingest_docs:
                break
    corpus = write_jsonl(work / "ingest.jsonl", records)
    runs: dict[str, list[float]] = {}
    setups = {"fp32": CONTROL, **{m[0]: m for m in METHODS}}
    for round_number in range(rounds):
        for name, (_, quantize, method) in setups.items():
            path = new_index(work / f"ingest-{round_number}-{quantize}-{method}", quantize, method)
            seconds = semsearch("ingest", str(corpus), "--index", str(path), "--quiet")
            runs.setdefault(name, []).append(len(records) / seconds)
            shutil.rmtree(path)
    out["ingest"] = {name: {"docs_per_s": float(np.median(v)), "rounds": v} for name, v in runs.items()}
    out["ingest_docs"] = len(records)
    out["load_after"] = load_average()
    return out


def quality_section(work: Path) -> dict:
    """`semsearch bench` in fp32 and int8 (per-row now): SciFact nDCG@10 and STS-B dev Spearman."""
    common = ["--dims", "128,all", "--transforms", "none,whiten", "--powers", "0.5", "--pooling", "mean"]
    common += ["--quantize", "none,int8", "--backend", "onnx", "--work", str(work / "bench")]
    out = {}
    for name, source in (
        ("scifact", ["--beir", str(DATA / "scifact"), "--split", "test", "--rerank", "0,100"]),
        ("sts", ["--sts", str(DATA / "stsb" / "sts-dev.csv"), "--rerank", "0"]),
    ):
        print(f"quality: {name}", flush=True)
        semsearch("bench", *source, *common, "--out", str(work / name))
        rows = json.loads((work / name / "results.json").read_text())
        keys = ("quantize", "transform", "dims", "rerank", "ndcg@10", "spearman")
        out[name] = [{k: r[k] for k in keys if k in r} for r in rows if r["system"] == "semsearch"]
    return out


# ---- the report ----------------------------------------------------------------------------------------


def markdown(results: dict) -> str:
    lines = [
        "# Determinism benchmark",
        "",
        "Made with (on this machine; sections merge, so one can be re-run alone): "
        + ", ".join(
            sorted({f"`{results[name]['command']}`" for name in (*SECTIONS, *RECORDED) if name in results})
        ),
        "",
        "The int8 encoder of the previous release (ONNX Runtime's `quantize_dynamic`) took one activation scale "
        "per batch, so a document's vector depended on the documents batched with it. This release quantizes "
        "each row (token) with its own scale (`int8_method: per-row` in new manifests; indexes of the "
        "previous release keep `dynamic`, so their stored vectors and new queries still agree).",
        "",
    ]
    if "cli" in results:
        cli = results["cli"]
        lines += [
            f"## The same corpus ingested four ways ({cli['docs']} SciFact documents, {cli['queries']} queries)",
            "",
            "Real `semsearch ingest` processes, default settings (whiten 128 dims + rerank 100); each variant "
            "compared with the one-file index: queries whose top-10 ids come in the same order, and the largest "
            "score difference of a document in both top-10s. The last "
            f"{cli['self_queries']} queries are documents' own texts: the lowest score of that document.",
            "",
            "| encoder | variant | identical top-10 | max score difference | own text scores | ingest s |",
            "|---|---|---|---|---|---|",
        ]
        for method, rows in cli["methods"].items():
            for variant, row in rows.items():
                lines.append(
                    f"| {method} | {variant} | {row['identical_top10']} / {cli['queries']} | "
                    f"{row['max_score_difference']:.2g} | {row['self_score_min']:.4f} | "
                    f"{row['ingest_seconds']:.1f} |"
                )
        lines.append("")
    if "speed" in results:
        lines += speed_markdown(results["speed"])
    if "quality" in results:
        lines += quality_markdown(results["quality"])
    if "candidates" in results:
        lines += candidates_markdown(results["candidates"]["rows"])
    return "\n".join(lines) + "\n"


def speed_markdown(speed: dict) -> list[str]:
    lines = [
        "## int8 speed and fidelity",
        "",
        "Encoding alone (the Encoder with its default token-budget batches; 2,000 WordNet glosses, 600 SciFact "
        "abstracts, 100 SciFact queries each encoded alone) and whole `semsearch ingest` processes of "
        f"{speed['ingest_docs']:,} WordNet glosses (defaults), alternated rounds, medians. Load average of "
        f"the machine (2 cores; other work was running): {speed['load_before']} before, "
        f"{speed['load_after']} after. Fidelity: cosine of each vector to fp32's, on the same texts.",
        "",
        "| encoder | glosses docs/s | abstracts docs/s | query ms | ingest docs/s | cosine to fp32, "
        "glosses (mean / min) | abstracts (mean / min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, encode in speed["encode"].items():
        fidelity = speed["fidelity"].get(name)
        cos = (
            [f"{f['mean_cosine']:.4f} / {f['min_cosine']:.4f}" for f in fidelity.values()]
            if fidelity
            else ["1 / 1", "1 / 1"]
        )
        lines.append(
            f"| {name} | {encode['glosses_per_s']:.0f} | {encode['abstracts_per_s']:.1f} | "
            f"{encode['query_ms']:.2f} | {speed['ingest'][name]['docs_per_s']:.0f} | {cos[0]} | {cos[1]} |"
        )
    return [*lines, ""]


def quality_markdown(quality: dict) -> list[str]:
    def pick(rows: list, quantize: str, key: str, transform: str = "none", rerank: int = 0) -> str:
        wanted = (quantize, transform, rerank, 128 if transform == "whiten" else 384)
        found = [r[key] for r in rows if (r["quantize"], r["transform"], r["rerank"], r["dims"]) == wanted]
        return f"{found[0]:.4f}" if key == "ndcg@10" else f"{found[0]:.2f}"

    lines = [
        "## Quality (`semsearch bench`, the engine itself)",
        "",
        "SciFact test (5,183 documents, 300 queries) and STS-B dev. The previous release's dynamic int8 gave "
        "0.6429 nDCG@10 (raw and 128 dims + rerank) and 86.51 Spearman (benchmarks/results/scifact, "
        "sts-dev), figures that moved with the batching; per-row's do not.",
        "",
        "| encoder | SciFact nDCG@10, raw | whiten 128 dims + rerank 100 | STS-B dev Spearman, raw |",
        "|---|---|---|---|",
    ]
    for quantize, name in (("none", "fp32"), ("int8", "int8 per-row")):
        lines.append(
            f"| {name} | {pick(quality['scifact'], quantize, 'ndcg@10')} | "
            f"{pick(quality['scifact'], quantize, 'ndcg@10', 'whiten', 100)} | "
            f"{pick(quality['sts'], quantize, 'spearman')} |"
        )
    return [*lines, ""]


def candidates_markdown(found: dict) -> list[str]:
    lines = [
        "## The candidates",
        "",
        "Each built from the same fp32 graph (by int8_candidates.py, at the commit the section names) and run by the product's Encoder. "
        "Largest difference of a vector from its default-batched one across batch sizes 1, 2 and 512, the "
        "texts split in three, glosses batched with long abstracts, and texts alone (1,000 WordNet glosses "
        "and 200 SciFact abstracts; fp32 itself moves by about 1e-7); speed alternated within rounds, "
        "medians (600 glosses, 40 abstracts, 50 short queries alone); cosine to fp32 on the 1,200 texts.",
        "",
        "| candidate | max difference | glosses docs/s | abstracts docs/s | query ms | cosine mean | min |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in found.items():
        lines.append(
            f"| {name} | {row['max_difference']:.2g} | {row['glosses_per_s']:.0f} | "
            f"{row['abstracts_per_s']:.1f} | {row['query_ms']:.2f} | {row['mean_cosine']:.4f} | "
            f"{row['min_cosine']:.4f} |"
        )
    return [*lines, ""]


def read_texts(path: Path, start: int, count: int) -> list[str]:
    """Texts as ingest embeds them (title, then text) of `count` documents from line `start`."""
    out = []
    with open(path) as handle:
        for number, line in enumerate(handle):
            if number >= start + count:
                break
            if number >= start:
                record = json.loads(line)
                title = record.get("title")
                out.append(f"{title} {record['text']}" if title else record["text"])
    return out


def fidelity(vectors: np.ndarray, exact: np.ndarray) -> dict:
    cosines = np.sum(vectors * exact, axis=1) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(exact, axis=1)
    )
    return {"mean_cosine": float(cosines.mean()), "min_cosine": float(cosines.min())}


def speeds(encoders: dict[str, Encoder], glosses, abstracts, queries, rounds: int) -> dict[str, dict]:
    """docs/s on glosses and on abstracts, and ms per query encoded alone: the encoders alternated within each
    round (the machine's other load then falls on all alike), medians."""
    found: dict[str, dict[str, list[float]]] = {name: {} for name in encoders}
    for encoder in encoders.values():
        encoder.encode(glosses[:64])  # load and warm
    for _ in range(rounds):
        for kind, texts in (("glosses_per_s", glosses), ("abstracts_per_s", abstracts)):
            for name, encoder in encoders.items():
                started = time.perf_counter()
                encoder.encode(texts)
                found[name].setdefault(kind, []).append(len(texts) / (time.perf_counter() - started))
        for name, encoder in encoders.items():
            started = time.perf_counter()
            for query in queries:
                encoder.encode([query])
            found[name].setdefault("query_ms", []).append(
                (time.perf_counter() - started) * 1000 / len(queries)
            )
    return {name: {k: statistics.median(v) for k, v in kinds.items()} for name, kinds in found.items()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--queries", type=int, default=25)
    parser.add_argument("--ingest-docs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)


def run(config: argparse.Namespace) -> Rows:
    for name in ("scifact", "wordnet"):
        require(DATA / name / "corpus.jsonl", name)
    sections = config.sections.split(",")
    results_path = config.out / "determinism.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    command = command_line()
    for quantize, method in (("none", "per-row"), ("int8", "per-row"), ("int8", "dynamic")):
        Encoder(quantize=quantize, int8_method=method).load()  # graphs exported before any timing
    work = config.work or Path(tempfile.mkdtemp(prefix="determinism-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if "cli" in sections:
            results["cli"] = {**cli_section(work, config.docs, config.queries), "command": command}
        if "speed" in sections:
            results["speed"] = {**speed_section(work, config.ingest_docs, config.rounds), "command": command}
        if "quality" in sections and (DATA / "stsb" / "sts-dev.csv").is_file():
            results["quality"] = {**quality_section(work), "command": command}
    finally:
        if config.work is None:
            shutil.rmtree(work, ignore_errors=True)
    config.out.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(results, indent=2) + "\n")
    (config.out / "determinism.md").write_text(markdown(results))
    print(markdown(results))
    return results
