"""Issue 30's table of bad inputs (tests/badinputs.py) run once and written down: each CLI row in process (click's
CliRunner) against an index of the committed sample corpus, each HTTP row against a real `semsearch serve` of a
copy of it; for each, the exit code (HTTP status) and the one line (JSON error message) it answered with, and
whether a traceback or a 500 appeared anywhere (none may). Writes benchmarks/results/bad-inputs.md.

    .venv/bin/python benchmarks/bad_inputs.py
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from badinputs import ADMIN, CLI, HTTP, Fixtures, first_error, shown, traceback_in, vectors_corpus  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from semsearch.cli import main  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "bad-inputs.md"


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


def main_() -> None:
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
    command = "python " + shlex.join(["benchmarks/bad_inputs.py", *sys.argv[1:]])
    clean_cli, clean_http = sum(r["ok"] for r in cli), sum(r["ok"] for r in http)
    lines = [
        "# Bad inputs: one line, exit 1 or 2, no traceback; 4xx JSON, never 500 (issue 30)",
        "",
        f"Made with: `{command}` (the rows: tests/badinputs.py; the test: tests/test_bad_inputs.py)",
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
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}: CLI {clean_cli}/{len(cli)} clean, HTTP {clean_http}/{len(http)}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main_()
