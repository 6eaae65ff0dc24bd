"""Sample queries given for tuning the vector index (`ingest --tuning-queries`): raw vectors in the encoder's
space, as a real query would be encoded, kept in the index directory so that every build of its vector index (a
first ingest, a refit, a rebuild) tunes on them instead of on the queries tuning makes from the corpus's own rows
(retrieval/tuning.py). Held out of the corpus (never ingested), they make the tuned recall the recall those
queries get."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError
from .files import atomic_path

FILE = "tuning-queries.npy"
MAX_QUERIES = 500  # tuning searches every one at every setting it tries (500: 8 minutes of a 1M pq build)


def keep(index_path: str | Path, queries: np.ndarray, source: str | Path) -> int:
    """Keep up to MAX_QUERIES rows of `queries` (2-D, finite; evenly spread where there are more) as the index's
    tuning queries, replacing any kept before; how many were kept. `source` names the file in an error."""
    if not np.isfinite(np.asarray(queries[: min(len(queries), 1 << 20)], dtype=np.float32)).all():
        raise DataError("a tuning query has a value that is not finite", path=source)
    chosen = np.unique(np.linspace(0, len(queries) - 1, min(MAX_QUERIES, len(queries))).astype(np.int64))
    kept = np.ascontiguousarray(np.asarray(queries)[chosen], dtype=np.float32)
    with atomic_path(Path(index_path) / FILE) as tmp, open(tmp, "wb") as out:
        np.save(out, kept, allow_pickle=False)
    return len(kept)


def given(index_path: str | Path) -> np.ndarray | None:
    """The index's tuning queries (float32, a row each), or None where none were given."""
    path = Path(index_path) / FILE
    if not path.is_file():
        return None
    return np.load(path, allow_pickle=False)
