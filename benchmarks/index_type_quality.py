"""What the vector index type costs the default's quality (issue 38): a BEIR set's index as ingested beside copies
of it refitted to other types (`--types`, e.g. flat,hnsw: the exact index and what `auto` builds above 50,000
passages at 128 dims; the SciFact index of 2026-11-26 was ingested when `auto` built IVF-PQ there), nothing else changed (the same transform, refitted from the same statistics, and the same calibration). Each
side's real queries are searched once (FUSION_DEPTH candidates, as hybrid search takes them) and fused at each
weight as hybrid search does (calibration_choice.py's way); written to benchmarks/results/index-type-quality.md.

    .venv/bin/python benchmarks/index_type_quality.py --index /tmp/w38/indexes/scifact --beir ../shared/data/scifact
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from scale import command_line, markdown_table

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
WEIGHTS = (1.0, 0.6, 0.5, 0.4, 0.3, 0.0)


def figures(path: Path, beir: Path) -> dict:
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.index import Index
    from semsearch.retrieval.search import Match, fuse
    from semsearch.settings import FUSION_DEPTH, Fusion

    data = load_beir(beir)
    ids = list(data.queries)
    texts = [data.queries[q] for q in ids]
    with Index.open(path) as index:
        calibration = index.state.calibration or {}
        out = {"structure": index.state.index_structure, "measured recall": index.state.measured_recall}
        out["default"] = f"{calibration.get('mode')} {calibration.get('alpha')}"
        sides = {m: index.search_many(texts, k=FUSION_DEPTH, mode=m, crop=0) for m in ("dense", "keyword")}
    for weight in WEIGHTS:
        run = {}
        for q, dense, keyword in zip(ids, sides["dense"], sides["keyword"]):
            d, k = [Match(h.id, h.score) for h in dense], [Match(h.id, h.score) for h in keyword]
            found = (
                d if weight == 1 else k if weight == 0 else fuse(d, k, weight, Fusion.CONVEX, FUSION_DEPTH)
            )
            run[q] = {m.pk: float(len(found) - r) for r, m in enumerate(found)}
        out[f"{weight:g}"] = round(evaluate_run(data.qrels, run, ("ndcg@10",))["ndcg@10"], 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--types", default="flat", help="refitted copies beside the index, e.g. flat,hnsw")
    args = parser.parse_args()
    from semsearch.index import Index

    rows = [{"index": "as ingested", **figures(args.index, args.beir)}]
    for index_type in args.types.split(","):
        with tempfile.TemporaryDirectory(dir=args.index.parent) as scratch:
            copy = shutil.copytree(args.index, Path(scratch) / index_type)
            with Index.open(copy) as index:
                index.refit(index_type=index_type, calibrate=False)
            rows.append({"index": f"refitted {index_type}", **figures(copy, args.beir)})
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# The vector index type and the default's quality (issue 38)",
        "",
        f"`{command_line()}` ({stamp}; 2 cores shared with other work)",
        "",
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        "nDCG@10 of the set's queries; a column per dense weight (1: dense alone, 0: keyword alone).",
        "",
        *markdown_table(rows),
    ]
    (OUT / "index-type-quality.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
