"""What the weight per query length (bands.py) adds to a calibration's cost: on the same index, a calibration of
the sentences alone and one asking every target short and as a paragraph too, alternated, nothing cached (both
encode their pseudo-queries and targets, as an ingest's first calibration does); written to
benchmarks/results/calibration/bands-cost.md.

    .venv/bin/python benchmarks/calibration_bands.py INDEX [INDEX ...] [--rounds 2]

The indexes are read as they are (a calibration writes nothing); benchmarks/results/calibration/cost.md measured
what a calibration costs against its ingest.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "calibration" / "bands-cost.md"


def timed(index, lengths: bool) -> tuple[float, object]:
    from semsearch.ingest.creation import make_chunker
    from semsearch.ingest.pipeline import split
    from semsearch.retrieval.calibration import calibrate
    from semsearch.retrieval.search import DenseRetriever

    started = time.perf_counter()
    chosen = calibrate(
        store=index.store,
        dense=DenseRetriever(index.transform, index.vectors, index.raw),
        encode=index.encoder.encode,
        cut=partial(split, chunker=make_chunker(index.settings, lambda: index.encoder)),
        rerank=index.settings.rerank,
        precision=index.settings.raw_precision,
        lengths=lengths,
    )
    return time.perf_counter() - started, chosen


def main() -> None:
    from semsearch.index import Index

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for path in args.indexes:
        with Index.open(path) as index:
            index.encoder.encode(["warm up"])
            seconds: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds):
                for lengths in (False, True):
                    took, chosen = timed(index, lengths)
                    seconds[lengths].append(took)
            one, banded = min(seconds[False]), min(seconds[True])
            rows.append(
                {
                    "index": path.name,
                    "passages": index.state.rows,
                    "pseudo-queries": chosen.queries,
                    "sentences alone s": round(one, 1),
                    "with short and paragraph s": round(banded, 1),
                    "ratio": round(banded / one, 2),
                    "load (1 min)": round(os.getloadavg()[0], 1),
                }
            )
            print(rows[-1], flush=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# What the weight per query length adds to a calibration (issue 38)",
        "",
        f"`{command_line()}` ({stamp}; 2 cores shared with other work; the faster of {args.rounds} alternated runs)",
        "",
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        *markdown_table(rows),
    ]
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
