"""What calibrating the fusion weight (calibration.py) costs the ingest it follows; written to
benchmarks/results/calibration/cost.md and cost.json. Quality (the calibrated weight against the sweep and the
oracle) is `semsearch bench`'s: benchmarks/results/calibration/{scifact,cranfield}/.

    python -m benchmarks calibration cost [--sets scifact,cranfield] [--work DIR] [--rounds 1]

Each set's corpus is ingested with the defaults by `semsearch ingest` in its own process (the first ingest
fits, so it calibrates), timed whole; the manifest says how long the calibration took and what it chose. Then
`semsearch refit` and `refit --no-calibrate` on the same index, alternated, give the calibration's cost a
second way (their difference; `refit --calibrate` alone calibrates without refitting). The 1-minute load average is recorded with each run: the machine is shared.

Part `bands`: What a calibration by query length (bands.py) costs, and what a cheaper one changes: on the same index, a
calibration of the sentences alone and one asking every target short and as a paragraph too (the default), and
with --against SRC the same banded calibration by another version of semsearch (SRC: its `src` directory, such as
`git archive COMMIT src` unpacked), alternated, nothing cached (each encodes its pseudo-queries and targets, as an
ingest's first calibration does); the bands each chooses and whether both versions rank every pseudo-query's
target alike (the sentences' and every band's ranks at every weight); written to
benchmarks/results/calibration/bands-cost.md.

    python -m benchmarks calibration bands INDEX [INDEX ...] [--rounds 2] [--against SRC] [--out FILE]

Each calibration runs in a process of its own (the version's code on its path), timed inside it from the call
to its return, the encoder loaded and warmed first. The indexes are read as they are (a calibration writes
nothing); benchmarks/results/calibration/cost.md measured what a calibration costs against its ingest.

Part `age`: A calibration's age, renewal and export; written to benchmarks/results/calibration.md and .json.

    python -m benchmarks calibration age [--set cranfield,stsb-dev] [--share 0.2] [--work DIR]
        [--repeat N] [--against SRC]

Sets named together are measured one after the other in one run (the same load, side by side). Each set's corpus is ingested with every default by `semsearch ingest` (a whole process, timed), then a share of
its documents is rewritten (their words' halves swapped: the same words, other passages) and ingested again as
upserts (`--repeat` times on copies, alternated with `--against`'s into a copy of its own: an upsert that
leaves the calibration stale readies its renewal, which each version then makes of its own). Then: what `info` says of the calibration; `export --vectors` of the index ingested into a new index
(keeping the export's calibration and transform) and again with `--recalibrate` and with `--refit always` (which
fits a transform on today's documents, as every import did before), each answering every query of the set in the
default mode beside the source (top-10 ids and scores compared); `semsearch refit --calibrate` (calibration alone) and
`semsearch refit` (transform, vector index and calibration), each a whole process, timed against the ingest,
in wall and CPU seconds (`refit --calibrate` `--repeat` times on copies of the stale index, alternated with
`--against`'s, the medians kept). The 1-minute load average is recorded: the machine is shared. The processes run with Python's bytecode cache
allowed (PYTHONDONTWRITEBYTECODE unset), as an installed package runs: otherwise every process compiles
semsearch's modules again (0.3 s), which weighs on a short renewal more than on an ingest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, REPO, Rows, command_line, made_by, markdown_table, require
from semsearch.settings import FUSION_DEPTH
from semsearch.storage.calibrationcache import FILE as CACHE

CLAIM = "What calibrating the fusion weight costs the ingest it follows (one weight, and by query length)"

CALIBRATION_OUT = OUT / "calibration"
SETS = {"scifact": DATA / "scifact", "cranfield": DATA / "cranfield"}
PYTHON = sys.executable


def semsearch(*args: str) -> float:
    """Seconds a `semsearch` command takes as a whole process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    started = time.perf_counter()
    subprocess.run([PYTHON, "-m", "semsearch", *args], check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def measure(name: str, work: Path, rounds: int) -> dict:
    from semsearch.evaluation.datasets import ensure_beir

    corpus = ensure_beir(SETS[name], work / "converted") / "corpus.jsonl"
    index = work / f"{name}-index"
    shutil.rmtree(index, ignore_errors=True)
    load = os.getloadavg()[0]
    ingest_s = semsearch("ingest", str(corpus), "--index", str(index), "-q")
    calibration = json.loads((index / "manifest.json").read_text())["calibration"]
    refits = {"--calibrate": [], "--no-calibrate": []}
    for _ in range(rounds):
        for flag in refits:  # a refit calibrates unless told not to (--calibrate alone would only calibrate)
            refits[flag].append(
                semsearch("refit", "--index", str(index), *[flag][: flag == "--no-calibrate"])
            )
    with_s, without_s = min(refits["--calibrate"]), min(refits["--no-calibrate"])
    return {
        "set": name,
        "documents": calibration["documents"] if calibration else None,
        "ingest s (whole process)": round(ingest_s, 1),
        "calibration s (manifest)": calibration and calibration["seconds"],
        "share of the ingest": calibration and f"{100 * calibration['seconds'] / ingest_s:.1f}%",
        "refit --calibrate s": round(with_s, 2),
        "refit --no-calibrate s": round(without_s, 2),
        "difference s": round(with_s - without_s, 2),
        "pseudo-queries": calibration and calibration["queries"],
        "chosen": calibration and f"{calibration['mode']}, alpha {calibration['alpha']:g}",
        "load (1 min)": round(load, 2),
    }


def cost_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sets", default="scifact,cranfield")
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "calibration-bench")
    parser.add_argument("--rounds", type=int, default=1)


