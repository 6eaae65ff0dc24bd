"""Real documentation HTML (issue 34): a page scored from its passages beyond MaxP, measured on the indexes
html_docs.py left in its --work folder (no ingest here). Each known item is searched as search does with the
defaults: the vector index's 2 x FUSION_DEPTH best passages (deeper until FUSION_DEPTH pages; the raw vectors
through the index's transform, scored exactly) are the candidates, re-scored by the raw vectors' cosine (rerank);
a candidate page's dense score is an aggregate of its passages' re-scored cosines, and hybrid fuses that list's
FUSION_DEPTH best pages with the index's keyword list at the index's calibrated weight (convex, min-max, as
search.fuse). `maxp` is what search does today (its ranks checked against index.search's); the others read
every passage of a candidate page, but the `cand` forms, which read only the candidate rows search has:

- `top2 B`: (1 - B) * best + B * second best (a page of one passage: its best twice);
- `top3mean B`: (1 - B) * best + B * the mean of the best three;
- `lse T`: a soft maximum, T * log(sum(exp(score / T))) (SumP's smooth form: more good passages, higher);
- `first B`: (1 - B) * best + B * the page's first passage (FirstP blended in);
- `centroid B`: (1 - B) * best + B * the cosine of the page's mean passage vector (a page vector);
- `last B`: (1 - B) * best + B * the page's last passage (the folder's: the page's outline, its title and
  headings, where it has two headings or more);
- `cand topNmean B`: (1 - B) * best + B * the mean of the best N candidate rows.

Per query the answer page's rank under each, maxp's at fixed hybrid weights, and which passage won (its
headings), for the answer page and the page ranked first. Written to
benchmarks/results/OUT.md and OUT.json.

    .venv/bin/python benchmarks/html_docs_scoring.py --work /tmp/w10h/sphinx --html /usr/share/doc/sphinx-doc/html
                                                     [--out html-docs-scoring-sphinx]
    .venv/bin/python benchmarks/html_docs_scoring.py --pool django,sphinx,scrapy [--out html-docs-scoring-pooled]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import html_docs as hd
import numpy as np
from scale import command_line

OUT = Path(__file__).resolve().parent / "results"
INDEXES = ("whole page JSONL", "main content JSONL", "folder (same)")
BETAS = (0.1, 0.2, 0.3, 0.5)
TEMPERATURES = (0.02, 0.05, 0.1)
# (share, passages): a page's best candidate row and the mean of its best `passages` candidate rows (the rows
# search re-scores), a passage not among them at the lowest candidate's score: what search can do with no read
CANDIDATE_FORMS = {f"cand top{n}mean {b}": (b, n) for n in (2, 3) for b in (0.3, 0.5)}
FIXED = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # hybrid weights today's maxp is also fused at


def variants() -> dict[str, object]:
    """name -> f(scores of a page's passages in order, its centroid's cosine) -> the page's score."""

    def top2(b):
        return lambda s, c: (1 - b) * s.max() + b * (np.sort(s)[-2] if len(s) > 1 else s.max())

    def top3mean(b):
        return lambda s, c: (1 - b) * s.max() + b * np.sort(s)[-3:].mean()

    def lse(t):
        return lambda s, c: t * np.log(np.exp((s - s.max()) / t).sum()) + s.max()

    def first(b):
        return lambda s, c: (1 - b) * s.max() + b * s[0]

    def centroid(b):
        return lambda s, c: (1 - b) * s.max() + b * c

    def last(b):
        return lambda s, c: (1 - b) * s.max() + b * s[-1]

    out: dict[str, object] = {"maxp": lambda s, c: s.max()}
    for b in BETAS:
        out[f"top2 {b}"] = top2(b)
        out[f"top3mean {b}"] = top3mean(b)
        out[f"first {b}"] = first(b)
        out[f"centroid {b}"] = centroid(b)
        out[f"last {b}"] = last(b)
    for t in TEMPERATURES:
        out[f"lse {t}"] = lse(t)
    return out | dict.fromkeys(CANDIDATE_FORMS)  # scored in study


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def min_max(scores: np.ndarray) -> np.ndarray:
    if not len(scores):
        return scores
    low, high = scores.min(), scores.max()
    return np.ones_like(scores) if high == low else (scores - low) / (high - low)


