"""What every benchmark shares: where things are (the repository, the shared data sets, the results, the peers'
environments), running and timing whole processes, and writing a result headed by its command, commit and date.

A benchmark is a module of this package with a one-line `CLAIM` (what it backs in README.md or docs/),
`add_arguments(parser)` (its options) and `run(config) -> rows` (`config` the parsed options), or, for a
benchmark of several parts, `PARTS`: each part's name to its (add_arguments, run). `python -m benchmarks NAME
[PART]` runs it (benchmarks/__main__.py)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
WORDNET = DATA / "wordnet"
OUT = REPO / "benchmarks" / "results"
PEERS = REPO / "benchmarks" / "peers"
PYTHON = sys.executable
SEMSEARCH = [PYTHON, "-m", "semsearch"]
MACHINE = "2 cores shared with other work"


# ---- data sets and peers' environments ---------------------------------------------------------------------


class MissingData(SystemExit):
    """A data set or peer a benchmark needs is not on this machine: the runner says so and skips it."""


def require(
    path: Path, what: str = "", where: str = "benchmarks read ../shared/data beside the repo"
) -> Path:
    """`path` if it exists; else a skip naming it and `where` such a thing comes from."""
    if not Path(path).exists():
        raise MissingData(f"skipped: no {what or 'data'} at {path} ({where})")
    return Path(path)


def peer_python(default: Path, name: str) -> Path:
    """The interpreter of a peer's own virtualenv (a peer whose dependencies clash with semsearch's runs there
    from benchmarks/peers/); a skip when it is not made."""
    return require(
        default, f"{name} virtualenv", "a peer's virtualenv, made as its benchmark's docstring says"
    )


def tests_helpers() -> None:
    """Makes the test suite's helpers (tests/*.py: folders, bad inputs, traversal forms) importable: the
    benchmarks run the tables the tests check."""
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


# ---- running and timing ------------------------------------------------------------------------------------


# Runs the command and reports its own peak RSS. Spawned from this small process, not from the benchmark:
# Linux carries the RSS high-water mark of the memory a process had before exec into its ru_maxrss, and a
# child spawned straight from the benchmark (torch and a model loaded) would inherit the benchmark's.
LAUNCHER = """
import json, os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(json.dumps({"code": os.waitstatus_to_exitcode(status), "maxrss_kib": usage.ru_maxrss}))
"""


def measure(command: list[str]) -> dict:
    """Wall seconds and peak RSS (MiB) of a whole process; raises with its stderr if it fails."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        started = time.perf_counter()
        run = subprocess.run([PYTHON, "-c", LAUNCHER, str(report), *command], capture_output=True, text=True)
        seconds = time.perf_counter() - started
        result = json.loads(report.read_text()) if report.is_file() else {"code": run.returncode}
        if run.returncode != 0 or result["code"] != 0:
            raise SystemExit(f"failed: {shlex.join(command)}\n{run.stderr}")
        return {"seconds": seconds, "peak_rss_mib": result["maxrss_kib"] / 1024, "stdout": run.stdout}


def timings(call: Callable[[], object], times: int) -> list[float]:
    """Seconds of each of `times` calls, one after the other."""
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return seconds


def percentiles_ms(seconds: list[float]) -> dict:
    """p50 and p99 of timings in seconds, as milliseconds."""
    return {
        "p50_ms": round(1000 * float(np.median(seconds)), 3),
        "p99_ms": round(1000 * float(np.percentile(seconds, 99)), 3),
    }


def load_average() -> float:
    """The 1-minute load average: timings on a shared machine rise with it, recorded beside them."""
    return os.getloadavg()[0]


def disk_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


def first_documents(n: int, directory: Path, wordnet: Path) -> Path:
    """The first `n` WordNet glosses as a JSONL file in `directory` (made once)."""
    path = directory / f"wordnet-{n}.jsonl"
    if not path.exists():
        with open(require(wordnet / "corpus.jsonl", "WordNet corpus")) as source, open(path, "w") as target:
            for i, line in enumerate(source):
                if i == n:
                    break
                target.write(line)
    return path


def texts_of(path: Path) -> list[str]:
    docs = [json.loads(line) for line in path.read_text().splitlines()]
    return [f"{d['title']} {d['text']}" if d.get("title") else d["text"] for d in docs]


# ---- results -----------------------------------------------------------------------------------------------


def command_line() -> str:
    """How this benchmark was run, as its results record it: `python -m benchmarks NAME ARGUMENTS`."""
    return f"python -m benchmarks {shlex.join(sys.argv[1:])}".strip()


