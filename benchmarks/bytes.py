"""Bytes a passage by part: `info`'s parts of each index directory given (less the generation a
refitted copy keeps for readers until its next write), against the first of
its set (the issue's baseline: the defaults before it, float32 raw vectors and HNSW32 over float32), and the
SQLite store split by what its pages hold (SQLite's dbstat: the documents' rows, the id index, the keyword
index, the typed metadata and its indexes). Written to benchmarks/results/bytes.md (or --out).

    python -m benchmarks bytes parts wordnet:before=/tmp/lance/semsearch-before \
        wordnet:defaults=/tmp/lance/semsearch-defaults scifact:hnsw=/tmp/scifact-hnsw ... [--note TEXT]

Each argument is SET:NAME=INDEX; the first index of a set is its baseline, unless `--baseline SET=BYTES` gives
it (a passage's bytes measured before, in an index this release would migrate on open: opening it here would
change what it measures). `--note` adds a line under the command (what the copies are). `--ingest SET=INDEX`
first ingests a retrieval set (raw_precision.py's: cranfield-mixed, scifact-mixed, cranfield, ...; built under
`--sets`) with every default into INDEX, unless it is there, to be measured as an argument names it; `--ndcg`
adds each index's nDCG@10 on its set's queries (a retrieval set's, as --ingest builds it) in its default mode
and dense alone:

    python -m benchmarks bytes parts --ingest cranfield-mixed=/tmp/cm cranfield-mixed:defaults=/tmp/cm

Part `raw-precision`: Raw vectors at the precision rerank and refit need: each retrieval set ingested once with every
default and float32 raw vectors (as every release before wrote them); then per precision a copy whose raw
segments are rewritten at that precision (rawvectors.reduced), refitted with the same settings (the transform
fitted again from the statistics of the reduced rows, the vector index rebuilt from them), and searched with
the calibrated default mode and rerank. Written to benchmarks/results/raw-precision.md and .json.

    python -m benchmarks bytes raw-precision [--sets scifact,cranfield,...] [--work DIR]
                                                 [--precisions float32,float16,int8]

nDCG@10 by pytrec_eval of the sets' test queries, the default mode (calibrated at ingest, kept by the refit),
rerank 100; beside it the refitted transform compared with the float32 index's: the largest change of the cosine
of two rows in its space.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, Rows, command_line, made_by, markdown_table

CLAIM = "Bytes a passage by part of an index (info, SQLite's dbstat), and what each raw-vector precision costs rerank and refit"

INFO_PARTS = ("documents", "raw_vectors", "vector_index", "transform", "other")
# SQLite objects by what they hold (the rest: small tables, "other")
STORE_PARTS = {
    "rows": ("documents",),  # id, title, text, metadata JSON, content hash, passages, sections
    "id index": ("sqlite_autoindex_documents_1",),
    "keyword index": ("keywords_data", "keywords_idx", "keywords_docsize", "keywords_config"),
    "metadata": ("meta", "meta_kind", "meta_num", "meta_str", "meta_pk"),
    "passages": ("passages", "locations", "documents_long"),
}


def store_parts(database: Path, passages: int) -> dict[str, float]:
    """Bytes a passage of each part of the SQLite store, from its pages (dbstat), free pages as `free`."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        sizes = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0] * page_size
    finally:
        conn.close()
    out = {part: sum(sizes.pop(name, 0) for name in names) for part, names in STORE_PARTS.items()}
    out["other"], out["free"] = sum(sizes.values()), free
    return {part: round(size / passages, 1) for part, size in out.items()}


def ingested(name: str, path: Path, sets: Path) -> None:
    """The set ingested with every default into `path`, unless there (a directory is published whole)."""
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir

    if path.exists():
        return
    corpus = load_beir(beir_directory(name, sets)).corpus_path
    started = time.perf_counter()
    with Index.create(path) as index:
        index.ingest(corpus)
    print(f"{name} ingested into {path} in {time.perf_counter() - started:.0f} s", flush=True)


def index_bytes(path: Path) -> dict:
    """`info`'s bytes by part, less a refitted copy's previous generation (kept one write for readers that
    loaded it, removed by the next write: the copied defaults' files, not the copy's own)."""
    from semsearch import Index
    from semsearch.storage.generations import generation_name

    with Index.open(path) as index:
        info, current = index.info(), generation_name(index.state.generation)
    sizes = info["bytes"]
    previous = sum(
        file.stat().st_size for gen in path.glob("gen-*") if gen.name != current for file in gen.iterdir()
    )
    sizes = {**sizes, "other": sizes["other"] - previous, "total": sizes["total"] - previous}
    return {"structure": info["index_structure"], **sizes}


