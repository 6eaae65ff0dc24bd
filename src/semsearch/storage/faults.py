"""Named fault points: the steps of a write where the crash-recovery tests end a real process.

`SEMSEARCH_FAULT=STEP` (or `STEP@N`, its N-th passing) makes the process exit at once at that step, as a kill
would: no cleanup, no flush. Never set in normal use; reading one environment variable is all it costs.
The steps, in the order a write passes them: `creating` (a new index's store is made, its manifest not yet
written), `encoded` (a partition's vectors are in the resume cache), `resume-point` (a first ingest committed
the documents stored so far: ingest/resume.py; under a fault test there is one after every partition), `trained` (an ivf or pq index trained and
checkpointed, buildcheckpoint.py), `filled` (a checkpoint of the rows filled so far written),
`generation-written` (the next generation's files and pending manifest are on disk, SQLite not committed),
`committed` (SQLite committed, the manifest not yet replaced), `published` (the new manifest is current, the
old generations not yet removed).

`SEMSEARCH_PAUSE=STEP:SECONDS` makes every passing of STEP wait that long instead: a write held open, so a test
can act while it runs (a file changed during a watch's write); `STEP:PATH` waits while the file PATH exists."""

from __future__ import annotations

import os
import time

FAULT_ENV = "SEMSEARCH_FAULT"
PAUSE_ENV = "SEMSEARCH_PAUSE"
FAULT_EXIT = 86
PAUSE_LIMIT = 60.0
STEPS = (
    "creating",
    "encoded",
    "resume-point",
    "trained",
    "filled",
    "generation-written",
    "committed",
    "published",
)
_passed: dict[str, int] = {}


def fault_testing() -> bool:
    """A fault test is running (writes then pass their fault points at every chance they have)."""
    return bool(os.environ.get(FAULT_ENV))


def fault_point(step: str) -> None:
    if pause := os.environ.get(PAUSE_ENV):
        name, _, how_long = pause.partition(":")
        if name == step:
            _pause(how_long)
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    name, _, nth = wanted.partition("@")
    if name != step:
        return
    _passed[step] = _passed.get(step, 0) + 1
    if _passed[step] >= int(nth or 1):
        os._exit(FAULT_EXIT)


def _pause(how_long: str) -> None:
    """SECONDS, or a file's path: held while that file exists (a test releases the write when it has acted,
    whatever the machine's load; at most PAUSE_LIMIT seconds)."""
    try:
        time.sleep(float(how_long))
        return
    except ValueError:
        pass
    deadline = time.monotonic() + PAUSE_LIMIT
    while os.path.exists(how_long) and time.monotonic() < deadline:
        time.sleep(0.01)
