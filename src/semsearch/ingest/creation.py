"""The settings of a new index: the user's options resolved against the model (its pooling, width and
whether it is a sentence-embedding model) and the defaults the benchmark chose (settings.py), and the check
that options given for an existing index agree with it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..encoding import (
    Encoder,
    ExportError,
    model_fingerprint,
    model_name,
    read_model_defaults,
    resolve_model_path,
)
from ..encoding.backend import Int8Method
from ..encoding.external import external_model
from ..errors import DataError, IndexStateError, SettingsError
from ..settings import (
    CHUNK_OVERLAP_SHARE,
    DEFAULT_BACKEND,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_DIMS,
    DEFAULT_INDEX_TYPE,
    DEFAULT_MODEL,
    DEFAULT_POWER,
    DEFAULT_QUANTIZE,
    DEFAULT_RAW_PRECISION,
    DEFAULT_RECALL_TARGET,
    DEFAULT_RERANK,
    DEFAULT_TRANSFORM,
    MIN_CHUNK_TOKENS,
    NO_MODEL,
    IndexOptions,
    Pooling,
    Quantize,
    RawPrecision,
    TransformKind,
    TransformSpec,
)
from ..storage.generations import WriterLock
from ..storage.manifest import FILE as MANIFEST_FILE
from ..storage.manifest import IndexSettings
from ..storage.store import DocumentStore
from .chunking import Chunker

log = logging.getLogger(__name__)


def new_settings(options: IndexOptions) -> IndexSettings:
    """The settings of a new index made with these options; loads (and for onnx exports) the model first, so
    a model that cannot be used fails before anything is written."""
    if options.model == NO_MODEL:
        if not options.dim:
            raise SettingsError("an index without a model needs the width of its vectors (dim)")
        return _settings(options, None, Pooling.MEAN.value, 0, False, options.dim, sentence_model=False)
    model_path = resolve_model_path(options.model)
    defaults = read_model_defaults(model_path)
    if options.dim is not None and options.dim != defaults.dim:
        raise DataError(f"vectors of width {options.dim}, but the model's dimension is {defaults.dim}")
    settings = _settings(
        options,
        model_path,
        options.pooling or defaults.pooling.value,
        options.max_length or defaults.max_length,
        defaults.normalize,
        defaults.dim,
        sentence_model=defaults.sentence_model,
    )
    return settings.with_changes(
        backend=_loadable_backend(model_path, settings, explicit=options.backend is not None)
    )


def _settings(
    options: IndexOptions,
    model_path: Path | None,
    pooling: str,
    max_length: int,
    normalize: bool,
    dim: int,
    *,
    sentence_model: bool,
) -> IndexSettings:
    transform, power, dims = options.transform, options.power, options.dims
    if transform is None:
        transform = DEFAULT_TRANSFORM.value
        power = DEFAULT_POWER if power is None else power
        dims = min(DEFAULT_DIMS, dim) if dims is None else dims
    spec = TransformSpec(
        TransformKind.parse(transform, "transform"), dims, power, options.flow_epochs or 1, options.seed or 0
    )
    spec.check_against(dim)
    rerank = options.rerank
    if rerank is None:
        reduced = dims is not None and dims < dim
        rerank = DEFAULT_RERANK if sentence_model and reduced else 0
    if model_path is None:
        identity: dict[str, Any] = dict(
            model=NO_MODEL, model_name=NO_MODEL, model_fingerprint=NO_MODEL, pooling=NO_MODEL
        )
        quantize = Quantize.NONE.value
    else:
        named = options.model is not None and options.model != DEFAULT_MODEL
        external = external_model(model_path)  # recorded by name: its package moves with the virtualenv
        identity = dict(
            model=external.name if external else str(model_path.resolve()) if named else DEFAULT_MODEL,
            model_name=model_name(model_path),
            model_fingerprint=model_fingerprint(model_path),
            pooling=pooling,
        )
        # an external model runs as its package ships it: nothing to quantize, no int8 fidelity to check
        quantize = Quantize.NONE.value if external else options.quantize or DEFAULT_QUANTIZE.value
    return IndexSettings(
        **identity,
        max_length=max_length,
        normalize=normalize,
        encoder_dim=dim,
        transform=spec.kind.value,
        power=spec.effective_power,
        dims_requested=dims,
        quantize=quantize,
        int8_method=Int8Method.PER_ROW.value,  # what int8 means in this release (older manifests: dynamic)
        backend=options.backend or DEFAULT_BACKEND.value,
        index_type=options.index_type or DEFAULT_INDEX_TYPE.value,
        flow_epochs=spec.epochs,
        seed=spec.seed,
        rerank=rerank,
        batch_size=options.batch_size,
        recall_target=options.recall_target or DEFAULT_RECALL_TARGET,
        raw_precision=options.raw_precision or default_raw_precision(spec.kind),
        **_chunking(options, max_length if model_path is not None else 0),
    )


def default_raw_precision(transform: TransformKind) -> str:
    """The raw vectors' precision where none is asked. Untransformed (`--transform none`), the index ranks by
    the vectors' own cosine and exact search (a filter's exact path, rerank) scores the raw rows as kept, so
    their precision is the ranking's: float16, whose top 10 of a filter is brute force's over the float32
    vectors (recall@10 1.000 on 200,000 given vectors where int4 finds 0.92-0.94 and int8 0.99-1.00,
    benchmarks/results/filter.md). Transformed, DEFAULT_RAW_PRECISION (the index ranks in the transform's
    space, and the bytes a passage stay within their bound)."""
    untransformed = transform is TransformKind.NONE
    return RawPrecision.FLOAT16.value if untransformed else DEFAULT_RAW_PRECISION.value


def _chunking(options: IndexOptions, max_length: int) -> dict[str, Any]:
    """Passage length and overlap: by default DEFAULT_CHUNK_TOKENS, at most the model's max_length (0 without a
    model: nothing to cut with)."""
    tokens = min(DEFAULT_CHUNK_TOKENS, max_length) if options.chunk_tokens is None else options.chunk_tokens
    if tokens and not max_length:
        raise SettingsError("an index without a model keeps the vectors it is given", setting="chunk_tokens")
    if tokens > max_length:
        raise SettingsError(
            f"must be at most the model's max_length ({max_length}): longer passages would be truncated",
            setting="chunk_tokens",
        )
    if tokens and tokens < MIN_CHUNK_TOKENS:
        raise SettingsError(f"must be 0 (no chunking) or at least {MIN_CHUNK_TOKENS}", setting="chunk_tokens")
    overlap = (
        (min(DEFAULT_CHUNK_OVERLAP, tokens // CHUNK_OVERLAP_SHARE) if tokens else 0)
        if options.chunk_overlap is None
        else options.chunk_overlap
    )
    if overlap and overlap >= tokens // 2:
        raise SettingsError(
            f"must be less than half the passage ({tokens} tokens), got {overlap}", setting="chunk_overlap"
        )
    return dict(chunk_tokens=tokens, chunk_overlap=overlap)


def _loadable_backend(model_path: Path, settings: IndexSettings, explicit: bool) -> str:
    """The backend the index will use: the one asked for, or by default onnx, falling back to torch (with a
    warning) for a model that cannot be exported faithfully."""

    def load(backend: str) -> None:
        Encoder(
            model_path,
            pooling=settings.pooling,
            max_length=settings.max_length,
            quantize=settings.quantize,
            backend=backend,
        ).load()

    try:
        load(settings.backend)
    except ExportError as error:
        if explicit:
            raise
        log.warning("%s; encoding with torch instead", error)
        load("torch")
        return "torch"
    return settings.backend


# What a create killed before its manifest was written leaves behind: the next create starts over on them.
CREATE_LEFTOVERS = {
    DocumentStore.FILE,
    f"{DocumentStore.FILE}-wal",
    f"{DocumentStore.FILE}-shm",
    WriterLock.FILE,
}


def check_new_directory(path: Path) -> None:
    """A new index goes into a new or empty directory (or one a killed create left)."""
    if (path / MANIFEST_FILE).exists():
        raise IndexStateError(f"{path} is already an index; open it with Index.open")
    if path.exists() and (not path.is_dir() or any(p.name not in CREATE_LEFTOVERS for p in path.iterdir())):
        raise IndexStateError(f"{path} exists and is not an empty directory")


def make_chunker(settings: IndexSettings, encoder: Callable[[], Encoder]) -> Chunker | None:
    """What cuts an index's long documents into passages (None: one vector per document)."""
    if not settings.chunk_tokens or settings.model == NO_MODEL:
        return None
    return Chunker(encoder().tokenizer, settings.chunk_tokens, settings.chunk_overlap)


