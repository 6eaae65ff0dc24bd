"""How many targets the bands' noise test needs (issue 38): one calibration of each index asking every target
short and as a paragraph, then each band's choice made again (bands.chosen_bands) from 30 random samples of
those targets' short and paragraph forms at each size (the sentences all kept), and the share of samples whose
bands are those of every target; written to benchmarks/results/calibration/band-samples.json and printed.

    .venv/bin/python benchmarks/calibration_band_samples.py INDEX [INDEX ...]

The indexes are read as they are (a calibration writes nothing).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from calibration_bands import timed

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "calibration" / "band-samples.json"
SIZES = (32, 48, 64, 80, 96, 128, 160)
DRAWS = 30


def main() -> None:
    from semsearch.index import Index
    from semsearch.retrieval import calibration
    from semsearch.retrieval.bands import banded_ranks, chosen_bands

    captured = {}
    banded = calibration.banded_ranks

    def kept(asked, ranks):  # the texts asked and their ranks at every weight, as the calibration made them
        captured["asked"], captured["ranks"] = list(asked), ranks
        return banded(asked, ranks)

    calibration.banded_ranks = kept
    out = {}
    for path in map(Path, sys.argv[1:]):
        with Index.open(path) as index:
            _, chosen = timed(index, True, calibration.QUERIES)
        asked, ranks = captured["asked"], captured["ranks"]
        n = len(asked) // 3
        every = {name: (band["mode"], band["alpha"]) for name, band in chosen.bands.items()}
        row = {"targets": n, "every target": every, "index": (chosen.mode, chosen.alpha), "samples": {}}
        for size in (s for s in SIZES if s < n):
            agree, seen = 0, {}
            for draw in range(DRAWS):
                pick = np.sort(np.random.default_rng(draw).choice(n, size, replace=False))
                keep = list(range(n)) + [n + i for i in pick] + [2 * n + i for i in pick]
                sub = {w: "".join(r[i] for i in keep) for w, r in ranks.items()}
                sentences = {w: r[:n] for w, r in ranks.items()}
                got = chosen_bands(
                    banded_ranks([asked[i] for i in keep], sub),
                    row["index"],
                    calibration.MIN_QUERIES,
                    sentences,
                )
                got = {name: (band["mode"], band["alpha"]) for name, band in got.items()}
                agree += got == every
                key = json.dumps(got, sort_keys=True)
                seen[key] = seen.get(key, 0) + 1
            row["samples"][size] = {"agree": agree / DRAWS, "seen": seen}
        out[path.name] = row
        print(path.name, json.dumps(row), flush=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
