"""The LanceDB side of benchmarks/lancedb.py, run by LanceDB's own virtualenv (never semsearch's: the project
does not depend on it). Builds a table of the given rows and vectors with its IVF-PQ, FTS and scalar indexes,
then answers one JSON request a line on stdin with the ids found and its own milliseconds on stdout.

    python3 -m venv /work/lancedb-venv && /work/lancedb-venv/bin/pip install "lancedb==0.40.0" numpy pyarrow
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

FIELDS = ["id", "title", "text", "pos", "lexname"]


def build(rows_path: str, vectors_path: str, directory: str) -> dict:
    vectors = np.load(vectors_path)
    with open(rows_path) as lines:
        rows = [json.loads(line) for line in lines]
    table = pa.table(
        {
            "id": [r["id"] for r in rows],
            "title": [r.get("title", "") for r in rows],
            "text": [r["text"] for r in rows],
            "pos": [r["pos"] for r in rows],
            "lexname": [int(r["lexname"]) for r in rows],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
            ),
        }
    )
    db = lancedb.connect(directory)
    started = time.perf_counter()
    t = db.create_table("docs", table, mode="overwrite")
    t.create_index(metric="cosine", index_type="IVF_PQ")  # its defaults: partitions and sub-vectors by size
    t.create_fts_index("text")
    t.create_scalar_index("pos", index_type="BITMAP")
    t.create_scalar_index("lexname", index_type="BITMAP")
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
    return {"build_s": seconds, "bytes": size, "rows": len(rows), "version": lancedb.__version__}


def main() -> None:
    table = None
    queries = None
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "build":
            answer = build(request["rows"], request["vectors"], request["directory"])
        elif request["op"] == "open":
            table = lancedb.connect(request["directory"]).open_table("docs")
            queries = np.load(request["queries"])
            answer = {"ok": True}
        else:
            vector = queries[request["query"]]
            mode, k, where = request["op"], request.get("k", 10), request.get("where")
            started = time.perf_counter()
            if mode == "keyword":
                search = table.search(request["text"], query_type="fts")
            elif mode == "hybrid":
                search = table.search(query_type="hybrid").vector(vector).text(request["text"])
            else:
                search = table.search(vector).distance_type("cosine")
                if mode == "exact":
                    search = search.bypass_vector_index()
                else:  # at its defaults unless asked for more lists or a re-ranked pool (equal recall)
                    if request.get("nprobes"):
                        search = search.nprobes(request["nprobes"])
                    if request.get("refine"):
                        search = search.refine_factor(request["refine"])
            if where:
                search = search.where(where, prefilter=True)
            # the fields a semsearch hit holds: its id, title, text and metadata, and the score (asked for, or
            # LanceDB logs a deprecation warning per query; hybrid's sub-queries log theirs regardless)
            score = {"keyword": ["_score"], "hybrid": []}.get(mode, ["_distance"])
            found = search.limit(k).select(FIELDS + score).to_arrow()["id"].to_pylist()
            answer = {"ids": found, "ms": (time.perf_counter() - started) * 1000}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
