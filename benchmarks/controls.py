"""Facets, pages and similar documents, measured on this machine and written to
benchmarks/results/controls.md and controls.json (sections merge, so one can be re-run alone).

    python -m benchmarks controls controls [--sections facets,pages,similar] [--work DIR] [--docs 200000]

- facets: an index of 200,000 documents (WordNet's 117,791 glosses, then again with new ids, as text; vectors
  made here: 64 dimensions from a fixed seed, nothing encoded) with three metadata fields (`pos` a string,
  `lexname` an integer, `tags` a list of strings). Facet counts on two or three fields equal a count in Python
  over the documents `semsearch export` writes (unfiltered, filtered, and in keyword mode over the documents the
  keyword ranking returns), and the p50 of a query with facets on two fields against the same query without,
  alternated query by query in one process, dense, hybrid and keyword, filtered and not; snippets off in both
  (crop 0: a snippet's cost would hide the facets' share), and a keyword query as it runs by default (snippets).
- pages: SciFact (the real model, defaults; a field `bucket` = crc32(id) % 4 to filter on): for every mode, with
  and without the filter `bucket=1`, pages 1-10 of size 10 concatenated against the top 100 of one request, and
  pages of 100 up to offset 1,000 against one request for 1,100; SciFact's test queries (`--page-queries`: the
  first N).
- similar: SciFact's claims citing two abstracts or more: for each cited abstract, the other cited abstracts among
  the 10 documents `Index.similar` finds for it (its vectors and its distinctive words, fused in the index's
  default mode), against its vector alone (similar before its keyword side) and a query by the abstract's own
  text (the default mode, the abstract itself left out); recall@10 and p50 per call, with snippets and
  without, the three alternated example by example in one process.

Part `places`: What places cost: a query's p50 at no cap (`per_document` 0) against the default document answer,
and the snippets' share of a query's time in every mode, text and vector queries, side by side in one run, on
the 117,791 WordNet glosses (one passage a document) and on a long-document set (mixed-topic documents made of
SciFact's, evaluation/longdoc_sets.py). Written to benchmarks/results/places-cost.md and .json.

    python -m benchmarks controls places [--work DIR] [--queries 200] [--scifact-docs 1500]

Each corpus is ingested once with the defaults (kept in --work). Each query runs every arm in turn (the arms
interleaved, so that the machine's swings touch them alike), warm, in one process: the default cap against no cap
in the index's default mode, dense, keyword and hybrid; snippets (crop 32, the default) against none (crop 0) for
text queries in each mode and for a query by vector (`search_vectors`, as LangChain with its own embeddings asks).
WordNet's queries are glosses' titles (a word or two, by a fixed seed); the long set's its BEIR queries.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.suite import (
    DATA,
    OUT,
    REPO,
    Rows,
    command_line,
    current_commit,
    markdown_table,
    require,
    write_sections,  # noqa: E402
)

CLAIM = (
    "Facets, pages and similar documents: exact counts and their cost; what places and snippets cost a query"
)

DIM = 64
TAGS = [f"t{n}" for n in range(20)]
SECTIONS = ("facets", "pages", "similar")


def building(target: Path) -> Path:
    """Where an index is built (emptied first) before it is renamed to `target`: a run cut off leaves no half
    index to reuse."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    return partial


def p50_ms(seconds: list[float]) -> float:
    return round(statistics.median(seconds) * 1000, 3)


