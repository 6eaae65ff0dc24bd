"""The calibration's choice measured on every set we have: per set and query style,
the real queries' nDCG@10 at every fixed dense weight (0 keyword alone ... 1 dense alone), the index's one weight
(choice.py) and the weight per query length (bands.py: each query takes its length's band); written to
benchmarks/results/calibration-choice.md and .json.

    python -m benchmarks calibration_choice [--sets NAME,...] [--work DIR] [--collect]
                                                      [--from DIR [--fresh-draw]] [--out calibration-choice]

Each set is ingested once with every default (64-token passages, whiten P=0.5 to 128 dims, rerank 100, int8;
Chinese sets --model multilingual), which calibrates it; the calibration record keeps each pseudo-query's rank
at every weight (and each band's), so the rules of this tree are applied to the recorded ranks and nothing is
encoded twice. An index left in --work from an earlier run is reused (its figures are in --work/figures/NAME.json);
--from copies an earlier run's index and calibrates it again (nothing else re-encoded); --collect only gathers.
The real queries are searched once per side (FUSION_DEPTH each, as hybrid search takes them) and fused at each
weight as hybrid search does, each query's nDCG@10 kept with its length in keyword tokens. English sets are also
queried short and long (evaluation/query_styles.py: the first four content words; the query with 30 words drawn
from relevant and random documents), but for the sets whose queries are short already (ONE_STYLE): STS sentences,
and WordNet lemmas (evaluation/longdoc_sets.py), asked as entity names of glosses titled with them
(wordnet-entities, shaped like DBpedia-entity; wordnet-aliases, titled with the first lemma only) or as a web
question of untitled glosses (wordnet-web, "what does X mean", shaped like MS MARCO).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, Rows, markdown_table, require, results_header
from benchmarks.text_controls import SEMSEARCH_SETS

CLAIM = "The calibration's choice (one weight, by query length) against every fixed weight on every set"

WEIGHTS = [f"{0.1 * step:.1f}" for step in range(11)]
ENGLISH = (
    "scifact",
    "cranfield",
    "scifact-mixed",
    "cranfield-mixed",
    "cranfield-single",
    "stsb-retrieval",
    "wordnet-entities",
    "wordnet-aliases",
    "wordnet-web",
)
STYLES = ("asis", "short", "paragraph")
ONE_STYLE = (
    "stsb-retrieval",
    "wordnet-entities",
    "wordnet-aliases",
    "wordnet-web",
)  # queries short already: asked as they are


def chinese_name(relative: str, size: int) -> str:
    """A Chinese set's name here: "zh-" and its file ("ATEC/ATEC.test.data": ATEC-test), "-glued5" for 5 a document."""
    stem = Path(relative).stem.replace(".", "-")
    return f"zh-{stem}" + (f"-glued{size}" if size > 1 else "")


# the sets semsearch's own search is measured on (text_controls.py's zh-retrieval): file, label, sentences a document
CHINESE = {
    chinese_name(relative, size): (relative, at, size) for relative, at, size in SEMSEARCH_SETS.values()
}
ZH_QUERIES = 500


