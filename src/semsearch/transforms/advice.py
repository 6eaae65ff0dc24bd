"""Whether whitening is likely to help a corpus and model, from the raw side's isotropy figures.

Measured, not guessed (benchmarks/isotropy.py, results in benchmarks/results/isotropy.md): on STS-B dev,
SciFact, Cranfield and a WordNet sample, with the bundled model (mean and cls pooling) and a random-initialised
BERT, full whitening lowered the score on every one of the 4 encodings whose random pairs' raw mean cosine was
below ANISOTROPY_THRESHOLD (the bundled model's own mean pooling), and raised it on 10 of the 12 above; the 2
misses are the bundled model's cls pooling on the two retrieval sets of long documents (SciFact, Cranfield).
So the rule is sure one way only: spread vectors do not need whitening; a narrow cone may, which only a
measurement on the corpus's own queries settles."""

from __future__ import annotations

from typing import Any

# Between the highest raw mean cosine of an encoding whitening hurt (0.29) and the lowest it helped (0.55).
ANISOTROPY_THRESHOLD = 0.4
RULE = f"raw mean_cosine > {ANISOTROPY_THRESHOLD:g} (benchmarks/results/isotropy.md: 14 of 16 encodings)"


def advise(isotropy: dict[str, Any]) -> dict[str, Any]:
    """{"whitening": "may help" | "unlikely to help" | "unknown", "why": one sentence, "rule": the test}."""
    cosine = (isotropy.get("raw") or {}).get("mean_cosine")
    if cosine is None:
        return {"whitening": "unknown", "why": "too few passages to measure", "rule": RULE}
    if cosine > ANISOTROPY_THRESHOLD:
        why = (
            f"random passages already have a mean cosine of {cosine:.2f}, a narrow cone; whitening helped 10 of 12 "
            "such encodings measured, but not the bundled model's cls pooling on long-document retrieval: "
            "compare on your own queries"
        )
        return {"whitening": "may help", "why": why, "rule": RULE}
    why = (
        f"random passages have a mean cosine of {cosine:.2f}, already spread; full whitening lowered quality on "
        "every such encoding measured"
    )
    return {"whitening": "unlikely to help", "why": why, "rule": RULE}
