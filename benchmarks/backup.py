"""Backup, restore and export benchmark: what a backup costs against the ingest that made the index,
what hard links save, and an export of every WordNet gloss with its vectors (peak RSS) re-imported without
encoding, against the original ingest. Every command is a real `semsearch` process, timed from outside; peak
RSS is the process's own (ru_maxrss from wait4).

    python -m benchmarks backup backup [--scifact ../shared/data/scifact] [--wordnet ../shared/data/wordnet]
        [--skip-wordnet] [--out benchmarks/results]

Writes backup.md and backup.json (with the command) to --out. Targets: a backup under 5% of the ingest time;
an unchanged index backed up into the same file system costs little beyond the SQLite copy; the re-import at
least 5x faster than the ingest.

Part `export-identity`: Export identity benchmark: does `export --vectors` then `ingest` of the export answer as its
source after upserts? A BEIR corpus (default SciFact) is ingested with real `semsearch ingest` processes at each
index type asked for, a share of its documents is then upserted with their text changed (the second half of
its words put first: a new vector each), the index is exported with its vectors and the export ingested into a
new index, by this tree's code and, with `--against-src`, by another tree's (the same export: a release that
does not read a header field ignores it). Every test query (the first `--queries` of those with judgements)
runs in the default mode on the source and on each import; compared: the top-10 ids in order and the largest
score difference of a document ranked alike, the search parameters (`search_params`) and the FAISS structure.

    python -m benchmarks backup export-identity [--types ivf,pq] [--corpus ../shared/data/scifact]
        [--share 0.2] [--queries 300] [--against-src ../main/src] [--work DIR] [--name export-identity]

`--corpus` is a BEIR directory or Cranfield's SMART files (../shared/data/cranfield).
Vectors come from SEMSEARCH_ENCODING_CACHE (encoding/cache.py: the vector the model gives) where it names a
directory, else from a cache in the work directory: the corpus is encoded once whatever the types. Writes
benchmarks/results/NAME.md and NAME.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.suite import DATA, OUT, REPO, Rows, command_line, made_by
from semsearch.evaluation.datasets import ensure_beir, load_beir

CLAIM = "A backup costs a few percent of the ingest, hard links save its copies; an export re-imports without encoding, and answers as its source"


def semsearch(*args: object) -> dict:
    """Run one command; its seconds and peak RSS (MiB)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "semsearch", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    err = process.stderr.read().decode()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"semsearch {' '.join(map(str, args))} failed: {err}")
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "stderr": err}


def startup() -> float:
    """A process that imports what the backup command imports and does nothing: the fixed cost in each."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import semsearch.operations.backup, semsearch.cli"], check=True)
    return time.perf_counter() - started


def sqlite_copy(index: Path, target: Path) -> float:
    """The store alone, copied by SQLite's backup API in this process: the floor of any consistent backup."""
    started = time.perf_counter()
    source, dest = sqlite3.connect(index / "documents.db"), sqlite3.connect(target)
    source.backup(dest)
    dest.close()
    source.close()
    return time.perf_counter() - started


def size(path: Path) -> int:
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        if path.is_dir()
        else path.stat().st_size
    )


def in_process_seconds(stderr: str) -> float | None:
    """The backup's own time, as its summary line says (without the interpreter's start)."""
    for line in stderr.splitlines():
        if line.startswith("backed up") and " in " in line:
            return float(line.rsplit(" in ", 1)[1].split()[0])
    return None


