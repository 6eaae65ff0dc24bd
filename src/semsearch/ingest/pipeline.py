"""Ingest: documents -> raw vectors (encoded, or given) -> statistics -> raw segments and stored rows.

`encode_documents` is the unit of work: one partition of documents in, cut into passages, their raw vectors
(`encode_partition`), partial statistics and spans out. It touches no index, lock or global state, so a process
that has only the encoder (a remote worker) can run it; `add_documents` cuts the documents into partitions of a
fixed size, has a `PartitionRunner` encode them (in this process, or on a cluster: distributed.py) and stores
the results in partition order, so where they were encoded changes nothing."""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..encoding.factory import make_encoder
from ..settings import DRIFT_LIMIT, Quantize
from ..storage.faults import fault_point
from ..storage.manifest import IndexSettings
from ..storage.rawspool import SegmentWriter
from ..storage.rawvectors import FLOAT32, RawVectors, as_kept
from ..storage.resumecache import ResumeCache
from ..storage.store import DocumentStore
from ..transforms.stats import RunningStats
from .chunking import Chunker, Passage, Span, given_passages
from .documents import Document

# Documents encoded, stored and counted together (a partition): length-sorted across the whole partition, so a
# vector's last bits depend on its partition's composition, and partitions are cut at this size wherever they run.
# Small enough that a cluster's workers share a corpus evenly (20,000 documents: 10 tasks, not 5 for 2 workers),
# large enough that sorting leaves little padding and that each task's statistics sent back (a 384 x 384 float64
# comoment, 1.2 MB) stay under half its vectors' bytes.
CHUNK_DOCS = 2048
# Documents parsed as they are read (files) come in partitions of this many, then twice as many, and so on up to
# the partition size: the encoder starts once the first files are parsed, not all of them, and the files after
# them are parsed while it runs (ahead.py). A fixed rule, so the same folder is cut the same way every time. Not
# smaller: on a folder of short notes, partitions of 32 documents and up made the encoding 1.3-1.5x slower.
STREAMED_FIRST_PARTITION = 256
RESUME_EVERY = 512  # documents encoded between two fsyncs of the resume cache
# Passages of its first chunk an int8 index also encodes in fp32 once (info shows it): the texts it encodes, not
# whole documents (a document's full text costs up to its max tokens each, in fp32: a first ingest of 60 short
# documents spent 2/3 of its time here)
FIDELITY_SAMPLE = 32

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
    restored: tuple[str, ...] = ()  # what of an export was kept: "calibration", "transform" (exported.py)
    recalibrated: bool = False  # calibrated again after the add: `--refit auto` and a stale calibration
    moved: int = 0  # documents whose metadata or places changed, not their passages: updated, not encoded

    def kept(self, *made_again: str) -> tuple[str, ...]:
        """What of an export is still kept once the parts `made_again` were made anew."""
        return tuple(part for part in self.restored if part not in made_again)

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
    keys: list[str | None] = field(default_factory=list)  # each row's resume-cache key (None: a given vector)
    spans: list[list[Span]] = field(default_factory=list)  # each document's passages (encode_documents)


# Encodes partitions (each the documents to encode of one partition), pulling them as it needs them, and yields
# their results in the same order: in this process, or on a cluster (distributed.py).
PartitionRunner = Callable[[Iterable[list[Document]]], Iterator[EncodedPartition]]


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
    precision: str = FLOAT32,
) -> EncodedPartition:
    """Raw vectors of the documents: those made elsewhere as given; from the resume cache where an interrupted
    run left them; else encoded now, similar lengths together (and appended to the cache every RESUME_EVERY).
    `progress(n)` counts documents as they are done: at once for given and cached ones, then batch by batch.
    The vectors and their statistics are of the rows as a segment keeps them at `precision` (rawvectors.as_kept),
    so a delete takes out of the statistics exactly what the ingest put in."""
    out = np.empty((len(docs), dim), dtype=np.float32)
    given = [i for i, doc in enumerate(docs) if doc.vector is not None]
    if given:
        out[given] = np.stack([doc.vector for doc in docs if doc.vector is not None])
    rest = np.array([i for i, doc in enumerate(docs) if doc.vector is None], dtype=np.int64)
    found = np.zeros(len(rest), dtype=bool)
    row_keys: list[str | None] = [None] * len(docs)
    if len(rest):
        keys = [text_key(docs[i].embedding_text) for i in rest]
        for i, key in zip(rest.tolist(), keys):
            row_keys[i] = key
        if cache is not None:
            found, cached = cache.lookup(keys)
            out[rest[found]] = cached
        todo = np.flatnonzero(~found)
        if len(todo) and encode is None:
            raise ValueError("documents without vectors need an encoder")
        if progress and len(docs) - len(todo):
            progress(len(docs) - len(todo))
        # Similar lengths together across the partition (the encoder sorts only within each call): less padding.
        todo = todo[np.argsort([len(docs[rest[i]].embedding_text) for i in todo], kind="stable")]
        for begin in range(0, len(todo), RESUME_EVERY):
            assert encode is not None  # refused above where there is something to encode
            part = todo[begin : begin + RESUME_EVERY]
            encoded = encode([docs[rest[i]].embedding_text for i in part], progress)
            if cache is not None:
                cache.append([keys[i] for i in part], encoded)
            out[rest[part]] = encoded
    elif progress and len(docs):
        progress(len(docs))  # all given
    out = as_kept(out, precision)
    return EncodedPartition(out, RunningStats.of(out), int(found.sum()), row_keys)


