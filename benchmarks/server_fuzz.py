"""The HTTP API fuzzed at length from its own OpenAPI document; written to benchmarks/results/server-fuzz.md.

    python -m benchmarks server_fuzz [--examples 60]

An index of the committed sample corpus (examples/sample.jsonl) is served by the app itself (`create_app`,
through schemathesis's ASGI transport: every route as served, its lifespan, reader threads and writer
process). tests/serverfuzz.py's `fuzzed` generates `--examples` valid and `--examples` invalid requests for
every operation (a fifth of that for an index's mounted routes, which run the bare routes' handlers), each with
no key, the search key, the api key or a wrong key, on a server with both keys and a backup directory, then a
third as many on a server without keys. Every answer is checked: no 5xx, and each of a documented status,
content type and schema; the first that is not stops the run, naming its request. tests/test_server_fuzz.py
sends the same generator's first few hundred in the suite."""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

from benchmarks.suite import (
    MACHINE,
    OUT,
    REPO,
    Rows,
    markdown_table,
    results_header,
    tests_helpers,
    write_text,
)

tests_helpers()
from serverfuzz import ADMIN, LIMITS, SEARCHER, fuzzed  # noqa: E402

CLAIM = "No generated request, valid or invalid, with any key, gets a 5xx or an answer off the API's document"
SAMPLE = REPO / "examples" / "sample.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--examples", type=int, default=60, help="valid and invalid requests an operation")


def run(config: argparse.Namespace) -> Rows:
    from semsearch import Index
    from semsearch.server import ServerSettings, create_app

    rows = []
    with tempfile.TemporaryDirectory(prefix="semsearch-fuzz-") as work:
        path, backups = Path(work) / "index", Path(work) / "backups"
        backups.mkdir()
        with Index.create(path) as index:
            index.ingest(SAMPLE)
        servers = {
            "api key, search key, backups": (
                ServerSettings(api_key=ADMIN, search_key=SEARCHER, backup_dir=str(backups), **LIMITS),
                config.examples,
            ),
            "no keys": (ServerSettings(**LIMITS), max(2, config.examples // 3)),
        }
        for name, (settings, examples) in servers.items():
            started = time.perf_counter()
            sent, statuses = fuzzed(create_app(partial(Index.open, path), settings), examples=examples)
            took = time.perf_counter() - started
            rows.append(
                {
                    "server": name,
                    "examples an operation and mode": examples,
                    "requests": sent,
                    "5xx or off the document": 0,  # fuzzed raises on the first
                    "statuses": ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items())),
                    "seconds": f"{took:.0f}",
                }
            )
            print(rows[-1], flush=True)
    lines = [*results_header("The HTTP API fuzzed from its OpenAPI document", MACHINE, __doc__)]
    lines += markdown_table(rows)
    write_text(OUT / "server-fuzz.md", "\n".join(lines))
    return rows
