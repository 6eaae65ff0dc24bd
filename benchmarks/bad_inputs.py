"""The table of bad inputs (tests/badinputs.py) run once and written down: each CLI row in process (click's
CliRunner) against an index of the committed sample corpus, each HTTP row against a real `semsearch serve` of a
copy of it; for each, the exit code (HTTP status) and the one line (JSON error message) it answered with, and
whether a traceback or a 500 appeared anywhere (none may). Writes benchmarks/results/bad-inputs.md.

    python -m benchmarks bad_inputs table

And `serve`'s /files route against every traversal form of tests/traversal.py, written to
benchmarks/results/files-route-traversal.md: a folder (Markdown, HTML, a PDF) ingested by `semsearch ingest`,
files and links around it, a real server on 127.0.0.1; each form sent as written on a socket of its own, its
status and size, and whether any byte of a file outside the index (the markers each holds) came back. The files
the index holds are fetched too, and must come back byte for byte.

    python -m benchmarks bad_inputs files-route [--out benchmarks/results/files-route-traversal.md]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from click.testing import CliRunner

from benchmarks.suite import OUT, REPO, Rows, made_by, tests_helpers
from semsearch.cli import main

tests_helpers()
import traversal  # noqa: E402
from badinputs import ADMIN, CLI, HTTP, Fixtures, first_error, shown, traceback_in, vectors_corpus  # noqa: E402
from test_server import running_server  # noqa: E402

CLAIM = "A bad input answers one line and exit 1 or 2 (4xx JSON over HTTP), never a traceback; /files serves no byte outside"


def cell(text: str, width: int = 110) -> str:
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def cli_rows(fixtures: Fixtures) -> list[dict]:
    rows = []
    for args, bad in CLI:
        result = CliRunner().invoke(main, fixtures.fill(args))
        escaped = result.exception is not None and not isinstance(result.exception, SystemExit)
        line = repr(result.exception) if escaped else first_error(result.output)
        line = line.replace(str(fixtures.root), "…")
        rows.append(
            {
                "input": shown(args),
                "exit": result.exit_code,
                "answer": line,
                "ok": not escaped
                and not traceback_in(result.output)
                and result.exit_code in ((1, 2) if bad else (0, 1, 2)),
            }
        )
    return rows


def http_rows(index: Path) -> list[dict]:
    import httpx

    command = [
        sys.executable,
        "-m",
        "semsearch",
        "serve",
        "--index",
        str(index),
        "--port",
        "0",
        "--api-key",
        ADMIN,
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"serving (http://[^/]+)/", process.stderr.readline())[1]
        threading.Thread(target=process.stderr.read, daemon=True).start()
        rows = []
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {ADMIN}"}) as client:
            for method, path, params, body, status in HTTP:
                content = body if isinstance(body, bytes) else None
                payload = None if isinstance(body, bytes) or body is None else body
                answer = client.request(method, path, params=params, json=payload, content=content)
                message = (
                    answer.json().get("error", {}).get("message", "")
                    if answer.status_code >= 400
                    else "(results)"
                )
                shown_body = (
                    ""
                    if body is None
                    else repr(body[:40])
                    if isinstance(body, bytes)
                    else json.dumps(body)[:60]
                )
                rows.append(
                    {
                        "input": f"{method} {path} {json.dumps(params) if params else ''} {shown_body}".strip(),
                        "exit": answer.status_code,
                        "answer": message,
                        "ok": answer.status_code == status and answer.status_code != 500,
                    }
                )
        return rows
    finally:
        process.terminate()
        process.wait(30)


def table(rows: list[dict], first: str) -> list[str]:
    lines = [f"| {first} | exit / status | answer (the one line) | clean |", "|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| `{cell(row['input'], 80)}` | {row['exit']} | {cell(row['answer'])} | {'yes' if row['ok'] else 'NO'} |"
        )
    return lines


def run_table(config: argparse.Namespace) -> Rows:
    """Every bad input of tests/badinputs.py, CLI and HTTP: its exit code or status and the one line."""
    from semsearch import Index

    root = Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    try:
        index = root / "index"
        with Index.create(index, transform="none") as made:
            docs = [
                json.loads(line) for line in (REPO / "examples" / "sample.jsonl").read_text().splitlines()
            ]
            for n, doc in enumerate(docs):
                doc.update(year=2000 + n % 20, kind="even" if n % 2 == 0 else "odd")
            made.add(docs)
        vectors_index = root / "vectors-index"
        assert (
            CliRunner()
            .invoke(
                main,
                [
                    "ingest",
                    str(vectors_corpus(root / "v.jsonl")),
                    "--vector-field",
                    "vector",
                    "--index",
                    str(vectors_index),
                    "-q",
                ],
            )
            .exit_code
            == 0
        )
        fixtures = Fixtures(root, index, vectors_index)
        cli = cli_rows(fixtures)
        fixtures.close()
        served = root / "served"
        shutil.copytree(index, served)
        http = http_rows(served)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    clean_cli, clean_http = sum(r["ok"] for r in cli), sum(r["ok"] for r in http)
    lines = [
        "# Bad inputs: one line, exit 1 or 2, no traceback; 4xx JSON, never 500",
        "",
        made_by("the rows: tests/badinputs.py; the test: tests/test_bad_inputs.py"),
        "",
        f"- CLI: {len(cli)} inputs, {clean_cli} clean (exit 1/2 with one line where the input is bad, 0 where it is "
        "only odd; no traceback).",
        f"- HTTP: {len(http)} inputs, {clean_http} answered with the expected status (4xx JSON for every bad one; "
        "no 500).",
        "",
        "## CLI (in process, against an index of examples/sample.jsonl; … is the run's temporary directory)",
        "",
        *table(cli, "arguments"),
        "",
        "## HTTP (a real `semsearch serve` with an api key)",
        "",
        *table(http, "request"),
        "",
    ]
    (OUT / "bad-inputs.md").write_text("\n".join(lines))
    print(
        f"wrote {OUT / 'bad-inputs.md'}: CLI {clean_cli}/{len(cli)} clean, HTTP {clean_http}/{len(http)}",
        file=sys.stderr,
    )
    return {"cli": cli, "http": http}


def escaped(text: str) -> str:
    return "`" + text.encode("unicode_escape").decode().replace("|", "\\|").replace("`", "'") + "`"


def files_route_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=OUT / "files-route-traversal.md")


def files_route(config: argparse.Namespace) -> Rows:
    """Every traversal form of tests/traversal.py sent to a real server's /files route: none may leak."""
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
        made_by("a real server on 127.0.0.1"),
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
            f"| {what} | {escaped(target)} | {answer.status} | {len(answer.body)} | "
            f"{'**' + ', '.join(m.decode() for m in found) + '**' if found else 'none'} |"
        )
    lines += ["", "| held file | request target | status | byte for byte |", "|---|---|---|---|"]
    for what, target, want, answer in held:
        lines.append(f"| {what} | {escaped(target)} | {answer.status} | {answer.body == want} |")
    config.out.write_text("\n".join(lines) + "\n")
    print(f"{len(refused)} forms, {len(leaks)} leaks; wrote {config.out}")
    return [{"what": what, "target": target, "status": answer.status} for what, target, answer in refused]


def table_arguments(parser: argparse.ArgumentParser) -> None:
    """The table takes no options: its rows are tests/badinputs.py's."""


PARTS = {"table": (table_arguments, run_table), "files-route": (files_route_arguments, files_route)}
