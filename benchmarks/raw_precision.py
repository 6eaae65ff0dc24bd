"""Raw vectors at the precision rerank and refit need (issue 37): each retrieval set ingested once with every
default and float32 raw vectors (as every release before wrote them); then per precision a copy whose raw
segments are rewritten at that precision (rawvectors.reduced), refitted with the same settings (the transform
fitted again from the statistics of the reduced rows, the vector index rebuilt from them), and searched with
the calibrated default mode and rerank. Written to benchmarks/results/raw-precision.md and .json.

    .venv/bin/python benchmarks/raw_precision.py [--sets scifact,cranfield,...] [--work DIR]
                                                 [--precisions float32,float16,int8]

nDCG@10 by pytrec_eval of the sets' test queries, the default mode (calibrated at ingest, kept by the refit),
rerank 100; beside it the refitted transform compared with the float32 index's: the largest change of the cosine
of two rows in its space.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results"
SETS = ("cranfield", "cranfield-mixed", "scifact-mixed", "scifact-sub")


def beir_directory(name: str, sets: Path) -> Path:
    from semsearch.evaluation import longdoc_sets as built
    from semsearch.evaluation.datasets import ensure_beir

    cranfield = ensure_beir(DATA / "cranfield", sets / "converted")
    makers = {
        "scifact": lambda: DATA / "scifact",
        "scifact-sub": lambda: built.documents_subset(DATA / "scifact", sets / name, subset=1500),
        "scifact-mixed": lambda: built.mixed_topic(DATA / "scifact", sets / name, subset=1000),
        "cranfield-mixed": lambda: built.mixed_topic(cranfield, sets / name),
        "cranfield-single": lambda: built.single_topic(cranfield, sets / name),
        "cranfield": lambda: cranfield,
    }
    return makers[name]()


def ingested(name: str, work: Path) -> tuple[Path, float]:
    """The set's index with float32 raw vectors (made once), and its ingest's seconds."""
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir

    path = work / "indexes" / f"{name}-ingested"
    timing = path.parent / f"{name}.seconds"
    if not timing.is_file():
        shutil.rmtree(path, ignore_errors=True)
        data = load_beir(beir_directory(name, work / "sets"))
        started = time.perf_counter()
        from dataclasses import fields

        from semsearch.settings import IndexOptions

        known = {field.name for field in fields(IndexOptions)}
        as_before = {"raw_precision": "float32"} if "raw_precision" in known else {}
        with Index.create(path, **as_before) as index:
            index.ingest(data.corpus_path)
        timing.write_text(f"{time.perf_counter() - started:.1f}\n")
    return path, float(timing.read_text())


def ndcg(path: Path, name: str, sets: Path, mode: str | None = None) -> tuple[float, str]:
    """nDCG@10 of the index on the set's queries (the set built under `sets`), in `mode` (its default: None),
    and the mode it ran in."""
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.metrics import evaluate_run

    data = load_beir(beir_directory(name, sets))
    ids = sorted(data.queries)
    with Index.open(path) as index:
        hits = index.search_many([data.queries[q] for q in ids], k=10, mode=mode)
        mode = index.query_defaults
    run = {q: {hit.id: hit.score for hit in found} for q, found in zip(ids, hits)}
    return evaluate_run(data.qrels, run, ["ndcg@10"])["ndcg@10"], f"{mode.mode} {mode.alpha}"


def reduced_copy(source: Path, precision: str, target: Path) -> float:
    """A copy of the index whose raw segments are at `precision`, refitted as it was; the refit's seconds."""
    from semsearch import Index

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    reduce_segments(target, precision)
    with Index.open(target) as index:
        return index.refit(calibrate=False)