def fused(dense: list[tuple[str, float]], keyword: list[tuple[str, float]], alpha: float) -> list[str]:
    """search.fuse (convex): each side's scores min-max normalised, weighted, summed; dense first on ties."""
    merged: dict[str, float] = {}
    for side, weight in ((dense, alpha), (keyword, 1 - alpha)):
        values = min_max(np.array([score for _, score in side]))
        for (doc, _), value in zip(side, values):
            merged[doc] = merged.get(doc, 0.0) + weight * float(value)
    return sorted(merged, key=lambda doc: -merged[doc])  # stable: dense's order first on ties


def rank_of(ids: list[str], answer: str) -> int:
    return next((n + 1 for n, doc in enumerate(ids[:10]) if doc == answer), 99)  # 99: not in the top 10


def ndcg(ranks: list[int]) -> float:
    return float(np.mean(gains(ranks)))


def page_scores(name, aggregate, candidates, scores, cosines, owner, bounds) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pages (sorted) and their dense scores by variant `name`: maxp a page's best candidate row
    (search today), `cand` forms from its candidate rows alone (a passage not among them at the lowest
    candidate's score), the others from all the page's passages (`scores`: every passage's re-scored cosine)."""
    pages = np.unique(owner[candidates])
    if name == "maxp":
        best = np.full(len(bounds) - 1, -np.inf)
        np.maximum.at(best, owner[candidates], scores[candidates])
        return pages, best[pages]
    if name.startswith("cand"):
        floor, (share, top) = scores[candidates].min(), CANDIDATE_FORMS[name]
        by_page: dict[int, list[float]] = {}
        for row in candidates[np.argsort(-scores[candidates], kind="stable")]:
            by_page.setdefault(int(owner[row]), []).append(float(scores[row]))
        mixed = [
            (1 - share) * by_page[n][0] + share * np.mean((by_page[n] + [floor] * top)[:top]) for n in pages
        ]
        return pages, np.array(mixed)
    return pages, np.array([aggregate(scores[bounds[n] : bounds[n + 1]], cosines[n]) for n in pages])


def study(path: Path, queries: list[tuple[str, str]]) -> dict:
    """Each variant's per-query ranks (dense, hybrid at the calibrated weight) on the index at `path`."""
    from semsearch import Index
    from semsearch.retrieval.query import QueryOptions
    from semsearch.settings import FUSION_DEPTH

    with Index.open(path) as index:
        directory = index.directory
        store = directory.store
        docs = store.db.execute("SELECT pk, id, passages FROM documents ORDER BY pk").fetchall()
        rows = np.concatenate([np.arange(pk, pk + max(1, n)) for pk, _, n in docs])
        raw = directory.raw.get(rows)
        vectors = directory.transform.project(raw)
        bounds = np.cumsum([0] + [max(1, n) for _, _, n in docs])
        centroids = np.stack([normalize(raw[a:b]).mean(0) for a, b in zip(bounds[:-1], bounds[1:])])
        texts = [q for q, _ in queries]
        encoded = index.encoder.encode(texts)
        projected = directory.transform.project(encoded)
        # the weight html_docs.py's hybrid rows search at (mode asked: the index's calibrated weight)
        options = QueryOptions.resolve(index.query_defaults, mode="hybrid", queries=texts)
        alphas = [options.alpha_of(q) for q in range(len(texts))]
        keyword = [
            [(hit.id, hit.score) for hit in hits]
            for hits in index.search_many(texts, k=FUSION_DEPTH, mode="keyword")
        ]
        searched = {
            mode: [[hit.id for hit in hits] for hits in index.search_many(texts, k=10, mode=mode)]
            for mode in ("dense", "hybrid")
        }
        locations = store.locations(rows.tolist())
    ids = [doc for _, doc, _ in docs]
    owner = np.repeat(np.arange(len(docs)), np.diff(bounds))
    out: dict = {
        "alpha": sorted(set(alphas)),
        "ranks": {},
        "passages": len(rows),
        "best passage": [],
        "fixed": {},
    }
    found = vectors @ projected.T  # passages x queries: the vector index's scores, which rows are candidates
    scores = normalize(raw) @ normalize(encoded).T  # the rerank's: raw cosines
    cosines = normalize(centroids) @ normalize(encoded).T
    for name, aggregate in variants().items():
        dense_ranks, hybrid_ranks = [], []
        for q, (_, answer) in enumerate(queries):
            ranked, depth = np.argsort(-found[:, q], kind="stable"), 2 * FUSION_DEPTH  # search's rerank rows:
            while len(np.unique(owner[ranked[:depth]])) < FUSION_DEPTH and depth < len(ranked):
                depth *= 4  # read deeper until FUSION_DEPTH pages (search.dense_documents)
            pages, page = page_scores(
                name, aggregate, ranked[:depth], scores[:, q], cosines[:, q], owner, bounds
            )
            order = pages[np.lexsort((pages, -page))][:FUSION_DEPTH]
            dense = [(ids[n], float(page[np.searchsorted(pages, n)])) for n in order]
            dense_ranks.append(rank_of([doc for doc, _ in dense], answer))
            hybrid_ranks.append(rank_of(fused(dense, keyword[q], alphas[q]), answer))
            if name == "maxp":  # today's at fixed weights (where the calibrated weight stands), who won
                for alpha in FIXED:
                    out["fixed"].setdefault(str(alpha), []).append(
                        rank_of(fused(dense, keyword[q], alpha), answer)
                    )
                winners = [
                    int(rows[bounds[n] + int(np.argmax(scores[bounds[n] : bounds[n + 1], q]))])
                    for n in (ids.index(answer), order[0])
                ]
                out["best passage"].append(
                    {
                        "query": queries[q][0],
                        "answer": answer,
                        "answer passage": (locations.get(winners[0]) or {}).get("headings"),
                        "answer passage index": winners[0] - int(rows[bounds[ids.index(answer)]]),
                        "answer passages": int(np.diff(bounds)[ids.index(answer)]),
                        "top page": ids[order[0]],
                        "top passage": (locations.get(winners[1]) or {}).get("headings"),
                    }
                )
        out["ranks"][name] = {"dense": dense_ranks, "hybrid": hybrid_ranks}
    out["keyword"] = [
        rank_of([doc for doc, _ in found], answer) for found, (_, answer) in zip(keyword, queries)
    ]
    out["searched"] = {
        mode: [rank_of(found, answer) for found, (_, answer) in zip(lists, queries)]
        for mode, lists in searched.items()
    }
    return out


def gains(ranks: list[int]) -> np.ndarray:
    return np.array([1 / math.log2(r + 1) if r <= 10 else 0.0 for r in ranks])


def paired_cell(diff: np.ndarray) -> str:
    """A per-query difference: mean, standard error, how many higher / lower."""
    error = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
    return f"{diff.mean():+.3f} ({error:.3f}; {int((diff > 0).sum())}/{int((diff < 0).sum())})"


def pooled(names: list[str]) -> str:
    """Each variant against maxp per query (its own corpus and mode), on each package of earlier runs
    (results/html-docs-scoring-NAME.json) and on all their known items together; and the folder's against
    the whole page's maxp."""
    runs = {name: json.loads((OUT / f"html-docs-scoring-{name}.json").read_text()) for name in names}
    columns = [(c, m) for c in ("whole page JSONL", "folder (same)") for m in ("dense", "hybrid")]
    lines = [
        f"### A page scored beyond MaxP: {', '.join(names)} together",
        "",
        f"`{command_line()}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Each cell: the variant minus "
        "maxp per known item, mean (standard error; queries higher / lower), over all "
        f"{sum(len(r['queries']) for r in runs.values())} known items; below it each package's mean in order.",
        "",
        "| variant | "
        + " | ".join(f"{c} {m}" for c, m in columns)
        + " | folder hybrid minus whole page maxp |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for variant in runs[names[0]]["folder (same)"]["ranks"]:
        cells = []
        for corpus, mode in columns:
            each = [
                gains(r[corpus]["ranks"][variant][mode]) - gains(r[corpus]["ranks"]["maxp"][mode])
                for r in runs.values()
            ]
            cells.append(
                paired_cell(np.concatenate(each)) + "<br>" + " / ".join(f"{d.mean():+.3f}" for d in each)
            )
        each = [
            gains(r["folder (same)"]["ranks"][variant]["hybrid"])
            - gains(r["whole page JSONL"]["ranks"]["maxp"]["hybrid"])
            for r in runs.values()
        ]
        cells.append(
            paired_cell(np.concatenate(each)) + "<br>" + " / ".join(f"{d.mean():+.3f}" for d in each)
        )
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The folder's maxp minus the whole page's, both fused at the same fixed weight (the content alone, the "
        "calibrated weight aside):",
        "",
        "| weight | folder hybrid minus whole page hybrid |",
        "|---|---|",
    ]
    for alpha in FIXED:
        each = [
            gains(r["folder (same)"]["fixed"][str(alpha)]) - gains(r["whole page JSONL"]["fixed"][str(alpha)])
            for r in runs.values()
        ]
        cell = paired_cell(np.concatenate(each)) + "<br>" + " / ".join(f"{d.mean():+.3f}" for d in each)
        lines.append(f"| {alpha} | {cell} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=hd.DEFAULT_HTML)
    parser.add_argument("--work", type=Path, help="html_docs.py's --work of the same --html")
    parser.add_argument("--out", default="")
    parser.add_argument("--pool", default="", help="NAME,NAME: earlier runs' --out suffixes, taken together")
    args = parser.parse_args()
    if args.pool:
        text = pooled(args.pool.split(","))
        print(text)
        if args.out:
            (OUT / f"{args.out}.md").write_text(text)
        return
    root = args.html
    if not (root / "py-modindex.html").is_file() or args.work is None or not args.work.is_dir():
        sys.exit(
            f"{root} holds no Sphinx module index, or --work names no html_docs.py run of it: apt-get install "
            "python-django-doc (sphinx-doc, python-scrapy-doc), run html_docs.py with that --work first"
        )
    files = hd.pages(root)
    queries = hd.known_items(root, {f.relative_to(root).as_posix() for f in files})
    folders = sorted(p.name for p in args.work.glob("folder (*)") if p.is_dir())
    names = [name for name in (*INDEXES, *folders) if (args.work / name).is_dir()]
    results = {name: study(args.work / name, queries) for name in dict.fromkeys(names)}
    lines = [
        f"### {hd.package(root)}: a page scored beyond MaxP",
        "",
        f"`{command_line()}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {len(queries)} known items.",
        "",
        "| variant | " + " | ".join(f"{name} dense | {name} hybrid" for name in results) + " |",
        "|---|" + "---|---|" * len(results),
    ]
    for variant in variants():
        cells = [
            f"{ndcg(r['ranks'][variant]['dense']):.3f} | {ndcg(r['ranks'][variant]['hybrid']):.3f}"
            for r in results.values()
        ]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [
        "maxp's hybrid at fixed weights:",
        "",
        "| weight | " + " | ".join(results) + " |",
        "|---|" + "---|" * len(results),
    ]
    for alpha in FIXED:
        lines.append(
            f"| {alpha} | "
            + " | ".join(f"{ndcg(r['fixed'][str(alpha)]):.3f}" for r in results.values())
            + " |"
        )
    lines.append("")
    for name, r in results.items():
        same = [
            sum(a == b for a, b in zip(r["searched"][mode], r["ranks"]["maxp"][mode]))
            for mode in ("dense", "hybrid")
        ]
        lines.append(
            f"- {name}: alpha {r['alpha']}, {r['passages']} passages; maxp's ranks as index.search's: dense "
            f"{same[0]}/{len(queries)}, hybrid {same[1]}/{len(queries)}"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        (OUT / f"{args.out}.md").write_text(text)
        (OUT / f"{args.out}.json").write_text(
            json.dumps({"queries": queries, **results}, separators=(",", ":")) + "\n"
        )


if __name__ == "__main__":
    main()
