"""`serve`'s /files route against every traversal form of tests/traversal.py, written to
benchmarks/results/files-route-traversal.md: a folder (Markdown, HTML, a PDF) ingested by `semsearch ingest`,
files and links around it, a real server on 127.0.0.1; each form sent as written on a socket of its own, its
status and size, and whether any byte of a file outside the index (the markers each holds) came back. The files
the index holds are fetched too, and must come back byte for byte.

    .venv/bin/python benchmarks/files_route.py [--out benchmarks/results/files-route-traversal.md]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import traversal  # noqa: E402
from scale import current_commit  # noqa: E402
from test_server import running_server  # noqa: E402


def cell(text: str) -> str:
    return "`" + text.encode("unicode_escape").decode().replace("|", "\\|").replace("`", "'") + "`"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/files-route-traversal.md")
    args = parser.parse_args()
    commit = current_commit()
    with tempfile.TemporaryDirectory() as work:
        layout = traversal.build(Path(work), traversal.SEMSEARCH)
        with running_server(layout.index) as url:
            refused = [
                (what, target, traversal.request(url, target)) for what, target in traversal.forms(layout)
            ]
            held = [(what, target, want, traversal.request(url, target)) for what, target, want in
                    traversal.served_right(layout)]  # fmt: skip
    leaks = [row for row in refused if traversal.leaked(row[2]) or row[2].status == 200]
    statuses = sorted({answer.status for *_, answer in refused})
    lines = [
        "# /files route: traversal forms",
        "",
        f"    .venv/bin/python benchmarks/files_route.py   # commit {commit}, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "",
        f"{len(refused)} request targets aimed outside what the index holds, each sent as written on its own "
        f"connection to a real `serve` on 127.0.0.1: **{len(leaks)} answered 200 or held a byte of a file "
        f"outside the index** (statuses seen: {', '.join(map(str, statuses))}). The markers looked for: a file "
        "outside the folder, one in a folder linked in, a deleted document's file, a file made after the "
        "ingest, a hidden one the walk left out, the index's SQLite file, /etc/passwd.",
        "",
        f"The {len(held)} files the index holds, asked for the same way: "
        f"{sum(answer.status == 200 and answer.body == want for *_, want, answer in held)} of {len(held)} "
        "came back byte for byte.",
        "",
        "| what | request target | status | bytes | outside bytes |",
        "|---|---|---|---|---|",
    ]
    for what, target, answer in refused:
        found = traversal.leaked(answer)
        lines.append(
            f"| {what} | {cell(target)} | {answer.status} | {len(answer.body)} | "
            f"{'**' + ', '.join(m.decode() for m in found) + '**' if found else 'none'} |"
        )
    lines += ["", "| held file | request target | status | byte for byte |", "|---|---|---|---|"]
    for what, target, want, answer in held:
        lines.append(f"| {what} | {cell(target)} | {answer.status} | {answer.body == want} |")
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(refused)} forms, {len(leaks)} leaks; wrote {args.out}")


if __name__ == "__main__":
    main()
