"""Build: a generation's derived files from the kept raw vectors and the statistics. Fit the transform, build
the vector index (trained on a sample where its type needs one; filled here, or an ivf or pq one on a cluster's
workers, a shard per block, merged in order), bring it up to date after an add or a removal, and resolve what a
refit asks for. Raw vectors are read a block at a time, never held whole."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SettingsError
from ..retrieval import strategy, tuning
from ..retrieval.vectorindex import (
    CODED,
    LISTED,
    VectorIndex,
    create_index,
    index_of_bytes,
    index_with_trained_lists,
    load_index,
    outgrown,
    resolve_index_type,
)
from ..settings import DEFAULT_RECALL_TARGET, YOUNG_FACTOR, TransformKind, TransformSpec
from ..storage.buildcheckpoint import CHECKPOINTS, BuildCheckpoint, build_key
from ..storage.faults import fault_point
from ..storage.manifest import IndexSettings
from ..storage.rawvectors import BLOCK_ROWS, RawVectors, among
from ..transforms import LinearTransform, Progress, Transform, VectorBatches, fit_transform
from ..transforms.stats import RunningStats

if TYPE_CHECKING:
    from .exported import Lists

log = logging.getLogger(__name__)  # the build's stages, at INFO (benchmarks/ten_million.py)

Blocks = Iterable[tuple[np.ndarray, np.ndarray]]
# Adds (pks, projected vectors) blocks to a trained vector index, in their order, and returns when all are in:
# here (`add_here`), or on a cluster's workers, a shard per block, merged in block order (distributed.py).
BlockAdder = Callable[[VectorIndex, Blocks], None]
# Kinds whose shards FAISS merges (an IndexIVF appends each list of a copy filled elsewhere): so the lists hold
# their rows in the order adding them here would (flat and hnsw are filled here).
MERGEABLE = LISTED
KEY_ROWS = 64  # rows projected for a build's checkpoint key: the transform as it acts


def live_blocks(raw: RawVectors, live: np.ndarray) -> Blocks:
    """Raw (pks, vectors) blocks of the rows in `live` (sorted pks; replaced or deleted rows left out)."""
    for pks, block in raw.blocks():
        keep = among(pks, live)
        if keep.any():
            yield pks[keep], block[keep]


def rechunked(blocks: Blocks, sizes: Iterable[int] | None = None, skip: int = 0) -> Blocks:
    """The rows of `blocks` again, in blocks of `sizes` rows (None: BLOCK_ROWS each), the first `skip` rows left
    out: an index filled from them holds the same whatever the raw segments' layout and the rows replaced
    among them (an hnsw graph depends on the rows of each add: VectorIndex.blocks). A block of `sizes` past
    the rows ends with them."""
    wanted = itertools.chain(sizes or (), itertools.repeat(BLOCK_ROWS))
    held: list[tuple[np.ndarray, np.ndarray]] = []
    count, size, done = 0, next(wanted), 0
    for pks, vectors in blocks:
        start = 0
        while start < len(pks):
            take = min(size - count, len(pks) - start)
            held.append((pks[start : start + take], vectors[start : start + take]))
            count, start = count + take, start + take
            if count == size:
                yield from _after(held, done, skip)
                held, done, count, size = [], done + count, 0, next(wanted)
    if held:
        yield from _after(held, done, skip)


def _after(held: list[tuple[np.ndarray, np.ndarray]], done: int, skip: int) -> Blocks:
    """One block of `rechunked` (its pieces joined), less the rows before `skip` (`done` rows before it)."""
    pks = np.concatenate([piece[0] for piece in held])
    vectors = np.concatenate([piece[1] for piece in held])
    if done + len(pks) > skip:
        cut = max(0, skip - done)
        yield pks[cut:], vectors[cut:]


def raw_batches(raw: RawVectors, live: np.ndarray) -> VectorBatches:
    """Batches of the live raw vectors, as many passes as a trained transform (flow) wants."""
    return lambda: (block for _, block in live_blocks(raw, live))


def young(settings: IndexSettings, count: int) -> bool:
    """Whether a transform fitted on `count` documents is still too young to keep (see YOUNG_FACTOR)."""
    if settings.transform == TransformKind.NONE:
        return False
    return count < YOUNG_FACTOR * (settings.dims_requested or settings.encoder_dim)


def fit(
    spec: TransformSpec,
    stats: RunningStats,
    raw: RawVectors,
    live: np.ndarray,
    progress: Progress | None = None,
) -> Transform:
    """The transform `spec` asks for, fitted on the live rows; for a linear one on too few rows to estimate a
    covariance (one, or all alike), the encoder's own vectors until the next add (LinearTransform.stand_in)."""
    linear = spec.kind in (TransformKind.PCA, TransformKind.WHITEN)
    if linear and (stats.count < 2 or not np.any(stats.covariance())):
        return LinearTransform.stand_in(spec, stats.dim)
    return fit_transform(spec, stats, raw_batches(raw, live), progress)