def cost(config: argparse.Namespace) -> Rows:
    """What calibrating costs the ingest it follows, and what it chose (calibration/cost.md)."""
    rows = []
    for name in config.sets.split(","):
        if not SETS[name].exists():
            print(f"skipped {name}: {SETS[name]} not found", file=sys.stderr)
            continue
        rows.append(measure(name, config.work, config.rounds))
        print(rows[-1], file=sys.stderr)
    command = command_line()
    lines = [
        "# What calibrating the fusion weight costs",
        "",
        made_by(),
        "",
        "Whole `semsearch` "
        "processes with the defaults (int8 ONNX encoder, passages of 256 tokens, whiten P=0.5 to 128 dims, "
        "rerank 100); the ingest's own fit calibrates. 2 cores, shared: the load average is beside each row.",
        "",
        *markdown_table(rows),
    ]
    CALIBRATION_OUT.mkdir(parents=True, exist_ok=True)
    (CALIBRATION_OUT / "cost.md").write_text("\n".join(lines) + "\n")
    (CALIBRATION_OUT / "cost.json").write_text(
        json.dumps({"command": command, "rows": rows}, indent=1) + "\n"
    )
    print("\n".join(lines))
    return rows


BANDS_OUT = OUT / "calibration" / "bands-cost.md"


def worker(path: Path, lengths: bool) -> None:
    """One calibration of the index by the semsearch on this process's path: its seconds, bands and ranks."""
    from semsearch.index import Index
    from semsearch.ingest.creation import make_chunker
    from semsearch.ingest.pipeline import split
    from semsearch.retrieval.calibration import calibrate
    from semsearch.retrieval.search import DenseRetriever

    with Index.open(path) as index:
        index.encoder.encode(["warm up"])
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
        seconds = time.perf_counter() - started
    bands = chosen.bands or {}
    print(
        json.dumps(
            {
                "seconds": seconds,
                "queries": chosen.queries,
                "passages": chosen.passages,
                "choice": f"{chosen.mode} {chosen.alpha}",
                "bands": " / ".join(
                    band["mode"] if band["mode"] != "hybrid" else f"{band['alpha']:.1f}"
                    for band in bands.values()
                ),
                "ranks": {"sentences": chosen.ranks, **{name: band["ranks"] for name, band in bands.items()}},
            }
        )
    )


def calibrated(path: Path, lengths: bool, source: Path) -> dict:
    """A calibration in a process of its own, by the semsearch in `source` (a `src` directory)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    args = [sys.executable, "-m", "benchmarks", "calibration", "bands", "--worker", str(path)]
    args += ["--lengths"] if lengths else []
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bands_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another version's src directory, measured beside")
    parser.add_argument("--out", type=Path, default=BANDS_OUT, help="the results file (bands-cost.md)")
    parser.add_argument("--note", default="", help="a line under the command: what is compared")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--lengths", action="store_true", help=argparse.SUPPRESS)


def bands(config: argparse.Namespace) -> Rows:
    """What a calibration by query length costs, and what a cheaper one changes (bands-cost.md)."""
    if config.worker:
        return worker(config.indexes[0], config.lengths)
    how = {"sentences alone": (False, REPO / "src"), "every target": (True, REPO / "src")}
    if config.against:
        how["every target, before"] = (True, config.against.resolve())
    rows = []
    for path in config.indexes:
        seconds: dict[str, list[float]] = {name: [] for name in how}
        chosen = {}
        for _ in range(config.rounds):
            for name, (lengths, source) in how.items():
                chosen[name] = calibrated(path, lengths, source)
                seconds[name].append(chosen[name]["seconds"])
        took = {name: min(times) for name, times in seconds.items()}
        now = chosen["every target"]
        row = {
            "index": path.name,
            "passages": now["passages"],
            "pseudo-queries": now["queries"],
            "sentences alone s": round(took["sentences alone"], 1),
            "every target s": round(took["every target"], 1),
            "ratio": round(took["every target"] / took["sentences alone"], 2),
        }
        if config.against:
            before = chosen["every target, before"]
            row["before s"] = round(took["every target, before"], 1)
            row["before ratio"] = round(took["every target, before"] / took["sentences alone"], 2)
            row["now / before"] = round(took["every target"] / took["every target, before"], 2)
            row["choice, bands before"] = f"{before['choice']}; {before['bands']}"
            row["same ranks"] = "yes" if before["ranks"] == now["ranks"] else differing(before, now)
        row["choice, bands"] = f"{now['choice']}; {now['bands']}"
        row["load (1 min)"] = round(os.getloadavg()[0], 1)
        rows.append(row)
        print(row, flush=True)
    lines = [
        "# What the weight per query length adds to a calibration",
        "",
        made_by(f"2 cores shared with other work; the faster of {config.rounds} alternated runs"),
        "",
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        *([config.note, ""] if config.note else []),
        *markdown_table(rows),
    ]
    config.out.write_text("\n".join(lines) + "\n")
    return rows


def differing(before: dict, now: dict) -> str:
    """How many pseudo-queries' target ranks differ between two versions (any weight), of how many, per list."""
    out = []
    for name, ranks in now["ranks"].items():
        old = before["ranks"].get(name) or {}
        queries = len(next(iter(ranks.values()), ""))
        moved = {i for w, r in ranks.items() for i, (a, b) in enumerate(zip(r, old.get(w, ""))) if a != b}
        out.append(f"{name} {len(moved)} of {queries}")
    return "no: " + ", ".join(out)


