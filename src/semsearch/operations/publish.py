"""The one step that writes a generation's files and publishes its manifest: every write (add, delete, refit)
and `check --repair`'s rebuild end here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..retrieval.vectorindex import VectorIndex
from ..storage.generations import Generations, NextGeneration
from ..storage.manifest import FILE, IndexSettings, IndexState, Manifest
from ..storage.rawcompaction import compact, worth_compacting
from ..storage.rawvectors import RawVectors, Segment
from ..transforms import Transform
from ..transforms.isotropy import measure as measure_isotropy
from ..transforms.stats import RunningStats


def publish(
    generations: Generations,
    building: NextGeneration,
    state: IndexState,
    settings: IndexSettings,
    stats: RunningStats,
    transform: Transform | None,
    vectors: VectorIndex | None,
    unchanged_from: Path | None = None,
    **changes: Any,
) -> Manifest:
    """Write the statistics, transform and vector index (the last two None: an index left with no document) of
    the generation being built after `state`, and hand its manifest, counted from the store, to the generation.
    When deleted and replaced rows fill enough of the raw segments, the live rows are compacted into one.
    `unchanged_from`: the generation directory whose files these three are, unchanged (a calibration): linked, not
    written again (the statistics' packing alone cost a renewal 0.02-0.03 CPU-s), where the file system can."""
    store = generations.store
    segments = Segment.all_of(changes.get("segments", state.segments))
    live = store.vector_pks()
    if worth_compacting(segments, len(live)):
        compacted = compact(
            RawVectors(generations.path, segments, settings.encoder_dim),
            live,
            building.number,
            settings.raw_precision,
        )
        changes["segments"] = () if compacted is None else (compacted.to_json(),)
    if transform is not None and changes.get("isotropy") is None:  # figures of the vectors kept, raw and
        # transformed (transforms/isotropy.py); a write that changes no vector (a calibration) passes them on
        kept = RawVectors(
            generations.path, Segment.all_of(changes.get("segments", state.segments)), settings.encoder_dim
        )
        changes["isotropy"] = measure_isotropy(stats, transform, kept, live)
    if unchanged_from is None or not linked(unchanged_from, building.directory):
        stats.save(building.directory / RunningStats.FILE)
        if transform is not None and vectors is not None:
            transform.save(building.directory)
            vectors.save(building.directory)
    if transform is not None and vectors is not None:
        changes = dict(
            dims=transform.out_dim,
            drift=transform.drift(stats),
            index_structure=vectors.description,
            search_params=vectors.params,
            measured_recall=vectors.recall,
            graph_blocks=vectors.graph_runs(),
            **changes,
        )
    counted = dict(count=store.count(), passages=len(live), long_documents=len(store.long_documents()[0]))
    return generations.write_manifest(building, Manifest(settings, state.with_changes(**counted, **changes)))


def linked(source: Path, target: Path) -> bool:
    """Every file of the generation directory `source` but its manifest hard-linked into `target` (the same
    bytes, no copy: a generation's files are never written in place); False, none left, where one cannot be."""
    made = []
    try:
        for file in sorted(source.iterdir()):
            if file.name != FILE and file.is_file():
                os.link(file, target / file.name)
                made.append(target / file.name)
    except OSError:  # a file system without hard links: the caller writes them
        for file in made:
            file.unlink(missing_ok=True)
        return False
    return True
