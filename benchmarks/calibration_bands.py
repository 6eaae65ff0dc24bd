"""What the weight per query length (bands.py) adds to a calibration's cost: on the same index, a calibration of
the sentences alone, one asking every target short and as a paragraph too (the default), and one asking a sample
of them so (--sample), alternated, nothing cached (each encodes its pseudo-queries and targets, as an ingest's first
calibration does), and the bands each chooses; written to benchmarks/results/calibration/bands-cost.md.

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


def timed(index, lengths: bool, length_targets: int) -> tuple[float, object]:
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
        length_targets=length_targets,
    )
    return time.perf_counter() - started, chosen


def shown_bands(chosen) -> str:
    """Each band's mode and weight, short / sentence / paragraph."""
    return " / ".join(
        band["mode"] if band["mode"] != "hybrid" else f"{band['alpha']:.1f}" for band in chosen.bands.values()
    )


def main() -> None:
    from semsearch.index import Index

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--sample", type=int, default=96, help="targets asked by length in the sampled column"
    )
    args = parser.parse_args()
    from semsearch.retrieval.calibration import QUERIES

    sample = args.sample
    how = {"sentences alone": (False, 0), "every target": (True, QUERIES), "sampled": (True, sample)}
    rows = []
    for path in args.indexes:
        with Index.open(path) as index:
            index.encoder.encode(["warm up"])
            seconds: dict[str, list[float]] = {name: [] for name in how}
            chosen = {}
            for _ in range(args.rounds):
                for name, (lengths, most) in how.items():
                    took, chosen[name] = timed(index, lengths, most)
                    seconds[name].append(took)
            took = {name: min(times) for name, times in seconds.items()}
            rows.append(
                {
                    "index": path.name,
                    "passages": index.state.rows,
                    "pseudo-queries": chosen["sampled"].queries,
                    "sentences alone s": round(took["sentences alone"], 1),
                    "every target s": round(took["every target"], 1),
                    "ratio": round(took["every target"] / took["sentences alone"], 2),
                    f"{sample} targets s": round(took["sampled"], 1),
                    f"{sample} ratio": round(took["sampled"] / took["sentences alone"], 2),
                    "bands, every target": shown_bands(chosen["every target"]),
                    f"bands, {sample} targets": shown_bands(chosen["sampled"]),
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
