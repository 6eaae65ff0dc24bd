"""ShardedIndex: the facade of an index cut into shards (`semsearch shard`), searched as the one index it was cut
from answers (operations/shardsearch.py says what is exact and why), its shards answering in this process or
on a cluster's workers (operations/shardcluster.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .encoding import Encoder
from .encoding.factory import make_encoder
from .index import Searching
from .operations import searching
from .operations.shardsearch import LocalShards, ShardedParts, Shards
from .retrieval.query import Page, QueryDefaults
from .retrieval.search import Results
from .settings import NO_MODEL, SearchMode
from .storage.manifest import Manifest
from .storage.shardmanifest import KeywordStatistics, ShardManifest

__all__ = ["ShardedIndex"]


class ShardedIndex(Searching):
    """A sharded index directory, opened with `ShardedIndex.open(path, cluster=...)`; `search`, `search_many`
    and `search_vectors` as `Index` has them."""

    def __init__(self, path: Path, manifest: ShardManifest, shards: Shards, parts: ShardedParts, first: Path):
        self.path, self.manifest, self.shards, self.parts = path, manifest, shards, parts
        self.settings = Manifest.load(first).settings  # every shard's: the source's
        self._first = first
        self._encoder: Encoder | None = None

    @classmethod
    def open(cls, path: str | Path, cluster: Any = None) -> ShardedIndex:
        """Open the sharded index in `path`; `cluster`: None (every shard in this process), a number of local
        worker processes, a Dask scheduler's address, or a `distributed.Client` (a searcher per shard on its
        workers)."""
        path = Path(path)
        manifest = ShardManifest.load(path)
        statistics = KeywordStatistics.load(path)
        if cluster is None:
            shards: Shards = LocalShards.open(path, manifest, statistics)
        else:
            from .operations.shardcluster import ClusterShards

            shards = ClusterShards.start(cluster, path, manifest, statistics)
        first = path / manifest.shards[0].name
        dim = Manifest.load(first).settings.encoder_dim
        try:
            parts = ShardedParts.of(path, shards, manifest, statistics, dim)
        except BaseException:
            shards.close()
            raise
        return cls(path, manifest, shards, parts, first)

    def close(self) -> None:
        self.shards.close()

    def __enter__(self) -> ShardedIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.parts.documents

    @property
    def query_defaults(self) -> QueryDefaults:
        """The source index's: its calibrated mode, weight and bands, its rerank depth."""
        fusible = self.parts.store.has_keywords and self.settings.model != NO_MODEL
        return QueryDefaults.recorded(fusible, self.manifest.rerank, self.manifest.calibration)

    @property
    def default_mode(self) -> SearchMode:
        return self.query_defaults.mode

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._encoder is None:
            self._encoder = make_encoder(self._first, self.settings, self.settings.quantize)
        return self._encoder.encode(list(texts))

    def _search(self, options, vectors, texts, k, where, page: Page, exclude=frozenset()) -> list[Results]:
        parts = self.parts.search_parts()
        return searching.search(parts, options, vectors, texts, k, where, page, exclude)

    @property
    def generation(self) -> int:
        """The sharded directory's generation (its manifest's), which every answer carries."""
        return self.manifest.generation

    def describe_shards(self) -> list[dict[str, Any]]:
        """Each shard: its name, generation, documents, the worker and process answering for it."""
        described = self.shards.each("describe")
        return [
            {key: shard[key] for key in ("name", "generation", "documents", "pid")} | {"worker": worker}
            for shard, worker in zip(described, self.shards.workers())
        ]
