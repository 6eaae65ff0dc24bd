"""The calibration's choice rule measured on every set we have (issue 38): per set and query style, the real
queries' nDCG@10 at every fixed dense weight (0 keyword alone ... 1 dense alone), and the weight the rule before
issue 38 and the rule now choose from the same pseudo-queries; written to benchmarks/results/calibration-choice.md
and .json.

    .venv/bin/python benchmarks/calibration_choice.py [--sets NAME,...] [--work DIR] [--collect]

Each set is ingested once with every default (64-token passages, whiten P=0.5 to 128 dims, rerank 100, int8;
Chinese sets --model multilingual), which calibrates it; the calibration record keeps each pseudo-query's rank
at every weight, so both rules are applied to the same figures and nothing is encoded twice. An index left in
--work from an earlier run is reused (its figures are in --work/figures/NAME.json); --collect only gathers them.
The real queries are searched once per side (FUSION_DEPTH each, as hybrid search takes them) and fused at each
weight as hybrid search does. English sets are also queried short and long (evaluation/query_styles.py: the
first four content words; the query with 30 words drawn from relevant and random documents).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results"
WEIGHTS = [f"{0.1 * step:.1f}" for step in range(11)]
ENGLISH = ("scifact", "cranfield", "scifact-mixed", "cranfield-mixed", "cranfield-single", "stsb-retrieval")
STYLES = ("asis", "short", "paragraph")
CHINESE = {  # as benchmarks/zh_retrieval.py's SEMSEARCH_SETS: file, label of a paraphrase, sentences a document
    "zh-ATEC-test": ("ATEC/ATEC.test.data", 1.0, 1),
    "zh-ATEC-valid": ("ATEC/ATEC.valid.data", 1.0, 1),
    "zh-BQ-valid": ("BQ/BQ.valid.data", 1.0, 1),
    "zh-LCQMC-valid": ("LCQMC/LCQMC.valid.data", 1.0, 1),
    "zh-PAWSX-test": ("PAWSX/PAWSX.test.data", 1.0, 1),
    "zh-PAWSX-valid": ("PAWSX/PAWSX.valid.data", 1.0, 1),
    "zh-STS-B-test": ("STS-B/STS-B.test.data", 4.0, 1),
    "zh-LCQMC-valid-glued5": ("LCQMC/LCQMC.valid.data", 1.0, 5),
    "zh-BQ-valid-glued5": ("BQ/BQ.valid.data", 1.0, 5),
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
        "stsb-retrieval": lambda: built.sts_retrieval(
            [DATA / "stsb" / "sts-dev.csv", DATA / "stsb" / "sts-train.csv"], sets / name
        ),
    }
    data = load_beir(makers[name]())
    styles = query_styles(data) if name != "stsb-retrieval" else {"asis": data.queries}
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


def measure(name: str, work: Path) -> dict:
    """The set's calibration record and its real queries' nDCG@10 at each weight, per query style."""
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.evaluation.zh_retrieval import without_own
    from semsearch.index import Index
    from semsearch.retrieval.search import Match, fuse
    from semsearch.settings import FUSION_DEPTH, Fusion

    corpus, styles, qrels, own, options = (
        chinese_set(name) if name in CHINESE else english_set(name, work / "sets")
    )
    path = work / "indexes" / name
    began = time.perf_counter()
    index = Index.open(path) if (path / "manifest.json").is_file() else Index.create(path, **options)
    with index:
        fresh = index.state.count == 0
        if fresh:
            index.add(corpus)
        ingest_s = time.perf_counter() - began
        out = {"set": name, "documents": index.state.count, "passages": index.state.rows}
        out.update(calibration=index.state.calibration, ingest_s=round(ingest_s, 1) if fresh else None)
        out["styles"] = {}
        for style, queries in styles.items():
            ids = list(queries)
            texts = [queries[q] for q in ids]
            sides = {
                mode: index.search_many(texts, k=FUSION_DEPTH, mode=mode, crop=0)
                for mode in ("dense", "keyword")
            }
            figures = {}
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
            out["styles"][style] = {"queries": len(ids), "ndcg@10": figures}
    return out


def old_choose(gains: dict[str, np.ndarray]) -> tuple[str, float]:
    """The rule before issue 38 (issue 27's): where the guard refused one side, a fused weight beating the
    default beyond noise, else the default 0.5."""
    from semsearch.retrieval.choice import TIE, beats, best_weight

    sweep = {w: float(g.mean()) for w, g in gains.items()}
    mode, alpha = best_weight(sweep)
    if mode == "hybrid":
        return mode, alpha
    if beats(gains["1.0" if mode == "dense" else "0.0"], gains["0.5"]):
        return mode, alpha
    fused = [w for w in gains if 0 < float(w) < 1 and beats(gains[w], gains["0.5"])]
    if fused:
        best = max(sweep[w] for w in fused)
        return "hybrid", max(float(w) for w in fused if sweep[w] >= best - TIE)
    return "hybrid", 0.5


def weight_of(mode: str, alpha: float) -> str:
    return {"dense": "1.0", "keyword": "0.0"}.get(mode, f"{alpha:.1f}")


def label(mode: str, alpha: float) -> str:
    return mode if mode != "hybrid" else f"hybrid {alpha:g}"


def rows_of(figures: dict) -> list[dict]:
    from semsearch.retrieval.calibration import Calibration
    from semsearch.retrieval.choice import choose

    calibration = Calibration.from_json(figures["calibration"])
    if calibration is None or calibration.gains() is None:
        return []
    gains = calibration.gains()
    old, new = old_choose(gains), choose(gains)[:2]
    rule = choose(gains)[2]
    rows = []
    for style, measured in figures["styles"].items():
        ndcg = measured["ndcg@10"]
        fused = {w: v for w, v in ndcg.items() if 0 < float(w) < 1}
        best_w = max(ndcg, key=lambda w: ndcg[w])
        better = max(ndcg["1.0"], ndcg["0.0"])
        old_v, new_v = ndcg[weight_of(*old)], ndcg[weight_of(*new)]
        helps = max(fused.values()) > better
        rows.append(
            {
                "set": figures["set"],
                "queries": f"{style} ({measured['queries']})",
                "dense": ndcg["1.0"],
                "keyword": ndcg["0.0"],
                "best fixed weight": f"{best_w}: {ndcg[best_w]}",
                "old rule": f"{label(*old)}: {old_v}",
                "new rule": f"{label(*new)}: {new_v}",
                "new - better side": round(new_v - better, 4),
                "new - best fixed": round(new_v - ndcg[best_w], 4),
                "fusion helps": "yes" if helps else "no",
                "pseudo-queries": f"{calibration.queries}: {rule.split(':')[0]}",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default=",".join([*ENGLISH, *CHINESE]))
    parser.add_argument("--work", type=Path, default=Path("/tmp/w38"))
    parser.add_argument("--collect", action="store_true", help="only gather the figures already in --work")
    args = parser.parse_args()
    (args.work / "figures").mkdir(parents=True, exist_ok=True)
    collected = []
    for name in args.sets.split(","):
        saved = args.work / "figures" / f"{name}.json"
        if not saved.is_file() and not args.collect:
            figures = measure(name, args.work)
            saved.write_text(json.dumps(figures))
            print(name, json.dumps({s: v["ndcg@10"] for s, v in figures["styles"].items()}), flush=True)
        if saved.is_file():
            collected.append(json.loads(saved.read_text()))
    rows = [row for figures in collected for row in rows_of(figures)]
    (OUT / "calibration-choice.json").write_text(json.dumps(collected, indent=1) + "\n")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    summary = _summary(rows)
    lines = [
        "# The calibration's choice rule on every set (issue 38)",
        "",
        f"`{command_line()}` ({stamp}; 2 cores shared with other work)",
        "",
        __doc__.split("\n\n")[2].replace("\n", " "),
        "",
        "nDCG@10 of the real queries. `old rule`: issue 27's (where the guard refused one side alone, 0.5 unless a",
        "fused weight beat it beyond noise); `new rule`: issue 38's (a fused weight tied with the best fused one:",
        "0.5 if it is one of them, else the one nearest the refused side). `fusion helps`: some fused weight beats",
        "both sides on the real queries. `pseudo-queries`: how many, and the new rule's path (best: the best weight;",
        "default: a side alone refused, 0.5 tied with the best fused; hybrid: a side refused, the tied weight nearest it).",
        "",
        *summary,
        "",
        *markdown_table(rows),
    ]
    (OUT / "calibration-choice.md").write_text("\n".join(lines))
    print("\n".join(summary))


def _summary(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    within_side = sum(r["new - better side"] >= -0.01 for r in rows)
    helps = [r for r in rows if r["fusion helps"] == "yes"]
    within_best = sum(r["new - best fixed"] >= -0.01 for r in helps)
    changed = [r for r in rows if r["old rule"] != r["new rule"]]
    gain = [float(r["new rule"].rsplit(" ", 1)[1]) - float(r["old rule"].rsplit(" ", 1)[1]) for r in changed]
    return [
        f"- new rule within 0.01 of the better side: {within_side} of {len(rows)} rows",
        f"- within 0.01 of the best fixed weight where fusion helps: {within_best} of {len(helps)} rows",
        f"- rows where the rules differ: {len(changed)}"
        + (f", new - old {min(gain):+.4f} to {max(gain):+.4f}" if gain else ""),
        f"- worst new - better side {min(r['new - better side'] for r in rows):+.4f}; worst new - best fixed "
        f"{min(r['new - best fixed'] for r in rows):+.4f}",
    ]


if __name__ == "__main__":
    if not DATA.is_dir():
        raise SystemExit(f"needs the shared data sets in {DATA}")
    main()
