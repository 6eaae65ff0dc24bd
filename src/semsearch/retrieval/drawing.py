"""The calibration's draw order (calibration.py, calibration_places.py): which documents, passages and sentences
a calibration takes, fixed by what the corpus holds and never by its history. A document's key is a hash of the
seed, its id and its content hash (DocumentStore.content_names), not of its pk or of an earlier draw; a passage's
key mixes its document's key with its place in it; a document's (or passage's) sentence is drawn by a generator
seeded with that key. So the same corpus, ingested as one file or in parts and renewed, draws the same
pseudo-queries, and its calibration cache can only spare the encoding of texts it drew before."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np

from ..cjk import CJK_SENTENCE_ENDS
from ..storage.store import DocumentStore

MASK = (1 << 63) - 1  # keys are non-negative int64 (numpy's and SQLite's integers)
# A full stop, question or exclamation mark and the space after it; or a Chinese/Japanese sentence end (。！？；…),
# which no space follows, and its closing quotes or brackets.
SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+|[。！？；…｡]+[”’」』）)\]]*\s*")
ABBREVIATION = 3  # a word this short before a full stop ("al.", "Fig.", "e.g.") does not end a sentence


@dataclass(frozen=True)
class PseudoQuery:
    pk: int  # the target document
    query: str  # the sentence (or cropped span) taken out
    rest: str  # the document's text without it
    span: tuple[int, int] | None = None  # the query's characters in the document's text
    cut: int = 0  # CLOZE (a sentence) or CROP (a span of words): how the rest was joined
    key: int = 0  # its document's (or passage's) draw key (drawing.py): the order samples of the draw take


CLOZE, CROP = 0, 1  # how a pseudo-query was cut from its document (a panel row's last column)


def name_key(seed: int, name: str) -> int:
    """The key of a document named so (its id and content hash) under `seed`: 63 bits of blake2b."""
    digest = hashlib.blake2b(f"{seed}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & MASK


def document_keys(store: DocumentStore, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every document's pk and key (int64), in the order a draw reads them: by key (ties, never seen, by pk)."""
    pks, names = store.content_names()
    keys = np.fromiter((name_key(seed, name) for name in names), np.int64, len(names))
    order = np.lexsort((pks, keys))
    return pks[order], keys[order]


def mixed(keys: np.ndarray, places: np.ndarray) -> np.ndarray:
    """Keys of places within their documents (a passage's index): splitmix64 of each key and place, 63 bits."""
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) ^ (places.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z & np.uint64(MASK)).astype(np.int64)


def generator(key: int) -> np.random.Generator:
    """The generator a document's or passage's sentence is drawn by."""
    return np.random.default_rng(int(key))


def sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the text's sentences: cut after a full stop, question or exclamation mark and the
    space after it, unless the word before it is an abbreviation's length or dotted ("e.g."); a stop with a
    space before it (tokenized text, as Cranfield's " .") always ends one. Lower-case text is cut alike. A
    Chinese or Japanese sentence end (。！？；…) always ends one, no space needed, its closing quotes with it."""
    spans, begin = [], 0
    for end in SENTENCE_END.finditer(text):
        if end.group()[0] not in CJK_SENTENCE_ENDS:
            before = text[begin : end.start()]
            word = "" if not before or before[-1].isspace() else before.rsplit(None, 1)[-1]
            if word and (len(word) <= ABBREVIATION or "." in word):
                continue
            spans.append((begin, end.start() + 1))
        else:
            spans.append((begin, end.start() + len(end.group().rstrip())))
        begin = end.end()
    if begin < len(text):
        spans.append((begin, len(text)))
    return spans
