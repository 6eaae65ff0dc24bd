"""Ingest: documents -> raw vectors (encoded, or given) -> statistics -> raw segments and stored rows.

`encode_partition` is the unit of work: one partition of documents in, its raw vectors and partial statistics
out. It touches no index, lock or global state, so a process that has only the encoder (a remote worker) can
run it; `add_documents` runs partitions in order into an index being written."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .chunking import Chunker, Passage
from .documents import Document
from .faults import fault_point
from .rawvectors import RawVectors, ResumeCache, SegmentWriter
from .settings import DRIFT_LIMIT
from .stats import RunningStats
from .store import DocumentStore

CHUNK_DOCS = 4096  # documents encoded, stored and counted together: length-sorted across the whole chunk
RESUME_EVERY = 512  # documents encoded between two fsyncs of the resume cache
FIDELITY_SAMPLE = 64  # documents of its first chunk an int8 index also encodes in fp32 once (info shows it)

Progress = Callable[[int], None]
Encode = Callable[[list[str], Progress | None], np.ndarray]  # texts, progress per batch -> vectors


@dataclass(frozen=True)
class AddReport:
    added: int
    unchanged: int
    seconds: float
    replaced: int = 0
    resumed: int = 0  # vectors taken from an interrupted run's cache instead of encoded
    drift: float | None = None  # of the kept transform from the corpus after the add (see DRIFT_LIMIT)
    refitted: bool = False
    young: bool = False  # refitted because the index is young (build.young): every add fits on all documents
    passages: int = 0  # vectors made for the documents added (more than them where long ones were cut)

    @property
    def refit_advised(self) -> bool:
        return not self.refitted and self.drift is not None and self.drift > DRIFT_LIMIT

    @property
    def docs_per_second(self) -> float:
        return self.added / self.seconds if self.seconds > 0 else 0.0


@dataclass
class EncodedPartition:
    vectors: np.ndarray  # (n, dim) float32 raw encoder vectors, in the partition's order
    stats: RunningStats  # of those vectors
    from_cache: int = 0  # how many came from the resume cache


def text_key(text: str) -> str:
    """The resume cache's key of a text to embed."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class Embeddable(Protocol):
    """A document or a passage of one: a text to embed, or a vector made elsewhere."""

    @property
    def embedding_text(self) -> str: ...

    @property
    def vector(self) -> np.ndarray | None: ...


def encode_partition(
    docs: Sequence[Embeddable],
    encode: Encode | None,
    dim: int,
    cache: ResumeCache | None = None,
    progress: Progress | None = None,
) -> EncodedPartition:
    """Raw vectors of the documents: those made elsewhere as given; from the resume cache where an interrupted
    run left them; else encoded now, similar lengths together (and appended to the cache every RESUME_EVERY).
    `progress(n)` counts documents as they are done: at once for given and cached ones, then batch by batch."""
    out = np.empty((len(docs), dim), dtype=np.float32)
    given = [i for i, doc in enumerate(docs) if doc.vector is not None]
    if given:
        out[given] = np.stack([docs[i].vector for i in given])
    rest = np.array([i for i, doc in enumerate(docs) if doc.vector is None], dtype=np.int64)
    found = np.zeros(len(rest), dtype=bool)
    if len(rest):
        if encode is None:
            raise ValueError("documents without vectors need an encoder")
        keys = [text_key(docs[i].embedding_text) for i in rest]
        if cache is not None:
            found, cached = cache.lookup(keys)
            out[rest[found]] = cached
        todo = np.flatnonzero(~found)
        if progress and len(docs) - len(todo):
            progress(len(docs) - len(todo))
        # Similar lengths together across the partition (the encoder sorts only within each call): less padding.
        todo = todo[np.argsort([len(docs[rest[i]].embedding_text) for i in todo], kind="stable")]
        for begin in range(0, len(todo), RESUME_EVERY):
            part = todo[begin : begin + RESUME_EVERY]
            encoded = encode([docs[rest[i]].embedding_text for i in part], progress)
            if cache is not None:
                cache.append([keys[i] for i in part], encoded)
            out[rest[part]] = encoded
    elif progress and len(docs):
        progress(len(docs))  # all given
    return EncodedPartition(out, RunningStats.of(out), int(found.sum()))


