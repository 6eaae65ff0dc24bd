"""One `semsearch` command run in this process (Linux, glibc), its memory read once its documents are all
stored (before the transform's fit) and at its end: RSS, anonymous memory and the high-water mark (/proc),
glibc's heap (mallinfo2) and Python's small-object arenas of 1 MiB (sys._debugmallocstats), which a few
long-lived objects keep once a peak of short-lived ones made them. Written as JSON to the file named by
MEMORY_REPORT (files.py --sections arenas reads it).

    MEMORY_REPORT=out.json .venv/bin/python benchmarks/ingest_memory.py ingest CORPUS --index DIR [options]
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in [
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        ]
    ]


def arenas() -> dict[str, float]:
    """Python's arena counts and the bytes in its blocks, from sys._debugmallocstats (written to C's stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()

    def number(name: str) -> int:
        return int(re.search(rf"# {name}\s*=\s*([\d,]+)", text).group(1).replace(",", ""))

    return {
        "arenas_highest": number("arenas highwater mark"),
        "arenas": number("arenas allocated current"),
        "blocks_mib": number("bytes in allocated blocks") / 2**20,
    }


def memory() -> dict[str, float]:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    heap = libc.mallinfo2()
    lines = Path("/proc/self/status").read_text().splitlines()
    status = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in lines if line.endswith("kB")}
    return {
        "rss_mib": status["VmRSS"],
        "anonymous_mib": status["RssAnon"],
        "peak_mib": status["VmHWM"],
        "heap_mib": heap.arena / 2**20,
        "heap_used_mib": heap.uordblks / 2**20,
        **arenas(),
    }


def main() -> None:
    import semsearch.ingest.build as build
    from semsearch.cli import main as semsearch

    report: dict[str, object] = {}
    fit = build.fit

    def measured_fit(*args, **kwargs):
        report.setdefault("stored", memory())  # the first fit: every document stored, no index built yet
        return fit(*args, **kwargs)

    build.fit = measured_fit
    sys.argv = ["semsearch", *sys.argv[1:]]
    started = time.process_time()
    try:
        semsearch()
    except SystemExit as done:
        if done.code:
            raise
    finally:
        report["end"] = memory()
        report["cpu_seconds"] = time.process_time() - started
        Path(os.environ["MEMORY_REPORT"]).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