def p10_ms(seconds: list[float]) -> float:
    """The tenth percentile: the time a call takes when the shared machine lets it run (p50 includes waits)."""
    return round(sorted(seconds)[len(seconds) // 10] * 1000, 3)


# ---- facets -------------------------------------------------------------------------------------------------


def facet_corpus(work: Path, n: int) -> tuple[Path, Path]:
    """n documents from WordNet's glosses (repeated with new ids past its end) with pos, lexname and tags, and
    their vectors (seeded)."""
    corpus, vectors = work / f"facets-{n}.jsonl", work / f"facets-{n}.npy"
    if corpus.is_file() and vectors.is_file():
        return corpus, vectors
    glosses = [json.loads(line) for line in (DATA / "wordnet" / "corpus.jsonl").open()]
    rng = np.random.default_rng(35)
    with corpus.open("w") as out:
        for i in range(n):
            gloss = glosses[i % len(glosses)]
            tags = sorted(rng.choice(TAGS, int(rng.integers(1, 4)), replace=False).tolist())
            doc = {"id": f"{gloss['id']}-{i // len(glosses)}", "title": gloss["title"], "text": gloss["text"]}
            out.write(
                json.dumps(doc | {"pos": gloss["pos"], "lexname": gloss["lexname"], "tags": tags}) + "\n"
            )
    np.save(vectors, rng.standard_normal((n, DIM), dtype=np.float32))
    return corpus, vectors


def brute_facets(docs: list[dict], fields: list[str]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {name: {} for name in fields}
    for doc in docs:
        for name in fields:
            value = doc.get(name)
            for member in set(value if isinstance(value, list) else [value]):
                key = str(member)
                counts[name][key] = counts[name].get(key, 0) + 1
    return counts


def tables(store, on: bool) -> None:
    """The facet columns of the store with their tables (facets.Grouped) or, as they were read before the tables,
    without: both kept, swapped in per call, so a run times the two ways side by side."""
    from dataclasses import replace

    from semsearch.retrieval import facets as counting

    columns = counting.COLUMNS.get(store, {})
    for key, column in list(columns.items()):
        both = TABLES.setdefault(key, {})
        both.setdefault(True, column)  # first seen as the store read it: with its tables
        if False not in both:
            both[False] = replace(
                column,
                codes=replace(column.codes, table=None),
                numbers=replace(column.numbers, table=None),
            )
        columns[key] = both[on]


TABLES: dict = {}


def facets(args, work: Path) -> dict:
    from semsearch import Index

    corpus, vectors_path = facet_corpus(work, args.docs)
    target = work / f"facets-{args.docs}-index"
    if not target.is_dir():
        started = time.perf_counter()
        with Index.create(building(target), model="none", dim=DIM, transform="none") as index:
            index.ingest(corpus, vectors=vectors_path)
        target.with_name(target.name + ".partial").rename(target)
        print(f"built {target} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    exported = work / "facets-export.jsonl"
    with Index.open(target) as index:
        index.export(exported)
        info = index.info()
    docs = [json.loads(line) for line in exported.open()][1:]  # the first line is the header
    docs = [{**doc.get("metadata", {}), **doc} for doc in docs]
    rng = np.random.default_rng(7)
    words = ["water", "animal", "music", "small", "person", "light", "plant", "metal"]
    queries = rng.standard_normal((args.queries, DIM), dtype=np.float32)
    texts = [words[i % len(words)] for i in range(args.queries)]
    fields = ["pos", "lexname", "tags"]
    checks = []
    with Index.open(target) as index:
        for where, keep in ((None, lambda d: True), (["pos=verb"], lambda d: d["pos"] == "verb")):
            got = index.search_vectors(queries[:1], k=10, where=where, facets=fields, facet_values=1000)[0]
            want = brute_facets([d for d in docs if keep(d)], fields)
            checks.append({"set": f"dense, where {where}", "equal": got.facets == want})
        for word in words[:3]:
            everything = index.search_vectors(None, k=args.docs, texts=[word], mode="keyword", crop=0)[0]
            found = {hit.id for hit in everything}
            got = index.search_vectors(
                None, k=10, texts=[word], mode="keyword", facets=fields, facet_values=1000
            )[0]
            want = brute_facets([d for d in docs if d["id"] in found], fields)
            checks.append({"set": f"keyword {word!r} ({len(found)} docs)", "equal": got.facets == want})
        rows = []
        asked = ["lexname", "tags"]
        for mode, where, crop in (
            ("dense", None, 0),
            ("dense", ["pos=noun"], 0),
            ("dense", ["tags=t3"], 0),
            ("hybrid", None, 0),
            ("hybrid", ["pos=verb"], 0),
            ("keyword", None, 0),
            ("keyword", ["pos=verb"], 0),
            ("keyword", None, None),  # as a query runs by default: with its snippets
        ):
            texts_or_none = None if mode == "dense" else texts
            plain, faceted, untabled = [], [], []
            for i in range(args.queries):
                one = texts_or_none[i : i + 1] if texts_or_none else None
                for facet_fields, times in ((None, plain), (asked, faceted), (asked, untabled)):
                    tables(index.store, times is not untabled)
                    started = time.perf_counter()
                    index.search_vectors(
                        queries[i : i + 1],
                        k=10,
                        where=where,
                        texts=one,
                        mode=mode,
                        facets=facet_fields,
                        crop=crop,
                    )
                    times.append(time.perf_counter() - started)
            rows.append(
                {
                    "mode": mode,
                    "where": " ".join(where or []) or "-",
                    "snippets": "off (crop 0)" if crop == 0 else "on (default crop)",
                    "p50 ms": p50_ms(plain),
                    "p50 ms with facets lexname,tags": p50_ms(faceted),
                    "ratio": round(p50_ms(faceted) / p50_ms(plain), 2),
                    "p10 ms": p10_ms(plain),
                    "p10 ms with facets": p10_ms(faceted),
                    "ratio of p10": round(p10_ms(faceted) / p10_ms(plain), 2),
                    "p50 ms with facets, no tables (before)": p50_ms(untabled),
                    "ratio before": round(p50_ms(untabled) / p50_ms(plain), 2),
                }
            )
            print(rows[-1], file=sys.stderr)
    worst = max(rows, key=lambda row: row["ratio"])
    return {
        "documents": info["documents"],
        "index_type": info["index_type"],
        "field_types": info["field_types"],
        "checks": checks,
        "rows": rows,
        "targets": (
            f"counts equal to the count in Python: {sum(c['equal'] for c in checks)} of {len(checks)} sets; "
            f"p50 with facets at most 2x without: largest ratio {worst['ratio']} ({worst['mode']}, where "
            f"{worst['where']}, snippets {worst['snippets']})"
        ),
    }


# ---- SciFact ------------------------------------------------------------------------------------------------


def scifact_index(work: Path) -> Path:
    """SciFact with the defaults and a field `bucket` (crc32 of the id, mod 4)."""
    from semsearch import Index

    target = work / "scifact"
    if target.is_dir():
        return target
    corpus = work / "scifact.jsonl"
    with (DATA / "scifact" / "corpus.jsonl").open() as source, corpus.open("w") as out:
        for line in source:
            doc = json.loads(line)
            out.write(json.dumps(doc | {"bucket": zlib.crc32(doc["_id"].encode()) % 4}) + "\n")
    with Index.create(building(target)) as index:
        index.ingest(corpus)
    target.with_name(target.name + ".partial").rename(target)
    return target


def pages(args, work: Path) -> dict:
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir

    data = load_beir(args.scifact)
    texts = list(data.queries.values())[: args.page_queries]
    rows = []
    with Index.open(args.scifact_index or scifact_index(work)) as index:
        vectors = index.encoder.encode(texts)
        for mode in ("dense", "keyword", "hybrid"):
            for where in (None, ["bucket=1"]):
                for size, count in ((10, 10), (100, 11)):
                    options = dict(texts=texts, mode=mode, where=where, crop=0)  # ids only: no snippets
                    started = time.perf_counter()
                    whole = index.search_vectors(vectors, k=size * count, **options)
                    whole_seconds = time.perf_counter() - started
                    paged = [[] for _ in texts]
                    started = time.perf_counter()
                    for page in range(count):
                        for n, hits in enumerate(
                            index.search_vectors(vectors, k=size, offset=page * size, **options)
                        ):
                            paged[n] += [hit.id for hit in hits]
                    page_seconds = time.perf_counter() - started
                    equal = sum(p == [hit.id for hit in w] for p, w in zip(paged, whole))
                    repeated = sum(len(set(p)) != len(p) for p in paged)
                    rows.append(
                        {
                            "mode": mode,
                            "where": " ".join(where or []) or "-",
                            "pages": f"{count} of {size}",
                            "queries equal to one request": f"{equal} / {len(texts)}",
                            "with a hit twice": repeated,
                            "hits (mean)": round(float(np.mean([len(w) for w in whole])), 1),
                            "ms per page (mean)": round(page_seconds / count / len(texts) * 1000, 2),
                            "ms one request": round(whole_seconds / len(texts) * 1000, 2),
                        }
                    )
                    print(rows[-1], file=sys.stderr)
    return {"queries": len(texts), "rows": rows}


def vectors_only_similar(index, doc_id: str, k: int, crop: int | None) -> list[str]:
    """Similar as it was before its keyword side: the examples' vector alone (dense), the example left out."""
    from semsearch.retrieval.similar import Examples

    vector, _ = Examples.of(index.store, [doc_id]).vector(index.raw)
    return [h.id for h in index.search_vectors(vector[None], k=k + 1, crop=crop)[0] if h.id != doc_id][:k]


def similar(args, work: Path) -> dict:
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir

    data = load_beir(args.scifact)
    corpus = {json.loads(line)["_id"]: json.loads(line) for line in (args.scifact / "corpus.jsonl").open()}
    cited = [sorted(docs) for docs in data.qrels.values() if len(docs) >= 2]
    names = ("similar (vectors and words, default)", "similar (vectors only, before)", "query by its text")
    recalls = {name: [] for name in names}
    seconds = {(name, crop): [] for name in names for crop in (0, None)}
    with Index.open(args.scifact_index or scifact_index(work)) as index:
        mode = index.query_defaults
        for group in cited:
            for doc_id in group:
                others = set(group) - {doc_id}
                doc = corpus[doc_id]
                text = (doc.get("title", "") + " " + doc["text"]).strip()
                runs = {
                    names[0]: lambda c, d=doc_id: [h.id for h in index.similar([d], k=10, crop=c)],
                    names[1]: lambda c, d=doc_id: vectors_only_similar(index, d, 10, c),
                    names[2]: lambda c, d=doc_id, t=text: [
                        h.id for h in index.search(t, k=11, crop=c) if h.id != d
                    ][:10],
                }
                for name, run in runs.items():  # without snippets and with them (as a call runs by default)
                    for crop in (0, None):
                        started = time.perf_counter()
                        found = run(crop)
                        seconds[name, crop].append(time.perf_counter() - started)
                    recalls[name].append(len(others & set(found)) / len(others))
    rows = [
        {
            "method": name,
            "recall@10": round(float(np.mean(recalls[name])), 4),
            "p50 ms, snippets off": p50_ms(seconds[name, 0]),
            "p50 ms, snippets on (default)": p50_ms(seconds[name, None]),
        }
        for name in names
    ]
    default, text = rows[0], rows[2]
    met = lambda a, b: "met" if a <= b else "missed"  # noqa: E731
    targets = (
        f"recall@10 at least the text query's: {met(text['recall@10'], default['recall@10'])} "
        f"({default['recall@10']} against {text['recall@10']}); no slower: "
        f"{met(default['p50 ms, snippets off'], text['p50 ms, snippets off'])} without snippets "
        f"({default['p50 ms, snippets off']} ms against {text['p50 ms, snippets off']}), "
        f"{met(default['p50 ms, snippets on (default)'], text['p50 ms, snippets on (default)'])} with them "
        f"({default['p50 ms, snippets on (default)']} against {text['p50 ms, snippets on (default)']})"
    )
    return {
        "claims": len(cited),
        "examples": len(recalls[names[2]]),
        "default mode": f"{mode.mode.value} {mode.alpha}",
        "rows": rows,
        "targets": targets,
    }


# ---- the report ---------------------------------------------------------------------------------------------


def write_report(results: dict, out: Path) -> None:
    header = (
        "Machine: 2 cores shared with other jobs, no GPU. Each section lists the command that made it.\n\n"
        "The search page showing them (tests/test_page.py's screenshots): [facets](page-facets.png), "
        "[pages](page-pages.png), [similar documents](page-similar.png)."
    )
    write_sections(results, out, "controls", "Facets, pages and similar documents", header, SECTIONS)


def controls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/controls-bench"))
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200, help="facets: queries timed per row")
    parser.add_argument("--page-queries", type=int, default=300, help="pages: SciFact's first N test queries")
    parser.add_argument(
        "--scifact",
        type=Path,
        default=DATA / "scifact",
        help="pages, similar: the BEIR set (its queries, judgements)",
    )
    parser.add_argument(
        "--scifact-index",
        type=Path,
        help="pages, similar: an index of that set with a field `bucket` (default: SciFact built here)",
    )


def controls(config: argparse.Namespace) -> Rows:
    """Facets, pages and similar documents: exactness and cost (controls.md)."""
    for name in ("wordnet/corpus.jsonl", "scifact/corpus.jsonl"):
        require(DATA / name, "shared data set")
    config.work.mkdir(parents=True, exist_ok=True)
    path = OUT / "controls.json"
    for name in config.sections.split(","):
        section = {"facets": facets, "pages": pages, "similar": similar}[name](config, config.work)
        results = json.loads(path.read_text()) if path.is_file() else {}  # read late: runs may overlap
        results[name] = {
            "command": command_line(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            **section,
        }
        write_report(results, OUT)
    return results


SEED = 52


def ingested(corpus: Path, index: Path) -> Path:
    if not (index / "manifest.json").exists():
        subprocess.run(
            [sys.executable, "-m", "semsearch", "ingest", str(corpus), "--index", str(index)], check=True
        )
    return index


def wordnet(work: Path, count: int) -> tuple[Path, list[str]]:
    corpus = DATA / "wordnet" / "corpus.jsonl"
    titles = [json.loads(line)["title"] for line in corpus.open()]
    rng = np.random.default_rng(SEED)
    return ingested(corpus, work / "wordnet"), [
        titles[i] for i in rng.choice(len(titles), count, replace=False)
    ]


def long_set(work: Path, count: int, documents: int) -> tuple[Path, list[str]]:
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.longdoc_sets import mixed_topic

    beir = mixed_topic(DATA / "scifact", work / "scifact-long", subset=documents)
    queries = list(load_beir(beir).queries.values())
    return ingested(beir / "corpus.jsonl", work / "scifact-long-index"), queries[:count]


def sts_sentences(work: Path) -> Path:
    """STS-B dev's distinct sentences, a document each."""
    path = work / "sts-dev-sentences.jsonl"
    if not path.exists():
        rows = [line.split("\t") for line in (DATA / "stsb" / "sts-dev.csv").read_text().splitlines()]
        sentences = dict.fromkeys(sentence for row in rows for sentence in row[5:7])
        path.write_text(
            "".join(json.dumps({"id": f"s{n}", "text": t}) + "\n" for n, t in enumerate(sentences))
        )
    return path


CALIBRATION = """
import json, sys
from semsearch import Index
with Index.open(sys.argv[1]) as index:
    print(json.dumps(index.info().get("calibration")))
"""


def calibration_before_and_after(work: Path, base: str) -> dict:
    """The calibration an ingest records with the code of commit `base` and with this tree's, on the same
    corpora (STS-B dev's sentences; Cranfield's documents): what it chose and its figures."""
    source = work / f"source-{base}"
    if not source.exists():
        source.mkdir()
        archive = subprocess.run(["git", "archive", base, "src"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    corpora = {"STS-B dev sentences": sts_sentences(work)}
    out = {}
    for name, corpus in corpora.items():
        if not corpus.exists():
            continue
        records = {}
        for side, src in (("before", source / "src"), ("after", REPO / "src")):
            index = work / f"calibration-{corpus.stem}-{side}"
            env = {**os.environ, "PYTHONPATH": str(src)}
            if not (index / "manifest.json").exists():
                ingest = [
                    sys.executable,
                    "-m",
                    "semsearch",
                    "ingest",
                    str(corpus),
                    "--index",
                    str(index),
                    "-q",
                ]
                subprocess.run(ingest, check=True, env=env)
            shown = subprocess.run(
                [sys.executable, "-c", CALIBRATION, str(index)], env=env, capture_output=True
            )
            records[side] = json.loads(shown.stdout)
        out[name] = records
    return out


CHOICE_KEYS = ("mode", "alpha", "sides", "sweep", "bands", "per_query")


def timed(run, n: int) -> float:
    started = time.perf_counter()
    run(n)
    return (time.perf_counter() - started) * 1000


def arms_of(index, queries: list[str]) -> dict[str, callable]:
    """Each arm: a function of the query number running one search."""
    vectors = index.encoder.encode(queries)
    default = index.default_mode.value
    arms = {
        f"{default} (default), default cap": lambda n: index.search(queries[n], k=10),
        f"{default} (default), per_document 0": lambda n: index.search(queries[n], k=10, per_document=0),
    }
    for mode in ("dense", "keyword", "hybrid"):
        arms[f"{mode}, text, snippets"] = lambda n, mode=mode: index.search(queries[n], k=10, mode=mode)
        arms[f"{mode}, text, no snippets"] = lambda n, mode=mode: index.search(
            queries[n], k=10, mode=mode, crop=0
        )
        arms[f"{mode}, text, per_document 0"] = lambda n, mode=mode: index.search(
            queries[n], k=10, mode=mode, per_document=0
        )
    arms["vector, snippets"] = lambda n: index.search_vectors(vectors[n : n + 1], k=10)
    arms["vector, no snippets"] = lambda n: index.search_vectors(vectors[n : n + 1], k=10, crop=0)
    arms["vector, per_document 0"] = lambda n: index.search_vectors(vectors[n : n + 1], k=10, per_document=0)
    return arms


class SnippetClock:
    """The time hits.snippets_of takes, call by call (wrapped around the module's own function)."""

    def __init__(self):
        from semsearch.retrieval import hits

        self.module, self.original, self.last = hits, hits.snippets_of, 0.0
        hits.snippets_of = self

    def __call__(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self.original(*args, **kwargs)
        finally:
            self.last = (time.perf_counter() - started) * 1000

    def close(self):
        self.module.snippets_of = self.original


def measure(path: Path, queries: list[str]) -> dict:
    """Each arm's p50 over the queries, twice: `warm`, the arms of a query run in an order rotated query by
    query (each arm first as often as the others: the first pays for reading its documents' passages' words,
    retrieval/places.py's PASSAGE_TERMS, which the arms after it find kept), and `cold`, those kept words
    cleared before every search (a query meeting its documents for the first time, as most do in a corpus of
    more long documents' words than PASSAGE_TERMS_WORDS)."""
    from semsearch import Index
    from semsearch.retrieval.places import PASSAGE_TERMS

    clock = SnippetClock()
    with Index.open(path) as index:
        arms = arms_of(index, queries)
        names = list(arms)
        for run in arms.values():  # warm: caches, the keyword matrix, FAISS's pages
            for n in range(min(5, len(queries))):
                run(n)
        times = {state: {name: [] for name in names} for state in ("warm", "cold")}
        shares = {state: {name: [] for name in names if name.endswith(", snippets")} for state in times}
        for n in range(len(queries)):
            for state in ("cold", "warm"):
                for name in names[n % len(names) :] + names[: n % len(names)]:
                    if state == "cold":
                        PASSAGE_TERMS.clear()
                    clock.last = 0.0
                    times[state][name].append(timed(arms[name], n))
                    if name in shares[state]:  # the snippets' own time, of this query's
                        shares[state][name].append(clock.last / times[state][name][-1])
        info = {
            "documents": len(index),
            "passages": index.state.rows,
            "default_mode": index.default_mode.value,
        }
    clock.close()
    return {
        "info": info,
        **{
            state: {
                "p50_ms": {name: float(np.median(ms)) for name, ms in times[state].items()},
                "snippet_share_p50": {name: float(np.median(v)) for name, v in shares[state].items()},
                "snippet_share_max": {name: float(np.max(v)) for name, v in shares[state].items()},
            }
            for state in times
        },
    }


def ratios(p50: dict[str, float]) -> dict[str, float]:
    default = next(name for name in p50 if name.endswith("(default), default cap"))
    out = {
        "per_document 0 / default cap (default mode)": p50[default.replace("default cap", "per_document 0")]
        / p50[default]
    }
    for mode in ("dense", "keyword", "hybrid"):
        out[f"{mode}: per_document 0 / default cap"] = (
            p50[f"{mode}, text, per_document 0"] / p50[f"{mode}, text, snippets"]
        )
        out[f"{mode}: 1 - p50 without snippets / with"] = (
            1 - p50[f"{mode}, text, no snippets"] / p50[f"{mode}, text, snippets"]
        )
    out["vector: per_document 0 / default cap"] = p50["vector, per_document 0"] / p50["vector, snippets"]
    out["vector: 1 - p50 without snippets / with"] = 1 - p50["vector, no snippets"] / p50["vector, snippets"]
    return out


def places_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "places-bench")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scifact-docs", type=int, default=1500)
    parser.add_argument("--base", default="686b7d0", help="the commit whose calibration is compared (before)")


def places(config: argparse.Namespace) -> Rows:
    """What places cost: a query at no cap against the document answer, and the snippets' share (places-cost.md)."""
    config.work.mkdir(parents=True, exist_ok=True)
    calibrations = calibration_before_and_after(config.work, config.base)
    corpora = {
        "WordNet glosses": wordnet(config.work, config.queries),
        "SciFact mixed-topic long documents": long_set(config.work, config.queries, config.scifact_docs),
    }
    results = {name: measure(path, queries) for name, (path, queries) in corpora.items()}
    for result in results.values():
        for state in ("warm", "cold"):
            result[state]["ratios"] = ratios(result[state]["p50_ms"])
    commit = current_commit()
    header = [
        "# What places cost: no cap against the default answer, and snippets' share of a query",
        "",
        f"`{command_line()}` (commit {commit}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{config.queries} queries a corpus, k 10, OMP_NUM_THREADS as set). Every arm runs each query in one "
        "process, twice: *cold*, the long documents' passage words (retrieval/places.py's PASSAGE_TERMS) "
        "cleared before every search, as a query meets documents no query before it read; *warm*, the "
        "arms in an order rotated query by query, so each is the first to read a query's documents as "
        "often as the others.",
        "",
        "Targets: p50 at per_document 0 at most 1.3x the default cap's; snippets at most a fifth of a query.",
    ]
    body = []
    for name, result in results.items():
        info = result["info"]
        body += [
            "",
            f"## {name}: {info['documents']:,} documents, {info['passages']:,} passages "
            f"(default mode {info['default_mode']})",
            "",
        ]
        cold, warm = result["cold"], result["warm"]
        body += markdown_table(
            [
                {"arm": arm, "p50 ms, cold": f"{ms:.2f}", "p50 ms, warm": f"{warm['p50_ms'][arm]:.2f}"}
                for arm, ms in cold["p50_ms"].items()
            ]
        )
        body += markdown_table(
            [
                {"ratio": arm, "cold": f"{value:.2f}", "warm": f"{warm['ratios'][arm]:.2f}"}
                for arm, value in cold["ratios"].items()
            ]
        )
        body += ["Snippets' own time (hits.snippets_of, timed inside each query) over the query's:", ""]
        body += markdown_table(
            [
                {
                    "arm": arm,
                    "p50 share, cold": f"{share:.3f}",
                    "max share, cold": f"{cold['snippet_share_max'][arm]:.3f}",
                    "p50 share, warm": f"{warm['snippet_share_p50'][arm]:.3f}",
                    "max share, warm": f"{warm['snippet_share_max'][arm]:.3f}",
                }
                for arm, share in cold["snippet_share_p50"].items()
            ]
        )
    body += [
        "",
        f"## Calibration before (commit {config.base}, documents as the unit) and after (places)",
        "",
    ]
    rows = []
    for name, records in calibrations.items():
        for side, record in records.items():
            kept = {key: record.get(key) for key in ("mode", "alpha", "sides", "sweep")}
            rows.append({"corpus": name, "code": side, **{k: json.dumps(v) for k, v in kept.items()}})
        same = all(records["before"].get(key) == records["after"].get(key) for key in CHOICE_KEYS)
        rows.append(
            {"corpus": name, "code": "equal (mode, alpha, sides, sweep, bands, per_query)", "mode": same}
        )
    body += markdown_table(rows)
    results["calibration"] = calibrations
    OUT.mkdir(exist_ok=True)
    (OUT / "places-cost.md").write_text("\n".join(header + body) + "\n")
    (OUT / "places-cost.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(header + body))
    return rows


PARTS = {
    "controls": (controls_arguments, controls),
    "places": (places_arguments, places),
}