AGE_SETS = {
    "cranfield": DATA / "cranfield",
    "scifact": DATA / "scifact",
    "stsb-dev": DATA / "stsb" / "sts-dev.csv",
}
NOTES = [  # what the run recorded here does not say by itself
    "`ingest s` with --reuse: the first ingest's own seconds (the first run's, kept in --work), so the ratios",
    "against it are of a first ingest under that run's load. `--refit always` shows why an export carries the",
    "transform: the source keeps the one fitted before the rewrite, and one fitted on today's documents finds",
    "other candidates (issue 38's first measurement, before the export carried it: 222 of 225 on Cranfield).",
    "",
    "Why (Cranfield, this script's `diagnosis()` on the source as it was before its refit against the import",
    "that fitted its own transform, 2026-11-26 01:15 UTC; the rows `--refit always against the source` where a",
    "run records them): the statistics are the same (largest difference 2.5e-14: the import sums the same",
    "vectors), both vector indexes are flat (exact), the keyword side's 100 candidates are the same list on 225",
    "of 225 queries; the transforms differ (fitted before and after the rewrite; 0.64 in a column, up to sign),",
    "so the dense side's 100 candidates are the same list on 140 and the same set on 148 of 225. On the 3 queries",
    "whose top-10 differed, one document at the foot of the dense list was another (the rerank orders the rest",
    "by the same raw vectors), which moves the min-max normalisation of the dense scores before the fusion and",
    "so the fused scores (by 0.0005-0.0015), enough to swap a near tie at rank 10 (2 queries) or 4-5 (1).",
    "",
    "stsb-dev is the issue's shape (about 2,500 sentences, 300 upserts): its import keeps dense 0.9 and answers as",
    "the source; one calibrated again on the rewritten sentences takes hybrid 0.9 and answers otherwise on most",
    "queries (the issue's 40 of 40).",
    "",
    "Round s13 (the stsb-dev and cranfield sections above: 2026-11-27 07:30-07:36 UTC, load 0.7-1.5, `--set",
    "stsb-dev,cranfield --repeat 5 --against` main at 7766155, alternated; each version upserts the rewritten fifth",
    "into its own copy of the first ingest's index, five times, and renews copies of the index its own upsert",
    "left): an upsert that leaves the calibration stale now encodes, while its model runs, every text the renewal",
    "will ask (calibration.encode_ahead: the draw, kept in the cache), so `refit --calibrate` starts no model and",
    "encodes nothing (652 of 652 texts from the cache on STS-B dev, 758 on Cranfield; the same record in every",
    "field as a renewal encoding them: test_calibration). STS-B dev: **0.55 s against 0.71, 9.2% of the ingest's",
    "5.97 s by wall (11.9% before)**, 6.6% by CPU (9.7%); the upsert 1.57 s against 1.34 (1.17x), the upsert and",
    "the renewal together 2.11 s against 2.06. Cranfield: 1.11 s against 1.70, 3.2% of a 35 s ingest (4.9%); by",
    "CPU 2.3% (3.7%); the upsert 6.79 s against 6.32 (1.07x), together 7.90 against 8.02. What is left of a",
    "renewal (timeline, quiet): Python's start and imports 0.25, opening the index and the draw 0.07, the keyword",
    "and dense sides side by side 0.17-0.2, the sweep, bands, cache and publish 0.07.",
    "SciFact (its section: 07:54-08:10 UTC, load 1.5-1.6, `--set scifact --repeat 3`, the same `--against`): the",
    "renewal 3.31 s against 3.52, 1.6% of a 211 s ingest (1.7%), by CPU 1.5% (1.5%): its encoding ran beside the",
    "keyword side (2 s on 5,183 abstracts) already, so little of it was on the critical path. The upsert's readying",
    "itself, timed inside one upsert: 0.64 s (the draw 0.07, the queries' encoding 0.56, the cache 0.01) of 45 s",
    "(1.4%); the upserts' medians, 49.0 s against 46.0, swing more than that between runs here.",
    "",
    "Round s10 (the stsb-dev and cranfield sections before s13's: 02:01-02:05 UTC, load 0.6-1.1, the machine otherwise quiet; `--against` main",
    "at 9b6f7fd, alternated, six renewals each): a renewal's batches now run side by side, one a core, each on one",
    "thread (encoder.for_few_texts; the same vectors bit for bit), and its queries are encoded while the keyword",
    "side ranks (calibration_scratch.rankings). STS-B dev: **0.75 s against 0.8 by wall, 14.7% of the ingest's",
    "5.1 s (15.9% before)**; by CPU 10.5% of 8.0 CPU-s (10.1% before: two runs side by side cost a little). Cranfield:",
    "1.7 s against 2.1, 5.3% (6.4%); CPU 4.1% (3.8%). Alternated by hand at 02:00 UTC (each tree renewing its copy of",
    "one stale STS-B index in turn, ten rounds, medians): 0.913 s / 0.904 CPU-s before, 0.841 / 0.911 side by side, 0.849 / 0.960 with two",
    "threads inside each batch instead, 0.842 / 0.965 with the model also started on a thread of its own while the",
    "index is read (its import and tokenizer hold the GIL: no wall time gained, so not kept). Where a renewal's",
    "0.75 s goes (timeline, quiet): Python's start and imports 0.24-0.27, opening the index 0.04, the draw and",
    "targets 0.05, the model's start and the targets' 31 texts 0.115, the 93 queries beside the keyword side 0.19,",
    "the dense side 0.10, sweep, bands and publish 0.05. A process's floor (start, imports, the model's session)",
    "is about 0.35 s, 7% of this 2,648-sentence ingest by itself: the issue's 10% by wall holds from Cranfield's",
    "size up (5.3%), not on STS-B dev's.",
    "SciFact (its section: 02:19-02:26 UTC, load 0.7-1.3, `--set scifact --repeat 3`, the same `--against`): the",
    "renewal 3.3 s against 4.0, **1.6% of a 205 s ingest** (1.9%); by CPU 1.1% (1.1%). Its export's import answers",
    "the same top-10 as the source on **274 of 300** queries, scores within 0.07: found here, not by the rounds",
    "before (their sets are flat-sq8 sizes). At 50,370 passages `auto` builds HNSW16,SQ8, an approximate graph: the",
    "import keeps the export's transform (largest difference 0.0) and calibration, its keyword candidates are the",
    "same list on 300 of 300, but it builds its graph anew over today's rows, while the source's was built at its",
    "first ingest and took the upserts since (the replaced rows' nodes still in it), so the dense side's 100",
    "candidates are the same list on 42 and the same set on 49 of 300 (each graph at recall 0.96 misses other",
    "rows), which moves the min-max normalisation before the fusion; the same efSearch as the source's (128",
    "against the import's tuned 96) changes nothing (274). Where the vector index is exact (flat, flat-sq8 with",
    "its ranges carried) the import is the source to the bit; for an approximate one the same answers would need",
    "the graph itself in the export: not done.",
    "",
    "Round s9 (the two sections above: Cranfield's of 23:30-23:37 UTC, load 6.7 before and 8.4 after, with the",
    "stsb-dev of the same run; stsb-dev's again at 23:41 with this branch's last commit, load 2.3 before and 4.1 after;",
    "`--against` main at 2ede5d8, alternated; each version renewed copies of the same stale index, and the two renewed",
    "copies' calibration records are the same in every field but their seconds, on both sets). STS-B dev: a renewal",
    "takes 0.86 CPU-s against 1.31 before, **9.5% of the ingest's 9.0 CPU-s** (14.5% before), and 1.4 s against 2.1,",
    "11.0% of the ingest's 13.0 s by wall (16.3%: the ingest's encoding has two cores where the machine is quieter,",
    "the renewal's one); at 23:30 (load 6.7) 0.93 against 1.32 CPU-s, 9.3% of an ingest of 10.0 (13.2%), 9.5% by wall",
    "(12.8%). Cranfield: 2.9 CPU-s against 4.0, 4.7% of its ingest (6.4%). The ingest took 10.0 and 9.0 CPU-s here",
    "(main's 11.0 at 22:26, and 10.9 and 11.5 beside this branch's 12.5 and 9.8 alternated at 23:00: it may share",
    "the gains that are the whole process's, within this machine's noise), so the share fell less than the",
    "renewal's seconds (-30 to -35%).",
    "Alternated on one stale STS-B index beside main (8-12 renewals each, load 5-9): 1.40 -> 1.03",
    "CPU-s. What changed, found with perf, cProfile on process time and callgrind's instruction counts: NumPy's",
    "OpenBLAS workers spun 2^28 cycles on a free core once NumPy loaded and after each product (20 small products",
    "50 ms apart: 0.9 CPU-s; the import alone 0.03), now asleep at once in the CLI (OPENBLAS_THREAD_TIMEOUT=4), and a",
    "calibration's products on one thread (threads.one_blas_thread); the ONNX graph's optimized copy keeps its weights",
    "in a file the session maps (the session 0.05-0.07 CPU-s against 0.12-0.13, the vectors the same to the bit); a",
    "renewal encodes its 124 texts on one thread (0.29-0.31 CPU-s against 0.38-0.42, the same vectors) in tight",
    "batches (910 of their 2,883 tokens were padding: 0.27 against 0.34, to fp32's jitter); its generation links the",
    "statistics, transform and vector index it keeps instead of packing and writing them again; the CLI collects",
    "young objects every 10,000 allocations, not 700 (146 collections: 0.04-0.05 CPU-s); sqlite_utils starts without",
    "its plugins' search of every package's metadata and its date parser loads when used. What is left (0.9-1.0",
    "CPU-s): Python's start and imports 0.3 (of their 1.6 G instructions semsearch's own modules take 0.6, its 65",
    "dataclasses about 0.26 of that; NumPy 0.35, sqlite_utils 0.25, FAISS 0.18, ONNX Runtime 0.15), the session",
    "0.07, encoding 0.27, the calibration's reads, searches, sweep and publish about 0.3. CPU seconds here rise with",
    "the load (main's renewal of the same index: 1.25 to 1.84 over the session), and the round before's machine took",
    "twice these for both the renewal and the ingest: the share is the figure that carries.",
    "",
    "Not of this branch: Cranfield's import of its export now answers the same top-10 as its source on 220 of",
    "225 queries (scores within 8.2e-03), 225 of 225 in the rounds before; main at 2ede5d8 alone, run apart with this",
    "script (--repeat 1, 23:38 UTC), gives the same 220 (STS-B dev's stays 260 of 260). The changes merged just before",
    "(s9c: the transform's matrix in float16, the statistics and transform packed) are where to look.",
    "",
    "Round s8 (its stsb-dev section, since replaced by s9's: 20:56 UTC, load 1.5 before and 3.2 after; `--against` commit 2a51e57's",
    "src, this session's main before the calibration cache kept its vectors as codes): a renewal takes 3.0 s and",
    "2.7 CPU-s (3.0 / 2.7, 3.0 / 2.7, 2.7 / 2.5), **12.8% of the ingest** by CPU, over the issue's 10%; the",
    "ingest itself took 21.0 CPU-s here against 27.9 at 17:46, and the renewal 2.7 against 2.4, so the share moves",
    "with the ingest's time as much as with the renewal's. The `before` column is not comparable this time: the",
    "tree before reads the new cache format as a cache without vectors (by design, so that it does not fail) and",
    "encodes every query again (5.8 CPU-s). Side by side on its own benchmark (benchmarks/calibration_cache_renewal.py,",
    "five alternated runs each, load about 8) the new cache costs a renewal 2.62 CPU-s against 2.85 with the float32",
    "cache: no slower.",
    "",
    "Round s7, last (its stsb-dev section, since replaced by s8's above: 17:46 UTC, load 0.5 before and 3.2 after; `--against` commit",
    "8c4467a's src, alternated): with the calibration on arrays and the `semsearch` program ending without taking",
    "the interpreter apart (`cli.run`), a renewal takes 2.5 s and 2.4 CPU-s against 3.8 and 3.6 before: **8.6%**",
    "of the ingest by wall and by CPU (13.0% before), under the issue's 10%.",
    "",
    "Round s7, the helper's runs (a run before the one above; `--repeat 3` against main as merged before,",
    "commit 8c4467a's src, alternated): the calibration's searches, keyword ranking and sweep made on arrays",
    "(bands-cost.md), the same record. 16:36 UTC (load 5.6-6.9, every change): a renewal takes 5.5 s (4.6,",
    "5.5, 5.6) and 2.8 CPU-s (2.8, 2.5, 2.8) against 6.5 s and 3.5 CPU-s (4.1, 3.5, 3.1) before: 12.1% of the",
    "45.6 s ingest by wall, **11.5%** of its 24.4 CPU-s (14.3% and 14.3% before). 16:12 UTC (load 8.0-8.9,",
    "before the keyword side's batch): 8.5 s and 3.3 CPU-s against 9.4 s and 3.4, 11.7% of 72.6 s and 11.8% of",
    "28.1 CPU-s (12.9% and 12.3%). Still over 10%: about a third of a renewal's CPU seconds is the process's",
    "floor (Python's start and imports 0.7-0.85, finalization 0.25-0.3), the ONNX session 0.33-0.4, encoding",
    "the changed fifth's 124 texts 0.8-1.0; the calibration's own reads, searches, sweep and publish about 0.5.",
    "",
    "The round before (bands asked of every target, the scratch copy's searches made cheaper:",
    "benchmarks/results/calibration/bands-cost.md), with `--against` the calibration as merged before (commit",
    "9ebca9b's src) renewing a copy of the same index first, in the same run. Cranfield (the run of 13:23 UTC,",
    "`--set stsb-dev,cranfield`, load 7.6-8.9): 9.9 s, **2.8%** of its 352 s ingest (before: 21.0 s, 5.9%).",
    "STS-B dev, three runs: 13:23 (load 7.6-8.9) 8.2 s, 12.8% of a 64.3 s ingest (before 12.6 s, 19.6%); 13:40",
    "(load 4.6 at the ingest, 6.3 after) 6.2 s, 20.0% of 31.1 s (before 8.9 s, 28.6%); 13:44 (load 5.1-6.0,",
    "the section above) 5.3 s, **12.7%** of 42.2 s (before 11.9 s, 28.2%). So a renewal takes 0.45-0.70 of",
    "what it took, and STS-B's still misses the 10%: its ingest is 31-64 s, and a whole process's floor is a",
    "tenth of that. Profiled (`refit --calibrate` under cProfile, load 5, 5.6 s): Python's start and imports",
    "1.6 s, the ONNX session 0.8 s, encoding the fifth that changed (124 texts: the new draws' targets, spans,",
    "short forms and paragraphs; 529 came from the cache, the kept queries' paragraphs among them) 1.2 s, the",
    "495 searches of both sides and the sweep about 1.3 s, publishing a generation 0.4 s. `refit (all)` (the",
    "transform fitted and the vector index built again, the calibration with every text cached) takes more.",
    "",
    "Before bands: the renewal's cost (2026-11-26 04:33-04:47 UTC, both sets in one run, a fifth of each rewritten): on",
    "Cranfield 14.0 s, 4.1% of its 341 s ingest (16.7 s, 4.9%, without the last calibration's cache); on STS-B",
    "dev's 2,648 one-line documents 4.1 s, 9.7% of its 42 s ingest, where the run before measured 24% (34.8 s",
    "of 145 under load 14-18). What was cut (profiled on the STS-B index, unloaded: 7.4 s as a whole process):",
    "the sweep's fusion, a list built per weight and query (1.9 s: 1.0 s for the 11 weights and 0.8 s again for",
    "the weights per query), now every weight's rank read at once (sweep.py, exactly fuse's ranks); and the",
    "encoding of texts a renewal already encoded (2.1 s for 330 texts: 165 pseudo-queries and their one-line",
    "targets), now kept beside the index (storage/calibrationcache.py) with the draw, whose documents still",
    "stored give the same queries: after a fifth rewritten, 268 of the texts came from it and 62 were encoded.",
    "What stays is a floor a process pays whatever it does: Python's start and semsearch's imports (0.8 s for",
    "`import semsearch.index`, unloaded), the ONNX session (0.5-0.6 s) for the texts that changed, reading the",
    "index and publishing a generation (0.1 s); `refit (all)`, run after the renewal (the cache then holds every",
    "text: nothing encoded), shows it: 2.8 s, 6.7% of that small ingest, a flat index rebuilt included.",
    "(That run saved both rows under one wrong key, a bug of its several-set loop fixed since; the rows here are",
    "the ones it printed, whole.)",
    "",
]