def build_vectors(
    transform: Transform,
    raw: RawVectors,
    live: np.ndarray,
    index_type: str,
    recall_target: float = DEFAULT_RECALL_TARGET,
    adder: BlockAdder | None = None,
    checkpoint_in: Path | None = None,
    tuning_queries: np.ndarray | None = None,
    code_ranges: list[float] | None = None,
    blocks: Sequence[int] | None = None,
    trained_lists: Lists | None = None,
) -> VectorIndex:
    """A new vector index of every live row, of the type `index_type` resolves to for their number, its search
    parameters tuned for `recall_target` (tuning.py) on a sample of its own rows as queries. Trained here;
    `adder` fills it with the projected blocks (default: here; a cluster's executor: on its workers).
    `checkpoint_in`: an index directory where an ivf or pq build keeps its progress (buildcheckpoint.py) and
    takes it up again after a kill: the trained index, and where filled here, the rows filled so far.
    `tuning_queries`: raw sample queries given for tuning (storage/tuningqueries.py), instead of the rule's
    queries made from the rows. `code_ranges`: an 8-bit kind's ranges as trained already (an export's
    source's: exported.py), taken instead of training them here. `blocks`: the rows of each add (an export's source's hnsw
    graph's: its graph made again), else BLOCK_ROWS of the live rows each, whatever the segments' layout.
    `trained_lists`: an ivf or pq index's centroids and codebooks as trained already and the search parameters
    tuned for them (an export's source's: exported.Lists), taken instead of training and tuning here."""
    count = len(live)
    kind = resolve_index_type(index_type, count, transform.out_dim)
    vectors = create_index(transform.out_dim, kind, count)
    if code_ranges is not None and kind in CODED:
        with contextlib.suppress(ValueError):  # not of these dims: trained here
            vectors = vectors.with_code_ranges(code_ranges)
    taken = None
    if trained_lists is not None and kind in LISTED:
        with contextlib.suppress(ValueError):  # not of this kind or these dims: trained and tuned here
            vectors = index_with_trained_lists(transform.out_dim, kind, trained_lists.trained)
            taken = trained_lists
    queries = None if tuning_queries is None else transform.project(tuning_queries)
    kept = (
        checkpoint(
            checkpoint_in,
            transform,
            raw,
            live,
            kind,
            queries,
            taken.trained["centroids"] if taken is not None else None,
        )
        if checkpoint_in is not None
        else None
    )
    if kept is not None and kept.stage:
        vectors = load_index(kept.index_directory)
        log.info("resumed the %s build at %s, %d rows in", kind, kept.stage, kept.rows)
    elif rows := vectors.training_rows:
        vectors.train(training_sample(transform, raw, live, rows))
        log.info("%s trained on %d rows", vectors.description, min(rows, count))
        if kept is not None:
            kept.save("trained", vectors.save)
        fault_point("trained")
    # recall against exact float32 search measured on sample queries (tuned for, but for flat-sq8's exact scan)
    measured = vectors.kind != "flat" and taken is None
    exact = strategy.Exact(vectors, lambda pks: transform.project_float32(raw.read(pks)))  # read: no map
    if measured:
        if queries is None:
            queries = tuning.sample_queries(live, exact.project_rows)
        truth = tuning.Truth(queries, 0 if vectors.exhaustive else tuning.levels_for(count))
        if kept is not None and kept.stage == "filled":
            truth.restore(kept.arrays())
    skip = kept.rows if kept is not None and kept.stage == "filled" else 0
    every = max(1, count // CHECKPOINTS)

    def projected_blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        seen = saved = skip
        sizes = blocks if blocks is not None and sum(blocks) == count else None
        for pks, block in rechunked(live_blocks(raw, live), sizes, skip):
            projected = transform.project(block)
            yield pks, projected
            seen += len(pks)
            if measured:  # once the block is added, or sent to a worker, which adds it meanwhile
                truth.add(pks, projected)
            # filled here (no adder): the rows yielded so far are in the index, and it can be saved
            if kept is not None and adder is None and seen - saved >= every and seen < count:
                kept.save("filled", vectors.save, seen, truth.arrays() if measured else None)
                saved = seen
                fault_point("filled")

    (adder or add_here)(vectors, projected_blocks())
    log.info("%d rows added", vectors.count)
    tuned = tuning.tune(vectors, truth, exact, recall_target) if measured else tuning.Tuning({}, 1.0)
    vectors.params, vectors.recall = tuned.params, tuned.recall
    if taken is not None:  # searched as its source searches the same cells
        vectors.params, vectors.recall = taken.search_params, taken.measured_recall
    return vectors


def checkpoint(
    index_path: Path,
    transform: Transform,
    raw: RawVectors,
    live: np.ndarray,
    kind: str,
    queries: np.ndarray | None = None,
    centroids: np.ndarray | None = None,
) -> BuildCheckpoint | None:
    """The checkpoint of this build in the index directory (ivf and pq; None for the other kinds: flat(-sq8) fills in
    seconds, and hnsw draws each row's levels from a generator FAISS does not save, so a graph taken up again
    would not be the one built at once). Keyed by the kind, the live rows, their first rows projected, the
    given tuning queries (the checkpoint keeps their exact answers) and the cells' centroids given (an export's
    source's: a build that trains its own keeps another index)."""
    if kind not in MERGEABLE or not len(live):
        return None
    first = transform.project(next(iter(live_blocks(raw, live[:KEY_ROWS])))[1])
    given = tuple(part for part in (queries, centroids) if part is not None)
    return BuildCheckpoint(index_path, build_key(kind, transform.out_dim, live, first, *given))


def add_here(vectors: VectorIndex, blocks: Blocks) -> None:
    """The BlockAdder of this process: each block added in turn."""
    for pks, projected in blocks:
        vectors.add(projected, pks)


def fill_shard(empty: np.ndarray, pks: np.ndarray, projected: np.ndarray) -> np.ndarray:
    """A shard: the trained, empty index (VectorIndex.to_bytes) with one block added, its lists serialized
    (VectorIndex.lists_bytes, for its `merger`). What a cluster's worker runs for a BlockAdder: it needs no index
    directory, file or transform."""
    shard = index_of_bytes(empty)
    shard.add(projected, pks)
    return shard.lists_bytes()


def training_sample(transform: Transform, raw: RawVectors, live: np.ndarray, rows: int) -> np.ndarray:
    """About `rows` transformed vectors spread evenly over the live rows (every stride-th one), projected
    block by block: only the reduced sample is ever held, never the raw vectors."""
    stride = max(1, len(live) // rows)
    parts, seen = [], 0
    for _, block in live_blocks(raw, live):
        parts.append(transform.project(block[(-seen) % stride :: stride]))
        seen += len(block)
    return np.concatenate(parts)


def without(vectors: VectorIndex, pks: Sequence[int], rebuild: Callable[[], VectorIndex]) -> VectorIndex:
    """The vector index without these rows: removed in place, or rebuilt (`rebuild`, from the live rows) where
    the type cannot remove (hnsw). Called after the store has dropped them."""
    if not len(pks):
        return vectors
    if vectors.supports_remove:
        vectors.remove(np.asarray(pks, dtype=np.int64))
        return vectors
    return rebuild()


def after_add(
    transform: Transform,
    vectors: VectorIndex,
    *,
    raw: RawVectors,
    new_rows: RawVectors,
    live: np.ndarray,
    replaced: Sequence[int],
    index_type: str,
    recall_target: float = DEFAULT_RECALL_TARGET,
    tuning_queries: np.ndarray | None = None,
) -> VectorIndex:
    """The vector index after an add that keeps the transform (so the stored vectors stay valid): the replaced
    rows out, the new ones in; rebuilt when `auto` outgrows its type, the type cannot remove, or flat-sq8's codes
    would span a range trained on too few of the rows (vectorindex.outgrown)."""

    def rebuild() -> VectorIndex:
        return build_vectors(transform, raw, live, index_type, recall_target, tuning_queries=tuning_queries)

    vectors = without(vectors, replaced, rebuild)
    if vectors.kind != resolve_index_type(index_type, len(live), vectors.dim):
        return rebuild()
    if outgrown(vectors.kind, vectors.count, len(live)):
        return rebuild()
    if vectors.count < len(live):  # not rebuilt: add the new documents
        for pks, block in new_rows.blocks():
            vectors.add(transform.project(block), pks)
    return vectors


def refit_spec(
    settings: IndexSettings,
    transform: str | None,
    dims: int | str | None,
    power: float | None,
    flow_epochs: int | None,
    seed: int | None,
) -> TransformSpec:
    """What a refit fits. Unnamed settings (None) keep their current values, except that a new transform kind
    starts from its own defaults for dims and power; `dims="all"` keeps every dimension."""
    kind = TransformKind.parse(transform or settings.transform, "transform")
    same_kind = kind.value == settings.transform
    if power is None and same_kind and kind is TransformKind.WHITEN:
        power = settings.power
    if dims == "all":
        dims = None
    elif dims is None and same_kind:
        dims = settings.dims_requested
    if isinstance(dims, str):
        raise SettingsError(f"must be a number of dimensions or 'all', not {dims!r}", setting="dims")
    spec = TransformSpec(
        kind,
        dims,
        power,
        settings.flow_epochs if flow_epochs is None else flow_epochs,
        settings.seed if seed is None else seed,
    )
    spec.check_against(settings.encoder_dim)
    return spec
