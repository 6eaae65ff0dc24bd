"""Peers for the benchmark: the same data and model through sentence-transformers (encode + exact cosine)
and txtai (index + search), measured side by side. Both are optional extras, imported only here."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SettingsError
from .bench import BenchConfig
from .datasets import BeirData, load_beir
from .metrics import RETRIEVAL_METRICS, evaluate_run

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

INSTALL = "pip install 'semsearch[peers]'"


def run(*, beir: Path | None, sts: Path | None, config: BenchConfig) -> list[dict[str, Any]]:
    """The peers' rows for a BEIR directory and/or an STS file, in the bench's row format."""
    rows: list[dict[str, Any]] = []
    if beir is not None:
        rows += [_sentence_transformers_beir(beir, config), _txtai_beir(beir, config)]
    if sts is not None:
        rows.append(_sentence_transformers_sts(sts, config))
    return [row for row in rows if row]


def _model_path(config: BenchConfig) -> str:
    from ..encoding import resolve_model_path

    return str(resolve_model_path(config.model))


def _corpus(beir: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(Path(beir) / "corpus.jsonl") as handle:
        for line in handle:
            if line.strip():
                doc = json.loads(line)
                ids.append(str(doc.get("_id", doc.get("id"))))
                title = doc.get("title") or ""
                texts.append(f"{title} {doc['text']}" if title else doc["text"])
    return ids, texts


def _row(dataset: str, system: str, metrics: dict[str, float], **extra: Any) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "system": system,
        "model": "all-MiniLM-L6-v2",
        "pooling": "mean",
        "transform": "none",
        "power": None,
        "dims": 384,
        "rerank": 0,
        **{name: round(float(value), 5) for name, value in metrics.items()},
        **extra,
    }


def _beir_row(
    data: BeirData,
    system: str,
    run: dict[str, dict[str, float]],
    *,
    query_ms: float,
    ingest_rate: float,
    documents: int,
) -> dict[str, Any]:
    return _row(
        data.name,
        system,
        evaluate_run(data.qrels, run, RETRIEVAL_METRICS),
        query_ms=round(query_ms, 3),
        ingest_docs_per_s=round(ingest_rate, 2),
        documents=documents,
        queries=len(data.queries),
    )


def _sentence_transformer(config: BenchConfig) -> SentenceTransformer:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise SettingsError(f"needs sentence-transformers: {INSTALL}", setting="peers") from None
    return SentenceTransformer(_model_path(config), device="cpu")


def _sentence_transformers_beir(beir: Path, config: BenchConfig) -> dict[str, Any]:
    data = load_beir(beir, config.split)
    config.progress(f"{data.name}: sentence-transformers encode + exact cosine")
    model = _sentence_transformer(config)
    ids, texts = _corpus(beir)
    started = time.perf_counter()
    corpus = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    rate = len(texts) / (time.perf_counter() - started)
    query_ids = list(data.queries)
    started = time.perf_counter()
    queries = model.encode([data.queries[q] for q in query_ids], batch_size=32, normalize_embeddings=True)
    query_ms = 1000 * (time.perf_counter() - started) / len(query_ids)
    scores = queries @ corpus.T
    top = np.argsort(-scores, axis=1)[:, :100]
    run = {q: {ids[j]: float(scores[i, j]) for j in top[i]} for i, q in enumerate(query_ids)}
    return _beir_row(
        data, "sentence-transformers", run, query_ms=query_ms, ingest_rate=rate, documents=len(ids)
    )


def _txtai_beir(beir: Path, config: BenchConfig) -> dict[str, Any]:
    try:
        from txtai import Embeddings
    except ImportError:
        raise SettingsError(f"needs txtai: {INSTALL}", setting="peers") from None
    data = load_beir(beir, config.split)
    config.progress(f"{data.name}: txtai index + search")
    ids, texts = _corpus(beir)
    embeddings = Embeddings(path=_model_path(config), backend="faiss", batch=32, encodebatch=32)
    started = time.perf_counter()
    embeddings.index([(doc_id, text, None) for doc_id, text in zip(ids, texts)])
    rate = len(ids) / (time.perf_counter() - started)
    run, timings = {}, []
    for q, text in data.queries.items():
        started = time.perf_counter()
        results = embeddings.search(text, 100)
        timings.append(time.perf_counter() - started)
        run[q] = {str(doc_id): float(score) for doc_id, score in results}
    query_ms = 1000 * float(np.median(timings))
    return _beir_row(data, "txtai", run, query_ms=query_ms, ingest_rate=rate, documents=len(ids))


def _sentence_transformers_sts(path: Path, config: BenchConfig) -> dict[str, Any]:
    from .datasets import load_sts
    from .metrics import spearman

    pairs = load_sts(path)
    config.progress(f"{Path(path).name}: sentence-transformers")
    model = _sentence_transformer(config)
    left = model.encode([p.sentence1 for p in pairs], batch_size=32, normalize_embeddings=True)
    right = model.encode([p.sentence2 for p in pairs], batch_size=32, normalize_embeddings=True)
    cosine = np.sum(left * right, axis=1)
    return _row(
        Path(path).stem,
        "sentence-transformers",
        {"spearman": 100 * spearman(cosine, [p.score for p in pairs])},
    )
