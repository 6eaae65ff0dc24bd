"""A renewal's cost with the calibration cache as this tree keeps it against the tree before (issue 37's cache at
the raw vectors' precision): `semsearch refit --calibrate` on copies of one stale index (calibrated, then a share
of its documents rewritten: calibration_age.py leaves one as its --work's `first` with `changed.jsonl` upserted),
this tree's on a copy as it is and --against SRC's on a copy whose cache is rewritten in the format before (the
same draw and texts: the vectors as float32, the paragraphs whole), alternated, wall and CPU seconds of each
whole process and the texts it took from the cache. Prints its rows (calibration/cache-precision.md keeps them).

    .venv/bin/python benchmarks/calibration_cache_renewal.py STALE_INDEX --against SRC [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from semsearch.storage.calibrationcache import FILE, CalibrationCache
from semsearch.storage.rawvectors import read_rows

REPO = Path(__file__).resolve().parents[1]


def format_before(path: Path) -> None:
    """The index's calibration cache rewritten as the release before kept it."""
    from safetensors import safe_open
    from safetensors.numpy import save_file

    with safe_open(str(path / FILE), "numpy") as opened:
        encoder = opened.metadata()["encoder"]
    cache = CalibrationCache.load(path, encoder)
    keys = [group.keys for group in cache.kept.values()]
    vectors = [read_rows(g.codes, g.scales, cache.dim, precision) for precision, g in cache.kept.items()]
    conn = sqlite3.connect(str(path / "documents.db"))
    whole = []
    for (pk, start, end, _), words in zip(cache.panel.tolist(), cache.paragraphs):
        row = conn.execute("SELECT text FROM documents WHERE pk = ?", (pk,)).fetchone() if words else None
        whole.append(row[0][start:end] + words if row else "")
    conn.close()
    tensors = {"panel": cache.panel, "keys": np.concatenate(keys), "vectors": np.concatenate(vectors)}
    save_file(tensors, str(path / FILE), metadata={"encoder": encoder, "paragraphs": json.dumps(whole)})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stale", type=Path)
    parser.add_argument("--against", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/calibration-cache-renewal"))
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float, int]]] = {"before": [], "now": []}
    for _ in range(args.rounds):
        for label, source in (("before", args.against.resolve()), ("now", REPO / "src")):
            path = args.work / label
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(args.stale, path)
            if label == "before":
                format_before(path)
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "semsearch", "refit", "--index", str(path), "--calibrate"],
                check=True,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": str(source)},
            )
            wall = time.perf_counter() - started
            now = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
            reused = json.loads((path / "manifest.json").read_text())["calibration"]["reused"]
            runs[label].append((round(wall, 2), round(cpu, 2), reused))
            print(label, runs[label][-1], "load", round(os.getloadavg()[0], 1), flush=True)
    for label, done in runs.items():
        cpus = sorted(cpu for _, cpu, _ in done)
        print(
            f"| {label} | {', '.join(f'{w} / {c}' for w, c, _ in done)} | {cpus[len(cpus) // 2]} | {done[0][2]} |"
        )


if __name__ == "__main__":
    main()