def parts_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("indexes", nargs="+", help="SET:NAME=INDEX, the first of each set its baseline")
    parser.add_argument("--note", default="", help="a line under the command: what the copies are")
    parser.add_argument("--out", default="bytes.md")
    parser.add_argument(
        "--baseline", action="append", default=[], help="SET=BYTES: the set's baseline, a passage's bytes"
    )
    parser.add_argument(
        "--ingest", action="append", default=[], help="SET=INDEX: the set ingested with every default first"
    )
    parser.add_argument("--sets", type=Path, default=Path("/tmp/raw-precision/sets"), help="--ingest's sets")
    parser.add_argument("--ndcg", action="store_true", help="each index's nDCG@10 on its set's queries too")


def run_parts(config: argparse.Namespace) -> Rows:
    """Bytes a passage by part of each index given (bytes.md and its companions)."""
    from semsearch.index import Index

    for given in config.ingest:
        name, path = given.split("=", 1)
        ingested(name, Path(path), config.sets)

    rows, stores = [], []
    baselines = {
        data_set: float(total) for data_set, total in (given.split("=") for given in config.baseline)
    }
    for spec in config.indexes:
        label, path = spec.split("=", 1)
        data_set, name = label.split(":", 1)
        with Index.open(Path(path)) as index:
            info, raw = index.info(), index.settings.raw_precision
        passages, sizes = (
            info["passages"],
            index_bytes(Path(path)),
        )  # less a refitted copy's previous generation
        per = {part: sizes[part] / passages for part in (*INFO_PARTS, "total")}
        baseline = baselines.setdefault(data_set, per["total"])
        rows.append(
            {
                "set": data_set,
                "index": name,
                "structure": info["index_structure"],
                "raw": raw,
                "passages": passages,
                **{part: round(per[part]) for part in INFO_PARTS},
                "total": round(per["total"]),
                "MB": round(sizes["total"] / 1e6, 1),
                "of the baseline": f"1/{baseline / per['total']:.2f}",
            }
        )
        if config.ndcg:
            score, mode = ndcg(Path(path), data_set, config.sets)
            dense = ndcg(Path(path), data_set, config.sets, "dense")[0]
            rows[-1].update({"mode": mode, "ndcg@10": round(score, 4), "dense ndcg@10": round(dense, 4)})
        stores.append({"set": data_set, "index": name, **store_parts(Path(path) / "documents.db", passages)})
        print(rows[-1], flush=True)
    lines = [
        "# Bytes a passage by part",
        "",
        made_by(),
        "",
        *([config.note, ""] if config.note else []),
        "Every file of each index directory, by `info`'s parts, in bytes a passage; `of the baseline`: the total "
        "against the first index of its set"
        + (f" (given: {', '.join(config.baseline)} bytes a passage)" if config.baseline else "")
        + ".",
        "",
        *markdown_table(rows),
        "The SQLite store (`documents` above) by what its pages hold (dbstat), bytes a passage: `rows` the "
        "documents' table (id, title, text, metadata JSON, content hash), `metadata` the typed table and its "
        "four indexes, `free` pages a write freed.",
        "",
        *markdown_table(stores),
    ]
    (OUT / config.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return rows


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


def ingested_set(name: str, work: Path) -> tuple[Path, float]:
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


def raw_precision_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/raw-precision"))
    parser.add_argument("--precisions", default="float32,float16,int8")
    parser.add_argument("--build-only", action="store_true")


def raw_precision(config: argparse.Namespace) -> Rows:
    """Raw vectors at each precision: what rerank and refit lose on the retrieval sets (raw-precision.md)."""
    rows = []
    for name in config.sets.split(","):
        saved = config.work / f"rows-{name}.json"
        if saved.is_file() and not config.build_only:
            rows += json.loads(saved.read_text())
            continue
        source, seconds = ingested_set(name, config.work)
        print(name, "ingested", seconds, flush=True)
        if config.build_only:
            continue
        today, mode = ndcg(source, name, config.work / "sets")
        dense_today, _ = ndcg(source, name, config.work / "sets", "dense")
        for precision in config.precisions.split(","):
            target = config.work / "indexes" / f"{name}-{precision}"
            refit_s = reduced_copy(source, precision, target)
            score, _ = ndcg(target, name, config.work / "sets")
            dense, _ = ndcg(target, name, config.work / "sets", "dense")
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
    if config.build_only:
        return
    command = command_line()
    lines = [
        "# Raw vectors at the precision rerank and refit need",
        "",
        made_by(),
        "",
        "Each set ingested once with "
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
    return rows


PARTS = {
    "parts": (parts_arguments, run_parts),
    "raw-precision": (raw_precision_arguments, raw_precision),
}
