"""Backup, restore and export benchmark (issue 28): what a backup costs against the ingest that made the index,
what hard links save, and an export of every WordNet gloss with its vectors (peak RSS) re-imported without
encoding, against the original ingest. Every command is a real `semsearch` process, timed from outside; peak
RSS is the process's own (ru_maxrss from wait4).

    .venv/bin/python benchmarks/backup.py [--scifact ../shared/data/scifact] [--wordnet ../shared/data/wordnet]
        [--skip-wordnet] [--out benchmarks/results]

Writes backup.md and backup.json (with the command) to --out. Targets: a backup under 5% of the ingest time;
an unchanged index backed up into the same file system costs little beyond the SQLite copy; the re-import at
least 5x faster than the ingest."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import command_line

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


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
        f"Made with: `{command}`",
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, default=DATA / "scifact")
    parser.add_argument("--wordnet", type=Path, default=DATA / "wordnet")
    parser.add_argument("--skip-wordnet", action="store_true")
    parser.add_argument("--skip-scifact", action="store_true", help="WordNet alone: writes backup-wordnet.md")
    parser.add_argument(
        "--other-fs", type=Path, default=Path("/dev/shm"), help="another file system (copies)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    command = command_line()
    other = (
        args.other_fs
        if args.other_fs.is_dir() and os.stat(args.other_fs).st_dev != os.stat(tempfile.gettempdir()).st_dev
        else None
    )
    with tempfile.TemporaryDirectory(prefix="semsearch-backup-bench-") as directory:
        work = Path(directory)
        rows = [] if args.skip_scifact else scifact_rows(args.scifact / "corpus.jsonl", work, other)
        for row in rows:
            print(row, flush=True)
        if not args.skip_wordnet:
            for row in wordnet_rows(args.wordnet / "corpus.jsonl", work):
                print(row, flush=True)
                rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "backup-wordnet" if args.skip_scifact else "backup"
    (args.out / f"{name}.json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    (args.out / f"{name}.md").write_text(markdown(rows, command))
    print(markdown(rows, command))


if __name__ == "__main__":
    main()