def check_compatible(path: Path, settings: IndexSettings, options: IndexOptions) -> None:
    """Options given for an existing index must match it."""
    model = options.model
    # "none" with an existing index: vectors made elsewhere arrive, as wide as the index's (checked then).
    if model is not None and model != NO_MODEL:
        model_path = resolve_model_path(model)
        if settings.model == NO_MODEL or model_fingerprint(model_path) != settings.model_fingerprint:
            raise IndexStateError(
                f"{path} was built with model {settings.model_name} ({settings.model}), not {model}: "
                "use another index directory, or the same model"
            )
    if options.pooling is not None and options.pooling != settings.pooling:
        raise IndexStateError(
            f"{path} was built with pooling {settings.pooling}, not {options.pooling}: use another index directory"
        )
    have = {
        "transform": settings.transform,
        "dims": settings.dims_requested,
        "power": settings.power,
        "rerank": settings.rerank,
        "index_type": settings.index_type,
        "recall_target": settings.recall_target,
        "quantize": settings.quantize,
        "backend": settings.backend,
        "chunk_tokens": settings.chunk_tokens,
        "chunk_overlap": settings.chunk_overlap,
        "raw_precision": settings.raw_precision,
    }
    differ = {name: value for name, value in options.given().items() if name in have and value != have[name]}
    encoded = {
        name: value
        for name, value in differ.items()
        if name in ("quantize", "backend", "chunk_tokens", "chunk_overlap", "raw_precision")
    }
    if encoded:
        said = ", ".join(f"{name} {have[name]} (asked {value})" for name, value in encoded.items())
        raise IndexStateError(
            f"{path} has {said}: its documents were encoded so, and only encoding them again changes it; "
            "ingest the corpus into another index directory"
        )
    if differ:  # each of these a refit changes, from the kept raw vectors
        said = ", ".join(f"{name} {have[name]} (asked {value})" for name, value in differ.items())
        raise IndexStateError(
            f"{path} has {said}: change it with `semsearch refit`, or use another index directory"
        )
