"""What the raw vectors' precision costs where no relevance judgments are (issue 37): on float32 vectors (given,
e.g. WordNet's glosses encoded by the default model, benchmarks/lancedb.py --encode, or an index's float32 raw
rows) and, where given, sample queries, each precision's kept rows (rawvectors.as_kept) against the float32 rows:
the top 10 of a query's 100 best by exact float32 cosine, re-ranked from the kept rows as rerank does, against
float32's top 10 (the share of members agreeing), the mean change of a score; and how far a whitening transform
fitted on the kept rows moves the space (the largest change of the cosine of two of 1,000 rows) beside the
transform's own noise: fitted on 90% of the float32 rows (two draws). Written to
benchmarks/results/raw-agreement.md.

    .venv/bin/python benchmarks/raw_agreement.py wordnet=/tmp/lance/wordnet-vectors.npy \\
        cranfield-mixed=/tmp/raw-precision/indexes/cranfield-mixed-ingested \\
        --queries wordnet=/tmp/lance/queries.npy [--precisions int8,int6,int5,int4]
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def normalized(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def cosines(rows: np.ndarray) -> np.ndarray:
    rows = normalized(rows)
    return rows @ rows.T


def float32_rows(path: Path) -> np.ndarray:
    """An .npy's rows, or an index's raw rows (which must be float32: the reference)."""
    if path.suffix == ".npy":
        return np.asarray(np.load(path, mmap_mode="r")[:], dtype=np.float32)
    from semsearch import Index

    with Index.open(path) as index:
        if index.settings.raw_precision != "float32":
            raise SystemExit(f"{path} keeps {index.settings.raw_precision} raw rows: give a float32 index")
        return np.concatenate([block for _, block in index.directory.raw.blocks()])


def main() -> None:
    from semsearch.ingest import build
    from semsearch.settings import TransformSpec
    from semsearch.storage.rawvectors import as_kept
    from semsearch.transforms.stats import RunningStats

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "sets", nargs="+", help="NAME=PATH: an .npy of float32 rows, or an index of float32 raw rows"
    )
    parser.add_argument("--queries", action="append", default=[], help="NAME=PATH: the set's sample queries")
    parser.add_argument("--precisions", default="int8,int6,int5,int4")
    parser.add_argument("--dims", type=int, default=128)
    parser.add_argument("--power", type=float, default=0.5)
    args = parser.parse_args()
    spec = TransformSpec("whiten", args.dims, args.power)
    queries_of = dict(given.split("=", 1) for given in args.queries)
    rows = []
    for name, path in (given.split("=", 1) for given in args.sets):
        vectors = float32_rows(Path(path))
        probe = vectors[:: max(1, len(vectors) // 1000)]

        def space(kept: np.ndarray, probe=probe) -> np.ndarray:
            return cosines(build.fit(spec, RunningStats.of(kept), None, None).project(probe))

        reference = space(vectors)
        queries = np.load(queries_of[name]).astype(np.float32) if name in queries_of else None
        if queries is not None:
            queries /= np.linalg.norm(queries, axis=1, keepdims=True)
            candidates = np.argsort(-(queries @ vectors.T), axis=1)[:, :100]
        for precision in args.precisions.split(","):
            kept = as_kept(vectors, precision)
            row = {"set": name, "rows": len(vectors), "kept rows": precision}
            if queries is not None:
                agree, moved = [], []
                for query, found in zip(queries, candidates):
                    exact = normalized(vectors[found]) @ query
                    scores = normalized(kept[found]) @ query
                    agree.append(len(set(found[np.argsort(-scores)[:10]]) & set(found[:10])) / 10)
                    moved.append(np.abs(scores - exact).mean())
                row.update({
                    "top 10 agreeing with float32": round(float(np.mean(agree)), 4),
                    "lowest query's": float(np.min(agree)), "mean score change": f"{np.mean(moved):.1e}",
                })  # fmt: skip
            row["transform moved"] = round(float(np.abs(space(kept) - reference).max()), 4)
            rows.append(row)
            print(rows[-1], flush=True)
        for seed in range(2):
            pick = np.random.default_rng(seed).random(len(vectors)) < 0.9
            moved = round(float(np.abs(space(vectors[pick]) - reference).max()), 4)
            rows.append({"set": name, "rows": int(pick.sum()), "kept rows": f"float32, 90% (draw {seed})",
                         "transform moved": moved})  # fmt: skip
            print(rows[-1], flush=True)
    columns = ("top 10 agreeing with float32", "lowest query's", "mean score change", "transform moved")
    rows = [
        {**{k: v for k, v in row.items() if k not in columns}, **{c: row.get(c, "") for c in columns}}
        for row in rows
    ]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Raw precision against float32 on given vectors (issue 37)",
        "",
        f"`{command_line()}` ({stamp}).",
        "",
        "Each query's 100 best rows by exact float32 cosine, re-ranked from the rows as kept at each precision: the "
        "share of the top 10 that float32's top 10 holds, and the mean change of a score. `transform moved`: a "
        f"whitening (P={args.power}, {args.dims} dims) fitted on the kept rows against one fitted on the float32 "
        "rows, the largest change of the cosine of two of 1,000 rows in its space; the float32 rows' own noise "
        "below (fitted on 90% of them).",
        "",
        *markdown_table(rows),
    ]
    (OUT / "raw-agreement.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