def english_set(name: str, sets: Path):
    from semsearch.evaluation import longdoc_sets as built
    from semsearch.evaluation.datasets import ensure_beir, load_beir
    from semsearch.evaluation.query_styles import judged, query_styles

    cranfield = lambda: ensure_beir(DATA / "cranfield", sets / "converted")  # noqa: E731
    makers = {
        "scifact": lambda: DATA / "scifact",
        "cranfield": cranfield,
        "scifact-mixed": lambda: built.mixed_topic(DATA / "scifact", sets / name, subset=1000),
        "cranfield-mixed": lambda: built.mixed_topic(cranfield(), sets / name),
        "cranfield-single": lambda: built.single_topic(cranfield(), sets / name),
        "wordnet-entities": lambda: built.wordnet_lemmas(DATA / "wordnet" / "corpus.jsonl", sets / name),
        "wordnet-web": lambda: built.wordnet_lemmas(
            DATA / "wordnet" / "corpus.jsonl", sets / name, titles="none", asked="what does {} mean"
        ),
        "wordnet-aliases": lambda: built.wordnet_lemmas(
            DATA / "wordnet" / "corpus.jsonl", sets / name, titles="first"
        ),
        "stsb-retrieval": lambda: built.sts_retrieval(
            [DATA / "stsb" / "sts-dev.csv", DATA / "stsb" / "sts-train.csv"], sets / name
        ),
    }
    data = load_beir(makers[name]())
    styles = {"asis": data.queries} if name in ONE_STYLE else query_styles(data)
    with open(data.corpus_path, encoding="utf-8") as lines:
        documents = [json.loads(line) for line in lines]
    corpus = [
        {"id": str(d.get("_id", d.get("id"))), "title": d.get("title") or None, "text": d["text"]}
        for d in documents
    ]
    queries = {style: judged(styles, style) for style in STYLES if style in styles}
    return corpus, queries, data.qrels, {}, {}


def chinese_set(name: str):
    from semsearch.evaluation.zh_retrieval import grouped, read_pairs, retrieval_set

    relative, relevant_at, size = CHINESE[name]
    data = retrieval_set(name, read_pairs(DATA / "zh" / relative), ZH_QUERIES, relevant_at)
    data = grouped(data, size) if size > 1 else data
    corpus = [{"id": doc_id, "text": text} for doc_id, text in data.corpus.items()]
    return corpus, {"asis": data.queries}, data.qrels, data.own, {"model": "multilingual"}


def measure(name: str, work: Path, source: Path | None = None, fresh_draw: bool = False) -> dict:
    """The set's calibration record and its real queries' nDCG@10 at each weight, per query style (and per
    query, with its length in keyword tokens). `source`: a --work of an earlier run whose index of the set is
    copied and calibrated again (nothing else re-encoded) instead of ingesting the set anew; `fresh_draw`:
    without the source's calibration cache (a draw of its own, not a renewal of the source's)."""
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.evaluation.zh_retrieval import without_own
    from semsearch.index import Index
    from semsearch.retrieval.lengths import tokens
    from semsearch.retrieval.search import Match, fuse
    from semsearch.settings import FUSION_DEPTH, Fusion
    from semsearch.storage.calibrationcache import FILE as CACHE_FILE

    corpus, styles, qrels, own, options = (
        chinese_set(name) if name in CHINESE else english_set(name, work / "sets")
    )
    path = work / "indexes" / name
    recalibrated = None
    if source is not None and not (path / "manifest.json").is_file():
        shutil.copytree(source / "indexes" / name, path)
        if fresh_draw:  # drawn afresh, as an ingest's calibration is, not renewing the source's draw
            (path / CACHE_FILE).unlink(missing_ok=True)
        with Index.open(path) as index:
            recalibrated = round(index.recalibrate(), 1)
    began = time.perf_counter()
    index = Index.open(path) if (path / "manifest.json").is_file() else Index.create(path, **options)
    with index:
        fresh = index.state.count == 0
        if fresh:
            index.add(corpus)
        ingest_s = time.perf_counter() - began
        out = {"set": name, "documents": index.state.count, "passages": index.state.rows}
        out.update(calibration=index.state.calibration, ingest_s=round(ingest_s, 1) if fresh else None)
        out.update(recalibrated_s=recalibrated)
        out["styles"] = {}
        for style, queries in styles.items():
            ids = list(queries)
            texts = [queries[q] for q in ids]
            sides = {
                mode: index.search_many(texts, k=FUSION_DEPTH, mode=mode, crop=0, per_document=1)
                for mode in ("dense", "keyword")
            }
            figures, per_query = {}, {}
            for weight in WEIGHTS:
                run = {}
                for q, dense, keyword in zip(ids, sides["dense"], sides["keyword"]):
                    d = [Match(hit.id, hit.score) for hit in dense]
                    k = [Match(hit.id, hit.score) for hit in keyword]
                    w = float(weight)
                    found = d if w == 1 else k if w == 0 else fuse(d, k, w, Fusion.CONVEX, FUSION_DEPTH)
                    run[q] = {match.pk: float(len(found) - rank) for rank, match in enumerate(found)}
                run = without_own(run, own) if own else run
                figures[weight] = round(evaluate_run(qrels, run, ("ndcg@10",))["ndcg@10"], 4)
                per_query[weight] = each_query(qrels, run, ids)
            out["styles"][style] = {
                "queries": len(ids),
                "ndcg@10": figures,
                "tokens": [tokens(text) for text in texts],
                "per_query": per_query,
            }
    return out