def fidelity_sample(docs: Sequence[Document], size: int = FIDELITY_SAMPLE) -> list[str]:
    """Texts to compare quantized with fp32 vectors on: spread over the documents' lengths, short to long."""
    texts = sorted((doc.embedding_text for doc in docs if doc.vector is None), key=len)
    if not texts:
        return []
    return [texts[i] for i in np.linspace(0, len(texts) - 1, min(size, len(texts))).astype(int)]


def fidelity(quantized: np.ndarray, exact: np.ndarray) -> dict[str, Any]:
    """Cosine of quantized vectors to the fp32 model's on the same texts (`info` shows it)."""
    from .transforms import normalize_rows

    cosines = np.sum(normalize_rows(exact) * normalize_rows(quantized), axis=1)
    return {
        "mean_cosine": round(float(cosines.mean()), 4),
        "min_cosine": round(float(cosines.min()), 4),
        "documents": len(cosines),
    }


@dataclass
class Added:
    """What `add_documents` did, for the generation that publishes it."""

    added: int = 0
    passages: int = 0
    unchanged: int = 0
    resumed: int = 0
    replaced: list[int] = field(default_factory=list)  # the old vector rows of changed documents
    replaced_documents: int = 0
    next_pk: int = 0
    refitted: bool = False  # the transform was fitted again on every document (a young index: build.young)
    started: float = field(default_factory=time.perf_counter)

    def report(self, **extra: Any) -> AddReport:
        return AddReport(
            self.added,
            self.unchanged,
            time.perf_counter() - self.started,
            replaced=self.replaced_documents,
            resumed=self.resumed,
            passages=self.passages,
            refitted=self.refitted,
            young=self.refitted,
            **extra,
        )


def add_documents(
    documents: Iterable[Document],
    *,
    store: DocumentStore,
    raw: RawVectors,
    stats: RunningStats,
    writer: SegmentWriter,
    cache: ResumeCache,
    encode: Encode | None,
    first_pk: int,
    progress: Progress | None = None,
    chunker: Chunker | None = None,
) -> Added:
    """Store the documents not already here unchanged, inside the caller's SQLite transaction: each new
    partition's raw vectors (a vector per passage, the `chunker`'s; without one, per document) go to the segment
    `writer` and into `stats`; an id already here with other content is replaced (upsert): its old vectors leave
    `stats`, and their rows are listed for the vector index to drop."""
    done = Added(next_pk=first_pk)
    for chunk in _chunks(documents, CHUNK_DOCS):
        known = store.existing_ids([doc.id for doc in chunk])
        fresh = [doc for doc in chunk if known.get(doc.id, (None, None))[1] != doc.content_hash]
        done.unchanged += len(chunk) - len(fresh)
        old = sorted(known[doc.id][0] for doc in fresh if doc.id in known)
        if old:
            old_rows = store.passage_pks(np.array(old, dtype=np.int64))
            stats.remove(raw.get(old_rows))
            store.delete(old)
            done.replaced += old_rows.tolist()
            done.replaced_documents += len(old)
        if fresh:
            passages = split(fresh, chunker)
            flat = [passage for parts in passages for passage in parts]
            share = len(fresh) / len(flat)  # the progress bar counts documents
            counted = (lambda n, share=share: progress(n * share)) if progress and share != 1 else progress
            part = encode_partition(flat, encode, stats.dim, cache, counted)
            fault_point("encoded")
            done.resumed += part.from_cache
            writer.append(part.vectors)
            stats.merge(part.stats)
            firsts = done.next_pk + np.concatenate([[0], np.cumsum([len(p) for p in passages])[:-1]])
            store.insert(fresh, firsts.tolist(), [[p.span for p in parts] for parts in passages])
            done.next_pk += len(flat)
            done.added += len(fresh)
            done.passages += len(flat)
        if progress and len(chunk) > len(fresh):
            progress(len(chunk) - len(fresh))  # unchanged: nothing to encode
    return done


def split(docs: Sequence[Document], chunker: Chunker | None) -> list[list[Passage]]:
    """Each document's passages: the chunker's, or without one the whole document."""
    if chunker is not None:
        return chunker.split(docs)
    return [[Passage(i, (0, len(doc.text)), doc.embedding_text, doc.vector)] for i, doc in enumerate(docs)]


def _chunks(items: Iterable[Document], size: int) -> Iterable[list[Document]]:
    chunk: list[Document] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
