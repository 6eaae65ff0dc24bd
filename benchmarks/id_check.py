"""The corpus check's repeated-id search (idcheck.RepeatedIds) against the dict of every id it replaced: peak
Python memory (tracemalloc: the dict, the array and numpy's buffers) and seconds, side by side on the same ids.
Writes benchmarks/results/id-check.md.

    .venv/bin/python benchmarks/id_check.py [--ids 2000000]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import shlex
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

from semsearch.ingest.idcheck import RepeatedIds

OUT = Path(__file__).resolve().parent / "results" / "id-check.md"


def with_dict(ids: Callable[[], Iterator[str]]) -> bool:
    seen: dict[str, int] = {}
    for count, doc_id in enumerate(ids(), start=1):
        if doc_id in seen:
            return True
        seen[doc_id] = count
    return False


def with_hashes(ids: Callable[[], Iterator[str]]) -> bool:
    repeated = RepeatedIds()
    for doc_id in ids():
        repeated.add(doc_id)
    return repeated.first_repeat(ids) is not None


def measure(check, ids: Callable[[], Iterator[str]], count: int) -> dict:
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    found = check(ids)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"found": found, "seconds": seconds, "bytes_per_id": peak / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=2_000_000)
    args = parser.parse_args()

    # ids shaped as WordNet's ("noun-01204135"), each a new string as a corpus read streams them: the dict keeps
    # them alive, the hashes do not
    def unique() -> Iterator[str]:
        return (f"noun-{n * 7919 % 100_000_000:08d}" for n in range(args.ids))

    def repeated() -> Iterator[str]:
        return itertools.chain(itertools.islice(unique(), args.ids - 1), [f"noun-{3 * 7919:08d}"])

    rows = []
    for name, check in (("dict of every id", with_dict), ("RepeatedIds (hashes)", with_hashes)):
        for case, data in (("unique", unique), ("last repeats the 4th", repeated)):
            result = measure(check, data, args.ids)
            rows.append((name, case, result))
            print(name, case, result, file=sys.stderr, flush=True)
    lines = [
        "# Repeated ids in the corpus check",
        "",
        f"Command: `{shlex.join(['python', 'benchmarks/id_check.py', *sys.argv[1:]])}`. {args.ids:,} ids shaped "
        "as WordNet's, peak traced Python memory (tracemalloc) while checking, and seconds under tracemalloc, "
        "which slows both (one run, side by side).",
        "",
        "| check | ids | repeat found | peak bytes an id | seconds |",
        "|---|---|---|---|---|",
        *[
            f"| {name} | {case} | {r['found']} | {r['bytes_per_id']:.0f} | {r['seconds']:.2f} |"
            for name, case, r in rows
        ],
        "",
        "The dict (with the id strings it keeps alive) is what the check held before, and what 100M documents "
        "multiply; the hashes are 8 bytes an id, 25 at the moment they are sorted, and the strings go as the "
        "read goes on. A repeat (or two ids whose hashes agree) reads the ids once more: in a real check, the "
        "file. The time is the check's alone; a real one also parses every line, which costs far more.",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
