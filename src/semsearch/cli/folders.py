"""`semsearch ingest DIR`: a folder's sync (ingest/sync.py: only new and changed files read and encoded;
--prune, --dry-run) and `--watch` (ingest/watch.py), printed for people."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import DataError, IndexStateError
from .encodingbar import EncodingBar
from .options import ingest_summary


def folder_sync(
    sources, index_path: Path, options, dry_run: bool, wait: float, *, watch: bool, **sync
) -> None:
    """`ingest DIR...`: each directory synced (scanned first, all of them, then written a directory at a time),
    or with `dry_run` only shown; then, with `watch`, kept in step."""
    from ..index import Index
    from ..ingest.first import building
    from ..ingest.sync import DirectoryFolder

    folders = [DirectoryFolder(source) for source in sources]
    if dry_run:
        for folder in folders:
            show_dry_run(folder, index_path, sync["prune"])
        return
    with building(index_path) as build_path, Index.open_or_create(build_path, options, wait=wait) as index:
        sync_once(index, folders, watching=False, target=index_path, empty_ok=watch, **sync)
    if watch:
        watch_folders(folders, index_path, wait, **sync)


def show_dry_run(folder, index_path: Path, prune: bool) -> None:
    """What `ingest DIR` would do, writing nothing: the files it would read, and what --prune would remove."""
    from ..index import Index
    from ..ingest.first import is_index, target_of
    from ..ingest.sync import FolderChanges, scan

    if not is_index(target_of(index_path)):
        changes, total = FolderChanges(str(folder.root), added=[path for path, _ in folder.files()]), 0
    else:
        with Index.open(index_path) as index:
            changes, total = scan(folder, index.store, parse=False), len(index)
    click.echo(f"would ingest {folder.root}: {files_line(changes)}")
    if changes.gone:
        ids = changes.prunable
        shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
        verb = "would remove" if prune else "--prune would remove"
        click.echo(f"{verb} {len(ids)} of {total} documents" + (f": {shown}" if shown else ""))


def files_line(changes) -> str:
    return (
        f"{len(changes.added)} files added, {len(changes.changed)} changed, {changes.unchanged} unchanged, "
        f"{len(changes.gone)} gone"
    )


def sync_once(
    index,
    folders,
    *,
    prune: bool,
    yes: bool,
    skip_invalid: bool,
    quiet: bool,
    watching: bool,
    target: Path | None = None,
    empty_ok: bool = False,
    **add,
):
    """Scan the folders against the index, then bring the index in step with each: a line per folder, then the
    ingest's summary (in a watch, a folder's line only when something changed). Unreadable files refuse the
    whole ingest unless skipped (a watch skips them: they are read again at their next change). One folder's
    files are parsed as they are encoded (a refusal undoes the write); several folders' are all read first,
    so that a refusal in any writes none of them."""
    from ..ingest.documents import refusal
    from ..ingest.sync import read_changes, scan

    streamed = len(folders) == 1
    scanned = [(folder, scan(folder, index.store, later=streamed)) for folder in folders]
    for folder, changes in scanned:
        if not (
            watching
            or empty_ok
            or changes.pending
            or changes.added
            or changes.changed
            or changes.unchanged
            or changes.gone
            or changes.refused
        ):
            from ..ingest.ocr import needs_ocr_line  # no file of a known type, none recorded

            needs = folder.source.needs_ocr
            raise DataError(
                f"no documents: {needs_ocr_line(needs)}" if needs else "no documents", path=folder.root
            )
    refuse = not (skip_invalid or watching)
    refused = [error for _, changes in scanned for error in changes.refused]
    if refused and refuse:
        raise refusal(refused)  # a new index's partial directory goes too
    for error in refused:
        click.echo(f"skipped: {error}", err=True)
    reports = []
    for folder, changes in scanned:
        if prune and changes.prunable:
            confirm_prune(index, changes, yes, watching)
        known = len(changes.refused)
        stream = read_changes(folder, changes, refuse=refuse) if changes.pending else None
        total = len(changes.documents) if stream is None else folder.expected(changes.pending)
        with EncodingBar(total, quiet or watching or total == 0) as bar:
            report = index.sync(changes, documents=stream, prune=prune, progress=bar, **add)
        for error in changes.refused[known:]:  # found as the files were parsed
            click.echo(f"skipped: {error}", err=True)
            refused.append(error)
        reports.append(report)
        if not quiet and (
            not watching or report.added or report.changed or report.removed or changes.refused
        ):
            click.echo(folder_line(folder.root, report, len(index) if watching else None), err=True)
    if not quiet and not watching:
        ignored = sum(folder.source.ignored for folder in folders)
        if needs := [name for folder in folders for name in folder.source.needs_ocr]:
            from ..ingest.ocr import needs_ocr_line

            click.echo(needs_ocr_line(needs), err=True)
        click.echo(
            ingest_summary(combined(reports), len(refused), len(index), target or index.path, ignored),
            err=True,
        )


def combined(reports):
    """The add reports of the folders' syncs as one, the unchanged files' documents counted as unchanged."""
    from ..ingest.pipeline import AddReport

    adds = [report.add for report in reports if report.add is not None]
    return AddReport(
        added=sum(add.added for add in adds),
        unchanged=sum(add.unchanged for add in adds) + sum(report.unchanged_documents for report in reports),
        seconds=sum(report.seconds for report in reports),
        replaced=sum(add.replaced for add in adds),
        passages=sum(add.passages for add in adds),
        moved=sum(add.moved for add in adds),
    )


def confirm_prune(index, changes, yes: bool, watching: bool) -> None:
    """A prune of most of the index is confirmed first, as a delete is (operations/deleting.py)."""
    from ..operations.deleting import Preview

    plan = Preview(len(changes.prunable), len(index), changes.prunable[:10])
    if plan.needs_confirmation and not yes:
        description = plan.describe().replace("this delete", "--prune")
        if watching or not sys.stdin.isatty():
            raise IndexStateError(f"{description}: give --yes to confirm it (--dry-run lists them)")
        click.confirm(f"{description} ({index.path}). Prune?", abort=True, err=True)


def folder_line(root: Path, report, documents: int | None) -> str:
    """A folder's files, as its sync found them; in a watch, what was encoded and the index's size too."""
    gone = " (their documents kept: --prune removes them)" if report.gone and not report.pruned else ""
    removed = f"; {report.removed} documents removed" if report.removed else ""
    line = (
        f"synced {root}: {report.added} files added, {report.changed} changed, {report.unchanged} unchanged, "
        f"{report.gone} gone{gone}{removed}"
    )
    if documents is None:
        return line
    encoded = f"; {report.add.added} documents encoded in {report.add.seconds:.1f} s" if report.add else ""
    return f"{line}{encoded}; {documents} in the index"


def watch_folders(folders, index_path: Path, wait: float, **sync) -> None:
    """Keep the index in step with the folders until Ctrl-C (the sync under way ends first)."""
    from ..index import Index
    from ..ingest.watch import stopped_by_signals, watch

    roots = [folder.root for folder in folders]
    with Index.open(index_path, wait) as index, stopped_by_signals() as stop:
        if not sync.get("quiet"):
            click.echo(f"watching {', '.join(map(str, roots))} (Ctrl-C stops)", err=True)
        watch(
            roots,
            lambda paths: sync_once(index, folders, watching=True, **sync),
            ignore=[index_path],
            stop=stop,
        )
        if not sync.get("quiet"):
            click.echo(f"stopped watching; {len(index)} in the index", err=True)
