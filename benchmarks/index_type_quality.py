"""What the vector index type costs the default's quality (issue 38): a BEIR set's index as ingested beside copies
of it refitted to other types (`--types`, e.g. flat,hnsw: the exact index and what `auto` builds above 50,000
passages at 128 dims; the SciFact index of 2026-11-26 was ingested when `auto` built IVF-PQ there), nothing else changed (the same transform, refitted from the same statistics, and the same calibration). Each
side's real queries are searched once (FUSION_DEPTH candidates, as hybrid search takes them) and fused at each
weight as hybrid search does (calibration_choice.py's way); written to benchmarks/results/index-type-quality.md.

    .venv/bin/python benchmarks/index_type_quality.py --index /tmp/w38/indexes/scifact --beir ../shared/data/scifact
        [--types flat,hnsw,pq] [--raw int8] [--timed 200] [--no-ingested] [--out index-type-quality.md]

`--raw int8`: the copies' raw vectors rewritten at that precision first (the defaults'), statistics and all;
`--timed N`: N queries timed one at a time in dense and the default mode, the copies alternating (issue 37).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from raw_precision import reduce_segments
from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
WEIGHTS = (1.0, 0.6, 0.5, 0.4, 0.3, 0.0)


def figures(index, data, vectors: np.ndarray) -> dict:
    """nDCG@10 at each dense weight from one dense and one keyword search of every query, FUSION_DEPTH deep."""
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.retrieval.search import Match, fuse
    from semsearch.settings import FUSION_DEPTH, Fusion

    ids = list(data.queries)
    texts = [data.queries[q] for q in ids]
    calibration = index.state.calibration or {}
    out = {"structure": index.state.index_structure, "measured recall": index.state.measured_recall}
    out["default"] = f"{calibration.get('mode')} {calibration.get('alpha')}"
    sides = {
        m: index.search_vectors(vectors, k=FUSION_DEPTH, texts=texts, mode=m, crop=0)
        for m in ("dense", "keyword")
    }
    # the calibrated default's own weight too (its nDCG@10 the `default nDCG@10` column)
    alpha = {"dense": 1.0, "keyword": 0.0}.get(calibration.get("mode"), calibration.get("alpha"))
    for weight in dict.fromkeys((*WEIGHTS, *(() if alpha is None else (float(alpha),)))):
        run = {}
        for q, dense, keyword in zip(ids, sides["dense"], sides["keyword"]):
            d, k = [Match(h.id, h.score) for h in dense], [Match(h.id, h.score) for h in keyword]
            found = (
                d if weight == 1 else k if weight == 0 else fuse(d, k, weight, Fusion.CONVEX, FUSION_DEPTH)
            )
            run[q] = {m.pk: float(len(found) - r) for r, m in enumerate(found)}
        out[f"{weight:g}"] = round(evaluate_run(data.qrels, run, ("ndcg@10",))["ndcg@10"], 4)
    if alpha is not None:
        out["default nDCG@10"] = out[f"{float(alpha):g}"]
    return out


def timed(indexes: list, vectors: np.ndarray, texts: list[str], queries: int) -> list[dict]:
    """p50 ms of one query at a time (k 10, query vectors given: the search without the encoder), dense and
    in the index's default mode, the indexes alternating query by query (the order rotating); and recall@10 of
    the dense hits against the first index's (flat)."""
    times = [{"dense": [], "default": []} for _ in indexes]
    hits = [[] for _ in indexes]
    for i in range(min(queries, len(texts))):
        for turn in range(len(indexes)):
            n = (i + turn) % len(indexes)
            for mode in ("dense", "default"):
                options = {"mode": "dense"} if mode == "dense" else {}
                started = time.perf_counter()
                found = indexes[n].search_vectors(
                    vectors[i : i + 1], k=10, texts=texts[i : i + 1], crop=0, **options
                )
                times[n][mode].append((time.perf_counter() - started) * 1000)
                if mode == "dense":
                    hits[n].append([h.id for h in found[0]])
    out = []
    for n in range(len(indexes)):
        overlap = [len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(hits[n], hits[0])]
        out.append(
            {
                "dense p50 ms": round(float(np.median(times[n]["dense"])), 2),
                "default p50 ms": round(float(np.median(times[n]["default"])), 2),
                "dense recall@10 vs flat": round(float(np.mean(overlap)), 4),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--types", default="flat", help="refitted copies beside the index, e.g. flat,hnsw")
    parser.add_argument("--timed", type=int, default=200, help="queries timed one at a time")
    parser.add_argument("--no-ingested", action="store_true", help="leave out the index as ingested")
    parser.add_argument(
        "--out", default="index-type-quality.md", help="the table's file in benchmarks/results"
    )
    parser.add_argument(
        "--raw", choices=("int8", "float16"), help="the copies' raw vectors rewritten so first"
    )
    args = parser.parse_args()
    from semsearch.evaluation.datasets import load_beir
    from semsearch.index import Index

    data = load_beir(args.beir)
    texts = [data.queries[q] for q in data.queries]
    named = []
    with tempfile.TemporaryDirectory(dir=args.index.parent) as scratch, ExitStack() as stack:
        for index_type in args.types.split(","):
            copy = shutil.copytree(args.index, Path(scratch) / index_type)
            if args.raw:
                reduce_segments(copy, args.raw)  # the statistics too: the refit fits on the rows as kept
            started = time.perf_counter()
            with Index.open(copy) as index:
                index.refit(index_type=index_type, calibrate=False)
            print(f"refitted {index_type} in {time.perf_counter() - started:.0f} s", flush=True)
            named.append((f"refitted {index_type}" + (f", {args.raw} raw" if args.raw else ""), copy))
        if not args.no_ingested:  # last: the timings' recall is against the first copy (flat)
            named.append(("as ingested", args.index))
        indexes = [stack.enter_context(Index.open(path)) for _, path in named]
        vectors = indexes[0].encoder.encode(texts)
        rows = [{"index": name, **figures(index, data, vectors)} for (name, _), index in zip(named, indexes)]
        for row, speed in zip(rows, timed(indexes, vectors, texts, args.timed)):
            row.update(speed)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# The vector index type and the default's quality (issues 37, 38)",
        "",
        f"`{command_line()}` ({stamp}; 2 cores shared with other work)",
        "",
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        "nDCG@10 of the set's queries; a column per dense weight (1: dense alone, 0: keyword alone). Timings: "
        f"{args.timed} queries one at a time, given their vectors, the copies alternating; recall@10 of the "
        "dense hits against the first copy's.",
        "",
        *markdown_table(rows),
    ]
    (OUT / args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
