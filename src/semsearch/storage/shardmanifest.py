"""A sharded index's directory: a manifest (`shards.json`) naming its shards (each an ordinary index directory
beside it) and the generation of each, the calibration and query defaults of the index they were cut from, and
the keyword statistics of the whole (`keywords.json`: documents, tokens, each term's document frequency), which
every shard's bm25 scores with so that a sharded answer is the one index's.

A document belongs to the shard its id's stable hash names (`shard_of`: BLAKE2b of the UTF-8 id, never Python's
salted hash), so every passage of a document is in one shard and a new id has one home."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IndexStateError
from .files import atomic_write_text

FORMAT_VERSION = 1
FILE = "shards.json"
KEYWORDS = "keywords.json"


def shard_of(doc_id: str, shards: int) -> int:
    """The shard a document id belongs to, the same in every process and release."""
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


@dataclass(frozen=True)
class KeywordStatistics:
    """What bm25 reads of the whole corpus: its documents, their tokens (a title's and a text's, each once), and
    how many documents hold each term."""

    documents: int
    tokens: int
    frequencies: dict[str, int] = field(repr=False)

    @property
    def average_length(self) -> float:
        return self.tokens / max(self.documents, 1)

    def save(self, directory: Path) -> None:
        atomic_write_text(Path(directory) / KEYWORDS, json.dumps(asdict(self), separators=(",", ":")))

    @classmethod
    def load(cls, directory: Path) -> KeywordStatistics:
        data = _read(Path(directory) / KEYWORDS)
        try:
            return cls(int(data["documents"]), int(data["tokens"]), dict(data["frequencies"]))
        except (KeyError, TypeError, ValueError) as error:
            raise IndexStateError(f"{Path(directory) / KEYWORDS}: field {error} missing or wrong") from None


@dataclass(frozen=True)
class ShardEntry:
    """One shard: its directory's name inside the sharded directory, its generation, its documents."""

    name: str
    generation: int
    documents: int


@dataclass(frozen=True)
class ShardManifest:
    """The shards of a sharded index and what the whole answers with: the calibration and default rerank of
    the index they were cut from (its fusion weight and bands hold for the whole)."""

    shards: tuple[ShardEntry, ...]
    source: str
    calibration: dict | None
    rerank: int
    generation: int = 1
    hash: str = "blake2b-64 of the UTF-8 id, modulo the shard count"

    def save(self, directory: Path) -> None:
        data = {**asdict(self), "format_version": FORMAT_VERSION}
        atomic_write_text(Path(directory) / FILE, json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> ShardManifest:
        path = Path(directory) / FILE
        if not path.is_file():
            what = "does not exist" if not Path(directory).exists() else f"is not a sharded index (no {FILE})"
            raise IndexStateError(f"{directory} {what}")
        data = _read(path)
        if not isinstance(data.get("format_version"), int) or data["format_version"] > FORMAT_VERSION:
            raise IndexStateError(
                f"{path}: written by a newer semsearch (format {data.get('format_version')})"
            )
        try:
            shards = tuple(ShardEntry(**entry) for entry in data["shards"])
            return cls(
                shards,
                str(data["source"]),
                data.get("calibration"),
                int(data["rerank"]),
                int(data["generation"]),
                str(data["hash"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise IndexStateError(f"{path}: field {error} missing or wrong") from None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise IndexStateError(f"{path}: unreadable ({error})") from None
    if not isinstance(data, dict):
        raise IndexStateError(f"{path}: not a JSON object")
    return data
