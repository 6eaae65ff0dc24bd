"""A study (issue 37): at 1M rows (the index `ten_million.py --rows 1000000` builds in WORK), IVF4000 with
PQ32x8 (as built) against FAISS's fast-scan 4-bit codes PQ32x4fs and PQ64x4fs on the same coarse lists, the
candidates re-scored exactly in the index's space: recall@10 against exact search on 300 held-back queries and
the CPU ms a query takes on one thread. Results: benchmarks/results/fast-scan-codes.md (written by hand from
WORK/fs/results.json; docs/performance.md, "Ten million passages").

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/fast_scan_codes.py WORK
"""

import json
import sys
import time

import faiss
import numpy as np

from semsearch import Index

work = sys.argv[1]
index = Index.open(f"{work}/index-1000000-pq")
ivf = index.vectors.concrete
t = index.transform
queries = t.project(np.load(f"{work}/queries-1000000.npy"))
# projected rows, 1M x 128 float32 (512 MB)
rows = np.empty((index.vectors.count, t.out_dim), np.float32)
for pks, block in index.raw.blocks(65536):
    rows[pks] = t.project_float32(block)
truth = np.stack([np.argsort(-(rows @ q))[:10] for q in queries[:300]])  # pk i is row i
faiss.omp_set_num_threads(1)
sample = rows[np.linspace(0, len(rows) - 1, 65536).astype(np.int64)]


def measure(idx, name):
    out = []
    for nprobe in (64, 128, 256, 512):
        for kf in (2, 4, 8):
            p = faiss.SearchParametersIVF(nprobe=nprobe)
            found, cpu = [], []
            for q in queries[:300]:
                c = time.thread_time()
                _, ids = idx.search(q[None], 10 * kf, params=p)
                cand = ids[0][ids[0] >= 0]
                s = rows[cand] @ q
                found.append(cand[np.argsort(-s)[:10]])
                cpu.append(time.thread_time() - c)
            r = np.mean([len(set(f) & set(w)) / 10 for f, w in zip(found, truth[:300])])
            out.append(
                dict(
                    codes=name,
                    nprobe=nprobe,
                    k_factor=kf,
                    recall=round(float(r), 4),
                    cpu_ms=round(1000 * float(np.median(cpu)), 3),
                )
            )
            print(out[-1], flush=True)
    return out


results = []
for spec in ("PQ32x4fs", "PQ64x4fs"):
    m = int(spec[2:4])
    idx = faiss.IndexIVFPQFastScan(ivf.quantizer, t.out_dim, ivf.nlist, m, 4, faiss.METRIC_INNER_PRODUCT)
    started = time.time()
    idx.train(sample)
    idx.add_with_ids(rows, np.arange(len(rows), dtype=np.int64))
    print(spec, "train+add s", round(time.time() - started, 1), flush=True)
    results += measure(idx, spec)
results += measure(ivf, "PQ32x8 (built)")
with open(f"{work}/fs/results.json", "w") as out:
    json.dump(results, out)
