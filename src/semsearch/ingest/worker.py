"""What a Dask worker runs for an ingest (distributed.py submits it): each task gets the index's settings, and
the worker loads the encoder they name once per process, on one core per task (`dask worker --nthreads N` runs
N at once). Tasks encode a partition (the unit of ingest.encode_documents), a list of texts (calibration's
pseudo-queries and targets), or the quantized encoder against fp32 on a sample (ingest.quantize_fidelity), so
a cluster's driver loads no model. Each gives what the same call gives in the driver's process, bit for bit:
an encoder's vectors depend on the texts of each call, not on its threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..encoding import Encoder
from ..encoding.factory import make_encoder
from ..storage.manifest import IndexSettings
from .chunking import Chunker
from .creation import make_chunker
from .documents import Document
from .pipeline import EncodedPartition, encode_documents, quantize_fidelity

# One encoder per index settings and process.
_LOADED: dict[IndexSettings, tuple[Encoder, Chunker | None]] = {}
_LOADING = threading.Lock()


def encode_partition_task(
    docs: list[Document], settings: IndexSettings, topic: str, number: int
) -> EncodedPartition:
    """One partition encoded with the worker's encoder; progress goes to the driver as (partition, documents)
    events on `topic`."""
    import distributed

    encoder, chunker = worker_encoder(settings)
    worker = distributed.get_worker()
    report = lambda n: worker.log_event(topic, (number, n))  # noqa: E731
    return encode_documents(
        docs, encoder.encode, settings.encoder_dim, chunker, None, report, settings.raw_precision
    )


def encode_texts_task(texts: list[str], settings: IndexSettings) -> np.ndarray:
    """The worker's encoder's vectors of these texts, as one call of it."""
    return worker_encoder(settings)[0].encode(texts)


def fidelity_task(texts: list[str], settings: IndexSettings) -> dict[str, Any]:
    """The worker's quantized encoder against fp32 on these texts; the fp32 model is loaded for this once."""
    encoder = worker_encoder(settings)[0]
    return quantize_fidelity(texts, settings, encoder.encode, _where(settings), threads=encoder.threads)


def worker_encoder(settings: IndexSettings) -> tuple[Encoder, Chunker | None]:
    """This process's encoder (loaded) and chunker for an index's settings."""
    with _LOADING:
        if settings not in _LOADED:
            # As the CLI does: models are local directories, and no tokenizer threads behind Dask's own.
            for name, value in (("HF_HUB_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
                os.environ.setdefault(name, value)
            encoder = make_encoder(_where(settings), settings, settings.quantize)
            encoder.threads = 1  # a task per core: the worker's threads run as many tasks
            _LOADED[settings] = encoder.load(), make_chunker(settings, lambda: encoder)
        return _LOADED[settings]


def _where(settings: IndexSettings) -> Path:
    """What errors name in place of an index path, which a worker does not have."""
    return Path(f"the index being ingested ({settings.model_name})")