def current_commit() -> str:
    """The repository's HEAD, short, as a results file records it ("" outside a git checkout), "+ changes" when
    the code measured (src/, benchmarks/) differs from it."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--", "src", "benchmarks", ":!benchmarks/results"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return done.stdout.strip() + (" + changes" if changed.stdout.strip() else "")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def made_by(conditions: str = MACHINE) -> str:
    """The line under a result's title: the command that made it, the commit and the time, and `conditions`."""
    return f"Made by `{command_line()}` at commit {current_commit()}, {utc_now()} ({conditions})."


def results_header(title: str, conditions: str, doc: str) -> list[str]:
    """A results file's first lines: its title, `made_by` and the second paragraph of the benchmark's docstring
    `doc` (what it measures)."""
    return [f"# {title}", "", made_by(conditions), "", doc.split("\n\n")[2].replace("\n", " "), ""]


def markdown_table(rows: list[dict]) -> list[str]:
    """A markdown table of rows (the union of their keys as columns, in order), then a blank line."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
        *("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows),
        "",
    ]


def write_text(path: Path, text: str) -> Path:
    """Writes a result file whole (never half-written), its folder made."""
    from semsearch.storage.files import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    return path


def write_json(path: Path, data: object) -> Path:
    """A result's data beside its .md; a dict gets the command, commit and date it was made by."""
    if isinstance(data, dict):
        made = {"command": command_line(), "commit": current_commit(), "date": utc_now()}
        data = {"made_by": made, **{key: value for key, value in data.items() if key != "made_by"}}
    return write_text(path, json.dumps(data, indent=1) + "\n")


def write_sections(results: dict, out: Path, name: str, title: str, header: str, sections) -> None:
    """NAME.json with the results, and NAME.md: a part per section (in `sections`' order) with its command, a
    table of each list of rows it holds, and its other figures a line each."""
    write_json(out / f"{name}.json", results)
    lines = [f"# {title}", "", header, "", f"Data: [{name}.json]({name}.json).", ""]
    for section_name in sections:
        if section_name not in results:
            continue
        section = results[section_name]
        made = f"commit {section['commit']}, " if section.get("commit") else ""
        lines += [f"## {section_name}", "", f"`{section['command']}` ({made}{section['when']})", ""]
        tables = [key for key, value in section.items() if key != "runs" and is_rows(value)]
        for key in tables:
            lines += markdown_table(section[key])
        for key, value in section.items():
            if key not in (*tables, "runs", "command", "commit", "when"):
                lines.append(f"- {key}: {json.dumps(value) if isinstance(value, dict) else value}")
        lines.append("")
    write_text(out / f"{name}.md", "\n".join(lines))


COMMIT_NAMED = re.compile(r"\bcommit [0-9a-f]{7}|\bat [0-9a-f]{7}\b")


def head_new_results(since: float, out: Path = OUT) -> list[Path]:
    """Every result .md written under `out` since `since` (time.time()) that does not name the commit it was made
    at gets the `made_by` line under its title: whatever a benchmark writes, its result says how, when and at
    which commit it was made."""
    headed = []
    for path in sorted(out.rglob("*.md")):
        if path.stat().st_mtime < since:
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        if any(COMMIT_NAMED.search(line) for line in lines[:8]):
            continue
        at = 1 if lines and lines[0].startswith("# ") else 0
        write_text(path, "\n".join([*lines[:at], *([""] if at else []), made_by(), "", *lines[at:]]))
        headed.append(path)
    return headed


def section_stamp() -> dict:
    """What a section of a sectioned result records of its run: command, commit, time."""
    return {"command": command_line(), "commit": current_commit(), "when": utc_now()}


def is_rows(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(row, dict) for row in value)


def add_parts(parser, parts: dict) -> None:
    """A benchmark of several parts, each with its own options: `python -m benchmarks NAME PART [options]`.
    `parts` maps a part's name to (add_arguments, run); run's docstring's first line is its help."""
    chosen = parser.add_subparsers(dest="part", required=True, metavar="PART")
    for name, (add_arguments, run) in parts.items():
        doc = run.__doc__ or ""
        part = chosen.add_parser(
            name,
            help=doc.split("\n")[0],
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_arguments(part)
        part.set_defaults(run_part=run)


def run_part(config: argparse.Namespace):
    """Runs the part `add_parts` parsed."""
    return config.run_part(config)


Rows = list[dict] | dict
"""What a benchmark's run returns: the rows it measured (or, for a benchmark of sections, each section's)."""