def semsearch_process(*args: str, source: Path = REPO / "src") -> tuple[float, str]:
    """Seconds a `semsearch` command takes as a whole process, and what it wrote (both streams); `source`: the
    semsearch it runs (a `src` directory)."""
    seconds, _, said = timed(*args, source=source)
    return seconds, said


def timed(*args: str, source: Path = REPO / "src") -> tuple[float, float, str]:
    """`semsearch`, with the CPU seconds the process used beside its wall seconds (user and system, all its
    threads): on a shared machine the wall seconds follow the load, the CPU seconds much less."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "semsearch", *args], check=True, env=env, capture_output=True
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    return seconds, cpu, (done.stdout + done.stderr).decode()


def on_copy(origin: Path, target: Path, *args: str, source: Path = REPO / "src") -> tuple[float, float]:
    """`timed` on `target`, made a copy of the index `origin` first (`args` name it where they hold TARGET)."""
    if target != origin:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(origin, target)
    return timed(*[str(target) if arg == "TARGET" else arg for arg in args], source=source)[:2]


def upserted(
    source: Path, upserts: Path, work: Path, repeat: int, against: Path | None
) -> dict[str, list[tuple[float, float]]]:
    """The upsert of `upserts` into the index as the first ingest left it (`work`/first), `repeat` times on
    copies, and with `against` the other version's just before each into `work`/against-source (each version
    then renews its own: ours readies the stale calibration's renewal as it upserts, operations/writes.py):
    (wall, CPU) seconds per run and version; the last of ours is left in `source`."""
    runs: dict[str, list[tuple[float, float]]] = {"ours": [], "before": []}
    command = ("ingest", str(upserts), "--index", "TARGET", "-q")
    for _ in range(repeat):
        if against is not None:
            runs["before"].append(on_copy(work / "first", work / "against-source", *command, source=against))
        runs["ours"].append(on_copy(work / "first", source, *command))
    return runs


def renewals(
    source: Path, work: Path, repeat: int, against: Path | None
) -> dict[str, list[tuple[float, float]]]:
    """`refit --calibrate` of the index `source` (its calibration stale) `repeat` times, each on a copy of it as
    it is, and with `against` the other version's just before each, on a copy of the index its own upsert left
    (`upserted`): (wall, CPU) seconds per run and version, alternated so that both see the same load; the last
    of ours renews `source` itself."""
    runs: dict[str, list[tuple[float, float]]] = {"ours": [], "before": []}
    command = ("refit", "--index", "TARGET", "--calibrate")
    for attempt in range(repeat):
        if against is not None:
            runs["before"].append(
                on_copy(work / "against-source", work / "against", *command, source=against)
            )
        runs["ours"].append(on_copy(source, source if attempt == repeat - 1 else work / "renewed", *command))
    return runs


def rotated(text: str) -> str:
    words = text.split()
    return " ".join(words[len(words) // 2 :] + words[: len(words) // 2])


def calibration_of(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())["calibration"]


def top10(path: Path, queries: list[str]) -> list[list[tuple[str, float]]]:
    from semsearch_process.index import Index

    with Index.open(path) as index:
        return [[(hit.id, hit.score) for hit in hits] for hits in index.search_many(queries, k=10)]


def compared(source: list, other: list) -> str:
    """How many queries answer the same top-10 ids, and the largest score difference among those."""
    same = [(a, b) for a, b in zip(source, other) if [i for i, _ in a] == [i for i, _ in b]]
    worst = max((abs(x[1] - y[1]) for a, b in same for x, y in zip(a, b)), default=0.0)
    return f"{len(same)} of {len(source)} (scores within {worst:.1e})"


def diagnosis(source: Path, other: Path, queries: list[str]) -> dict:
    """Where an import that fitted its own transform (`other`) parts from its source: the transforms and the
    statistics (largest difference), and each side's candidates as hybrid search takes them (FUSION_DEPTH)."""
    import numpy as np
    from semsearch_process.index import Index
    from semsearch_process.settings import FUSION_DEPTH
    from semsearch_process.storage.packedarrays import read_arrays

    def files(path: Path, name: str) -> dict:  # packed or not (storage/packedarrays.py)
        generation = json.loads((path / "manifest.json").read_text())["generation"]
        return read_arrays(path / f"gen-{generation:06d}" / name)[0]

    out = {}
    for name in ("transform.safetensors", "stats.safetensors"):
        mine, theirs = files(source, name), files(other, name)
        # a direction's sign is arbitrary: the transform's columns are compared up to it
        out[name] = max(float(np.abs(np.abs(mine[k]) - np.abs(theirs[k])).max()) for k in mine)
    with Index.open(source) as a, Index.open(other) as b:
        for mode in ("dense", "keyword"):
            runs = [index.search_many(queries, k=FUSION_DEPTH, mode=mode, crop=0) for index in (a, b)]
            same = sum([h.id for h in x] == [h.id for h in y] for x, y in zip(*runs))
            sets = sum({h.id for h in x} == {h.id for h in y} for x, y in zip(*runs))
            out[f"{mode} candidates"] = f"same list on {same}, same set on {sets} of {len(queries)}"
    return out