def each_query(qrels: dict, run: dict, ids: list[str]) -> list[float]:
    """nDCG@10 of each query (trec_eval's, as evaluate_run averages it; 0 for a query that found nothing)."""
    import pytrec_eval

    judged = {q: {d: int(r) for d, r in qrels[q].items()} for q in ids if qrels.get(q)}
    scored = {q: {d: float(s) for d, s in run[q].items()} for q in judged if run.get(q)}
    values = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate(scored)
    return [round(values[q]["ndcg_cut_10"], 5) if q in values else 0.0 for q in ids]


def weight_of(mode: str, alpha: float) -> str:
    return {"dense": "1.0", "keyword": "0.0"}.get(mode, f"{alpha:.1f}")


def label(mode: str, alpha: float) -> str:
    return mode if mode != "hybrid" else f"hybrid {alpha:g}"


def rows_of(figures: dict) -> list[dict]:
    from semsearch.retrieval.bands import chosen_bands
    from semsearch.retrieval.calibration import MIN_QUERIES, Calibration
    from semsearch.retrieval.calibration_entries import with_entries
    from semsearch.retrieval.choice import choose
    from semsearch.retrieval.lengths import BANDS

    calibration = Calibration.from_json(figures["calibration"])
    if calibration is None or calibration.gains() is None or not calibration.bands:
        return []
    mode, alpha, rule = choose(calibration.choosing_gains())
    rule = f"known items, {rule}" if calibration.known else rule
    one = weight_of(mode, alpha)
    ranks = {name: band["ranks"] for name, band in calibration.bands.items()}
    bands = with_entries(
        chosen_bands(ranks, (mode, alpha), MIN_QUERIES, calibration.ranks), calibration.entries
    )
    limits = [(name, most) for name, most in BANDS]
    rows = []
    for style, measured in figures["styles"].items():
        ndcg = measured["ndcg@10"]
        per_query = {w: np.array(v) for w, v in measured["per_query"].items()}
        taken = [
            weight_of(bands[name]["mode"], bands[name]["alpha"])
            for name in (
                next(n for n, most in limits if most is None or t <= most) for t in measured["tokens"]
            )
        ]
        banded = round(float(np.mean([per_query[w][i] for i, w in enumerate(taken)])), 4)
        fused = {w: v for w, v in ndcg.items() if 0 < float(w) < 1}
        best_w = max(ndcg, key=lambda w: ndcg[w])
        better = max(ndcg["1.0"], ndcg["0.0"])
        shown = ", ".join(f"{n[:2]} {weight_of(b['mode'], b['alpha'])}" for n, b in bands.items())
        rows.append(
            {
                "set": figures["set"],
                "queries": f"{style} ({measured['queries']})",
                "dense": ndcg["1.0"],
                "keyword": ndcg["0.0"],
                "best fixed weight": f"{best_w}: {ndcg[best_w]}",
                "one weight": f"{label(mode, alpha)}: {ndcg[one]}",
                "by length": f"{banded}",
                "by length - better side": round(banded - better, 4),
                "by length - best fixed": round(banded - ndcg[best_w], 4),
                "fusion helps": "yes" if max(fused.values()) > better else "no",
                "pseudo-queries": f"{calibration.queries}: {rule.split(':')[0]}; {shown}",
            }
        )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sets", default=",".join([*ENGLISH, *CHINESE]))
    parser.add_argument("--work", type=Path, default=Path("/tmp/w38"))
    parser.add_argument("--collect", action="store_true", help="only gather the figures already in --work")
    parser.add_argument(
        "--from", dest="source", type=Path, help="copy indexes from this --work, calibrate again"
    )
    parser.add_argument(
        "--fresh-draw", action="store_true", help="with --from: the copy's calibration cache removed first"
    )
    parser.add_argument("--out", default="calibration-choice", help="results/OUT.md and .json")