def reduce_segments(path: Path, precision: str) -> None:
    """Rewrite a (copied, closed) index's raw segments at `precision`, in place, and say so in its manifests
    (the published one and its generation's copy): as an ingest at that precision would have written them."""
    from semsearch.storage.manifest import FILE
    from semsearch.storage.rawspool import SegmentWriter
    from semsearch.storage.rawvectors import RawVectors, Segment
    from semsearch.transforms.stats import RunningStats

    data = json.loads((path / FILE).read_text())
    dim = data["encoder_dim"]
    segments = Segment.all_of(data["segments"])
    written = []
    for segment in segments:
        raw = RawVectors(path, [segment], dim, mapped=False)
        writer = SegmentWriter(path, segment.start, dim, precision)
        pks = []
        for block_pks, block in raw.blocks():
            writer.append(block)
            pks.append(block_pks)
        listed = np.concatenate(pks) if segment.pks else None
        name = segment.name[:-4] + f".{precision}.npy"
        written.append(writer.finish(name, listed).to_json())
    # the statistics an ingest at this precision counts: of the rows as kept (rawvectors.as_kept), so the refit
    # fits its transform on the reduced rows
    stats = None
    for _, block in RawVectors(path, Segment.all_of(written), dim, mapped=False).blocks():
        if stats is None:
            stats = RunningStats.of(block)
        else:
            stats.merge(RunningStats.of(block))
    for saved in path.glob("gen-*/" + RunningStats.FILE):
        stats.save(saved)
    for manifest in [path / FILE, *path.glob("gen-*/" + FILE)]:
        data = json.loads(manifest.read_text())
        if [s["name"] for s in data["segments"]] == [s.name for s in segments]:
            data["segments"] = written
        data["raw_precision"] = precision
        manifest.write_text(json.dumps(data, indent=2) + "\n")


def transform_difference(reference: Path, other: Path) -> float:
    """The largest difference between the cosines of pairs of 1,000 rows (the reference's float32 rows) in the
    two transforms' spaces: what a refit from the reduced rows changes of the space the index searches
    (signs and rotations within an eigenspace, which change nothing, drop out)."""
    from semsearch import Index

    with Index.open(reference) as first, Index.open(other) as second:
        raw = first.directory.raw
        pks = np.concatenate([pks for pks, _ in raw.blocks()])
        rows = raw.read(pks[:: max(1, len(pks) // 1000)])
        projected = [index.directory.transform.project(rows) for index in (first, second)]
    a, b = (p / np.linalg.norm(p, axis=1, keepdims=True) for p in projected)
    return float(np.abs(a @ a.T - b @ b.T).max())


def raw_count(raw) -> int:
    return sum(segment.count for segment in raw.segments)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/raw-precision"))
    parser.add_argument("--precisions", default="float32,float16,int8")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    rows = []
    for name in args.sets.split(","):
        saved = args.work / f"rows-{name}.json"
        if saved.is_file() and not args.build_only:
            rows += json.loads(saved.read_text())
            continue
        source, seconds = ingested(name, args.work)
        print(name, "ingested", seconds, flush=True)
        if args.build_only:
            continue
        today, mode = ndcg(source, name, args.work / "sets")
        dense_today, _ = ndcg(source, name, args.work / "sets", "dense")
        for precision in args.precisions.split(","):
            target = args.work / "indexes" / f"{name}-{precision}"
            refit_s = reduced_copy(source, precision, target)
            score, _ = ndcg(target, name, args.work / "sets")
            dense, _ = ndcg(target, name, args.work / "sets", "dense")
            moved = transform_difference(source, target)
            raw_bytes = sum(f.stat().st_size for f in (target / "raw").iterdir())
            rows.append({  # noqa
                "set": name, "precision": precision, "mode": mode, "ndcg@10 today": round(today, 4),
                "ndcg@10 refitted": round(score, 4), "difference": round(score - today, 4),
                "dense ndcg@10 today": round(dense_today, 4), "dense refitted": round(dense, 4),
                "dense difference": round(dense - dense_today, 4),
                "refit: largest cosine change": f"{moved:.1e}",
                "raw bytes": raw_bytes, "refit_s": round(refit_s, 1),
            })  # fmt: skip
            print(rows[-1], flush=True)
        saved.write_text(json.dumps([row for row in rows if row["set"] == name]))
    if args.build_only:
        return
    command = command_line()
    lines = [
        "# Raw vectors at the precision rerank and refit need (issue 37)",
        "",
        f"`{command.strip()}` ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC). Each set ingested once with "
        "every default and float32 raw vectors; each precision a copy with its raw segments rewritten at that "
        "precision, its statistics counted again from the reduced rows (as an ingest at that precision counts them), and "
        "refitted (transform and vector index from the reduced rows), searched in the calibrated "
        "default mode with rerank 100. `today`: the float32 index as ingested.",
        "",
        *markdown_table(rows),
        "",
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "raw-precision.md").write_text("\n".join(lines))
    (OUT / "raw-precision.json").write_text(json.dumps({"command": command, "rows": rows}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