def beir_of(name: str, work: Path) -> Path:
    from semsearch_process.evaluation.datasets import ensure_beir
    from semsearch_process.evaluation.longdoc_sets import sts_retrieval

    if name == "stsb-dev":  # STS-B dev's sentences, a pair's first one a query of its second (2,648 and 260)
        return sts_retrieval([AGE_SETS[name]], work / "converted" / name)
    return ensure_beir(AGE_SETS[name], work / "converted")


def age_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set", default="cranfield", help=f"one or more of {', '.join(SETS)}, comma-separated"
    )
    parser.add_argument("--share", type=float, default=0.2, help="of the documents rewritten")
    parser.add_argument("--work", type=Path, default=Path("/tmp/w38-age"))
    parser.add_argument("--reuse", action="store_true", help="the first ingest of an earlier run in --work")
    parser.add_argument(
        "--against",
        type=Path,
        help="another version's src directory: its `refit --calibrate` timed beside, on a copy of the same index",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="renewals timed (each version's, alternated): the median kept"
    )
    parser.add_argument(
        "--render", action="store_true", help="only write calibration.md from calibration.json"
    )


def age(config: argparse.Namespace) -> Rows:
    """A calibration's age, renewal and export (calibration.md)."""
    require(DATA, "shared data sets")
    if config.render:
        render(json.loads((OUT / "calibration.json").read_text()))
        return json.loads((OUT / "calibration.json").read_text())
    names = config.set.split(",")
    if unknown := [name for name in names if name not in AGE_SETS]:
        raise SystemExit(f"unknown set {unknown[0]}: one of {', '.join(SETS)}")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for name in names:
        work = config.work if len(names) == 1 else config.work / name
        command = f"`{command_line()}` ({stamp}"
        timed_process(name, config.share, work, config.reuse, command, config.against, config.repeat)
    return json.loads((OUT / "calibration.json").read_text())


