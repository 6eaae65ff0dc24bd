"""The benchmark: retrieval quality (BEIR) or similarity quality (STS) against the transform, power and
number of dimensions kept, measured through the engine's own code.

A corpus is encoded once per model and pooling (an ordinary ingest with transform `none`); every other
setting is a `refit` of that index from its kept raw vectors and statistics, so a sweep of 20 settings costs
one encoding. The outputs (results.json, results.md, plots) are report.py's."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SettingsError
from ..settings import SearchMode, TransformKind, TransformSpec
from .metrics import RETRIEVAL_METRICS

if TYPE_CHECKING:
    from ..index import Index
    from ..retrieval.hits import Results
    from .calibrated import FusedHit

log = logging.getLogger(__name__)

TIMED_QUERIES = 50  # queries searched one at a time to measure latency
# Beside each encoded index in the work directory: the bench's own record of that encoding (its ingest
# rate), which is no part of the index. Written last, so its presence also marks a complete encoding.
RECORD_SUFFIX = ".bench.json"


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
    modes: Sequence[str] = (
        "dense",
    )  # dense, keyword, hybrid (keyword once per encoding: no transform in it)
    alphas: Sequence[float] = (0.5,)  # hybrid's dense weight
    fusions: Sequence[str] = ("convex",)
    calibrate: bool = True  # with hybrid among the modes: also the weight the corpus calibrates for itself
    chunk_tokens: Sequence[int | None] = (None,)  # None: the model's max_length (the default); 0: no chunking
    split: str = "test"
    work: Path = Path("indexes") / "bench"
    peers: bool = False
    figures: Path | None = None  # where `inspect`'s figures of each data set and pooling go (None: not drawn)
    progress: Callable[[str], None] = field(default=lambda message: None)


def settings_grid(config: BenchConfig, model_dim: int) -> list[Setting]:
    """Every setting the sweep measures, without duplicates (whiten with P=0 is pca)."""
    grid: list[Setting] = []
    for kind in config.transforms:
        TransformKind.parse(kind, "transforms")
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
            raise SettingsError(
                f"{text!r}: expected positive integers or 'all', separated by commas", setting="dims"
            )
    return out


def run_beir(directory: Path, config: BenchConfig) -> list[dict[str, Any]]:
    """One row per dataset, encoder, setting and rerank depth: retrieval metrics, latency and size."""
    from .calibrated import calibrated, per_query_search
    from .datasets import load_beir
    from .keyword_reference import reference_row, reference_run
    from .metrics import evaluate_run

    data = load_beir(directory, config.split)
    rows = []
    for pooling, quantize, backend, chunk_tokens in _encoders(config, chunking=True):
        index, ingest_rate = _encoded_index(
            data.name, data.corpus_path, (pooling, quantize, backend, chunk_tokens), config
        )
        query_ids = list(data.queries)
        texts = [data.queries[q] for q in query_ids]
        started = time.perf_counter()
        queries = index.encoder.encode(texts)
        encode_ms = 1000 * (time.perf_counter() - started) / max(1, len(query_ids))
        if config.figures is not None:
            from .inspect import draw, for_beir

            draw(for_beir(index, data.qrels, query_ids, queries), config.figures / f"{data.name}-{pooling}")
        keyword_done = False
        for setting in settings_grid(config, index.settings.encoder_dim):
            config.progress(f"{data.name} {pooling}: {setting.label} dims={setting.dims or 'all'}")
            refit_seconds = index.refit(
                setting.transform, setting.dims or "all", _whiten_power(setting), calibrate=False
            )
            for rerank in config.rerank:
                if rerank and setting.transform == "none" and setting.dims is None:
                    continue  # re-scoring the full raw vectors with themselves changes nothing
                searches: list[tuple[dict[str, Any], dict[str, Any]]] = [
                    (how, {}) for how in _modes(config, keyword_done)
                ]
                if config.calibrate and "hybrid" in config.modes:
                    searches += calibrated(index, rerank, config.progress)
                for how, measured in searches:
                    keyword_done |= how["mode"] == "keyword" and not measured
                    weights = measured.pop("weights", None)
                    results: list[list[FusedHit]] | list[Results]
                    if weights is not None:
                        results = per_query_search(index, queries, texts, rerank, weights)
                    else:
                        results = index.search_vectors(
                            queries, k=100, rerank=rerank, texts=texts, crop=0, **how
                        )
                    run = {q: {hit.id: hit.score for hit in hits} for q, hits in zip(query_ids, results)}
                    metrics = evaluate_run(data.qrels, run, RETRIEVAL_METRICS)
                    search_ms, search_p90 = _search_ms(index, queries, texts, rerank, how)
                    settings, state = index.settings, index.state
                    keyword = how["mode"] == "keyword"
                    rows.append(
                        {
                            "dataset": data.name,
                            "system": "semsearch",
                            "model": settings.model_name,
                            "pooling": pooling,
                            "quantize": quantize,
                            "backend": backend,
                            "transform": None if keyword else setting.transform,
                            "power": None if keyword else settings.power,
                            "dims": None if keyword or state.dims is None else int(state.dims),
                            "dims_requested": None if keyword else setting.dims,
                            "rerank": 0 if keyword else rerank,
                            "chunk_tokens": settings.chunk_tokens,
                            **how,
                            **measured,
                            **{name: round(float(value), 5) for name, value in metrics.items()},
                            "query_ms": round(search_ms + (0 if keyword else encode_ms), 3),
                            "query_ms_p90": round(search_p90 + (0 if keyword else encode_ms), 3),
                            "search_ms": round(search_ms, 3),
                            "search_ms_p90": round(search_p90, 3),
                            "bytes_per_doc": round(index.info()["bytes"]["vector_index"] / len(index), 1),
                            "refit_s": round(refit_seconds, 3),
                            "ingest_docs_per_s": round(ingest_rate, 2),
                            "documents": len(index),
                            "passages": index.state.rows,
                            "queries": len(query_ids),
                        }
                    )
                    if keyword and not measured:  # the plain-FTS5 reference beside it
                        run, timings = reference_run(index.store, query_ids, texts, TIMED_QUERIES)
                        metrics = evaluate_run(data.qrels, run, RETRIEVAL_METRICS)
                        rows.append(reference_row(rows[-1], metrics, timings))
        index.close()
    return rows


def run_sts(path: Path, config: BenchConfig) -> list[dict[str, Any]]:
    """Spearman x100 of cosine against the gold scores; the transform is fitted on the file's own
    sentences (the BERT-whitening papers' "target" setting)."""
    from ..encoding import Encoder, model_name
    from ..transforms import fit_transform
    from ..transforms.stats import RunningStats
    from .datasets import load_sts
    from .metrics import spearman

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
        if config.figures is not None:  # pairs scored 4-5 ("mostly" to "completely" equivalent) as relevant
            from .inspect import draw, for_pairs

            strong = np.array(gold) >= 4
            material = for_pairs(encoder, sentences, vectors, (left[strong], right[strong]))
            draw(material, config.figures / f"{Path(path).stem}-{pooling}")

        def batches(vectors: np.ndarray = vectors) -> Iterator[np.ndarray]:  # flow trains on these
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
                    "model": model_name(encoder.path),
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


def _encoders(config: BenchConfig, chunking: bool = False) -> list[tuple]:
    """(pooling, quantize, backend[, chunk_tokens]): one encoding of the data each."""
    return [
        (pooling, quantize, backend, *([chunk] if chunking else []))
        for pooling in config.poolings
        for quantize in config.quantize
        for backend in config.backends
        for chunk in (config.chunk_tokens if chunking else [None])
    ]


def _modes(config: BenchConfig, keyword_done: bool) -> list[dict[str, Any]]:
    """The searches of one setting: dense; keyword (once per encoding); hybrid at each alpha and fusion."""
    out: list[dict[str, Any]] = []
    for mode in config.modes:
        SearchMode.parse(mode, "modes")
        if mode == "dense":
            out.append({"mode": "dense"})
        elif mode == "keyword" and not keyword_done:
            out.append({"mode": "keyword"})
        elif mode == "hybrid":
            for fusion in config.fusions:
                alphas = config.alphas if fusion == "convex" else [0.5]
                out += [{"mode": "hybrid", "alpha": alpha, "fusion": fusion} for alpha in alphas]
    return out


def _whiten_power(setting: Setting) -> float | None:
    return setting.power if setting.transform == "whiten" else None


def _encoded_index(name: str, corpus: Path, encoding: tuple, config: BenchConfig) -> tuple[Index, float]:
    """The dataset encoded once per model, pooling, quantization, backend and chunking, and its ingest rate:
    reused across runs when the bench's record says the encoding completed, else encoded afresh."""
    import shutil

    from ..encoding import model_fingerprint, resolve_model_path
    from ..index import Index

    pooling, quantize, backend, chunk_tokens = encoding
    model_path = resolve_model_path(config.model)
    suffix = ("" if quantize == "none" else f"-{quantize}") + ("" if backend == "onnx" else f"-{backend}")
    suffix += f"-chunk{'default' if chunk_tokens is None else chunk_tokens}"
    path = Path(config.work) / f"{name}-{model_fingerprint(model_path)}-{pooling}{suffix}"
    record_path = path.with_name(path.name + RECORD_SUFFIX)
    wanted = {"pooling": pooling, "quantize": quantize, "backend": backend}
    record = _read_record(record_path)
    index = None if record is None else _reusable(path, record, wanted)
    if record is not None and index is not None:
        config.progress(f"{name} {pooling}: reusing the encoded corpus in {path}")
        return index, record["ingest_docs_per_s"]
    record_path.unlink(missing_ok=True)  # before the index it describes goes
    shutil.rmtree(path, ignore_errors=True)
    index = Index.create(
        path,
        model=config.model,
        pooling=pooling,
        transform="none",
        quantize=quantize,
        backend=backend,
        chunk_tokens=chunk_tokens,
    )
    config.progress(f"{name} {pooling}: encoding {corpus}")
    report = index.ingest(corpus)
    _write_record(
        record_path, {**wanted, "documents": len(index), "ingest_docs_per_s": report.docs_per_second}
    )
    return index, report.docs_per_second


def _reusable(path: Path, record: dict[str, Any], wanted: dict[str, str]) -> Index | None:
    """The encoded index at `path`, open, if it was encoded as `wanted` and the record counts the documents
    it holds (an interrupted encoding leaves no record); else None."""
    from ..errors import IndexStateError
    from ..index import Index

    try:
        index = Index.open(path)
    except IndexStateError:
        return None
    settings = index.settings
    encoded = {"pooling": settings.pooling, "quantize": settings.quantize, "backend": settings.backend}
    if encoded == wanted and record["documents"] == len(index):
        return index
    index.close()
    return None


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    valid = isinstance(record, dict) and all(
        isinstance(record.get(key), (int, float)) for key in ("documents", "ingest_docs_per_s")
    )
    return record if valid else None


def _write_record(path: Path, record: dict[str, Any]) -> None:
    from ..storage.files import atomic_write_text

    atomic_write_text(path, json.dumps(record, indent=2) + "\n")


def _search_ms(
    index: Index, queries: np.ndarray, texts: list[str], rerank: int, how: dict[str, Any]
) -> tuple[float, float]:
    """Median and 90th percentile milliseconds of one search (transform, vector search, keyword search, fusion, metadata join), one
    query at a time, its encoding and snippets aside: a snippet's cost is the same for every setting a sweep
    compares (benchmarks/results/text-controls.md measures it)."""
    timings = []
    for query, text in list(zip(queries, texts))[:TIMED_QUERIES]:
        started = time.perf_counter()
        index.search_vectors(query[None, :], k=10, rerank=rerank, texts=[text], crop=0, **how)
        timings.append(time.perf_counter() - started)
    return 1000 * float(np.median(timings)), 1000 * float(np.percentile(timings, 90))
