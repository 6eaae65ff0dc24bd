"""Rule variants of the calibration's choice (choice.py, bands.py), replayed on the ranks that
benchmarks/calibration_choice.py recorded (--work/figures/NAME.json: each pseudo-query's rank at every weight,
each real query's nDCG@10 at every weight), nothing encoded or searched again; written to
benchmarks/results/calibration-rule-variants.md.

    .venv/bin/python benchmarks/calibration_rule_variants.py --work DIR [--out calibration-rule-variants]

A variant is a family of rules with constants: the sweep smoothed before its argmax (a triangular kernel over the
weight grid, against the winner's curse of the best of 11 noisy means); the fused weights tied with the best one
by a fixed TIE, by none (its argmax) or by the paired noise of their difference, and which of them is taken (the
edge toward dense, as now; the middle; the one nearest a prior weight); a shift toward dense (a bias correction
for pseudo-queries leaning to keyword); the bands' moves shrunk, capped, gated by noise or not. Every variant
keeps the one-side guard (choice.NOISE against the default weight, the default where it ties: the glued
Chinese sets' protection) and the known items' choice. Each is judged by the issue's two counts (rows within
0.01 of the better side; of the best fixed weight where fusion helps), its worst row and mean, in-sample (the
constants best on every set) and leave-one-set-out (each set's rows under the constants best on the others;
ties go to the current constants, listed first), so a constant that only one set rewards does not count.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
from pathlib import Path

import numpy as np
from calibration_choice import OUT, WEIGHTS, weight_of
from scale import markdown_table, results_header

CURRENT = dict(
    base="asked",
    gate="noise",
    h=0.0,
    hb=0.0,
    tie="fixed",
    z=2.0,
    pick="edge",
    prior=0.5,
    c=0.0,
    f=1.0,
    cap=0.2,
)
FAMILIES = {  # variant -> the constants searched, the current value first
    "smoothed sweeps (index and bands)": dict(h=[0.0, 0.1, 0.2], hb=[0.0, 0.1, 0.2]),
    "tie set: its middle": dict(pick=["edge", "middle"]),
    "tie set by noise (z paired SE)": dict(tie=["fixed", "noise"], z=[1.0, 2.0]),
    "tie set by noise, nearest a prior": dict(
        tie=["fixed", "noise"], z=[1.0, 2.0], pick=["edge", "prior"], prior=[0.5, 0.6, 0.7]
    ),
    "best weight (no tie)": dict(tie=["fixed", "none"]),
    "best weight (no tie) + shift c": dict(tie=["fixed", "none"], c=[0.0, 0.1, 0.2]),
    "tie middle + shift c": dict(pick=["edge", "middle"], c=[0.0, 0.1, 0.2]),
    "smoothed argmax + shift c": dict(h=[0.0, 0.1, 0.2], tie=["fixed", "none"], c=[0.0, 0.1, 0.2]),
    "band moves from the sentence band (session 11)": dict(base=["asked", "sentence"]),
    "band moves shrunk (f), capped": dict(f=[1.0, 0.5, 0.0], cap=[0.2, 0.1, 0.3]),
    "band moves ungated, capped": dict(gate=["noise", "none"], cap=[0.2, 0.1, 0.3]),
    "band moves from smoothed band sweeps": dict(hb=[0.0, 0.1, 0.2], f=[1.0, 0.5]),
    "everything at once": dict(
        h=[0.0, 0.1], hb=[0.0, 0.1], tie=["fixed", "none", "noise"], pick=["edge", "middle"], c=[0.0, 0.1]
    ),
}
SINGLE = {  # one rule each, no constant searched
    "session 11's: band moves from the sentence band's best weight": dict(base="sentence"),
    "best weight (argmax, no tie)": dict(tie="none"),
    "smoothed, h 0.1": dict(h=0.1, hb=0.1),
    "smoothed, h 0.2": dict(h=0.2, hb=0.2),
    "tie middle": dict(pick="middle"),
    "no band moves": dict(f=0.0),
    "band moves capped at 0.3": dict(cap=0.3),
}


def load(work: Path) -> list[dict]:
    """Each calibrated set's recorded gains (the choosing ones, the sentences', each band's) and real rows."""
    from semsearch.retrieval.calibration import Calibration
    from semsearch.retrieval.lengths import BANDS

    sets = []
    for path in sorted((work / "figures").glob("*.json")):
        figures = json.loads(path.read_text())
        calibration = Calibration.from_json(figures["calibration"])
        if calibration is None or not calibration.bands or calibration.gains() is None:
            continue
        rows = [
            {
                "style": style,
                "ndcg": measured["ndcg@10"],
                "per_query": {w: np.array(v) for w, v in measured["per_query"].items()},
                "bands": [
                    next(n for n, most in BANDS if most is None or t <= most) for t in measured["tokens"]
                ],
            }
            for style, measured in figures["styles"].items()
        ]
        sets.append({"name": figures["set"], "calibration": calibration, "rows": rows})
    return sets


