"""Named fault points: the steps of a write where the crash-recovery tests end a real process.

`SEMSEARCH_FAULT=STEP` (or `STEP@N`, its N-th passing) makes the process exit at once at that step, as a kill
would: no cleanup, no flush. Never set in normal use; reading one environment variable is all it costs.
The steps, in the order a write passes them: `creating` (a new index's store is made, its manifest not yet
written), `encoded` (a partition's vectors are in the resume cache),
`generation-written` (the next generation's files and pending manifest are on disk, SQLite not committed),
`committed` (SQLite committed, the manifest not yet replaced), `published` (the new manifest is current, the
old generations not yet removed)."""

from __future__ import annotations

import os

FAULT_ENV = "SEMSEARCH_FAULT"
FAULT_EXIT = 86
STEPS = ("creating", "encoded", "generation-written", "committed", "published")
_passed: dict[str, int] = {}


def fault_point(step: str) -> None:
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    name, _, nth = wanted.partition("@")
    if name != step:
        return
    _passed[step] = _passed.get(step, 0) + 1
    if _passed[step] >= int(nth or 1):
        os._exit(FAULT_EXIT)
