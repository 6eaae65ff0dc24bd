"""semsearch against LanceDB on the 117,791 WordNet glosses, the same vectors, texts, metadata and
queries, one run, the two alternating query by query: bytes on disk by part, and p50 milliseconds and recall@10
of every query mode. Written to benchmarks/results/lancedb.md and lancedb.json.

    python3 -m venv /work/lancedb-venv && /work/lancedb-venv/bin/pip install "lancedb==0.40.0" numpy pyarrow
    python -m benchmarks lancedb [--encode | --vectors FILE.npy | --covariance-from INDEX] [--work DIR]
                                           [--lancedb-python /work/lancedb-venv/bin/python] [--queries 200]

LanceDB runs in its own virtualenv (benchmarks/peers/lancedb_worker.py, a subprocess answering one request a
line and timing its own search), so the project never depends on it. Vectors: the raw encoder vectors of a
WordNet ingest (--vectors, row i for the i-th gloss), the glosses encoded here once (--encode, cached in --work:
at a load average of 12-16 on the 2 cores, 20-50 glosses/s, over an hour) or, where none is at hand, synthetic vectors with the mean
and covariance of a real index's raw vectors (--covariance-from; like scale.py's million). Queries: vectors of
documents spread over the corpus plus noise shaped like the corpus (tuning.sample_queries' rule: cosine about
0.55 to their document, off the corpus as a question is), and as text the gloss's title.

semsearch: one index with every default (int8 raw vectors, `auto` index type, which at this size is HNSW over
8-bit codes) and the same rows refitted with a flat index for the exact answers (and, for the
bytes table, with HNSW and its raw vectors rewritten in float32: the defaults before issue 37). LanceDB: IVF-PQ on cosine (its
default partitions and sub-vectors), its native FTS index on the text, bitmap indexes on the two filter fields.
recall@10 of an approximate mode: against the same system's exact answer (semsearch: the flat index through the
same query path; LanceDB: bypass_vector_index). Keyword search is exact in both.

The same answer from both: each hit's id, title, text and metadata (LanceDB selects those columns). semsearch's
snippets are off in the compared column (crop 0: LanceDB makes none) and timed beside it with them on (the
default: the matched words marked in a cropped part; no meaning snippets, as the index has no model).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.bytes import index_bytes, reduce_segments
from benchmarks.suite import OUT, REPO, Rows, command_line, markdown_table, peer_python, require

CLAIM = "semsearch against LanceDB on 117,791 WordNet glosses: bytes on disk, p50 and recall@10 of every query mode"

WORDNET = REPO.parent / "shared" / "data" / "wordnet"
FILTERS = {  # semsearch --where, LanceDB where: a verb (11.7% of rows), a lexicographer file of 2.0%, of 0.07%
    "filtered 11.7%": (["pos=verb"], "pos = 'verb'"),
    "filtered 2.0%": (["lexname=30"], "lexname = 30"),
    "filtered 0.07%": (["lexname=43"], "lexname = 43"),
}
SEED = 37


def synthetic(source: Path, count: int, out: Path) -> Path:
    """`count` vectors with the mean and covariance of a real index's raw vectors, normalised as encoded."""
    from semsearch import Index

    if out.is_file():
        return out
    with Index.open(source) as index:
        rows = np.concatenate([block for _, block in index.directory.raw.blocks()]).astype(np.float64)
    mean, covariance = rows.mean(axis=0), np.cov(rows, rowvar=False)
    values, basis = np.linalg.eigh(covariance)
    rng = np.random.default_rng(SEED)
    z = rng.standard_normal((count, len(mean)))
    vectors = mean + (z * np.sqrt(np.maximum(values, 0))) @ basis.T
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(out, vectors.astype(np.float32), allow_pickle=False)
    return out


def encoded(rows: list[dict], out: Path) -> Path:
    """The glosses encoded once by the default model (title, then text, as the chunker puts a title before its
    passage), row i for gloss i; cached in `out`."""
    from semsearch.encoding.encoder import Encoder
    from semsearch.settings import DEFAULT_QUANTIZE

    if out.is_file():
        return out
    texts = [f"{row['title']} {row['text']}" if row.get("title") else row["text"] for row in rows]
    vectors = Encoder(quantize=DEFAULT_QUANTIZE).encode(texts)
    np.save(out.with_suffix(".tmp.npy"), vectors.astype(np.float32), allow_pickle=False)
    out.with_suffix(".tmp.npy").replace(out)
    return out


