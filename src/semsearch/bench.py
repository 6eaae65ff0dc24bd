"""The benchmark: retrieval quality (BEIR) or similarity quality (STS) against the transform, power and
number of dimensions kept, measured through the engine's own code.

A corpus is encoded once per model and pooling (an ordinary ingest with transform `none`); every other
setting is a `refit` of that index from its kept raw vectors and statistics, so a sweep of 20 settings costs
one encoding."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import SettingsError
from .transforms import TransformKind, TransformSpec

log = logging.getLogger(__name__)

TIMED_QUERIES = 50  # queries searched one at a time to measure latency
RETRIEVAL_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


@dataclass(frozen=True)
class Setting:
    transform: str
    dims: int | None  # None: all the transform gives
    power: float | None

    @property
    def label(self) -> str:
        if self.transform == "none":
            return "none"
        if self.transform == "whiten":
            return f"whiten P={self.power:g}"
        return self.transform


@dataclass
class BenchConfig:
    transforms: Sequence[str] = ("none", "pca", "whiten")
    dims: Sequence[int | None] = (16, 32, 64, 128, 256, None)
    powers: Sequence[float] = (1.0, 0.5, 0.0)
    poolings: Sequence[str] = ("mean",)
    quantize: Sequence[str] = ("none",)  # encoder weights: none, int8
    backends: Sequence[str] = ("onnx",)  # what runs the encoder: onnx, torch
    model: str | None = None
    rerank: Sequence[int] = (0,)
    split: str = "test"
    work: Path = Path("indexes") / "bench"
    peers: bool = False
    progress: Callable[[str], None] = field(default=lambda message: None)


def settings_grid(config: BenchConfig, model_dim: int) -> list[Setting]:
    """Every setting the sweep measures, without duplicates (whiten with P=0 is pca)."""
    grid: list[Setting] = []
    for kind in config.transforms:
        TransformKind(kind)
        if kind == "none":
            grid.append(Setting("none", None, None))
            continue
        powers = [None] if kind in ("pca", "flow") else list(config.powers)
        for power in powers:
            if kind == "whiten" and power == 0 and "pca" in config.transforms:
                continue
            for dims in config.dims:
                if dims is not None and dims > model_dim:
                    continue
                grid.append(Setting(kind, dims, power))
    return list(dict.fromkeys(grid))


def parse_dims(text: str) -> list[int | None]:
    """`16,32,all` -> [16, 32, None]."""
    out: list[int | None] = []
    for part in text.split(","):
        part = part.strip()
        if part == "all":
            out.append(None)
        elif part.isdigit() and int(part) > 0:
            out.append(int(part))
        else:
            raise SettingsError(f"--dims {text!r}: expected positive integers or 'all', separated by commas")
    return out


def run_beir(directory: Path, config: BenchConfig) -> list[dict[str, Any]]:
    from .datasets import load_beir
    from .metrics import evaluate_run

    data = load_beir(directory, config.split)
    rows = []
    for pooling, quantize, backend in _encoders(config):
        index, ingest_rate = _encoded_index(data.name, data.corpus_path, pooling, quantize, backend, config)
        query_ids = list(data.queries)
        started = time.perf_counter()
        queries = index.encoder.encode([data.queries[q] for q in query_ids])
        encode_ms = 1000 * (time.perf_counter() - started) / max(1, len(query_ids))
        for setting in settings_grid(config, index.manifest.encoder_dim):
            config.progress(f"{data.name} {pooling}: {setting.label} dims={setting.dims or 'all'}")
            refit_seconds = index.refit(setting.transform, setting.dims or "all", _whiten_power(setting))
            for rerank in config.rerank:
                if rerank and setting.transform == "none" and setting.dims is None:
                    continue  # re-scoring the full raw vectors with themselves changes nothing
                results = index.search_vectors(queries, k=100, rerank=rerank)
                run = {q: {hit.id: hit.score for hit in hits} for q, hits in zip(query_ids, results)}
                metrics = evaluate_run(data.qrels, run, RETRIEVAL_METRICS)
                rows.append(
                    {
                        "dataset": data.name,
                        "system": "semsearch",
                        "model": index.manifest.model_name,
                        "pooling": pooling,
                        "quantize": quantize,
                        "backend": backend,
                        "transform": setting.transform,
                        "power": index.manifest.power,
                        "dims": int(index.manifest.dims),
                        "dims_requested": setting.dims,
                        "rerank": rerank,
                        **{name: round(float(value), 5) for name, value in metrics.items()},
                        "query_ms": round(encode_ms + _search_ms(index, queries, rerank), 3),
                        "search_ms": round(_search_ms(index, queries, rerank), 3),
                        "bytes_per_doc": round(index.info()["bytes"]["vector_index"] / len(index), 1),
                        "refit_s": round(refit_seconds, 3),
                        "ingest_docs_per_s": round(ingest_rate, 2),
                        "documents": len(index),
                        "queries": len(query_ids),
                    }
                )
        index.close()
    return rows


def run_sts(path: Path, config: BenchConfig) -> list[dict[str, Any]]:
    """Spearman x100 of cosine against the gold scores; the transform is fitted on the file's own
    sentences (the BERT-whitening papers' "target" setting)."""
    from .datasets import load_sts
    from .encoder import Encoder
    from .metrics import spearman
    from .stats import RunningStats
    from .transforms import fit_transform

    pairs = load_sts(path)
    sentences = list(dict.fromkeys([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]))
    position = {s: i for i, s in enumerate(sentences)}
    left = np.array([position[p.sentence1] for p in pairs])
    right = np.array([position[p.sentence2] for p in pairs])
    gold = [p.score for p in pairs]
    rows = []
    for pooling, quantize, backend in _encoders(config):
        encoder = Encoder(config.model, pooling=pooling, quantize=quantize, backend=backend)
        started = time.perf_counter()
        vectors = encoder.encode(sentences)
        rate = len(sentences) / (time.perf_counter() - started)
        stats = RunningStats.of(vectors)

        def batches(vectors=vectors):  # flow trains on these
            return iter([vectors])

        for setting in settings_grid(config, encoder.dim):
            config.progress(f"{Path(path).name} {pooling}: {setting.label} dims={setting.dims or 'all'}")
            spec = TransformSpec(TransformKind(setting.transform), setting.dims, _whiten_power(setting))
            transform = fit_transform(spec, stats, batches)
            projected = transform.project(vectors)
            cosine = np.sum(projected[left] * projected[right], axis=1)
            rows.append(
                {
                    "dataset": Path(path).stem,
                    "system": "semsearch",
                    "model": _model_label(encoder),
                    "pooling": pooling,
                    "quantize": quantize,
                    "backend": backend,
                    "transform": setting.transform,
                    "power": spec.effective_power,
                    "dims": int(transform.out_dim),
                    "dims_requested": setting.dims,
                    "rerank": 0,
                    "spearman": round(100 * spearman(cosine, gold), 3),
                    "sentences": len(sentences),
                    "pairs": len(pairs),
                    "encode_sentences_per_s": round(rate, 2),
                }
            )
    return rows


def _encoders(config: BenchConfig) -> list[tuple[str, str, str]]:
    """(pooling, quantize, backend): one encoding of the data each."""
    return [
        (pooling, quantize, backend)
        for pooling in config.poolings
        for quantize in config.quantize
        for backend in config.backends
    ]


def _whiten_power(setting: Setting) -> float | None:
    return setting.power if setting.transform == "whiten" else None


def _model_label(encoder) -> str:
    from .index import _model_name

    return _model_name(encoder.path)


def _encoded_index(name: str, corpus: Path, pooling: str, quantize: str, backend: str, config: BenchConfig):
    """The dataset encoded once per model and pooling, reused across runs when already complete."""
    from .encoder import model_fingerprint, resolve_model_path
    from .errors import IndexStateError
    from .index import Index

    model_path = resolve_model_path(config.model)
    suffix = ("" if quantize == "none" else f"-{quantize}") + ("" if backend == "onnx" else f"-{backend}")
    path = Path(config.work) / f"{name}-{model_fingerprint(model_path)}-{pooling}{suffix}"
    try:
        index = Index.open(path)
        m = index.manifest
        if (m.pooling, m.quantize, m.backend) == (pooling, quantize, backend) and m.ingest_docs_per_s:
            config.progress(f"{name} {pooling}: reusing the encoded corpus in {path}")
            return index, index.manifest.ingest_docs_per_s
        index.close()
    except IndexStateError:
        pass
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    index = Index.create(
        path, model=config.model, pooling=pooling, transform="none", quantize=quantize, backend=backend
    )
    config.progress(f"{name} {pooling}: encoding {corpus}")
    report = index.ingest(corpus)
    index.manifest.ingest_docs_per_s = report.docs_per_second
    index.manifest.save(index.path)
    return index, report.docs_per_second


def _search_ms(index, queries: np.ndarray, rerank: int) -> float:
    """Median milliseconds of one search (transform, vector search, metadata join), one query at a time."""
    timings = []
    for query in queries[:TIMED_QUERIES]:
        started = time.perf_counter()
        index.search_vectors(query[None, :], k=10, rerank=rerank)
        timings.append(time.perf_counter() - started)
    return 1000 * float(np.median(timings))


# ---- outputs ----------------------------------------------------------------------------------------


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
)
# Rows written before these columns existed (encoded by torch then).
KEY_DEFAULTS = {"system": "semsearch", "quantize": "none", "backend": "torch"}


