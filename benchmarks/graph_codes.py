"""HNSW over 4-bit codes and a sparser graph against hnsw-sq8 (issue 37): FAISS structures over an index's own
projected vectors (its transform applied to given raw vectors), one thread, sample queries; recall@10 against
exact search in that space (what tuning measures against --recall-target) and, after re-ranking each query's 100
candidates by the float32 raw vectors as rerank does, the top 10's agreement with the same re-ranking of exact
search's 100 and with exact float32 search. Written to benchmarks/results/graph-codes.md.

    .venv/bin/python benchmarks/graph_codes.py --index DIR --vectors wordnet-vectors.npy --queries queries.npy
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
STRUCTURES = (("HNSW16,SQ8", "QT_8bit", 16), ("HNSW16,SQ4", "QT_4bit", 16), ("HNSW12,SQ8", "QT_8bit", 12))


def main() -> None:
    import faiss

    from semsearch import Index

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--index", type=Path, required=True, help="an index whose transform projects the vectors"
    )
    parser.add_argument("--vectors", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    vectors = np.asarray(np.load(args.vectors, mmap_mode="r")[:], dtype=np.float32)
    queries = np.load(args.queries).astype(np.float32)
    with Index.open(args.index) as index:
        transform = index.directory.transform
        projected = np.ascontiguousarray(transform.project(vectors), dtype=np.float32)
        projected_queries = np.ascontiguousarray(transform.project(queries), dtype=np.float32)
    exact_raw = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    flat = faiss.IndexFlatIP(projected.shape[1])
    flat.add(projected)
    _, exact = flat.search(projected_queries, 100)

    def reranked(candidates: np.ndarray) -> list[np.ndarray]:
        out = []
        for query, found in zip(queries, candidates):
            found = found[found >= 0]
            out.append(found[np.argsort(-(vectors[found] @ query))[:10]])
        return out

    def agreement(found, reference) -> float:
        return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, reference)]))

    exact_reranked = reranked(exact)
    rows = []
    for name, codes, neighbours in STRUCTURES:
        graph = faiss.IndexHNSWSQ(
            projected.shape[1], getattr(faiss.ScalarQuantizer, codes), neighbours, faiss.METRIC_INNER_PRODUCT
        )
        graph.hnsw.efConstruction = 80
        started = time.perf_counter()
        graph.train(projected[:65536])
        graph.add(projected)
        build_s = time.perf_counter() - started
        path = tempfile.mktemp()
        faiss.write_index(graph, path)
        size = os.path.getsize(path) / len(projected) + 8  # and IndexIDMap's id
        os.remove(path)
        for ef in (64, 128, 256):
            graph.hnsw.efSearch = ef
            started = time.perf_counter()
            _, found = graph.search(projected_queries, 100)
            p_query = (time.perf_counter() - started) / len(queries) * 1000
            _, top = graph.search(projected_queries, 10)
            rows.append({
                "structure": name, "efSearch": ef, "bytes a passage": round(size),
                "recall@10 in its space": round(agreement(top, exact[:, :10]), 4),
                "re-ranked top 10 vs exact's re-ranked": round(agreement(reranked(found), exact_reranked), 4),
                "re-ranked top 10 vs exact float32": round(agreement(reranked(found), exact_raw), 4),
                "ms a query (100 deep)": round(p_query, 2), "build s": round(build_s),
            })  # fmt: skip
            print(rows[-1], flush=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# HNSW over 4-bit codes and a sparser graph (issue 37)",
        "",
        f"`{command_line()}` ({stamp}); {len(vectors):,} vectors, {len(queries)} queries, one thread.",
        "",
        f"Exact search's 100, re-ranked by the float32 raw vectors, agree with exact float32 search on "
        f"{agreement(exact_reranked, exact_raw):.3f} of the top 10 (the whitened space's own loss).",
        "",
        *markdown_table(rows),
    ]
    (OUT / "graph-codes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
