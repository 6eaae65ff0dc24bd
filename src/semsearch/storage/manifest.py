"""The index directory's JSON manifest: the index's settings (what it is) and its state (what it holds now),
kept apart in code and written as one flat JSON object (the on-disk format of every release so far)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import IndexStateError
from ..settings import DEFAULT_RECALL_TARGET, TransformKind, TransformSpec
from .damage import DamagedFile, brief
from .files import atomic_write_text

FORMAT_VERSION = 1
FILE = "manifest.json"
PENDING = "manifest.pending.json"  # the next generation's manifest, until it is published


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class IndexSettings:
    """What an index is: fixed when it is made, except what a refit changes (transform, dims, power, flow
    settings, index type, rerank). `dims_requested` None keeps every dimension the corpus spans."""

    model: str  # DEFAULT_MODEL, NO_MODEL, or the model directory's absolute path
    model_name: str
    model_fingerprint: str
    pooling: str
    max_length: int
    normalize: bool
    encoder_dim: int
    transform: str
    power: float | None
    dims_requested: int | None = None
    quantize: str = "none"  # of the encoder's weights (int8: faster, slightly different vectors)
    # How an onnx int8 encoder quantizes activations (encoding.Int8Method): per-row (new indexes), or dynamic,
    # per batch (indexes made before per-row, which lack the field; their queries keep it).
    int8_method: str = "dynamic"
    backend: str = "torch"  # what runs the encoder: onnx (new indexes' default) or torch (and older indexes)
    index_type: str = (
        "flat"  # as asked: flat, flat-sq8, hnsw, hnsw-sq8, ivf, pq or auto (new: auto; older: flat)
    )
    flow_epochs: int = 1
    seed: int = 0
    rerank: int = 0  # candidates a query re-scores with the raw vectors unless it says otherwise
    batch_size: int | None = None  # texts per batch; None: by token budget (encoding.TOKEN_BUDGET)
    recall_target: float = DEFAULT_RECALL_TARGET  # recall@10 hnsw / ivf / pq are tuned for at build
    # Passages (chunking.py): tokens each, title and special tokens included (0: one vector per document, cut at
    # max_length, as every index made before chunking), and the tokens consecutive passages share.
    chunk_tokens: int = 0
    chunk_overlap: int = 0
    # Of the raw vectors an ingest keeps (settings.RawPrecision; each segment records its own): older indexes
    # float32, which their new segments stay at.
    raw_precision: str = "float32"

    @property
    def spec(self) -> TransformSpec:
        power = self.power if self.transform == TransformKind.WHITEN.value else None
        return TransformSpec(
            TransformKind(self.transform), self.dims_requested, power, self.flow_epochs, self.seed
        )

    def with_changes(self, **changes: Any) -> IndexSettings:
        return replace(self, **changes)


@dataclass(frozen=True)
class IndexState:
    """What an index holds now; every write publishes a new one with its generation."""

    count: int = 0  # documents
    passages: int | None = None  # vector rows (None, from before chunking: one per document)
    long_documents: int = 0  # documents of more than one passage
    generation: int = 0
    next_pk: int = 0
    segments: tuple[dict, ...] = ()  # the raw vector segments (rawvectors.Segment as JSON)
    dims: int | None = None  # as fitted (None until the first documents arrive)
    drift: float | None = None  # of the transform from the corpus statistics (0 right after a fit)
    index_structure: str | None = None  # the FAISS structure built, e.g. "IVF1372,Flat nprobe=85"
    # int8 against fp32 on 64 of the first documents ingested: {"mean_cosine", "min_cosine", "documents"}
    quantize_fidelity: dict | None = None
    # The approximate index's search parameters as tuned at build (vectorindex.VectorIndex.params: efSearch or
    # nprobe, exact_rows, filtered levels) and the recall@10 against flat measured with them; None: untuned.
    search_params: dict | None = None
    measured_recall: float | None = None
    # An hnsw graph's adds: the rows of each, in order, as [rows, times] runs (vectorindex.VectorIndex.blocks,
    # which its graph depends on); None: not a graph, or built before they were kept.
    graph_blocks: list | None = None
    # The fusion weight and default mode the corpus chose for itself (calibration.Calibration as JSON); None:
    # not calibrated (too few documents, or too few with sentences to spare), hybrid at settings.DEFAULT_ALPHA.
    calibration: dict | None = None
    # How anisotropic the raw vectors are and what the transform made of them (transforms/isotropy.py); None:
    # written before the figures were kept (`info` computes them from the files).
    isotropy: dict | None = None
    created: str = field(default_factory=now)
    updated: str = field(default_factory=now)

    @property
    def rows(self) -> int:
        """Vector rows: a passage each (one per document before chunking)."""
        return self.count if self.passages is None else self.passages

    def with_changes(self, **changes: Any) -> IndexState:
        return replace(self, **changes)


@dataclass(frozen=True)
class Manifest:
    settings: IndexSettings
    state: IndexState

    def save(self, directory: Path, name: str = FILE) -> Manifest:
        """Write atomically, stamped with the time; returns what was written."""
        saved = Manifest(self.settings, self.state.with_changes(updated=now()))
        data = {**asdict(saved.settings), **asdict(saved.state), "format_version": FORMAT_VERSION}
        data["segments"] = list(data["segments"])
        atomic_write_text(Path(directory) / name, json.dumps(data, indent=2) + "\n")
        return saved

    @classmethod
    def load(cls, directory: Path, name: str = FILE) -> Manifest:
        path = Path(directory) / name
        if not path.is_file():
            what = (
                "does not exist"
                if not Path(directory).exists()
                else "is not a semsearch index (no manifest.json)"
            )
            partial = Path(directory).parent / f".{Path(directory).name}.partial"  # ingest/first.py
            if partial.is_dir():
                what += f": a first ingest into it was interrupted; run it again to resume from {partial}"
            raise IndexStateError(f"{directory} {what}")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise damaged(path, f"unreadable: {brief(error)}") from None
        if not isinstance(data, dict):
            raise damaged(path, "not a JSON object")
        version = data.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise IndexStateError(
                f"{path}: written by a newer semsearch (format {version}, this one reads up to {FORMAT_VERSION});"
                " upgrade semsearch"
            )
        try:
            # Keys of other releases (a benchmark figure once lived here) are ignored.
            settings = IndexSettings(**_known(IndexSettings, data))
            state = IndexState(**_known(IndexState, data))
        except TypeError as error:
            raise damaged(path, f"incomplete: {brief(error)}") from None
        return cls(settings, state.with_changes(segments=tuple(state.segments)))


def damaged(path: Path, reason: str) -> DamagedFile:
    """A manifest that cannot be read. Each generation's directory keeps a copy of the manifest it published
    (generations.py), which a repair restores, the document store naming the generation."""
    if path.name == FILE and any(path.parent.glob(f"gen-*/{FILE}")):
        repair = "run `semsearch check --repair` to restore it from the copy its generation keeps"
    else:
        repair = "restore it from a backup, or re-ingest the corpus into a new index"
    return DamagedFile(path, reason, repair)


def _known(kind: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {key: value for key, value in data.items() if key in names}