def run(config: argparse.Namespace) -> Rows:
    require(DATA, "shared data sets")
    (config.work / "figures").mkdir(parents=True, exist_ok=True)
    collected = []
    for name in config.sets.split(","):
        saved = config.work / "figures" / f"{name}.json"
        if not saved.is_file() and not config.collect:
            figures = measure(name, config.work, config.source, config.fresh_draw)
            saved.write_text(json.dumps(figures))
            print(name, json.dumps({s: v["ndcg@10"] for s, v in figures["styles"].items()}), flush=True)
        if saved.is_file():
            collected.append(json.loads(saved.read_text()))
    rows = [row for figures in collected for row in rows_of(figures)]
    kept = [
        {**figures, "styles": _means(figures["styles"]), "calibration": _unranked(figures)}
        for figures in collected
    ]
    (OUT / f"{config.out}.json").write_text(json.dumps(kept, indent=1) + "\n")
    summary = _summary(rows)
    lines = [
        *results_header(
            "The calibration's choice rule on every set", "2 cores shared with other work", __doc__
        ),
        "Calibrated again here (`--from`, seconds under the load of the day): "
        + ", ".join(f"{f['set']} {f['recalibrated_s']} s" for f in collected if f.get("recalibrated_s"))
        + ".",
        "",
        "nDCG@10 of the real queries. `one weight`: the index's (choice.py, from the sentence pseudo-queries);",
        "`by length`: each query at its length band's weight (bands.py: short up to 5 keyword tokens, sentence up",
        "to 23, paragraph beyond; a band moves the index's weight by as much as its pseudo-queries' best weight lies",
        "from the sentences', where beyond noise). `fusion helps`: some fused weight beats both sides on the",
        "real queries. `pseudo-queries`: how many sentences, the index rule's path, and each band's weight.",
        "",
        *summary,
        "",
        *markdown_table(rows),
    ]
    (OUT / f"{config.out}.md").write_text("\n".join(lines))
    print("\n".join(summary))
    return rows


def _means(styles: dict) -> dict:
    """The styles' figures without each query's (kept in --work/figures)."""
    return {
        style: {k: v for k, v in m.items() if k not in ("per_query", "tokens")} for style, m in styles.items()
    }


def _unranked(figures: dict) -> dict | None:
    """The calibration record without its ranks (kept in --work/figures)."""
    record = figures["calibration"]
    if not record or "ranks" not in record:
        return record
    bands = {n: {k: v for k, v in b.items() if k != "ranks"} for n, b in (record.get("bands") or {}).items()}
    return {**{k: v for k, v in record.items() if k not in ("ranks", "bands")}, "bands": bands or None}


def _summary(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    within_side = sum(r["by length - better side"] >= -0.01 for r in rows)
    helps = [r for r in rows if r["fusion helps"] == "yes"]
    within_best = sum(r["by length - best fixed"] >= -0.01 for r in helps)
    one = [float(r["one weight"].rsplit(" ", 1)[1]) for r in rows]
    gain = [float(r["by length"]) - o for r, o in zip(rows, one)]
    return [
        f"- by length within 0.01 of the better side: {within_side} of {len(rows)} rows",
        f"- within 0.01 of the best fixed weight where fusion helps: {within_best} of {len(helps)} rows",
        f"- by length - one weight: mean {np.mean(gain):+.4f}, {min(gain):+.4f} to {max(gain):+.4f}",
        f"- worst by length - better side {min(r['by length - better side'] for r in rows):+.4f}; worst by "
        f"length - best fixed {min(r['by length - best fixed'] for r in rows):+.4f}",
    ]
