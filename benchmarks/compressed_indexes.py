"""Compressed vector indexes against HNSW over float32 on real vectors (issue 37): the candidates a default query
takes (200 deep, SciFact's passages) from FAISS structures the engine could build, each over the index's own
projected vectors, re-scored exactly from the raw vectors as pq is (`Transform.project_float32` of the kept rows,
k_factor x 200 of them). recall@10 and recall@200 against brute force in the index's space, p50 of one query at
a time (search and re-scoring, one thread), bytes a passage of the FAISS index. recall@200 is a proxy, not
nDCG: HNSW32,Flat at efSearch 200 (what a default query uses) loses nothing against flat in nDCG@10
(index-type-quality.md: 0.6878 dense, flat 0.6890) where pq at a higher recall@200 lost 0.008: an IVF misses
whole lists, and keeps its nprobe when a query reads 800 deep, where HNSW's efSearch grows with the depth.
Written to benchmarks/results/compressed-indexes.md.

    .venv/bin/python benchmarks/compressed_indexes.py --index /tmp/w38/indexes/scifact --beir ../shared/data/scifact
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from pathlib import Path

import faiss
import numpy as np
from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
DEPTH = 200
# (structure, FAISS factory string, the search parameter swept, its values, candidates re-scored per result)
SETTINGS = [
    ("HNSW32,Flat", "HNSW32,Flat", "efSearch", (200, 400), 1),
    ("HNSW32,SQ8", "HNSW32,SQ8", "efSearch", (200, 400, 800), 2),
    ("HNSW16,SQ8", "HNSW16,SQ8", "efSearch", (200, 400, 800), 2),
    ("IVF,SQ8", "IVF{lists},SQ8", "nprobe", (100, 200, 400), 2),
    ("IVF,PQ32x8 (pq)", "IVF{lists},PQ32x8", "nprobe", (195, 400), 4),
]


def candidates(
    structure, parameters, refine: int, transform, kept: np.ndarray, query: np.ndarray
) -> np.ndarray:
    """A query's DEPTH candidates: refine x DEPTH from the structure, re-scored exactly from the kept raw rows."""
    _, found = structure.search(query, DEPTH * refine, params=parameters)
    found = found[found >= 0]
    if refine == 1:
        return found[:DEPTH]
    scores = transform.project_float32(kept[found]) @ query[0]
    return found[np.argsort(-scores, kind="stable")[:DEPTH]]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--timed", type=int, default=100)
    args = parser.parse_args()
    from semsearch.evaluation.datasets import load_beir
    from semsearch.index import Index
    from semsearch.retrieval.vectorindex import inverted_lists
    from semsearch.storage.rawvectors import as_kept

    data = load_beir(args.beir)
    texts = [data.queries[q] for q in data.queries]
    with Index.open(args.index) as index:
        transform, raw = index.directory.transform, index.directory.raw
        pks = np.concatenate([p for p, _ in raw.blocks()])
        kept = np.concatenate([as_kept(block, "int8") for _, block in raw.blocks()])  # the defaults' rows
        queries = transform.project(index.encoder.encode(texts))
    projected = transform.project(kept)
    exact = np.argsort(-(queries @ projected.T), axis=1)[:, :DEPTH]
    faiss.omp_set_num_threads(1)
    rows = []
    for name, factory, knob, values, refine in SETTINGS:
        structure = faiss.index_factory(
            projected.shape[1], factory.format(lists=inverted_lists(len(pks))), faiss.METRIC_INNER_PRODUCT
        )
        started = time.perf_counter()
        structure.train(projected)
        structure.add(projected)
        built = time.perf_counter() - started
        size = len(faiss.serialize_index(structure)) + 8 * len(pks)  # the ids, as IndexIDMap keeps them
        for value in values:
            parameters = (
                faiss.SearchParametersHNSW(efSearch=value)
                if knob == "efSearch"
                else faiss.SearchParametersIVF(nprobe=value)
            )

            found, seconds = [], []
            for i, query in enumerate(queries):
                started = time.perf_counter()
                found.append(candidates(structure, parameters, refine, transform, kept, query[None]))
                if i < args.timed:
                    seconds.append(time.perf_counter() - started)
            rows.append(
                {
                    "structure": name,
                    knob: value,
                    "re-scored per result": refine,
                    "recall@10": round(
                        float(np.mean([len(set(f[:10]) & set(e[:10])) / 10 for f, e in zip(found, exact)])), 4
                    ),
                    f"recall@{DEPTH}": round(
                        float(np.mean([len(set(f) & set(e)) / DEPTH for f, e in zip(found, exact)])), 4
                    ),
                    "p50 ms": round(1000 * float(np.median(seconds)), 2),
                    "bytes/passage": round(size / len(pks)),
                    "build s": round(built, 1),
                }
            )
            print(rows[-1], flush=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Compressed vector indexes on real vectors (issue 37)",
        "",
        f"`{command_line()}` ({stamp}; 2 cores shared with other work, one thread)",
        "",
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        f"{len(pks):,} passages, {len(queries)} queries; p50 of the first {args.timed}, one at a time.",
        "",
        *markdown_table(rows),
    ]
    (OUT / "compressed-indexes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
