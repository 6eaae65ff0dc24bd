"""Export identity benchmark (issue 38): does `export --vectors` then `ingest` of the export answer as its
source after upserts? A BEIR corpus (default SciFact) is ingested with real `semsearch ingest` processes at each
index type asked for, a share of its documents is then upserted with their text changed (the second half of
its words put first: a new vector each), the index is exported with its vectors and the export ingested into a
new index, by this tree's code and, with `--against-src`, by another tree's (the same export: a release that
does not read a header field ignores it). Every test query (the first `--queries` of those with judgements)
runs in the default mode on the source and on each import; compared: the top-10 ids in order and the largest
score difference of a document ranked alike, the search parameters (`search_params`) and the FAISS structure.

    .venv/bin/python benchmarks/export_identity.py [--types ivf,pq] [--corpus ../shared/data/scifact]
        [--share 0.2] [--queries 300] [--against-src ../main/src] [--work DIR] [--name export-identity]

`--corpus` is a BEIR directory or Cranfield's SMART files (../shared/data/cranfield).
Vectors come from SEMSEARCH_ENCODING_CACHE (encoding/cache.py: the vector the model gives) where it names a
directory, else from a cache in the work directory: the corpus is encoded once whatever the types. Writes
benchmarks/results/NAME.md and NAME.json."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from semsearch.evaluation.datasets import ensure_beir, load_beir

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results"
CACHE_ENV = "SEMSEARCH_ENCODING_CACHE"
SEED = 5  # of the upserted documents' choice (session 11's run: the same 1,036 of SciFact's 5,183)


def semsearch(args: list[str], src: Path) -> dict[str, float]:
    """A whole `semsearch` process run with the code of `src`; its wall and CPU seconds (user and system)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([sys.executable, "-m", "semsearch", *args], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"semsearch {shlex.join(args)} failed:\n{run.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall": time.perf_counter() - started, "cpu": cpu}