def current(one_set: dict, constants: dict | None = None) -> dict[str, str]:
    """Each band's weight by the rule of this tree (choice.choose, bands.chosen_bands)."""
    from semsearch.retrieval.bands import chosen_bands
    from semsearch.retrieval.calibration import MIN_QUERIES
    from semsearch.retrieval.choice import choose

    calibration = one_set["calibration"]
    mode, alpha, _ = choose(calibration.choosing_gains())
    ranks = {name: band["ranks"] for name, band in calibration.bands.items()}
    bands = chosen_bands(ranks, (mode, alpha), MIN_QUERIES, calibration.ranks)
    return {name: weight_of(band["mode"], band["alpha"]) for name, band in bands.items()}


def variant(one_set: dict, constants: dict) -> dict[str, str]:
    """Each band's weight by a variant (module doc): the index's weight, then each band's move."""
    from semsearch.retrieval.calibration import MIN_QUERIES
    from semsearch.retrieval.choice import beats
    from semsearch.retrieval.sweep import gains_of

    one = index_weight(one_set["calibration"], constants)
    gains = {
        name: {w: gains_of(ranks) for w, ranks in band["ranks"].items()}
        for name, band in one_set["calibration"].bands.items()
    }
    best = {
        name: argmax(
            smoothed({w: float(g.mean()) if len(g) else 0.0 for w, g in by.items()}, constants["hb"])
        )
        for name, by in gains.items()
    }
    counted = {name: len(by["0.5"]) for name, by in gains.items()}
    if constants["base"] == "asked":  # the sentences as drawn, every length (bands.chosen_bands)
        drawn = one_set["calibration"].gains()
        base = argmax(smoothed({w: float(g.mean()) for w, g in drawn.items()}, constants["h"]))
        counted["base"] = len(drawn["0.5"])
    else:  # the sentence band's
        base, counted["base"] = best["sentence"], counted["sentence"]
    out = {}
    for name, by in gains.items():
        move = 0.0
        enough = min(counted[name], counted["base"]) >= MIN_QUERIES and best[name] != base
        if enough and (constants["gate"] == "none" or beats(by[best[name]], by[base])):
            move = constants["f"] * (float(best[name]) - float(base))
            move = round(max(-constants["cap"], min(constants["cap"], move)) + 1e-9, 1)
        out[name] = one if move == 0 else grid(float(one) + move, 0.0, 1.0)
    return out


def index_weight(calibration, constants: dict) -> str:
    """The index's weight ("1.0" dense alone, "0.0" keyword alone) as choice.choose makes it, with the variant's
    smoothing, tie set, pick and shift; its guard (one side only beyond NOISE, else the default where it ties
    within TIE) and the known items as they are."""
    from semsearch.retrieval.choice import TIE, beats
    from semsearch.settings import DEFAULT_ALPHA

    gains = calibration.choosing_gains()
    means = smoothed({w: float(g.mean()) for w, g in gains.items()}, constants["h"])
    best_fused = max(v for w, v in means.items() if 0 < float(w) < 1)
    best = max(means.values())
    tied = tie_set(gains, means, constants)
    shift = 0.0 if calibration.known else constants["c"]
    if means["1.0"] < best - TIE and best_fused >= best - TIE:
        return grid(pick(tied, constants, "dense") + shift, 0.1, 0.9)
    mode = "dense" if means["1.0"] >= best - TIE else "keyword"
    default, side = f"{DEFAULT_ALPHA:.1f}", "1.0" if mode == "dense" else "0.0"
    if beats(gains[side], gains[default]):
        return side
    if DEFAULT_ALPHA in tie_set(gains, means, {**constants, "tie": "fixed"}):
        return default
    return grid(pick(tied, constants, mode) + shift, 0.1, 0.9)