def encode_documents(
    docs: Sequence[Document],
    encode: Encode | None,
    dim: int,
    chunker: Chunker | None = None,
    cache: ResumeCache | None = None,
    progress: Progress | None = None,
    precision: str = FLOAT32,
) -> EncodedPartition:
    """One partition's documents cut into passages (the chunker's; without one, a passage per document), their
    raw vectors (encode_partition, in passage order) and each document's spans. `progress` counts documents."""
    passages = split(docs, chunker)
    flat = [passage for parts in passages for passage in parts]
    counted = whole_documents([len(parts) for parts in passages], progress) if progress else None
    part = encode_partition(flat, encode, dim, cache, counted, precision)
    part.spans = [[passage.span for passage in parts] for parts in passages]
    return part


def whole_documents(passage_counts: Sequence[int], progress: Progress) -> Progress:
    """A progress that takes passages done (in order) and tells `progress` the documents they complete: a bar
    counts whole documents, never a share of one. A progress that counts passages too (a `passages(found=,
    done=)` method: the CLI's bar of a few long documents) is told the partition's passages once they are cut,
    and each batch of them as it is encoded."""
    ends = np.cumsum(passage_counts)
    done = [0, 0]  # passages, documents
    passages_of = getattr(progress, "passages", None)
    if passages_of is not None:
        passages_of(found=int(ends[-1]) if len(ends) else 0)

    def count(passages: int) -> None:
        if passages_of is not None:
            passages_of(done=passages)
        done[0] += passages
        documents = int(np.searchsorted(ends, done[0], side="right"))
        if documents > done[1]:
            progress(documents - done[1])
            done[1] = documents

    return count


def cached_partition(
    docs: Sequence[Document], dim: int, chunker: Chunker | None, cache: ResumeCache, precision: str = FLOAT32
) -> EncodedPartition | None:
    """The partition's result from the resume cache alone, or None where any of its passages is not there."""
    keys = [text_key(p.embedding_text) for parts in split(docs, chunker) for p in parts if p.vector is None]
    if not cache.lookup(keys)[0].all():
        return None
    return encode_documents(docs, None, dim, chunker, cache, precision=precision)


def fidelity_sample(
    docs: Sequence[Document], chunker: Chunker | None, size: int = FIDELITY_SAMPLE
) -> list[str]:
    """Passages to compare quantized with fp32 vectors on: the ones the ingest encodes, spread over their
    lengths, short to long; only `size` documents spread so are cut again, not the whole partition."""
    chosen = _spread([doc for doc in docs if doc.vector is None], size, lambda doc: len(doc.embedding_text))
    texts = [p.embedding_text for parts in split(chosen, chunker) for p in parts if p.vector is None]
    return _spread(texts, size, len)


def _spread(items: list, size: int, length: Callable[[Any], int]) -> list:
    """At most `size` of the items, evenly spread over them sorted by `length`."""
    ordered = sorted(items, key=length)
    if not ordered:
        return []
    return [ordered[i] for i in np.linspace(0, len(ordered) - 1, min(size, len(ordered))).astype(int)]


def quantize_fidelity(
    texts: list[str],
    settings: IndexSettings,
    encode: Callable[[list[str]], np.ndarray],
    where: Path,
    threads: int = 0,
) -> dict[str, Any]:
    """The quantized encoder (`encode`) against the same model in fp32 on these texts (`fidelity`); the fp32
    model is loaded for this, on `threads` (0: every core), and freed. `where`: the index, for errors."""
    exact_encoder = make_encoder(where, settings, Quantize.NONE.value)
    exact_encoder.threads = threads
    try:
        exact = exact_encoder.encode(texts)
    finally:
        exact_encoder.release()
    return fidelity(encode(texts), exact)


def fidelity(quantized: np.ndarray, exact: np.ndarray) -> dict[str, Any]:
    """Cosine of quantized vectors to the fp32 model's on the same texts (`info` shows it)."""
    from ..transforms import normalize_rows

    cosines = np.sum(normalize_rows(exact) * normalize_rows(quantized), axis=1)
    return {
        "mean_cosine": round(float(cosines.mean()), 4),
        "min_cosine": round(float(cosines.min()), 4),
        "passages": len(cosines),
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
    moved: int = 0  # stored documents given new metadata or places, their passages and vectors kept
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
            moved=self.moved,
            **extra,
        )


