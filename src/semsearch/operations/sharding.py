"""`semsearch shard`: an index cut into shards by document, nothing encoded again.

Each shard is an ordinary index directory (`info`, `check`, `backup` work on it): an exact copy of the source
(operations/backup.py) with the documents of the other shards deleted (writes.delete), so that it keeps the
source's transform, its trained vector index (an ivf's quantizer, a pq's codebooks, flat-sq8's ranges: the
codes of its rows are the source's; an hnsw graph, which cannot remove, is built again over its rows), and the
source's document pks and vector rows (ties break by them as in the source). Beside the shards: the whole
corpus's keyword statistics and a manifest naming the shards, their generations, and the source's calibration
(storage/shardmanifest.py). The sharded directory is built beside its path and renamed into place whole."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import IndexStateError, SettingsError
from ..retrieval.bm25matrix import SCRATCH, Bm25Matrix
from ..storage.backup import BACKUP_FILE
from ..storage.files import fsync_directory
from ..storage.shardmanifest import KeywordStatistics, ShardEntry, ShardManifest, shard_of
from ..storage.store import DocumentStore
from . import writes
from .backup import backup
from .opening import open_directory

Told = Callable[[str], None]


def shard_name(number: int) -> str:
    return f"shard-{number:03d}"


def cut(source: Path, shards: int, out: Path, wait: float, told: Told | None = None) -> ShardManifest:
    """Cut the index in `source` into `shards` shard indexes in the new directory `out`; `told`: each step."""
    say = told or (lambda line: None)
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise SettingsError(f"must be a whole number of at least 1, got {shards!r}", setting="shards")
    if out.exists() or out.is_symlink():
        raise IndexStateError(f"{out} already exists: cut into a new directory")
    if not out.parent.is_dir():
        raise IndexStateError(f"{out.parent} does not exist: make it first")
    directory = open_directory(source, wait)
    try:
        with directory.pinned():
            directory.require_fitted()
            state = directory.state
            if shards > state.count:
                raise SettingsError(
                    f"{source} holds {state.count} documents: at most that many shards", setting="shards"
                )
            statistics = keyword_statistics(directory.store, state.count)
            pks, names = directory.store.content_names()
            owners = np.array([shard_of(name.split("\0", 1)[0], shards) for name in names], dtype=np.int64)
        calibration, rerank, generation = state.calibration, directory.settings.rerank, state.generation
    finally:
        directory.close()
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        entries = [cut_one(source, staging, number, pks[owners != number], generation, wait, say)
                   for number in range(shards)]  # fmt: skip
        statistics.save(staging)
        manifest = ShardManifest(tuple(entries), str(source.resolve()), calibration, rerank)
        manifest.save(staging)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_directory(out.parent)
    return manifest


def cut_one(
    source: Path, staging: Path, number: int, others: np.ndarray, generation: int, wait: float, say: Told
) -> ShardEntry:
    """Shard `number`: a copy of the source without the documents of the others (their pks)."""
    name = shard_name(number)
    backup(source, staging / name)
    (staging / name / BACKUP_FILE).unlink()  # the copy's checksums, which the deletes below outdate
    shard = open_directory(staging / name, wait)
    try:
        if shard.state.generation != generation:
            raise IndexStateError(f"{source} changed while it was being cut: run the cut again")
        with shard.writing():
            if len(others):
                shard.take_up(writes.delete(shard, others.tolist()))
        entry = ShardEntry(name, shard.state.generation, shard.state.count)
    finally:
        shard.close()
    say(f"{name}: {entry.documents:,} documents")
    return entry


def keyword_statistics(store: DocumentStore, documents: int) -> KeywordStatistics:
    """The whole corpus's bm25 statistics, read from its keyword index (none: no keyword index)."""
    if not store.has_keywords:
        return KeywordStatistics(documents, 0, {})
    matrix = Bm25Matrix.of_rows(SCRATCH, store.keyword_term_rows(), documents)
    return matrix.statistics(documents)
