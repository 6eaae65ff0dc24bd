"""The benchmark's outputs: results.json (merged with earlier runs' rows), results.md (a table with the
commands that made it) and one PNG plot per dataset and pooling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..storage.files import atomic_write_text
from .metrics import RETRIEVAL_METRICS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ROW_KEY = (
    "dataset",
    "system",
    "model",
    "pooling",
    "quantize",
    "backend",
    "transform",
    "power",
    "dims_requested",
    "rerank",
    "chunk_tokens",
    "mode",
    "alpha",
    "fusion",
    "calibrated",
    "weighting",
)
# Rows written before these columns existed (encoded by torch then, a vector per document, dense search).
KEY_DEFAULTS = {
    "system": "semsearch",
    "quantize": "none",
    "backend": "torch",
    "chunk_tokens": 0,
    "mode": "dense",
    "calibrated": False,
    "weighting": "fixed",
}


def write_outputs(rows: list[dict[str, Any]], out: Path, command: str) -> list[Path]:
    """results.json, results.md (with the commands) and one PNG plot per dataset and pooling.

    Rows already in `out` from other runs are kept unless this run measured the same setting again, so a
    sweep can be extended (a new transform, another pooling) without redoing the rest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{**row, "command": command} for row in rows]
    fresh = {_key(row) for row in rows}
    previous = []
    if (out / "results.json").is_file():
        previous = [row for row in json.loads((out / "results.json").read_text()) if _key(row) not in fresh]
    merged = previous + rows
    atomic_write_text(out / "results.json", json.dumps(merged, indent=1) + "\n")
    atomic_write_text(out / "results.md", markdown_table(merged))
    return [out / "results.json", out / "results.md", *plot(merged, out)]


def _key(row: dict[str, Any]) -> tuple:
    return tuple(row.get(name, KEY_DEFAULTS.get(name)) for name in ROW_KEY)


def _metric_names(rows: list[dict[str, Any]]) -> list[str]:
    return ["spearman"] if rows and "spearman" in rows[0] else list(RETRIEVAL_METRICS)


def markdown_table(rows: list[dict[str, Any]], command: str | None = None) -> str:
    metrics = _metric_names(rows)
    extra = [
        "query_ms",
        "query_ms_p90",
        "bytes_per_doc",
        "refit_s",
        "ingest_docs_per_s",
        "encode_sentences_per_s",
        "fit_s",
    ]
    extra = [c for c in extra if any(c in r for r in rows)]
    quantized = any(r.get("quantize", "none") != "none" for r in rows)
    backends = (
        len({r.get("backend", KEY_DEFAULTS["backend"]) for r in rows if r.get("system") == "semsearch"}) > 1
    )
    varied = [
        name
        for name in ("chunk_tokens", "mode", "alpha", "fusion", "calibrated", "weighting")
        if len({r.get(name, KEY_DEFAULTS.get(name)) for r in rows if r.get("system") == "semsearch"}) > 1
    ]
    columns = [
        "dataset",
        "system",
        "pooling",
        *["quantize"] * quantized,
        *["backend"] * backends,
        *[name for name in varied if name == "chunk_tokens"],
        *[name for name in varied if name != "chunk_tokens"],
        "transform",
        "power",
        "dims",
        "rerank",
    ]
    columns += [*metrics, *extra]
    commands = list(
        dict.fromkeys([row["command"] for row in rows if "command" in row] + [command] * bool(command))
    )
    lines = [
        "# Benchmark results",
        "",
        f"Model: {', '.join(dict.fromkeys(str(r['model']) for r in rows))}",
        "",
    ]
    lines += ["Made with:", "", *(f"- `{c}`" for c in commands), ""]
    lines += ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        values = [
            row.get(c, KEY_DEFAULTS.get(c) if row.get("system") == "semsearch" else None) for c in columns
        ]
        cells = ["" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v) for v in values]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + calibration_summary(rows, metrics[0])) + "\n"