def query_vectors(vectors: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    from semsearch.retrieval.tuning import sample_queries, spread

    live = np.arange(len(vectors))
    positions = spread(len(vectors), count)
    queries = sample_queries(live, lambda pks: vectors[pks])  # SAMPLE_QUERIES of them, spread the same way
    return queries[: len(positions)], positions


def semsearch_indexes(
    corpus: Path, vectors: Path, work: Path, before: bool = True, types: tuple[str, ...] = ()
) -> dict[str, Path]:
    """The defaults index from the given vectors, and copies refitted flat, to each of `types`, and (`before`)
    hnsw with float32 raw vectors."""
    from semsearch import Index

    names = ("defaults", "flat", *types, *(("before",) if before else ()))
    paths = {name: work / f"semsearch-{name}" for name in names}
    if not (work / "semsearch-build.seconds").is_file():
        shutil.rmtree(paths["defaults"], ignore_errors=True)
        started = time.perf_counter()
        with Index.create(paths["defaults"], model="none", dim=384) as index:
            index.ingest(corpus, vectors=vectors)
        (work / "semsearch-build.seconds").write_text(f"{time.perf_counter() - started:.1f}\n")
    for name in names[1:]:
        if not (paths[name] / "manifest.json").is_file():
            shutil.rmtree(paths[name], ignore_errors=True)
            shutil.copytree(paths["defaults"], paths[name])
            if name == "before":  # the bytes of the defaults before issue 37: float32 raw vectors, HNSW
                reduce_segments(paths[name], "float32")
            with Index.open(paths[name]) as index:
                index.refit(index_type="hnsw" if name == "before" else name)
    return paths


class LanceDB:
    def __init__(self, python: str):
        worker = REPO / "benchmarks" / "peers" / "lancedb_worker.py"
        self.process = subprocess.Popen(
            [python, str(worker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


# LanceDB's IVF-PQ at its defaults answers WordNet's queries at recall@10 0.3-0.5: to compare at equal recall,
# more of its lists (nprobes, of about sqrt(rows) = 343) and a pool re-ranked by the full vectors (refine_factor),
# cheapest first, until it reaches semsearch's recall on the same queries (untimed).
EQUAL_RECALL_LADDER = ((20, 10), (40, 10), (80, 10), (160, 10), (343, 10), (343, 50))


def equal_recall(lance, index, flat, queries, texts, options: dict, request: dict) -> dict:
    """LanceDB's request at the cheapest step of EQUAL_RECALL_LADDER whose recall@10 reaches semsearch's on
    these queries (the last step if none does), with both recalls."""
    where = options.get("where")
    exact = [
        [h.id for h in hits]
        for hits in flat.search_vectors(queries, k=10, texts=texts, mode="dense", where=where)
    ]
    ours = [
        [h.id for h in hits] for hits in index.search_vectors(queries, k=10, texts=texts, crop=0, **options)
    ]
    target = recall(ours, exact)
    theirs_exact = [
        lance.ask(op="exact", query=i, text=texts[i], where=request.get("where"))["ids"]
        for i in range(len(queries))
    ]
    for nprobes, refine in EQUAL_RECALL_LADDER:
        asked = dict(request, nprobes=nprobes, refine=refine)
        found = [lance.ask(query=i, text=texts[i], **asked)["ids"] for i in range(len(queries))]
        if (reached := recall(found, theirs_exact)) >= target:
            break
    return dict(asked, reached=round(reached, 3), target=round(target, 3))


def equal_label(request: dict) -> str:
    return f"nprobes {request['nprobes']}, refine {request['refine']}"


def recall(found: list[list[str]], exact: list[list[str]]) -> float:
    return float(np.mean([len(set(f) & set(e)) / max(1, len(e)) for f, e in zip(found, exact) if e]))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wordnet", type=Path, default=WORDNET)
    parser.add_argument("--vectors", type=Path)
    parser.add_argument("--encode", action="store_true", help="encode the glosses once (cached in --work)")
    parser.add_argument("--covariance-from", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/lancedb-bench"))
    parser.add_argument("--lancedb-python", default="/work/lancedb-venv/bin/python")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--types", default="", help="copies refitted to these types, timed too, e.g. pq,hnsw")
    parser.add_argument(
        "--no-before",
        action="store_true",
        help="leave out the copy with the defaults before issue 37 (bytes)",
    )


def run(config: argparse.Namespace) -> Rows:
    corpus = config.wordnet / "corpus.jsonl"
    require(corpus, "WordNet corpus (--wordnet DIR)")
    peer_python(Path(config.lancedb_python), "LanceDB")
    config.work.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in corpus.open()]
    if config.encode:
        vectors_path = encoded(rows, config.work / "wordnet-vectors.npy")
        source = "the glosses encoded by the default model (title and text)"
    elif config.vectors:
        vectors_path, source = config.vectors, f"the raw vectors of a WordNet ingest ({config.vectors.name})"
    else:
        vectors_path = synthetic(config.covariance_from, len(rows), config.work / "synthetic.npy")
        source = (
            f"synthetic, with the mean and covariance of the raw vectors of {config.covariance_from.name}"
        )
    vectors = np.load(vectors_path)
    queries, positions = query_vectors(vectors, config.queries)
    texts = [rows[int(p)]["title"].split(",")[0] for p in positions]
    np.save(config.work / "queries.npy", queries, allow_pickle=False)

    from semsearch import Index

    types = tuple(t for t in config.types.split(",") if t)
    paths = semsearch_indexes(corpus, vectors_path, config.work, before=not config.no_before, types=types)
    lance = LanceDB(config.lancedb_python)
    lance_dir = config.work / "lancedb"
    if not lance_dir.is_dir():
        built = lance.ask(op="build", rows=str(corpus), vectors=str(vectors_path), directory=str(lance_dir))
        (config.work / "lancedb-build.json").write_text(json.dumps(built))
    built = json.loads((config.work / "lancedb-build.json").read_text())
    lance.ask(op="open", directory=str(lance_dir), queries=str(config.work / "queries.npy"))

    defaults, flat = Index.open(paths["defaults"]), Index.open(paths["flat"])
    others = {name: Index.open(paths[name]) for name in types}  # timed beside the defaults, same queries
    modes = {  # name: (semsearch index, search options, LanceDB request)
        "dense exact": (flat, dict(mode="dense"), dict(op="exact")),
        "dense ANN": (defaults, dict(mode="dense"), dict(op="dense")),
        **{
            f"{name} (ANN)": (defaults, dict(mode="dense", where=ours), dict(op="dense", where=theirs))
            for name, (ours, theirs) in FILTERS.items()
        },
        "keyword": (defaults, dict(mode="keyword"), dict(op="keyword")),
        "hybrid": (defaults, dict(mode="hybrid"), dict(op="hybrid")),
    }
    exact_options = {"dense ANN": ("dense", None), **{f"{n} (ANN)": ("dense", f) for n, f in FILTERS.items()}}
    for name in list(exact_options):  # LanceDB again, with as many lists as semsearch's recall needs
        index, options, request = modes[name]
        equal = equal_recall(lance, index, flat, queries, texts, options, request)
        modes[f"{name}, LanceDB at equal recall ({equal_label(equal)})"] = (index, options, equal)
        exact_options[f"{name}, LanceDB at equal recall ({equal_label(equal)})"] = exact_options[name]
    modes = dict(sorted(modes.items(), key=lambda item: list(modes).index(item[0].split(", LanceDB")[0])))
    results = []
    load_start = f"{os.getloadavg()[0]:.1f}"
    for name, (index, options, request) in modes.items():
        ours_ms, theirs_ms, ours, theirs, snippets_ms = [], [], [], [], []
        other_ms, other = {n: [] for n in others}, {n: [] for n in others}
        for i in range(len(queries)):
            # semsearch without snippets, LanceDB, semsearch with them, reversed every other query: each of
            # semsearch's two follows the other system as often (a query just run leaves its memory in cache)
            for turn in ("ours", "theirs", "snippets") if i % 2 == 0 else ("snippets", "theirs", "ours"):
                if turn == "ours":
                    started = time.perf_counter()
                    hits = index.search_vectors(
                        queries[i : i + 1], k=10, texts=[texts[i]], crop=0, **options
                    )[0]
                    ours_ms.append((time.perf_counter() - started) * 1000)
                    ours.append([hit.id for hit in hits])
                elif turn == "snippets":
                    started = time.perf_counter()
                    index.search_vectors(queries[i : i + 1], k=10, texts=[texts[i]], **options)
                    snippets_ms.append((time.perf_counter() - started) * 1000)
                    for n, copy in others.items():
                        if index is flat:
                            continue
                        started = time.perf_counter()
                        hits = copy.search_vectors(
                            queries[i : i + 1], k=10, texts=[texts[i]], crop=0, **options
                        )[0]
                        other_ms[n].append((time.perf_counter() - started) * 1000)
                        other[n].append([hit.id for hit in hits])
                else:
                    answer = lance.ask(query=i, text=texts[i], **request)
                    theirs_ms.append(answer["ms"])
                    theirs.append(answer["ids"])
        row = {"mode": name, "semsearch p50 ms": round(float(np.median(ours_ms)), 3)}
        row["LanceDB p50 ms"] = round(float(np.median(theirs_ms)), 3)
        row["speedup"] = round(row["LanceDB p50 ms"] / row["semsearch p50 ms"], 1)
        row["semsearch with snippets p50 ms"] = round(float(np.median(snippets_ms)), 3)
        row["speedup with snippets"] = round(row["LanceDB p50 ms"] / row["semsearch with snippets p50 ms"], 1)
        for n in others:
            if other_ms[n]:
                row[f"{n} p50 ms"] = round(float(np.median(other_ms[n])), 3)
        if name in exact_options:
            where = options.get("where")
            exact = [
                [hit.id for hit in hits]
                for hits in flat.search_vectors(queries, k=10, texts=texts, mode="dense", where=where)
            ]
            lance_exact = [
                lance.ask(op="exact", query=i, text=texts[i], where=request.get("where"))["ids"]
                for i in range(len(queries))
            ]
            row["semsearch recall@10"] = round(recall(ours, exact), 3)
            row["LanceDB recall@10"] = round(recall(theirs, lance_exact), 3)
            for n in others:
                row[f"{n} recall@10"] = round(recall(other[n], exact), 3)
        elif name == "hybrid":
            exact = [
                [hit.id for hit in hits]
                for hits in flat.search_vectors(queries, k=10, texts=texts, mode="hybrid")
            ]
            row["semsearch recall@10"] = round(recall(ours, exact), 3)
            for n in others:
                row[f"{n} recall@10"] = round(recall(other[n], exact), 3)
        results.append(row)
        print(row, flush=True)
    load_end = f"{os.getloadavg()[0]:.1f}"
    lance.close()
    sizes = {name: index_bytes(path) for name, path in paths.items()}
    for index in (defaults, flat, *others.values()):
        index.close()
    table = [
        {
            "system": f"semsearch {name}",
            "structure": s["structure"],
            **{k: v for k, v in s.items() if k != "structure"},
        }
        for name, s in sizes.items()
    ] + [{"system": f"LanceDB {built['version']} (IVF-PQ, FTS, bitmap)", "total": built["bytes"]}]
    for row in table:
        row["total MB"] = round(row["total"] / 1e6, 1)
        row["bytes/passage"] = round(row["total"] / len(rows))
    command = command_line()
    lines = [
        "# semsearch against LanceDB on WordNet",
        "",
        f"`{command}` ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC); {len(rows):,} glosses, {len(queries)} "
        f"queries, the two alternating query by query in one run. Vectors: {source}. LanceDB {built['version']} "
        f"built its table and indexes in {built['build_s']:.0f} s. 2 cores shared with other work: read the ratios.",
        "",
        "## Bytes on disk (every file of each directory)",
        "",
        *markdown_table(table),
        "## Queries (p50 of one query at a time; recall@10 against the same system's exact answer)",
        "",
        "Both return each hit's id, title, text and metadata; `semsearch p50 ms` without snippets (LanceDB makes "
        "none), `with snippets` the default (matched words marked in a cropped part). Load average (1 min) at "
        f"the start and end of the queries: {load_start} and {load_end}. Rows `LanceDB at equal recall`: "
        "LanceDB asked to open more lists and re-rank a pool by the full vectors (EQUAL_RECALL_LADDER), the "
        "cheapest step whose recall@10 reaches semsearch's on the same queries; semsearch timed again beside it.",
        "",
        *markdown_table(results),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lancedb.md").write_text("\n".join(lines))
    (OUT / "lancedb.json").write_text(
        json.dumps({"command": command, "bytes": table, "queries": results}, indent=1) + "\n"
    )
    print("\n".join(lines))
    return rows