def scifact_rows(corpus: Path, work: Path, other_fs: Path | None) -> list[dict]:
    index = work / "scifact"
    rows = []
    ingest = semsearch("ingest", corpus, "--index", index, "-q")
    rows.append(
        {"measure": "scifact ingest (5,183 docs)", "seconds": ingest["seconds"], "bytes": size(index)}
    )
    floor = sqlite_copy(index, work / "floor.db")
    rows.append(
        {
            "measure": "scifact documents.db copy alone (SQLite backup API, in process)",
            "seconds": round(floor, 3),
            "bytes": (work / "floor.db").stat().st_size,
        }
    )
    fixed = startup()
    rows.append(
        {"measure": "python start + imports of the command (in every CLI row)", "seconds": round(fixed, 2)}
    )
    for n in range(2):
        backup = semsearch("backup", work / f"backup-{n}", "--index", index, "-q")
        own = in_process_seconds(semsearch("backup", work / f"backup-timed-{n}", "--index", index)["stderr"])
        rows.append(
            {
                "measure": f"scifact backup, same file system (hard links){' again, unchanged' if n else ''}",
                "seconds": backup["seconds"],
                "in_process_seconds": own,
                "share_of_ingest": f"{backup['seconds'] / ingest['seconds']:.1%}",
                "bytes": size(work / f"backup-{n}"),
                "peak_rss_mib": backup["peak_rss_mib"],
            }
        )
    if other_fs is not None:
        target = other_fs / "semsearch-backup-bench"
        shutil.rmtree(target, ignore_errors=True)
        copied = semsearch("backup", target, "--index", index)
        rows.append(
            {
                "measure": f"scifact backup to another file system ({other_fs}: copies)",
                "seconds": copied["seconds"],
                "in_process_seconds": in_process_seconds(copied["stderr"]),
                "share_of_ingest": f"{copied['seconds'] / ingest['seconds']:.1%}",
                "bytes": size(target),
            }
        )
        shutil.rmtree(target, ignore_errors=True)
    archive = semsearch("backup", work / "scifact.tar.gz", "--index", index, "--archive")
    rows.append(
        {
            "measure": "scifact backup --archive",
            "seconds": archive["seconds"],
            "in_process_seconds": in_process_seconds(archive["stderr"]),
            "share_of_ingest": f"{archive['seconds'] / ingest['seconds']:.1%}",
            "bytes": size(work / "scifact.tar.gz"),
        }
    )
    restore = semsearch("restore", work / "scifact.tar.gz", "--index", work / "restored", "-q")
    rows.append(
        {"measure": "scifact restore of the archive (verify, check, swap in)", "seconds": restore["seconds"]}
    )
    export = semsearch("export", "--index", index, "-o", work / "scifact.jsonl", "--vectors", "-q")
    rows.append(
        {
            "measure": "scifact export --vectors",
            "seconds": export["seconds"],
            "bytes": size(work / "scifact.jsonl"),
            "peak_rss_mib": export["peak_rss_mib"],
        }
    )
    again = semsearch("ingest", work / "scifact.jsonl", "--index", work / "scifact-again", "-q")
    rows.append(
        {
            "measure": "scifact ingest of the export (vectors: no encoding)",
            "seconds": again["seconds"],
            "share_of_ingest": f"{again['seconds'] / ingest['seconds']:.1%}",
            "peak_rss_mib": again["peak_rss_mib"],
        }
    )
    return rows


def wordnet_rows(corpus: Path, work: Path) -> list[dict]:
    index = work / "wordnet"
    ingest = semsearch("ingest", corpus, "--index", index, "-q")
    rows = [
        {
            "measure": "wordnet ingest (117,791 docs)",
            "seconds": ingest["seconds"],
            "bytes": size(index),
            "peak_rss_mib": ingest["peak_rss_mib"],
        }
    ]
    backup = semsearch("backup", work / "wordnet-backup", "--index", index)
    rows.append(
        {
            "measure": "wordnet backup, same file system",
            "seconds": backup["seconds"],
            "in_process_seconds": in_process_seconds(backup["stderr"]),
            "share_of_ingest": f"{backup['seconds'] / ingest['seconds']:.1%}",
            "bytes": size(work / "wordnet-backup"),
            "peak_rss_mib": backup["peak_rss_mib"],
        }
    )
    export = semsearch("export", "--index", index, "-o", work / "wordnet.jsonl", "--vectors", "-q")
    rows.append(
        {
            "measure": "wordnet export --vectors",
            "seconds": export["seconds"],
            "bytes": size(work / "wordnet.jsonl"),
            "peak_rss_mib": export["peak_rss_mib"],
        }
    )
    again = semsearch("ingest", work / "wordnet.jsonl", "--index", work / "wordnet-again", "-q")
    rows.append(
        {
            "measure": "wordnet ingest of the export (vectors: no encoding)",
            "seconds": again["seconds"],
            "share_of_ingest": f"{again['seconds'] / ingest['seconds']:.1%}",
            "speedup": f"{ingest['seconds'] / again['seconds']:.1f}x",
            "peak_rss_mib": again["peak_rss_mib"],
        }
    )
    return rows


