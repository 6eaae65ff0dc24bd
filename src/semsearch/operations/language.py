"""Language advice: how much of a corpus is CJK text (Chinese, Japanese, Korean), from a fixed sample of its
documents (cheap at any size, nothing kept at ingest: indexes made before open as they are), and whether the
model was trained on that script."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..cjk import cjk_characters, letters
from ..settings import DEFAULT_MODEL
from ..storage.store import DocumentStore

SAMPLE = 1_000  # documents read for the share, drawn with SEED
SEED = 27
CHARS = 2_000  # characters of a document read at most
MOSTLY = 0.5  # a corpus more than this share CJK gets the advice
# Models known to be trained on English alone (the bundled MiniLM); other directories are not judged.
ENGLISH_ONLY = frozenset({DEFAULT_MODEL})
MULTILINGUAL_OPTION = "--model multilingual"


def cjk_share_of(texts: Iterable[str]) -> float | None:
    """The share of the texts' visible characters that are CJK (None for no text)."""
    cjk = total = 0
    for text in texts:
        cut = text[:CHARS]
        cjk += cjk_characters(cut)
        total += letters(cut)
    return round(cjk / total, 4) if total else None


def cjk_share(store: DocumentStore) -> float | None:
    """The CJK share of up to SAMPLE documents drawn with SEED (None for an empty index)."""
    pks = store.all_pks()
    if len(pks) > SAMPLE:
        pks = np.sort(np.random.default_rng(SEED).choice(pks, SAMPLE, replace=False))
    rows = store.get([int(pk) for pk in pks])
    return cjk_share_of((row.get("title") or "") + " " + row["text"] for row in rows.values())


def script_advice(model: str, share: float | None) -> str | None:
    """A one-line warning when most of the corpus is CJK and the model was trained on English only."""
    if share is None or share <= MOSTLY or model not in ENGLISH_ONLY:
        return None
    return (
        f"warning: {share:.0%} of this corpus's text is Chinese, Japanese or Korean, which the model "
        f"(all-MiniLM-L6-v2, English) was not trained on: dense search will be poor; make the index with "
        f"{MULTILINGUAL_OPTION} (pip install 'semsearch[multilingual]')"
    )
