"""How old a calibration is: the documents added, replaced or deleted since it was made, against the documents it
was made on. Every write counts them into the record (`changed`); a new calibration starts again at 0.

Past STALE_SHARE the calibration is called stale (`info` says so and names the command that renews it; ingest
with `--refit auto` renews it). 10%: the calibration draws its pseudo-queries from at most 256 documents, and at
a tenth of the corpus changed a new draw would hold about 26 texts the old one could not see, as many as the
queries whose disagreement moves the choice by a tie (TIE, 0.005 of nDCG@10, is about one query in 200 moving
from rank 1 to out of the top 10); renewing costs seconds (Cranfield 3.2% of its ingest, SciFact 1.6%;
a corpus of 2,648 sentences 9.2% by wall, most of it a process's start, the upsert that made it stale having
encoded its texts: benchmarks/results/calibration.md), so saying it early costs little."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

STALE_SHARE = 0.10
RENEW = "semsearch refit --calibrate"  # the command that calibrates again, nothing re-encoded


def aged(record: dict | None, changed: int) -> dict | None:
    """The calibration record with `changed` more documents counted (a record of a skipped calibration, or
    none, is returned as it is: there is nothing to age). A record from before the count starts at 0."""
    if not record or "skipped" in record or changed == 0:
        return record
    return {**record, "changed": (record.get("changed") or 0) + changed}


@dataclass(frozen=True)
class Age:
    changed: int  # documents added, replaced or deleted since the calibration
    documents: int  # in the index when calibrated
    share: float
    limit: float
    stale: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def age(record: dict | None) -> Age | None:
    """How much of the corpus changed since the recorded calibration; None when there is none (or it was made
    before the count was kept)."""
    if not record or "skipped" in record or record.get("changed") is None:
        return None
    changed, documents = int(record["changed"]), int(record.get("documents") or 0)
    share = changed / max(documents, 1)
    return Age(changed, documents, round(share, 4), STALE_SHARE, share > STALE_SHARE)