def rotated(text: str) -> str:
    words = text.split()
    return " ".join(words[len(words) // 2 :] + words[: len(words) // 2])


def changed_documents(corpus: Path, share: float, out: Path) -> int:
    """A `share` of the corpus's documents (SEED's draw) with their text changed, written to `out`."""
    documents = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    random.seed(SEED)
    chosen = sorted(random.sample(range(len(documents)), int(len(documents) * share)))
    out.write_text(
        "".join(json.dumps({**documents[i], "text": rotated(documents[i]["text"])}) + "\n" for i in chosen)
    )
    return len(chosen)


def answers(path: Path, queries: list[str]) -> dict:
    from semsearch import Index

    with Index.open(path) as index:
        found = index.search_many(queries, k=10)
        state = index.state
        return {
            "hits": [[(hit.id, hit.score) for hit in hits] for hits in found],
            "structure": state.index_structure,
            "search_params": state.search_params,
            "measured_recall": state.measured_recall,
        }


def compared(source: dict, imported: dict) -> dict:
    same = sum([i for i, _ in a] == [i for i, _ in b] for a, b in zip(source["hits"], imported["hits"]))
    gaps = [
        abs(s - t) for a, b in zip(source["hits"], imported["hits"]) for (i, s), (j, t) in zip(a, b) if i == j
    ]
    return {
        "same_top10": same,
        "queries": len(source["hits"]),
        "max_score_difference": max(gaps, default=0.0),
        "same_params": source["search_params"] == imported["search_params"],
        "same_structure": source["structure"] == imported["structure"],
        "structure": imported["structure"],
        "search_params": imported["search_params"],
    }


def header_bytes(export: Path) -> dict:
    with export.open("rb") as handle:
        line = handle.readline()
    header = json.loads(line)
    lists = header.get("lists")
    return {"header": len(line), "lists": len(json.dumps(lists)) if lists else 0}


def run_type(kind: str, args: argparse.Namespace, corpus: Path, changed: Path, queries: list[str]) -> dict:
    work, here = args.work / kind, REPO / "src"
    work.mkdir(parents=True, exist_ok=True)
    for name in ("source", "import", "import-against", "export.jsonl"):
        subprocess.run(["rm", "-rf", str(work / name)], check=True)
    row: dict = {"type": kind}
    row["source_s"] = semsearch(
        ["ingest", str(corpus / "corpus.jsonl"), "--index", str(work / "source"), "--index-type", kind, "-q"],
        here,
    )
    row["upsert_s"] = semsearch(["ingest", str(changed), "--index", str(work / "source"), "-q"], here)
    row["export_s"] = semsearch(
        ["export", "--index", str(work / "source"), "-o", str(work / "export.jsonl"), "--vectors", "-q"], here
    )
    row["export_bytes"] = header_bytes(work / "export.jsonl")
    source = answers(work / "source", queries)
    row["source"] = {key: source[key] for key in ("structure", "search_params", "measured_recall")}
    row["import_s"] = semsearch(
        ["ingest", str(work / "export.jsonl"), "--index", str(work / "import"), "-q"], here
    )
    row["import"] = compared(source, answers(work / "import", queries))
    if args.against_src:
        target = work / "import-against"
        row["against_s"] = semsearch(
            ["ingest", str(work / "export.jsonl"), "--index", str(target), "-q"], args.against_src
        )
        row["against"] = compared(source, answers(target, queries))
    print(json.dumps({key: value for key, value in row.items() if key != "source"}), flush=True)
    return row


def report(result: dict, out: Path) -> None:
    lines = [
        "# Export identity after upserts (issue 38)",
        "",
        f"Made with `{result['command']}` at {result['started']} UTC (finished {result['finished']}); load average "
        f"{result['load_before']} before, {result['load_after']} after (2 cores, shared with other work).",
        "",
        f"{result['corpus']}: {result['documents']:,} documents ingested at each index type, then {result['changed']:,} "
        f"of them ({result['share']:.0%}, seed {SEED}) upserted with their text changed; `export --vectors`, then "
        f"`ingest` of the export into a new index. The first {result['queries']} test queries with judgements, "
        "default mode, top 10: queries whose ids come in the same order, and the largest score difference of a "
        "document ranked alike. 'this tree' imports with this commit's code; "
        f"'against' with `{result['against_src']}` ({result['against_rev']}), the same export file.",
        "",
        "| index type | import by | same top-10 | max score difference | same search params | structure (source -> import) | import s (CPU s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        for name, label in (("import", "this tree"), ("against", "against")):
            if name not in row:
                continue
            found = row[name]
            lines.append(
                f"| {row['type']} | {label} | {found['same_top10']} / {found['queries']} | "
                f"{found['max_score_difference']:.1e} | {'yes' if found['same_params'] else 'no'} | "
                f"{row['source']['structure']} -> {found['structure']} | "
                f"{row[name + '_s']['wall']:.1f} ({row[name + '_s']['cpu']:.1f}) |"
            )
    lines += [
        "",
        "Search parameters, source and imports (`search_params`; `exact_rows` is timed, so a build's own):",
        "",
    ]
    for row in result["rows"]:
        lines.append(f"- {row['type']} source: `{json.dumps(row['source']['search_params'])}`")
        for name in ("import", "against"):
            if name in row:
                lines.append(f"  - {name}: `{json.dumps(row[name]['search_params'])}`")
        sizes = row["export_bytes"]
        lines.append(f"  - export header {sizes['header']:,} bytes, of them `lists` {sizes['lists']:,}")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", default="ivf,pq")
    parser.add_argument("--corpus", type=Path, default=DATA / "scifact")
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--against-src", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=Path("/tmp/export-identity"))
    parser.add_argument("--name", default="export-identity")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(CACHE_ENV, str(args.work / "encoding-cache"))
    started = datetime.now(timezone.utc)
    load_before = " ".join(f"{v:.2f}" for v in os.getloadavg())
    changed = args.work / "changed.jsonl"
    corpus = ensure_beir(args.corpus, args.work)  # Cranfield's SMART files converted once
    count = changed_documents(corpus / "corpus.jsonl", args.share, changed)
    queries = list(load_beir(corpus).queries.values())[: args.queries]  # those with judgements
    rows = [run_type(kind, args, corpus, changed, queries) for kind in args.types.split(",")]
    against_rev = ""
    if args.against_src:
        rev = subprocess.run(
            ["git", "-C", str(args.against_src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        )
        against_rev = rev.stdout.strip()
    result = {
        "command": "python benchmarks/export_identity.py " + shlex.join(sys.argv[1:]),
        "started": started.strftime("%Y-%m-%d %H:%M"),
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "load_before": load_before,
        "load_after": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "corpus": args.corpus.name,
        "documents": sum(1 for line in (corpus / "corpus.jsonl").open() if line.strip()),
        "changed": count,
        "share": args.share,
        "queries": len(queries),
        "against_src": str(args.against_src) if args.against_src else None,
        "against_rev": against_rev,
        "rows": rows,
    }
    report(result, OUT / args.name)


if __name__ == "__main__":
    main()