def tie_set(gains: dict, means: dict, constants: dict) -> list[float]:
    """The fused weights tied with the best fused one: within TIE, within nothing ("none"), or not beaten by
    it beyond TIE and z standard errors of their paired difference ("noise")."""
    from semsearch.retrieval.choice import TIE

    fused = [w for w in WEIGHTS if 0 < float(w) < 1]
    top = max(fused, key=lambda w: means[w])
    out = []
    for w in fused:
        if constants["tie"] == "noise":
            gap = gains[top] - gains[w]
            allowed = max(TIE, constants["z"] * float(gap.std(ddof=1)) / math.sqrt(len(gap)))
        else:
            allowed = TIE if constants["tie"] == "fixed" else 0.0
        if means[w] >= means[top] - allowed:
            out.append(float(w))
    return out


def pick(tied: list[float], constants: dict, toward: str) -> float:
    """Of the tied weights: the edge toward `toward` (the current rule), the middle, or the one nearest the prior."""
    tied = sorted(tied)
    if constants["pick"] == "middle":
        return tied[(len(tied) - (toward != "dense")) // 2]
    if constants["pick"] == "prior":
        return min(tied, key=lambda w: (abs(w - constants["prior"]), -w))
    return tied[-1] if toward == "dense" else tied[0]


def smoothed(means: dict[str, float], half_width: float) -> dict[str, float]:
    """The sweep under a triangular kernel reaching `half_width` on each side (0: as measured), cut at the ends."""
    if half_width == 0:
        return dict(means)
    at = np.array([float(w) for w in WEIGHTS])
    kernel = np.maximum(0.0, 1 - np.abs(at[:, None] - at[None, :]) / (half_width + 0.05))
    values = kernel @ np.array([means[w] for w in WEIGHTS]) / kernel.sum(axis=1)
    return dict(zip(WEIGHTS, values.tolist()))


def argmax(means: dict[str, float]) -> str:
    return max(WEIGHTS, key=lambda w: means[w])


def grid(weight: float, low: float, high: float) -> str:
    return f"{min(high, max(low, round(weight + 1e-9, 1))):.1f}"


def scored(sets: list[dict], rule, constants: dict | None) -> list[dict]:
    """Each real row's nDCG@10 with every query at its band's weight, against the better side and best weight."""
    rows = []
    for one_set in sets:
        bands = rule(one_set, constants)
        for row in one_set["rows"]:
            ndcg, per_query = row["ndcg"], row["per_query"]
            score = float(np.mean([per_query[bands[band]][at] for at, band in enumerate(row["bands"])]))
            better = max(ndcg["1.0"], ndcg["0.0"])
            helps = max(v for w, v in ndcg.items() if 0 < float(w) < 1) > better
            rows.append(
                {"set": one_set["name"], "style": row["style"], "bands": bands, "helps": helps}
                | {"side": score - better, "fixed": score - max(ndcg.values())}
            )
    return rows


def summary(rows: list[dict]) -> dict:
    helps = [row for row in rows if row["helps"]]
    return {
        "side": sum(row["side"] >= -0.01 for row in rows),
        "rows": len(rows),
        "fixed": sum(row["fixed"] >= -0.01 for row in helps),
        "helps": len(helps),
        "worst fixed": min(row["fixed"] for row in helps),
        "worst side": min(row["side"] for row in rows),
        "mean fixed": float(np.mean([row["fixed"] for row in helps])),
    }


def objective(figures: dict) -> tuple:
    """The issue's two counts first, then the worst row of either kind, then the mean."""
    worst = min(figures["worst fixed"], figures["worst side"])
    return (figures["fixed"] + figures["side"], round(worst, 4), round(figures["mean fixed"], 5))


def left_out(sets: list[dict], candidates: list[dict]) -> tuple[list[dict], dict[str, dict]]:
    """Each set's rows under the constants best on the other sets."""
    rows, chosen = [], {}
    for held in sets:
        others = [one for one in sets if one is not held]
        best = max(candidates, key=lambda c: objective(summary(scored(others, variant, c))))
        chosen[held["name"]] = best
        rows += scored([held], variant, best)
    return rows, chosen


def shown(figures: dict) -> str:
    return (
        f"{figures['fixed']}/{figures['helps']}, {figures['side']}/{figures['rows']}; worst "
        f"{figures['worst fixed']:+.4f} / {figures['worst side']:+.4f}; mean {figures['mean fixed']:+.4f}"
    )


def misses(rows: list[dict]) -> str:
    return ", ".join(
        f"{row['set']} {row['style']} {row['fixed']:+.3f}"
        for row in rows
        if row["helps"] and row["fixed"] < -0.01
    ) + "".join(
        f", {row['set']} {row['style']} {row['side']:+.3f} (side)" for row in rows if row["side"] < -0.01
    )


def newly(rows: list[dict], new: set[str]) -> str:
    """The new sets' rows: against the best fixed weight (where fusion helps) / the better side."""
    return ", ".join(
        f"{r['set']} {r['fixed']:+.4f} / {r['side']:+.4f}"
        if r["helps"]
        else f"{r['set']} - / {r['side']:+.4f}"
        for r in rows
        if r["set"] in new
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True, help="a calibration_choice.py --work")
    parser.add_argument("--out", default="calibration-rule-variants", help="results/OUT.md")
    parser.add_argument("--new", default="", help="sets added this round, shown apart (comma separated)")
    args = parser.parse_args()
    sets = load(args.work)
    new = set(filter(None, args.new.split(",")))
    now = scored(sets, current, None)
    assert [r["bands"] for r in now] == [r["bands"] for r in scored(sets, variant, CURRENT)], "replay differs"
    table = [
        {
            "variant": "current rule",
            "constants": "TIE 0.005, dense edge; bands from the sentences, gated, capped 0.2",
        }
    ]
    table[0].update(
        {"in-sample": shown(summary(now)), "left out": shown(summary(now)), "misses": misses(now)}
    )
    table[0]["new sets"] = newly(now, new)
    for name, axes in FAMILIES.items():
        candidates = [
            dict(CURRENT, **dict(zip(axes, values))) for values in itertools.product(*axes.values())
        ]
        candidates = list({json.dumps(c, sort_keys=True): c for c in candidates}.values())
        in_sample = max(candidates, key=lambda c: objective(summary(scored(sets, variant, c))))
        rows, chosen = left_out(sets, candidates)
        moved = sorted(n for n, c in chosen.items() if c != in_sample)
        table.append(
            {
                "variant": name,
                "constants": ", ".join(f"{k} {in_sample[k]}" for k in axes)
                + (f" (not for {', '.join(moved)})" if moved else ""),
                "in-sample": shown(summary(scored(sets, variant, in_sample))),
                "left out": shown(summary(rows)),
                "misses": misses(rows),
                "new sets": newly(rows, new),
            }
        )
        print(name, table[-1]["left out"], flush=True)
    singles = []
    for name, changed in SINGLE.items():
        rows = scored(sets, variant, dict(CURRENT, **changed))
        singles.append({"rule": name, "figures": shown(summary(rows)), "misses": misses(rows)})
        singles[-1]["new sets"] = newly(rows, new)
    conditions = f"load {os.getloadavg()[0]:.1f} on 2 cores; replayed on recorded ranks"
    lines = [
        *results_header("The calibration's choice rule against its variants (issue 38)", conditions, __doc__),
        f"{len(sets)} sets, {len(now)} rows. Figures: rows within 0.01 of the best fixed weight (of those where",
        "fusion helps), rows within 0.01 of the better side; worst row against the best fixed weight / against the",
        "better side; mean against the best fixed weight. `constants`: those best in-sample (`not for`: the sets",
        "left out under other constants). `new sets`: their rows against the best fixed weight / the better side.",
        "",
        *markdown_table(table),
        "One rule each (no constant searched: in-sample is all there is):",
        "",
        *markdown_table(singles),
    ]
    (OUT / f"{args.out}.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