def write_outputs(rows: list[dict[str, Any]], out: Path, command: str) -> list[Path]:
    """results.json, results.md (with the commands) and one PNG plot per dataset and pooling.

    Rows already in `out` from other runs are kept unless this run measured the same setting again, so a
    sweep can be extended (a new transform, another pooling) without redoing the rest."""
    from .storage import atomic_write_text

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
    extra = ["query_ms", "bytes_per_doc", "refit_s", "ingest_docs_per_s", "encode_sentences_per_s", "fit_s"]
    extra = [c for c in extra if any(c in r for r in rows)]
    quantized = any(r.get("quantize", "none") != "none" for r in rows)
    backends = (
        len({r.get("backend", KEY_DEFAULTS["backend"]) for r in rows if r.get("system") == "semsearch"}) > 1
    )
    columns = [
        "dataset",
        "system",
        "pooling",
        *["quantize"] * quantized,
        *["backend"] * backends,
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
    return "\n".join(lines) + "\n"


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
            and r.get("quantize", "none") == "none"  # int8 rows are compared in the table
        ]
        # One backend per plot (their vectors agree to 1e-6): the one most rows were measured with.
        backends = [r.get("backend", KEY_DEFAULTS["backend"]) for r in subset]
        subset = [r for r, b in zip(subset, backends) if b == max(set(backends), key=backends.count)]
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
            label = (
                transform
                + (f" P={power:g}" if transform == "whiten" else "")
                + (f" + rerank {rerank}" if rerank else "")
            )
            axes.plot(*zip(*points), marker="o", linestyle="--" if rerank else "-", label=label)
        axes.set_xscale("log", base=2)
        axes.set_xlabel("dimensions kept")
        axes.set_ylabel(metric)
        axes.set_title(f"{dataset}, {rows[0]['model']}, {pooling} pooling")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        path = out / f"{dataset}-{pooling}-{metric.replace('@', '_at_')}.png"
        figure.tight_layout()
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths
