"""`semsearch check`: every file of an index verified, and with `repair` what can be brought back, brought back.

Verified: the manifest parses and agrees with the document store; SQLite's quick check of the store; each raw
segment the manifest lists has its header, shape and size; the generation's statistics, transform and vector
index load and agree with the manifest in counts and dims; the vector index holds exactly the live rows.

Repaired: a damaged manifest is restored from the copy its generation keeps (generations.py), the store
naming the generation; derived files are rebuilt from what is intact (statistics recomputed from the live raw
vectors, the transform taken from the previous generation where the vector index confirms it is the same, else
refitted with the index's own settings, the vector index rebuilt) and published as a new generation. Lost raw
vectors cannot be rebuilt: with `drop_missing` their documents leave the index, to be ingested again. The
document store is the source of truth: a damaged one is restored from a backup, never here.

Whether the derived files fit the manifest: health.py (`info`'s cheaper check of what a query loads).

Size: one pass over every kind of file an index has, and the repair of each beside its check."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexStateError, SemsearchError
from ..ingest import build
from ..retrieval.vectorindex import VectorIndex, load_index, runs_blocks
from ..settings import DEFAULT_WAIT
from ..storage.backup import checksum_problems
from ..storage.damage import RESTORE, DamagedFile, derived
from ..storage.files import atomic_write_text
from ..storage.generations import (
    Generations,
    WriterLock,
    cannot_write,
    file_problem,
    generation_name,
)
from ..storage.manifest import FILE, Manifest
from ..storage.rawvectors import DIRECTORY, RawVectors, Segment, lost
from ..storage.store import DocumentStore
from ..transforms import Transform, load_transform
from ..transforms.stats import RunningStats
from .directory import derived_files
from .health import OK, disagreements
from .publish import publish

DAMAGED, REPAIRED = "damaged", "repaired"
VERIFY_ROWS = 32  # rows a transform from the previous generation must map onto their stored vectors
SAME_VECTOR = 1 - 1e-4  # the cosine of a stored vector and the same vector projected again (float rounding)


@dataclass(frozen=True)
class FileStatus:
    file: str  # relative to the index directory
    status: str  # ok, damaged, repaired
    detail: str = ""  # why it is damaged and what repairs it, or what the repair did
    message: str = ""  # for a damaged file: the whole error, naming its path

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class CheckReport:
    path: Path
    files: tuple[FileStatus, ...]

    @property
    def damaged(self) -> list[FileStatus]:
        return [f for f in self.files if f.status == DAMAGED]

    @property
    def healthy(self) -> bool:
        return not self.damaged

    def lines(self) -> list[str]:
        return [f"{f.status:<8}  {f.file}" + (f": {f.detail}" if f.detail else "") for f in self.files]

    def summary(self) -> str:
        """One line for the error while damage remains: each damaged file's whole message."""
        return "; ".join(f.message or f"{self.path / f.file}: {f.detail}" for f in self.damaged)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "healthy": self.healthy,
            "files": [f.to_json() for f in self.files],
        }


def check_index(
    path: str | Path, *, repair: bool = False, drop_missing: bool = False, wait: float = DEFAULT_WAIT
) -> CheckReport:
    """Verify every file of the index in `path`; with `repair`, repair what can be (holding the writer lock,
    waiting up to `wait` seconds for another writer), then verify again. `drop_missing`: a repair removes the
    documents whose raw vectors are lost (a last resort)."""
    path = Path(path)
    if not (path / FILE).exists() and not any(path.glob(f"gen-*/{FILE}")):
        Manifest.load(path)  # says plainly that this is not an index
    reason = cannot_write(path)
    if repair and reason:
        raise IndexStateError(f"{path} is read-only: {reason}; a repair needs write access")
    lock = WriterLock(path)
    if repair:
        lock.acquire(wait)
    try:
        with Inspection(path, lock, read_only=reason is not None) as first:
            if not repair or first.healthy:
                return with_checksums(first.report())
            done = first.repair(drop_missing)
        with Inspection(path, lock, read_only=False) as second:
            return second.report(done)
    finally:
        lock.release()


def with_checksums(report: CheckReport) -> CheckReport:
    """A backup's files (backup.json lists them) also checked against the sizes and sha256 it recorded."""
    statuses = {status.file: status for status in report.files}
    for name, problem in (checksum_problems(report.path) or {}).items():
        if problem:
            detail = f"{problem}: the backup is not whole; restore from another backup"
            statuses[name] = FileStatus(name, DAMAGED, detail, f"{report.path / name}: {detail}")
        else:
            statuses.setdefault(name, FileStatus(name, OK, "checksum"))
    return CheckReport(report.path, tuple(statuses.values()))


class Inspection:
    """One pass over an index's files, recording each one's status; `repair` then mends what it can."""

    def __init__(self, path: Path, lock: WriterLock, read_only: bool):
        self.path, self.lock, self.read_only = path, lock, read_only
        self.statuses: dict[str, FileStatus] = {}
        self.store: DocumentStore | None = None
        self.manifest: Manifest | None = None
        self.manifest_error: IndexStateError | None = None
        self.restorable: Path | None = None  # the copy of the manifest the store's generation published
        self.live: np.ndarray | None = None
        self.lost: dict[str, np.ndarray] = {}  # a damaged segment -> the live rows whose vectors it held
        # The generation's derived files as loaded (None: damaged), and the damaged ones' errors by file name.
        self.stats: RunningStats | None = None
        self.transform: Transform | None = None
        self.vectors: VectorIndex | None = None
        self.errors: dict[str, DamagedFile] = {}
        manifest = self._manifest()
        self._store(manifest)
        if self.store is None:
            self.manifest = manifest
            self._generation()
            return
        with self.store.read_snapshot():  # one committed state, whatever another process commits meanwhile
            self.manifest = self._committed(manifest)
            self._live()
            self._generation()

    def _generation(self) -> None:
        """The files of the manifest's generation."""
        if self.manifest is not None:
            self._segments()
            if self.manifest.state.count:
                self._derived()

    def __enter__(self) -> Inspection:
        return self

    def __exit__(self, *exc) -> None:
        if self.store is not None:
            self.store.close()

    @property
    def healthy(self) -> bool:
        return all(s.status != DAMAGED for s in self.statuses.values())

    def report(self, repaired: dict[str, str] | None = None) -> CheckReport:
        """The statuses; `repaired` (file -> what was done) marks what a repair brought back."""
        statuses = dict(self.statuses)
        for name, done in (repaired or {}).items():
            if name not in statuses or statuses[name].status == OK:
                statuses[name] = FileStatus(name, REPAIRED, done)
        return CheckReport(self.path, tuple(statuses.values()))

    def _set(self, name: str, error: SemsearchError | None = None) -> None:
        if error is None:
            self.statuses[name] = FileStatus(name, OK)
        else:
            detail = f"{error.reason}: {error.repair}" if isinstance(error, DamagedFile) else str(error)
            self.statuses[name] = FileStatus(name, DAMAGED, detail, str(error))

    # ---- the pass ---------------------------------------------------------------------------------------

    def _manifest(self) -> Manifest | None:
        try:
            if not (self.path / FILE).exists():  # yet generations keep copies (check_index looked)
                raise DamagedFile(self.path / FILE, "missing", "restore it from a backup")
            manifest = Manifest.load(self.path)
        except IndexStateError as error:
            self._set(FILE, error)
            self.manifest_error = error
            return None
        self._set(FILE)
        return manifest

    def _store(self, manifest: Manifest | None) -> None:
        path = self.path / DocumentStore.FILE
        try:
            self.store = DocumentStore(
                path, read_only=self.read_only, create=manifest is not None and not manifest.state.generation
            )
            if problem := self.store.integrity():
                raise DamagedFile(path, problem, RESTORE)
            self._set(DocumentStore.FILE)
        except IndexStateError as error:
            self._set(DocumentStore.FILE, error)
            if self.store is not None:
                self.store.close()
            self.store = None

    def _live(self) -> None:
        """The vector rows of the store's documents."""
        assert self.store is not None
        try:
            with self.store.guarded():
                self.live = self.store.vector_pks()
        except IndexStateError as error:
            self._set(DocumentStore.FILE, error)

    def _committed(self, manifest: Manifest | None) -> Manifest | None:
        """The committed manifest (rolled forward, or a committed pending one read), if it agrees with the
        store; else the copy its generation keeps is looked for, to restore."""
        assert self.store is not None
        generations = Generations(self.path, self.store)
        with self.store.guarded():
            if manifest is not None:
                manifest, problem = generations.agreed(self.lock)
                if problem is None:
                    return manifest
                reason = f"inconsistent: {problem}"
                otherwise = (
                    f"restore {FILE} and {DocumentStore.FILE} from one backup, or re-ingest the corpus"
                )
            elif isinstance(self.manifest_error, DamagedFile):
                reason, otherwise = (
                    self.manifest_error.reason,
                    "restore it from a backup, or re-ingest the corpus",
                )
            else:
                return None  # not damaged: written by a newer semsearch, say (the copies would be too)
            committed, count = self.store.generation(), self.store.count()
        copy = self.path / generation_name(committed) / FILE
        with contextlib.suppress(IndexStateError):
            restorable = Manifest.load(copy.parent, FILE).state
            if (restorable.generation, restorable.count) == (committed, count):
                self.restorable = copy
        repair = (
            f"run `semsearch check --repair` to restore it from {copy.parent.name}/{FILE}"
            if self.restorable
            else f"{otherwise} into a new index"
        )
        self._set(FILE, DamagedFile(self.path / FILE, reason, repair))
        return None

    def _segments(self) -> None:
        assert self.manifest is not None
        raw = RawVectors(self.path, [], self.manifest.settings.encoder_dim)
        for segment in Segment.all_of(self.manifest.state.segments):
            path, problem = raw.directory / segment.name, raw.problem(segment)
            error = None
            if problem and self.live is None:
                error = lost(path, problem)
            elif problem:
                rows = self.lost[segment.name] = self.live[
                    (self.live >= segment.start) & (self.live < segment.start + segment.count)
                ]
                error = (
                    lost(path, problem, self._documents(rows))
                    if len(rows)
                    else DamagedFile(
                        path, problem, "no document needs it any more: `semsearch check --repair` drops it"
                    )
                )
            self._set(f"{DIRECTORY}/{segment.name}", error)

    def _documents(self, rows: np.ndarray) -> str:
        assert self.store is not None
        owners = np.unique(self.store.passages().owners(rows))
        ends = self.store.get([int(owners[0]), int(owners[-1])])
        first, last = ends[int(owners[0])]["id"], ends[int(owners[-1])]["id"]
        return f"{len(owners)} documents, ids {first!r} to {last!r} (rows {rows[0]}-{rows[-1]})"

    def _derived(self) -> None:
        assert self.manifest is not None
        manifest, settings, errors = self.manifest, self.manifest.settings, self.errors
        directory = self.path / generation_name(manifest.state.generation)
        names = derived_files(manifest)
        for name in names:
            if problem := file_problem(directory / name):
                errors[name] = derived(directory / name, problem)

        def load(files: list[str], loader: Callable[[], Any]) -> Any:
            if any(name in errors for name in files):
                return None
            try:
                return loader()
            except DamagedFile as error:
                errors[error.path.name] = error
                return None

        self.stats = load(names[:1], lambda: RunningStats.load(directory / RunningStats.FILE))
        self.transform = load(
            names[1:-1], lambda: load_transform(directory, settings.spec, settings.encoder_dim)
        )
        tuning, adds = (
            (manifest.state.search_params, manifest.state.measured_recall),
            manifest.state.graph_blocks,
        )
        self.vectors = load(names[-1:], lambda: load_index(directory, runs_blocks(adds)).with_tuning(*tuning))
        for error in disagreements(manifest, directory, self.stats, self.transform, self.vectors, self.live):
            errors.setdefault(error.path.name, error)
        for name in names:
            self._set(f"{directory.name}/{name}", errors.get(name))

    # ---- the repair -------------------------------------------------------------------------------------

    def repair(self, drop_missing: bool) -> dict[str, str]:
        """Mend what can be mended; returns file -> what was done (names as the next pass will see them)."""
        done: dict[str, str] = {}
        if self.store is None:
            return done
        if self.manifest is None and self.restorable is not None:
            atomic_write_text(self.path / FILE, self.restorable.read_text())
            done[FILE] = f"restored from {self.restorable.parent.name}/{FILE}"
            self.manifest = Manifest.load(self.path)
            self._segments()
            if self.manifest.state.count:
                self._derived()
        if self.manifest is None:
            return done
        dropped = np.concatenate(list(self.lost.values()) or [np.empty(0, dtype=np.int64)])
        if len(dropped):  # a document goes whole: every passage of one that lost any
            dropped = self.store.passage_pks(np.unique(self.store.passages().owners(dropped)))
        if len(dropped) and not drop_missing:
            return done  # their raw vectors are needed to rebuild anything
        if self.errors or self.lost:
            done.update(self._rebuild(dropped))
        return done

    def _rebuild(self, dropped: np.ndarray) -> dict[str, str]:
        assert self.manifest is not None and self.store is not None and self.live is not None
        manifest, store, errors = self.manifest, self.store, self.errors
        settings, state = manifest.settings, manifest.state
        segments = [s for s in Segment.all_of(state.segments) if s.name not in self.lost]
        raw = RawVectors(self.path, segments, settings.encoder_dim)
        live = np.setdiff1d(self.live, dropped)
        target = generation_name(state.generation + 1)
        done: dict[str, str] = {}
        stats = self.stats
        if stats is None or len(dropped) or RunningStats.FILE in errors:
            stats = RunningStats(settings.encoder_dim)
            for _, block in build.live_blocks(raw, live):
                stats.update(block)
            done[f"{target}/{RunningStats.FILE}"] = "recomputed from the live raw vectors"
        transform_files = derived_files(manifest)[1:-1]
        transform, refitted = self.transform, False
        if any(name in errors for name in transform_files):
            transform = self._previous_transform(raw, live) if len(live) else None
            how = f"taken from {generation_name(state.generation - 1)}, which the vector index confirms"
            if transform is None and len(live):
                transform, refitted = build.fit(settings.spec, stats, raw, live), True
                how = "refitted on the live raw vectors with the index's settings"
            done.update({f"{target}/{name}": how for name in transform_files if transform is not None})
        vectors = None if refitted or VectorIndex.FILE in errors else self.vectors
        if transform is not None:
            rebuild = lambda: build.build_vectors(  # noqa: E731
                transform, raw, live, settings.index_type, settings.recall_target
            )
            if vectors is None:
                vectors = rebuild()
                done[f"{target}/{VectorIndex.FILE}"] = "rebuilt from the raw vectors"
            elif len(dropped):
                vectors = build.without(vectors, dropped.tolist(), rebuild)
        owners = {name: len(np.unique(store.passages().owners(rows))) for name, rows in self.lost.items()}
        generations = Generations(self.path, store)
        with generations.next(manifest) as building:
            if len(dropped):
                store.delete(np.unique(store.passages().owners(dropped)).tolist())
            segments_now = tuple(s.to_json() for s in segments)
            publish(generations, building, state, settings, stats, transform, vectors, segments=segments_now)
        for name, rows in self.lost.items():
            removed = f"removed {owners[name]} documents whose raw vectors were lost: ingest them again"
            done[f"{DIRECTORY}/{name}"] = (
                removed if len(rows) else "dropped from the manifest (no document needed it)"
            )
            with contextlib.suppress(OSError):
                (raw.directory / name).unlink()
        return done

    def _previous_transform(self, raw: RawVectors, live: np.ndarray) -> Transform | None:
        """The previous generation's transform, if the intact vector index shows it is this generation's: an
        add keeps the transform, so it often is, and then the repair changes no result."""
        assert self.manifest is not None
        manifest, vectors = self.manifest, self.vectors
        if vectors is None or VectorIndex.FILE in self.errors:
            return None
        directory = self.path / generation_name(manifest.state.generation - 1)
        try:
            candidate = load_transform(directory, manifest.settings.spec, manifest.settings.encoder_dim)
        except (IndexStateError, OSError):
            return None
        if candidate.out_dim != vectors.dim:
            return None
        sample = live[:: max(1, len(live) // VERIFY_ROWS)][:VERIFY_ROWS]
        hits = vectors.search(candidate.project(raw.get(sample)), 1)
        same = all(row and row[0][0] == pk and row[0][1] >= SAME_VECTOR for row, pk in zip(hits, sample))
        return candidate if same else None
