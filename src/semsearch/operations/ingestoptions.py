"""What an ingest is asked beside the index's own options (settings.IndexOptions): how its sources are read,
what it does after adding, what it tells as it goes (a Listener: the CLI prints, a program may ignore), and
what it did (Ingested; a folder's SyncReport)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..ingest.distributed import Executor
from ..ingest.documents import FieldNames
from ..ingest.pipeline import AddReport, Progress
from ..ingest.sync import FolderChanges
from ..settings import RefitPolicy
from ..storage.manifest import IndexSettings, IndexState
from .deleting import Preview


@dataclass(frozen=True)
class IngestOptions:
    """`fields`: the names of a corpus's id, text, title and vector fields. A directory's walk: `include` and
    `exclude` globs, `hidden` files, `no_ignore` (.gitignore'd files too), `extraction` (how pictures are read:
    ingest/ocr). `vectors`: an .npy of vectors made elsewhere; `tuning_queries`: an .npy of sample queries'
    vectors the vector index tunes on. `refit`: "never", "always" or "auto" after adding; `cluster`: where to
    encode (distributed.py); `skip_invalid`: leave out what is not a valid document, each told; `prune`: remove
    the documents of a folder's files gone since its last ingest; `recalibrate`: an export ingested into a new
    index calibrates again instead of keeping its calibration."""

    fields: FieldNames = field(default_factory=FieldNames)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    hidden: bool = False
    no_ignore: bool = False
    extraction: Any = None
    vectors: str | Path | None = None
    tuning_queries: str | Path | None = None
    refit: RefitPolicy | str = RefitPolicy.NEVER
    cluster: Executor | str | int | None = None
    skip_invalid: bool = False
    prune: bool = False
    recalibrate: bool = False

    @property
    def walk(self) -> dict[str, Any]:
        """How a directory is walked, as sources.open_source takes it."""
        return dict(
            include=tuple(self.include),
            exclude=tuple(self.exclude),
            hidden=self.hidden,
            no_ignore=self.no_ignore,
            extraction=self.extraction,
        )


class Listener:
    """What an ingest tells as it goes. This one tells nothing but the encoding's progress (to `progress`, if
    given) and lets every prune run, as `Index.delete` does; the CLI's prints each and asks before a large
    prune (cli/ingestlines.py)."""

    def __init__(self, progress: Progress | None = None):
        self.progress = progress

    def skipped(self, error: DataError) -> None:
        """An entry or a file left out (skip_invalid; a watch's unreadable file)."""

    def encoding_on(self, where: str) -> None:
        """The documents are encoded on a cluster (its description)."""

    def encoding(self, total: int | None) -> contextlib.AbstractContextManager[Progress | None]:
        """The progress of encoding `total` documents (None: not known before they are read)."""
        return contextlib.nullcontext(self.progress)

    def confirm_prune(self, plan: Preview, index: Path) -> None:
        """A prune large enough to be confirmed first (deleting.py's rule): raise to refuse it."""

    def synced(self, root: Path, report: SyncReport, documents: int, refused: list[DataError]) -> None:
        """A folder brought in step (its SyncReport; `documents`: the index's count after)."""

    def ingested(self, done: Ingested) -> None:
        """The ingest asked is done (a watch then starts)."""

    def watching(self, roots: list[Path]) -> None:
        """The folders are watched from now on: each change synced, told by `synced`."""

    def stopped(self, documents: int) -> None:
        """The watch stopped; `documents`: the index's count."""


@dataclass(frozen=True)
class SyncReport:
    """Files added, changed, unchanged and gone; the documents removed (a changed file's vanished ids, and the
    gone files' with prune); the add's own report (None when nothing was added)."""

    added: int
    changed: int
    unchanged: int
    gone: int
    removed: int
    pruned: bool
    add: AddReport | None
    unchanged_documents: int  # the unchanged files' (not read again)
    seconds: float

    @classmethod
    def of(
        cls, changes: FolderChanges, removed: int, pruned: bool, add: AddReport | None, seconds: float
    ) -> SyncReport:
        files = (len(changes.added), len(changes.changed), changes.unchanged, len(changes.gone))
        return cls(*files, removed, pruned, add, changes.unchanged_documents, seconds)


@dataclass
class Ingested:
    """What an ingest did: the add's report (a folder sync's, the folders' together), the index's size,
    settings and state after, its calibration before (to tell a new one from one only aged), what was left
    out, the files of no known type and those that need OCR, the files read with blank pages (file, the page
    numbers OCR recognized and found no text on, the rest of the file kept), and advice on the corpus's
    script."""

    report: AddReport
    documents: int
    settings: IndexSettings
    state: IndexState
    calibration_before: dict | None
    refused: list[DataError]
    ignored: int = 0
    needs_ocr: list[str] = field(default_factory=list)
    advice: str | None = None
    blank_pages: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    synced: list[SyncReport] = field(default_factory=list)  # each folder's (a folders' sync)
