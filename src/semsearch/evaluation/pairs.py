"""`semsearch bench --pairs FILE`: the Chinese sentence-pair tasks of Su's BERT-whitening experiments (ATEC, BQ,
LCQMC, PAWSX, Chinese STS-B; the senteval_cn layout `text1<TAB>text2<TAB>label`), by his protocol: every sentence
of the task encoded, the whitening statistics fitted on them, each pair scored by cosine, Spearman's rho against
the label x 100; raw, whitened (all dimensions) and whitened to 256, for each model, beside his published figures
for BERT-base Chinese (pooling P4; "当BERT-whitening引入超参数", 2022). The models differ, so the point is the
direction of whitening's effect on each, not equal numbers."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..settings import DEFAULT_MODEL, TransformKind, TransformSpec
from .zh_retrieval import read_pairs

# Su's figures, raw / whitened / whitened-256, by task (the file name's first part: ATEC.test.data -> ATEC).
SU_BERT_P4 = {
    "ATEC": (24.51, 27.00, 27.91),
    "BQ": (38.81, 32.29, 37.67),
    "LCQMC": (64.75, 64.75, 65.65),
    "PAWSX": (15.12, 17.80, 15.34),
    "STS-B": (61.66, 69.45, 69.37),
}
SETTINGS = (
    ("raw", TransformKind.NONE, None),
    ("whiten", TransformKind.WHITEN, None),
    ("whiten-256", TransformKind.WHITEN, 256),
)


def task_of(path: Path) -> str:
    return path.name.split(".")[0]


def available_models() -> list[str]:
    """The bundled model and the multilingual one where its extra is installed."""
    from ..encoding.external import MULTILINGUAL
    from ..errors import ModelError

    try:
        MULTILINGUAL.directory  # noqa: B018 - raises when not installed
    except ModelError:
        return [DEFAULT_MODEL]
    return [DEFAULT_MODEL, MULTILINGUAL.name]


def run_pairs(
    files: Sequence[Path],
    models: Sequence[str],
    quantize: str = "int8",
    progress: Callable[[str], None] = lambda message: None,
) -> list[dict[str, Any]]:
    """One row per file and model: Spearman x100 raw, whitened and whitened to 256, and Su's three figures."""
    from ..encoding import Encoder, model_name
    from ..transforms import fit_transform
    from ..transforms.stats import RunningStats
    from .metrics import spearman

    rows = []
    for model in models:
        encoder = Encoder(None if model == DEFAULT_MODEL else model, quantize=quantize)
        for path in files:
            pairs = read_pairs(path)
            sentences = list(dict.fromkeys([p.text1 for p in pairs] + [p.text2 for p in pairs]))
            position = {s: i for i, s in enumerate(sentences)}
            left = np.array([position[p.text1] for p in pairs])
            right = np.array([position[p.text2] for p in pairs])
            labels = [p.label for p in pairs]
            progress(f"{path.name}: {model_name(encoder.path)}, {len(sentences)} sentences")
            started = time.perf_counter()
            vectors = encoder.encode(sentences)
            seconds = time.perf_counter() - started
            stats = RunningStats.of(vectors)
            row: dict[str, Any] = {"task": path.name, "model": model_name(encoder.path), "pairs": len(pairs)}
            for label, kind, dims in SETTINGS:
                spec = TransformSpec(kind, dims if dims and dims < encoder.dim else None)
                projected = fit_transform(spec, stats, functools.partial(iter, [vectors])).project(vectors)
                cosine = np.sum(projected[left] * projected[right], axis=1)
                row[label] = round(100 * spearman(cosine, labels), 2)
            su = SU_BERT_P4.get(task_of(path))
            row["effect"] = _direction(row["raw"], row["whiten"])
            row["Su raw / whiten / w-256"] = " / ".join(f"{f:.2f}" for f in su) if su else ""
            row["Su effect"] = _direction(su[0], su[1]) if su else ""
            row["sentences/s"] = round(len(sentences) / seconds, 1)
            rows.append(row)
    return rows


def _direction(raw: float, whitened: float, tie: float = 0.5) -> str:
    """Whitening's effect as a sign: + helps, - hurts, = within `tie` points."""
    return "=" if abs(whitened - raw) < tie else ("+" if whitened > raw else "-")


def pairs_markdown(rows: list[dict[str, Any]], command: str) -> str:
    """The results table with the command that made it."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = [
        "# Chinese sentence pairs: Su's BERT-whitening protocol (issue 27)",
        "",
        f"`{command}`",
        "",
        "Statistics fitted on each task's own sentences; Spearman of cosine against the label x 100; raw /",
        "whitened (every dimension) / whitened to 256 (the model's width when it is narrower); effect: the sign",
        "of whitened - raw (= within 0.5). Su's figures: BERT-base Chinese, pooling P4.",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
        *("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows),
        "",
        *agreement(rows),
    ]
    return "\n".join(lines) + "\n"


def agreement(rows: list[dict[str, Any]]) -> list[str]:
    """Per model: on how many tasks whitening's effect has the sign it has in Su's figures."""
    out = []
    for model in dict.fromkeys(row["model"] for row in rows):
        judged = [row for row in rows if row["model"] == model and row["Su effect"]]
        same = sum(row["effect"] == row["Su effect"] for row in judged)
        helped = sum(row["effect"] == "+" for row in judged)
        out.append(
            f"- {model}: whitening helps on {helped} of {len(judged)} tasks; same direction as Su's on {same}."
        )
    return out
