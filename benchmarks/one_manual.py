"""One long manual as a new user meets it: `semsearch ingest manual.pdf`, then `query -k 10 --json`. Checks the
claims reference.md makes for a corpus of one document: the answer is k distinct places with their pages, no
JSON line over 64 KB, and the calibration at most a fifth of the ingest's wall time. Written to
benchmarks/results/one-manual.md and .json.

    .venv/bin/python benchmarks/one_manual.py [--pdf PATH] [--work DIR]

The default PDF is Debian's texlive-doc LuaTeX manual (324 pages; any real manual of a few hundred pages does).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from scale import command_line, current_commit, markdown_table

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results"
DEFAULT_PDF = Path("/usr/share/doc/texlive-doc/luatex/base/luatex.pdf")
QUERIES = ["how do I define a new primitive", "callbacks for reading files", "font loading", "math spacing"]
MAX_LINE = 64 * 1024


def semsearch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *args], capture_output=True, text=True, check=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-one-manual"))
    args = parser.parse_args()
    if not args.pdf.exists():
        sys.exit(f"{args.pdf}: not found (apt-get install texlive-doc, or --pdf a manual of your own)")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    index = str(args.work / "index")
    started = time.perf_counter()
    semsearch("ingest", str(args.pdf), "--index", index, "--quiet")
    ingest_seconds = time.perf_counter() - started
    calibration = semsearch("info", "--index", index).stdout
    seconds = float(re.search(r"calibration: .*? in ([0-9.]+) s", calibration).group(1))
    rows = []
    for query in QUERIES:
        lines = semsearch("query", query, "--index", index, "-k", "10", "--json").stdout.splitlines()
        hits = [json.loads(line) for line in lines]
        places = {(hit["id"], hit["passage"]["start"]) for hit in hits}
        rows.append(
            {
                "query": query,
                "hits": len(hits),
                "distinct places": len(places),
                "pages": " ".join(str((hit["location"] or {}).get("page")) for hit in hits),
                "longest JSON line (bytes)": max(len(line.encode()) for line in lines),
            }
        )
    result = {
        "pdf": str(args.pdf),
        "ingest_seconds": round(ingest_seconds, 1),
        "calibration_seconds": seconds,
        "calibration_share": round(seconds / ingest_seconds, 3),
        "queries": rows,
        "holds": all(r["distinct places"] == 10 and r["longest JSON line (bytes)"] <= MAX_LINE for r in rows)
        and seconds / ingest_seconds <= 0.2,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "one-manual.json").write_text(json.dumps(result, indent=2) + "\n")
    commit = current_commit()
    body = [
        "# One long manual: places, line sizes, the calibration's share",
        "",
        f"`{command_line()}` at {commit}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.",
        "",
        f"{args.pdf.name}: ingest {ingest_seconds:.1f} s wall, calibration {seconds:.1f} s "
        f"({100 * seconds / ingest_seconds:.1f}%; target at most 20%).",
        "",
        *markdown_table(rows),
        "",
        f"Every claim holds: {result['holds']} (10 distinct places a query, no JSON line over 64 KB, calibration "
        "at most a fifth of the ingest).",
    ]
    (OUT / "one-manual.md").write_text("\n".join(body) + "\n")
    print("\n".join(body))


if __name__ == "__main__":
    main()