def timed_process(
    name: str,
    share: float,
    work: Path,
    reuse: bool,
    command: str,
    against: Path | None = None,
    repeat: int = 1,
) -> None:
    """One set's run (the module's docstring), its row saved in calibration.json and rendered."""
    from semsearch_process.evaluation.datasets import load_beir

    ingested = work / "ingest-seconds.json"  # the first ingest, kept for --reuse
    if not reuse:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    beir = beir_of(name, work)
    corpus = [json.loads(line) for line in (beir / "corpus.jsonl").open(encoding="utf-8")]
    queries = list(load_beir(beir).queries.values())
    parts = ("source", "imported", "recalibrated", "refitted")
    source, imported, again, refitted = (work / part for part in parts)
    for path in (imported, again, refitted):
        shutil.rmtree(path, ignore_errors=True)
    row: dict = {"set": name, "documents": len(corpus), "load before": round(os.getloadavg()[0], 1)}

    if not (reuse and ingested.is_file()):
        shutil.rmtree(source, ignore_errors=True)
        seconds, cpu, _ = timed("ingest", str(beir / "corpus.jsonl"), "--index", str(source), "-q")
        ingested.write_text(json.dumps({"seconds": seconds, "cpu": cpu, "load": os.getloadavg()[0]}))
        shutil.copytree(source, work / "first")
    else:  # the index as the first ingest left it
        shutil.rmtree(source, ignore_errors=True)
        shutil.copytree(work / "first", source)
    row["ingest s"] = json.loads(ingested.read_text())["seconds"]
    row["ingest CPU s"] = json.loads(ingested.read_text()).get("cpu")
    first = calibration_of(source)
    changed = corpus[:: round(1 / share)][: round(share * len(corpus))]
    upserts = work / "changed.jsonl"
    upserts.write_text("".join(json.dumps({**d, "text": rotated(d["text"])}) + "\n" for d in changed))
    row["rewritten"] = len(changed)
    runs = upserted(source, upserts, work, repeat, None if against is None else against.resolve())
    for version, label in (("ours", ""), ("before", ", before")):
        if runs[version]:
            row[f"upsert{label} s"] = float(np.median([wall for wall, _ in runs[version]]))
            row[f"upsert{label} CPU s"] = float(np.median([cpu for _, cpu in runs[version]]))
    info = json.loads(semsearch_process("info", "--index", str(source), "--json")[1])
    row["age"] = info["calibration_age"]
    _, text = semsearch_process("info", "--index", str(source))
    row["info says"] = next(line.strip() for line in text.splitlines() if "calibration_age" in line)

    exported = work / "export.jsonl"
    semsearch_process("export", "--index", str(source), "-o", str(exported), "--vectors")
    row["import s"], said = semsearch_process("ingest", str(exported), "--index", str(imported))
    row["import says"] = next(line for line in said.splitlines() if "calibration" in line)
    semsearch_process("ingest", str(exported), "--index", str(again), "--recalibrate", "-q")
    semsearch_process("ingest", str(exported), "--index", str(refitted), "--refit", "always", "-q")
    answers = {path.name: top10(path, queries) for path in (source, imported, again, refitted)}
    for part, how in (("imported", ""), ("recalibrated", " --recalibrate"), ("refitted", " --refit always")):
        row[f"import{how}: same top-10"] = compared(answers["source"], answers[part])
    chosen = {
        path.name: (lambda c: f"{c['mode']} {c['alpha']}")(calibration_of(path))
        for path in (source, imported, again, refitted)
    }
    row["calibrations (source / import / --recalibrate / --refit always)"] = " / ".join(chosen.values())
    row["drift (source / import / --refit always)"] = " / ".join(
        f"{json.loads((path / 'manifest.json').read_text())['drift']:.4f}"
        for path in (source, imported, refitted)
    )

    diagnosed = diagnosis(source, refitted, queries)
    row["--refit always against the source: largest difference"] = (
        f"transform {diagnosed['transform.safetensors']:.2g}, statistics {diagnosed['stats.safetensors']:.2g}"
    )
    for mode in ("dense", "keyword"):
        row[f"--refit always against the source: {mode} candidates ({FUSION_DEPTH})"] = diagnosed[
            f"{mode} candidates"
        ]
    uncached = (
        work / "uncached"
    )  # the same index without the last calibration's cache (storage/calibrationcache.py)
    shutil.rmtree(uncached, ignore_errors=True)
    shutil.copytree(source, uncached, ignore=shutil.ignore_patterns(CACHE))
    row["refit --calibrate without its cache s"], _ = semsearch_process(
        "refit", "--index", str(uncached), "--calibrate"
    )
    # the other version renews a copy of the same index, cache and all, just before each of ours
    runs = renewals(source, work, repeat, None if against is None else against.resolve())
    for version, label in (("ours", ""), ("before", ", before")):
        if runs[version]:
            row[f"refit --calibrate{label} s"] = float(np.median([wall for wall, _ in runs[version]]))
            row[f"refit --calibrate{label} CPU s"] = float(np.median([cpu for _, cpu in runs[version]]))
            row[f"refit --calibrate{label} runs (wall / CPU s)"] = ", ".join(
                f"{wall:.2f} / {cpu:.2f}" for wall, cpu in runs[version]
            )
    if against is not None:
        row["its calibration, before s"] = calibration_of(work / "against")["seconds"]
    renewed = calibration_of(source)
    row["its calibration s"] = renewed["seconds"]
    row["texts it took from the last calibration's cache"] = renewed.get("reused")
    row["age after"] = json.loads(semsearch_process("info", "--index", str(source), "--json")[1])[
        "calibration_age"
    ]
    row["refit (all) s"], _ = semsearch_process("refit", "--index", str(source))
    row["refit --calibrate / ingest"] = f"{row['refit --calibrate s'] / row['ingest s']:.1%}"
    if against is not None:
        row["before / ingest"] = f"{row['refit --calibrate, before s'] / row['ingest s']:.1%}"
    if "upsert, before s" in row:
        row["upsert / upsert before"] = f"{row['upsert s'] / row['upsert, before s']:.2f}"
        row["upsert + refit --calibrate, against before"] = (
            f"{row['upsert s'] + row['refit --calibrate s']:.2f} s against "
            f"{row['upsert, before s'] + row['refit --calibrate, before s']:.2f}"
        )
    if row["ingest CPU s"]:
        for label in ("", ", before"):
            if f"refit --calibrate{label} CPU s" in row:
                share = row[f"refit --calibrate{label} CPU s"] / row["ingest CPU s"]
                row[f"refit --calibrate{label} CPU / ingest CPU"] = f"{share:.1%}"
    row["without its cache / ingest"] = (
        f"{row['refit --calibrate without its cache s'] / row['ingest s']:.1%}"
    )
    row["refit (all) / ingest"] = f"{row['refit (all) s'] / row['ingest s']:.1%}"
    row["first calibration s"] = first["seconds"]
    row["load after"] = round(os.getloadavg()[0], 1)
    for key, value in list(row.items()):
        row[key] = round(value, 2 if abs(value) < 10 else 1) if isinstance(value, float) else value
    print(json.dumps(row, indent=1))
    row["command"] = f"{command}; 2 cores shared with other work, load average "
    row["command"] += (
        f"{row['load before']} before, {row['load after']} after: seconds swing 2x, the ratios less)"
    )
    saved = OUT / "calibration.json"
    runs = json.loads(saved.read_text()) if saved.is_file() else {}
    runs = {**(runs if "set" not in runs else {runs["set"]: runs}), name: row}  # a set a run, kept
    saved.write_text(json.dumps(runs, indent=1) + "\n")
    render(runs)


def render(runs: dict) -> None:
    """calibration.md: a section per set's last run (calibration.json)."""
    lines = [
        "# A calibration's age, renewal and export",
        "",
        __doc__.split("\n\n")[2].replace("\n", " "),
    ]
    for name, run in runs.items():
        shown = {k: v for k, v in run.items() if not isinstance(v, dict) and k != "command"}
        lines += ["", f"## {name}", "", run.get("command", ""), ""]
        lines += [f"- {key}: {value}" for key, value in shown.items()]
        lines += [f"- age before renewal: {json.dumps(run['age'])}"]
        lines += [f"- age after `refit --calibrate`: {json.dumps(run['age after'])}"]
    (OUT / "calibration.md").write_text("\n".join([*lines, "", *NOTES]))


PARTS = {
    "cost": (cost_arguments, cost),
    "bands": (bands_arguments, bands),
    "age": (age_arguments, age),
}
