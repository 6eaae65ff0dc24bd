"""Bytes a passage by part (issue 37): `info`'s parts of each index directory given (less the generation a
refitted copy keeps for readers until its next write), against the first of
its set (the issue's baseline: the defaults before it, float32 raw vectors and HNSW32 over float32), and the
SQLite store split by what its pages hold (SQLite's dbstat: the documents' rows, the id index, the keyword
index, the typed metadata and its indexes). Written to benchmarks/results/bytes.md (or --out).

    .venv/bin/python benchmarks/bytes.py wordnet:before=/tmp/lance/semsearch-before \\
        wordnet:defaults=/tmp/lance/semsearch-defaults scifact:hnsw=/tmp/scifact-hnsw ... [--note TEXT]

Each argument is SET:NAME=INDEX; the first index of a set is its baseline, unless `--baseline SET=BYTES` gives
it (a passage's bytes measured before, in an index this release would migrate on open: opening it here would
change what it measures). `--note` adds a line under the command (what the copies are). `--ingest SET=INDEX`
first ingests a retrieval set (raw_precision.py's: cranfield-mixed, scifact-mixed, cranfield, ...; built under
`--sets`) with every default into INDEX, unless it is there, to be measured as an argument names it; `--ndcg`
adds each index's nDCG@10 on its set's queries (a retrieval set's, as --ingest builds it) in its default mode
and dense alone:

    .venv/bin/python benchmarks/bytes.py --ingest cranfield-mixed=/tmp/cm cranfield-mixed:defaults=/tmp/cm"""

from __future__ import annotations

import argparse
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path

from lancedb import parts
from raw_precision import beir_directory, ndcg
from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
PARTS = ("documents", "raw_vectors", "vector_index", "transform", "other")
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    args = parser.parse_args()
    from semsearch.index import Index

    for given in args.ingest:
        name, path = given.split("=", 1)
        ingested(name, Path(path), args.sets)

    rows, stores = [], []
    baselines = {data_set: float(total) for data_set, total in (given.split("=") for given in args.baseline)}
    for spec in args.indexes:
        label, path = spec.split("=", 1)
        data_set, name = label.split(":", 1)
        with Index.open(Path(path)) as index:
            info, raw = index.info(), index.settings.raw_precision
        passages, sizes = info["passages"], parts(Path(path))  # less a refitted copy's previous generation
        per = {part: sizes[part] / passages for part in (*PARTS, "total")}
        baseline = baselines.setdefault(data_set, per["total"])
        rows.append(
            {
                "set": data_set,
                "index": name,
                "structure": info["index_structure"],
                "raw": raw,
                "passages": passages,
                **{part: round(per[part]) for part in PARTS},
                "total": round(per["total"]),
                "MB": round(sizes["total"] / 1e6, 1),
                "of the baseline": f"1/{baseline / per['total']:.2f}",
            }
        )
        if args.ndcg:
            score, mode = ndcg(Path(path), data_set, args.sets)
            dense = ndcg(Path(path), data_set, args.sets, "dense")[0]
            rows[-1].update({"mode": mode, "ndcg@10": round(score, 4), "dense ndcg@10": round(dense, 4)})
        stores.append({"set": data_set, "index": name, **store_parts(Path(path) / "documents.db", passages)})
        print(rows[-1], flush=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Bytes a passage by part (issue 37)",
        "",
        f"`{command_line()}` ({stamp})",
        "",
        *([args.note, ""] if args.note else []),
        "Every file of each index directory, by `info`'s parts, in bytes a passage; `of the baseline`: the total "
        "against the first index of its set"
        + (f" (given: {', '.join(args.baseline)} bytes a passage)" if args.baseline else "")
        + ".",
        "",
        *markdown_table(rows),
        "The SQLite store (`documents` above) by what its pages hold (dbstat), bytes a passage: `rows` the "
        "documents' table (id, title, text, metadata JSON, content hash), `metadata` the typed table and its "
        "four indexes, `free` pages a write freed.",
        "",
        *markdown_table(stores),
    ]
    (OUT / args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