def markdown(rows: list[dict], command: str) -> str:
    columns = [
        "measure",
        "seconds",
        "in_process_seconds",
        "share_of_ingest",
        "speedup",
        "bytes",
        "peak_rss_mib",
    ]
    lines = [
        "# Backup, restore and export",
        "",
        made_by(),
        "",
        "Each row a real `semsearch` process, timed from outside (its Python start included; `in_process_seconds` is "
        "the backup's own time from its summary line). `share_of_ingest`: of the ingest that made the index.",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column, "")
            cells.append(f"{value:,}" if column == "bytes" and value != "" else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def backup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scifact", type=Path, default=DATA / "scifact")
    parser.add_argument("--wordnet", type=Path, default=DATA / "wordnet")
    parser.add_argument("--skip-wordnet", action="store_true")
    parser.add_argument("--skip-scifact", action="store_true", help="WordNet alone: writes backup-wordnet.md")
    parser.add_argument(
        "--other-fs", type=Path, default=Path("/dev/shm"), help="another file system (copies)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")


def backup(config: argparse.Namespace) -> Rows:
    """What a backup costs against the ingest, what hard links save, an export re-imported (backup.md)."""
    command = command_line()
    other = (
        config.other_fs
        if config.other_fs.is_dir()
        and os.stat(config.other_fs).st_dev != os.stat(tempfile.gettempdir()).st_dev
        else None
    )
    with tempfile.TemporaryDirectory(prefix="semsearch-backup-bench-") as directory:
        work = Path(directory)
        rows = [] if config.skip_scifact else scifact_rows(config.scifact / "corpus.jsonl", work, other)
        for row in rows:
            print(row, flush=True)
        if not config.skip_wordnet:
            for row in wordnet_rows(config.wordnet / "corpus.jsonl", work):
                print(row, flush=True)
                rows.append(row)
    config.out.mkdir(parents=True, exist_ok=True)
    name = "backup-wordnet" if config.skip_scifact else "backup"
    (config.out / f"{name}.json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    (config.out / f"{name}.md").write_text(markdown(rows, command))
    print(markdown(rows, command))
    return rows


CACHE_ENV = "SEMSEARCH_ENCODING_CACHE"
SEED = 5  # of the upserted documents' choice (session 11's run: the same 1,036 of SciFact's 5,183)


def semsearch_command(args: list[str], src: Path) -> dict[str, float]:
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
    from semsearch_command import Index

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
    row["source_s"] = semsearch_command(
        ["ingest", str(corpus / "corpus.jsonl"), "--index", str(work / "source"), "--index-type", kind, "-q"],
        here,
    )
    row["upsert_s"] = semsearch_command(["ingest", str(changed), "--index", str(work / "source"), "-q"], here)
    row["export_s"] = semsearch_command(
        ["export", "--index", str(work / "source"), "-o", str(work / "export.jsonl"), "--vectors", "-q"], here
    )
    row["export_bytes"] = header_bytes(work / "export.jsonl")
    source = answers(work / "source", queries)
    row["source"] = {key: source[key] for key in ("structure", "search_params", "measured_recall")}
    row["import_s"] = semsearch_command(
        ["ingest", str(work / "export.jsonl"), "--index", str(work / "import"), "-q"], here
    )
    row["import"] = compared(source, answers(work / "import", queries))
    if args.against_src:
        target = work / "import-against"
        row["against_s"] = semsearch_command(
            ["ingest", str(work / "export.jsonl"), "--index", str(target), "-q"], args.against_src
        )
        row["against"] = compared(source, answers(target, queries))
    print(json.dumps({key: value for key, value in row.items() if key != "source"}), flush=True)
    return row


def report(result: dict, out: Path) -> None:
    lines = [
        "# Export identity after upserts",
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


def export_identity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--types", default="ivf,pq")
    parser.add_argument("--corpus", type=Path, default=DATA / "scifact")
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--against-src", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=Path("/tmp/export-identity"))
    parser.add_argument("--name", default="export-identity")


def export_identity(config: argparse.Namespace) -> Rows:
    """export --vectors then ingest of the export answers as its source after upserts (export-identity.md)."""
    config.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(CACHE_ENV, str(config.work / "encoding-cache"))
    started = datetime.now(timezone.utc)
    load_before = " ".join(f"{v:.2f}" for v in os.getloadavg())
    changed = config.work / "changed.jsonl"
    corpus = ensure_beir(config.corpus, config.work)  # Cranfield's SMART files converted once
    count = changed_documents(corpus / "corpus.jsonl", config.share, changed)
    queries = list(load_beir(corpus).queries.values())[: config.queries]  # those with judgements
    rows = [run_type(kind, config, corpus, changed, queries) for kind in config.types.split(",")]
    against_rev = ""
    if config.against_src:
        rev = subprocess.run(
            ["git", "-C", str(config.against_src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        )
        against_rev = rev.stdout.strip()
    result = {
        "command": command_line(),
        "started": started.strftime("%Y-%m-%d %H:%M"),
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "load_before": load_before,
        "load_after": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "corpus": config.corpus.name,
        "documents": sum(1 for line in (corpus / "corpus.jsonl").open() if line.strip()),
        "changed": count,
        "share": config.share,
        "queries": len(queries),
        "against_src": str(config.against_src) if config.against_src else None,
        "against_rev": against_rev,
        "rows": rows,
    }
    report(result, OUT / config.name)
    return rows


PARTS = {
    "backup": (backup_arguments, backup),
    "export-identity": (export_identity_arguments, export_identity),
}
