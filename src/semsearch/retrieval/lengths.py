"""A query's length band (issue 38): a query takes the mode and weight its index's calibration chose for queries
of its length (bands.py chooses them), counted in the keyword side's words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..cjk import HAN
from .keywords import STOPWORDS

# The bands, each with the most keyword tokens a query of it has (None: no limit). The real query styles
# (evaluation/query_styles.py) on SciFact and Cranfield: short 3-4 tokens, as asked 3-30 (median 9-11),
# paragraph 19-52 (10th percentile 25-27).
BANDS: tuple[tuple[str, int | None], ...] = (("short", 5), ("sentence", 23), ("paragraph", None))
# A word: one or two Han characters (how the keyword side cuts unspaced Chinese), or a run of other word characters.
WORD = re.compile(f"[{HAN}]{{1,2}}|(?:(?![{HAN}])\\w)+")


def tokens(text: str) -> int:
    """A query's length in the keyword side's words, stopwords left out unless they are all (keywords.query_words),
    but unspaced Chinese counted in words of one or two characters (WORD), not in the analysis's overlapping
    pairs and single characters (which count a Chinese question of ten characters as nineteen)."""
    words = [word.lower() for word in WORD.findall(text)]
    return len([word for word in words if word not in STOPWORDS] or words)


def band_of(text: str) -> str:
    """The name of the band a query of this text falls in."""
    length = tokens(text)
    return next(name for name, most in BANDS if most is None or length <= most)


@dataclass(frozen=True)
class Band:
    """One band's choice at query time: up to `most` keyword tokens (None: any more), the mode and weight."""

    name: str
    most: int | None
    mode: str
    alpha: float


def recorded_bands(calibration: dict[str, Any] | None) -> tuple[Band, ...]:
    """The bands a calibration record holds, shortest first (none: a record made before bands, or none)."""
    bands = (calibration or {}).get("bands") or {}
    return tuple(
        Band(name, most, bands[name]["mode"], float(bands[name]["alpha"]))
        for name, most in BANDS
        if name in bands
    )


def choice_for(bands: Sequence[Band], text: str) -> Band | None:
    """The band a query of this text takes (None: no bands)."""
    if not bands:
        return None
    length = tokens(text)
    return next((band for band in bands if band.most is None or length <= band.most), bands[-1])
