"""`semsearch ingest PATHS --index INDEX` as one call (`Index.ingest_into`): a new index is built whole beside
its target and moved into place once complete (ingest/first.py), an existing one is written in place. Paths
that are all directories are synced (syncing.py: only new and changed files read, `prune`); others are read as
one corpus (adding.py): an export's settings for a new index, the whole corpus checked before an index is made
or touched, then its documents added and its files recorded."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import SettingsError
from ..ingest import exported
from ..ingest.distributed import executor_for
from ..ingest.documents import Corpus
from ..ingest.first import building, is_index, is_partial, target_of
from ..ingest.sources import open_source
from ..ingest.sync import DirectoryFolder, FolderChanges
from ..settings import IndexOptions
from ..storage.manifest import FILE
from . import adding, opening, syncing
from .directory import IndexDirectory
from .ingestoptions import Ingested, IngestOptions, Listener
from .language import cjk_share, script_advice

Paths = Sequence[str | Path]


def are_folders(paths: Paths, options: IngestOptions) -> bool:
    """Whether an ingest of these paths is a folders' sync: every one a directory, and no vectors given."""
    return options.vectors is None and all(str(p) != "-" and Path(p).is_dir() for p in paths)


@dataclass(frozen=True)
class Into:
    """An ingest's target and asks: the index's path, its options (for a new one, or checked against the one
    there), the ingest's own, who is told, and how long a write waits for another."""

    path: Path
    index_options: IndexOptions
    options: IngestOptions
    listener: Listener
    wait: float


def ingest_into(into: Into, paths: Paths, watch: bool = False) -> Ingested:
    """Ingest the paths into the index at `into.path`, creating it if there is none (whole or not at all); with
    `watch` (folders only), keep it in step with them after, until SIGINT or SIGTERM."""
    options = into.options
    if not are_folders(paths, options):
        if options.prune or watch:
            raise SettingsError("prune and watch go with directories (every path one)")
        done = ingest_corpus(into, paths)
        into.listener.ingested(done)
        return done
    if options.tuning_queries is not None:
        raise SettingsError("tuning queries go with files and corpora, not directories")
    folders = folders_of(paths, options)
    done = ingest_folders(into, folders, empty_ok=watch)
    into.listener.ingested(done)
    if watch:
        watch_folders(into, folders)
    return done


def folders_of(paths: Paths, options: IngestOptions) -> list[DirectoryFolder]:
    return [DirectoryFolder(open_source(Path(p), options.fields, **options.walk)) for p in paths]


def ingest_folders(into: Into, folders: Sequence[DirectoryFolder], empty_ok: bool = False) -> Ingested:
    """Each folder synced into the index at `path` (scanned first, all of them, then written a folder at a
    time); `empty_ok`: a folder with nothing to read is no error (a watch waits for its files)."""
    with (
        building(into.path) as build_path,
        closing(opening.open_or_create(build_path, into.index_options, into.wait)) as directory,
    ):
        return synced_folders(directory, folders, into.options, into.listener, empty_ok=empty_ok)


def synced_folders(
    directory: IndexDirectory,
    folders: Sequence[DirectoryFolder],
    options: IngestOptions,
    listener: Listener,
    **how: bool,
) -> Ingested:
    """The folders synced into an open index (`how`: sync_folders' watching, empty_ok), told as one ingest."""
    before = directory.state.calibration
    reports, refused = syncing.sync_folders(directory, folders, options, listener, **how)
    return Ingested(
        syncing.combined(reports),
        directory.state.count,
        directory.settings,
        directory.state,
        before,
        refused,
        ignored=sum(folder.source.ignored for folder in folders),
        needs_ocr=[name for folder in folders for name in folder.source.needs_ocr],
        blank_pages=[blank for folder in folders for blank in folder.source.blank_pages],
        synced=reports,
    )


def ingest_corpus(into: Into, paths: Paths) -> Ingested:
    """The paths read as one corpus (files, tables, JSONL, several at once) into the index at `into.path`."""
    path, index_options, options, listener = into.path, into.index_options, into.options, into.listener
    walk = options.walk
    corpus = Corpus(list(paths), options.fields, options.vectors, skip_invalid=options.skip_invalid, **walk)
    if corpus.export and not (path / FILE).exists():  # a new index: the export's settings
        index_options = exported.options_for(corpus.export, index_options)
    first = not is_index(target_of(path)) and not options.cluster
    # the whole file, before an index is created or touched (a first ingest of given vectors: as it is stored)
    total = ((first and corpus.checked_as_stored()) or corpus.check()).count
    for refused in corpus.refused:
        listener.skipped(refused)
    known = len(corpus.refused)
    with (
        building(path, corpus.identity()) as build_path,
        executor_for(options.cluster, into.wait) as executor,  # reached before anything is written
    ):
        if options.cluster:
            listener.encoding_on(executor.describe())
        directory = opening.open_or_create(build_path, index_options, into.wait, corpus)
        with closing(directory), listener.encoding(total) as progress:
            before = directory.state.calibration
            resumable = is_partial(build_path)
            report = adding.ingest(directory, corpus, replace(options, cluster=executor), progress, resumable)
            advice = (
                script_advice(directory.settings.model, cjk_share(directory.store)) if report.added else None
            )
            after = (directory.state.count, directory.settings, directory.state, before)
    for refused in corpus.refused[known:]:  # files found unreadable as they were parsed, during the ingest
        listener.skipped(refused)
    blank = list(corpus.blank_pages)
    return Ingested(
        report, *after, corpus.refused, corpus.ignored, list(corpus.needs_ocr), advice, blank_pages=blank
    )


def planned(
    path: Path, paths: Paths, options: IngestOptions, wait: float
) -> list[tuple[Path, FolderChanges, int]]:
    """What an ingest of these folders would do, writing nothing: each folder's files it would read (added,
    changed) and those gone, with the index's count (0: no index yet)."""
    folders = folders_of(paths, options)
    if not is_index(target_of(path)):
        return [(folder.root, *syncing.planned(folder, None)) for folder in folders]
    with closing(opening.open_directory(path, wait)) as directory:
        return [(folder.root, *syncing.planned(folder, directory)) for folder in folders]


def watch_folders(into: Into, folders: Sequence[DirectoryFolder]) -> None:
    """Keep the index in step with the folders until SIGINT or SIGTERM (the sync under way ends first)."""
    from ..ingest.watch import stopped_by_signals, watch

    roots = [folder.root for folder in folders]
    with closing(opening.open_directory(into.path, into.wait)) as directory, stopped_by_signals() as stop:
        into.listener.watching(roots)

        def sync(paths: object) -> None:
            synced_folders(directory, folders, into.options, into.listener, watching=True)

        watch(roots, sync, ignore=[into.path], stop=stop)
        into.listener.stopped(directory.state.count)