def calibration_summary(rows: list[dict[str, Any]], metric: str) -> list[str]:
    """Per encoding and dense setting: each side alone, the calibrated default (a fixed weight), the weight per
    query (perquery.py), and the swept weights' best (the oracle, which knows the real queries' labels)."""
    lines: list[str] = []
    calibrated = [r for r in rows if r.get("calibrated")]
    for row in [r for r in calibrated if r.get("weighting", "fixed") == "fixed"]:
        same = [r for r in rows if not r.get("calibrated") and _setting(r) == _setting(row)]
        swept = [r for r in same if r.get("mode") == "hybrid" and r.get("fusion", "convex") == "convex"]
        dense = [r[metric] for r in same if r.get("mode", "dense") == "dense"]
        keyword = [r[metric] for r in rows if r.get("mode") == "keyword" and r["dataset"] == row["dataset"]]
        per_query = [
            r[metric]
            for r in calibrated
            if r.get("weighting") == "per-query" and _setting(r) == _setting(row)
        ]
        oracle = max(swept, key=lambda r: r[metric], default=None)
        better_side = max(dense + keyword, default=None)
        if not lines:
            lines = [
                "",
                f"Defaults ({metric}; the oracle is the best swept weight for the real queries; the last columns: "
                "the default and the weight per query against the better of dense and keyword):",
                "",
                "| dataset | passage tokens | setting | dense | keyword | calibrated | its "
                + metric
                + " | per-query "
                + metric
                + " | oracle alpha | oracle "
                + metric
                + " | default to better side | per-query to better side |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
        choice = row["mode"] if row["mode"] != "hybrid" else f"hybrid alpha {row['alpha']:g}"
        cells = [
            row["dataset"],
            str(row.get("chunk_tokens") or "whole"),
            _label(row["transform"], row.get("power"), row.get("dims"), row["rerank"]),
            f"{dense[0]:.4f}" if dense else "",
            f"{keyword[0]:.4f}" if keyword else "",
            choice,
            f"{row[metric]:.4f}",
            f"{per_query[0]:.4f}" if per_query else "",
            f"{oracle['alpha']:g}" if oracle else "",
            f"{oracle[metric]:.4f}" if oracle else "",
            f"{row[metric] - better_side:+.4f}" if better_side is not None else "",
            f"{per_query[0] - better_side:+.4f}" if per_query and better_side is not None else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _setting(row: dict[str, Any]) -> tuple:
    names = (
        "dataset",
        "pooling",
        "quantize",
        "backend",
        "chunk_tokens",
        "transform",
        "power",
        "dims",
        "rerank",
    )
    return tuple(row.get(name, KEY_DEFAULTS.get(name)) for name in names)


def plot(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Quality against dims, one line per transform/power, the raw full-dims figure as a reference line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = _metric_names(rows)[0]
    paths = []
    for dataset, pooling in dict.fromkeys((r["dataset"], r["pooling"]) for r in rows):
        subset = [
            r
            for r in rows
            if r["dataset"] == dataset
            and r["pooling"] == pooling
            and r.get(metric) is not None
            and r.get("system", "semsearch") == "semsearch"
        ]
        # One encoder and chunking per plot (backends' vectors agree to 1e-6; int8 and fp32 are compared in the
        # table): those most rows were measured with; dense search alone (hybrid has its own plot, against alpha).
        for name in ("quantize", "backend", "chunk_tokens"):
            values = [str(r.get(name, KEY_DEFAULTS[name])) for r in subset]
            # the most rows; on a tie the last value measured (the default chunking follows 0)
            chosen = max(reversed(dict.fromkeys(values)), key=values.count) if values else None
            subset = [r for r, v in zip(subset, values) if v == chosen]
        hybrid = [r for r in subset if r.get("mode") in ("hybrid", "keyword") or r.get("calibrated")]
        subset = [r for r in subset if r.get("mode", "dense") == "dense" and not r.get("calibrated")]
        if hybrid:
            paths.append(_plot_alpha(subset, hybrid, metric, out, f"{dataset}-{pooling}", rows[0]["model"]))
        figure, axes = plt.subplots(figsize=(7, 4.5))
        raw = [r for r in subset if r["transform"] == "none" and r["rerank"] == 0]
        if raw:
            axes.axhline(raw[0][metric], color="black", linestyle=":", label=f"raw ({raw[0]['dims']} dims)")
        lines = dict.fromkeys(
            (r["transform"], r["power"], r["rerank"]) for r in subset if r["transform"] != "none"
        )
        for transform, power, rerank in lines:
            points = sorted(
                (r["dims"], r[metric])
                for r in subset
                if (r["transform"], r["power"], r["rerank"]) == (transform, power, rerank)
            )
            label = _label(transform, power, None, rerank)
            axes.plot(*zip(*points), marker="o", linestyle="--" if rerank else "-", label=label)
        axes.set_xscale("log", base=2)
        title = f"{dataset}, {rows[0]['model']}, {pooling} pooling"
        path = out / f"{dataset}-{pooling}-{metric.replace('@', '_at_')}.png"
        paths.append(_finish(figure, axes, ("dimensions kept", metric), title, path))
    return paths


def _label(transform: str, power: float | None, dims: int | None, rerank: int) -> str:
    return (
        transform
        + (f" P={power:g}" if transform == "whiten" else "")
        + (f" {dims} dims" if dims else "")
        + (f" + rerank {rerank}" if rerank else "")
    )


def _finish(
    figure: Figure, axes: Axes, labels: tuple[str, str], title: str, path: Path, fontsize: int = 8
) -> Path:
    """Axis labels, title, grid and legend; saved to `path` and closed."""
    import matplotlib.pyplot as plt

    axes.set_xlabel(labels[0])
    axes.set_ylabel(labels[1])
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=fontsize)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _plot_alpha(
    dense: list[dict[str, Any]], hybrid: list[dict[str, Any]], metric: str, out: Path, name: str, model: str
) -> Path:
    """Hybrid quality against alpha (0: keyword only, 1: dense only), a line per dense setting, with the keyword
    and dense figures as reference lines; where calibrated, the pseudo-queries' own curve (dotted, their
    nDCG@10) and the weight they chose (a star, at its real figure)."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for row in [r for r in hybrid if r["mode"] == "keyword"][:1]:
        axes.axhline(row[metric], color="gray", linestyle=":", label="keyword (bm25)")
    calibrated = [r for r in hybrid if r.get("calibrated")]
    hybrid = [r for r in hybrid if not r.get("calibrated")]
    convex = [r for r in hybrid if r["mode"] == "hybrid" and r.get("fusion", "convex") == "convex"]
    for setting in dict.fromkeys((r["transform"], r["power"], r["dims"], r["rerank"]) for r in convex):
        label = (
            f"{setting[0]}" + (f" P={setting[1]:g}" if setting[0] == "whiten" else "") + f" {setting[2]} dims"
        )
        label += f" + rerank {setting[3]}" if setting[3] else ""
        points = sorted(
            (r["alpha"], r[metric])
            for r in convex
            if (r["transform"], r["power"], r["dims"], r["rerank"]) == setting
        )
        line = axes.plot(*zip(*points), marker="o", label="hybrid, " + label)[0]
        same = [r for r in dense if (r["transform"], r["power"], r["dims"], r["rerank"]) == setting]
        if same:
            axes.axhline(same[0][metric], color=line.get_color(), linestyle="--", label="dense, " + label)
        for row in [r for r in calibrated if (r["transform"], r["power"], r["dims"], r["rerank"]) == setting]:
            if row.get("weighting") == "per-query":
                axes.axhline(row[metric], color=line.get_color(), linestyle="-.", label="weight per query")
                continue
            pseudo = sorted((float(a), v) for a, v in row["pseudo_sweep"].items())
            axes.plot(*zip(*pseudo), linestyle=":", color=line.get_color(), label="pseudo-queries, " + label)
            chosen = row["alpha"] if row["mode"] == "hybrid" else {"dense": 1.0, "keyword": 0.0}[row["mode"]]
            axes.plot(
                [chosen],
                [row[metric]],
                marker="*",
                markersize=14,
                color=line.get_color(),
                linestyle="none",
                label=f"calibrated ({row['mode']}, alpha {row['alpha']:g})",
            )
    title = f"{name.split('-')[0]}, {model}: hybrid fusion"
    path = out / f"{name}-hybrid-{metric.replace('@', '_at_')}.png"
    return _finish(figure, axes, ("alpha (dense weight)", metric), title, path, fontsize=7)