def add_documents(
    documents: Iterable[Document],
    *,
    store: DocumentStore,
    raw: RawVectors,
    stats: RunningStats,
    writer: SegmentWriter,
    run: PartitionRunner,
    first_pk: int,
    progress: Progress | None = None,
    partition_docs: int = CHUNK_DOCS,
    first_partition: int | None = None,
    done: Added | None = None,
    stored: Callable[[Added], None] | None = None,
    repeated: Callable[[str], Exception] | None = None,
) -> Added:
    """Store the documents not already here unchanged, inside the caller's SQLite transaction, a partition of
    `partition_docs` at a time: `run` encodes each partition's new documents (a vector per passage), and in
    partition order their raw vectors go to the segment `writer` and into `stats`; an id already here with
    other content is replaced (upsert): its old vectors leave `stats`, and their rows are listed for the vector
    index to drop. Partitions are looked up in the store as `run` pulls them (ids are unique in a corpus).
    `first_partition`: the first partition's size, each next one twice the last up to `partition_docs`.
    `done`: what an interrupted run of this write stored before (ingest/resume.py); `stored(done)`: called
    after each partition is stored. `repeated(id)`: an id already stored, or twice in a partition, is this
    error, not a replacement (a first ingest's corpus checked as it is stored)."""
    done = done or Added(next_pk=first_pk)
    planned: deque[tuple[list[Document], list[int]]] = deque()  # pulled by `run`, not yet stored
    moved: dict[int, Document] = {}  # pk -> the document: only its metadata or places changed

    def partitions() -> Iterator[list[Document]]:
        for chunk in _chunks(documents, partition_docs, first_partition or partition_docs):
            known = store.existing_ids([doc.id for doc in chunk])
            if repeated is not None and (known or len({doc.id for doc in chunk}) < len(chunk)):
                raise repeated(next(iter(known), chunk[0].id))
            fresh = [doc for doc in chunk if doc.id not in known or known[doc.id][1] != doc.content_hash]
            placed = same_passages(store, fresh, known)
            moved.update({known[doc.id][0]: doc for doc in fresh if doc.id in placed})
            fresh = [doc for doc in fresh if doc.id not in placed]
            done.unchanged += len(chunk) - len(fresh) - len(placed)
            if progress and len(chunk) > len(fresh):
                progress(len(chunk) - len(fresh))  # unchanged or moved: nothing to encode
            if fresh:
                planned.append((fresh, sorted(known[doc.id][0] for doc in fresh if doc.id in known)))
                yield fresh

    for part in run(partitions()):
        fault_point("encoded")
        fresh, old = planned.popleft()
        if old:
            old_rows = store.passage_pks(np.array(old, dtype=np.int64))
            stats.remove(raw.read(old_rows))
            store.delete(old)
            done.replaced += old_rows.tolist()
            done.replaced_documents += len(old)
        done.resumed += part.from_cache
        writer.append(part.vectors)
        stats.merge(part.stats)
        firsts = done.next_pk + np.concatenate([[0], np.cumsum([len(s) for s in part.spans])[:-1]])
        store.insert(fresh, firsts.tolist(), part.spans)
        done.next_pk += len(part.vectors)
        done.added += len(fresh)
        done.passages += len(part.vectors)
        if stored is not None:
            stored(done)
    if moved:
        store.replace_places(list(moved.values()), list(moved))
        done.moved = len(moved)
    return done


def same_passages(
    store: DocumentStore, docs: Sequence[Document], known: dict[str, tuple[int, str]]
) -> set[str]:
    """The ids of those documents whose stored version differs only in metadata or where its sections sit
    (`Document.passages_hash`): their passages and vectors stand. Only where the stored version is the one its
    stored hash describes with no vector of its own (one that came with a vector is encoded now)."""
    candidates = [doc for doc in docs if doc.id in known and doc.vector is None and doc.passages is None]
    stored = store.stored_documents([known[doc.id][0] for doc in candidates]) if candidates else {}
    same = set()
    for doc in candidates:
        old, digest = stored[known[doc.id][0]]
        if old.content_hash == digest and old.passages_hash == doc.passages_hash:
            same.add(doc.id)
    return same


def split(docs: Sequence[Document], chunker: Chunker | None) -> list[list[Passage]]:
    """Each document's passages: the chunker's, or without one the whole document."""
    if chunker is not None:
        return chunker.split(docs)
    return [given_passages(doc) for doc in docs]


def _chunks(items: Iterable[Document], size: int, first: int) -> Iterable[list[Document]]:
    """Lists of `first` items, then each twice the last, up to `size`."""
    chunk: list[Document] = []
    limit = min(first, size)
    for item in items:
        chunk.append(item)
        if len(chunk) == limit:
            yield chunk
            chunk, limit = [], min(2 * limit, size)
    if chunk:
        yield chunk
