"""The index directory's JSON manifest: typed settings, counts and the format version."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from .errors import IndexStateError
from .storage import atomic_write_text

FORMAT_VERSION = 1
FILE = "manifest.json"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class Manifest:
    model: str  # DEFAULT_MODEL, or the model directory's absolute path
    model_name: str
    model_fingerprint: str
    pooling: str
    max_length: int
    normalize: bool
    encoder_dim: int
    transform: str
    dims: int | None  # as fitted (None until the first documents arrive, for a requested-all)
    power: float | None
    dims_requested: int | None = None
    quantize: str = "none"  # of the encoder's weights (int8: faster, slightly different vectors)
    # int8 against fp32 on 64 of the first documents ingested: {"mean_cosine", "min_cosine", "documents"}
    quantize_fidelity: dict | None = None
    backend: str = "torch"  # what runs the encoder: onnx (new indexes' default) or torch (and older indexes)
    index_type: str = "flat"  # as asked: flat, hnsw, ivf, pq or auto (new indexes: auto; older: flat)
    index_structure: str | None = None  # the FAISS structure built for it, e.g. "IVF1372,Flat nprobe=85"
    flow_epochs: int = 1  # flow training settings
    seed: int = 0
    rerank: int = 0  # candidates a query re-scores with the raw vectors unless it says otherwise
    batch_size: int | None = None  # texts per batch; None: by token budget (encoder.TOKEN_BUDGET)
    count: int = 0
    generation: int = 0
    next_pk: int = 0
    segments: list[dict] = field(default_factory=list)
    drift: float | None = None  # of the transform from the corpus statistics (0 right after a fit)
    ingest_docs_per_s: float | None = None  # of the first ingest (the benchmark reports it)
    format_version: int = FORMAT_VERSION
    created: str = field(default_factory=now)
    updated: str = field(default_factory=now)

    def save(self, directory: Path, name: str = FILE) -> None:
        self.updated = now()
        atomic_write_text(Path(directory) / name, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path, name: str = FILE) -> Manifest:
        path = Path(directory) / name
        if not path.is_file():
            what = (
                "does not exist"
                if not Path(directory).exists()
                else "is not a semsearch index (no manifest.json)"
            )
            raise IndexStateError(f"{directory} {what}")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise IndexStateError(f"{path}: unreadable manifest ({error})") from None
        version = data.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise IndexStateError(
                f"{path}: written by a newer semsearch (format {version}, this one reads up to {FORMAT_VERSION});"
                " upgrade semsearch"
            )
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{key: value for key, value in data.items() if key in known})
        except TypeError as error:
            raise IndexStateError(f"{path}: incomplete manifest ({error})") from None
