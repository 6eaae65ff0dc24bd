"""`semsearch ingest DIR`: a folder's sync (ingest/sync.py: only new and changed files read and encoded;
--prune, --dry-run) and `--watch` (ingest/watch.py), printed for people."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import DataError, IndexStateError
from .options import progress


def folder_of(path: Path):
    from ..ingest.plainfolder import PlainFolder

    return PlainFolder(path)


def dry_run(folder, index_path: Path, prune: bool) -> None:
    """What `ingest DIR` would do, writing nothing: the files it would read, and what --prune would remove."""
    from ..index import Index
    from ..ingest.first import is_index, target_of
    from ..ingest.sync import FolderChanges, scan

    if not is_index(target_of(index_path)):
        changes, total = FolderChanges(str(folder.root), added=[path for path, _ in folder.files()]), 0
    else:
        with Index.open(index_path) as index:
            changes, total = scan(folder, index.store, parse=False), len(index)
    click.echo(f"would read {files_line(changes)} of {folder.root}")
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
    index, folder, *, prune: bool, yes: bool, skip_invalid: bool, quiet: bool, watching: bool, **add
):
    """Scan the folder against the index and bring the index in step; one summary line (in a watch, only when
    something changed). Unreadable files refuse the whole sync unless skipped (a watch skips them: they are read
    again at their next change)."""
    from ..ingest.sync import scan
    from ..operations.deleting import Preview

    changes = scan(folder, index.store)
    for error in changes.refused:
        click.echo(f"skipped: {error}" if skip_invalid or watching else str(error), err=True)
    if changes.refused and not (skip_invalid or watching):
        raise DataError(  # a SemsearchError: a new index's partial directory goes with it
            f"{len(changes.refused)} files could not be read; nothing was written (--skip-invalid ingests "
            "the rest)",
            path=folder.root,
        )
    if prune and changes.prunable:
        plan = Preview(len(changes.prunable), len(index), changes.prunable[:10])
        if plan.needs_confirmation and not yes:
            description = plan.describe().replace("this delete", "--prune")
            if watching or not sys.stdin.isatty():
                raise IndexStateError(f"{description}: give --yes to confirm it (--dry-run lists them)")
            click.confirm(f"{description} ({index.path}). Prune?", abort=True, err=True)
    documents = len(changes.documents)
    with progress(documents, quiet or watching or not documents, "encoding") as bar:
        report = index.sync(changes, prune=prune, progress=bar.update, **add)
    if not quiet and (not watching or report.added or report.changed or report.removed or changes.refused):
        click.echo(summary_line(folder.root, changes, report, len(index)), err=True)
    return report


def summary_line(root: Path, changes, report, documents: int) -> str:
    gone = ""
    if report.gone:
        gone = " (their documents kept: --prune removes them)" if not report.pruned else ""
    removed = f"; {report.removed} documents removed" if report.removed else ""
    refused = f"; {len(changes.refused)} files refused" if changes.refused else ""
    added = ""
    if report.add is not None:
        add = report.add
        passages = f", {add.passages} passages" if add.passages > add.added else ""
        added = (
            f"; {add.added} documents encoded ({add.replaced} replaced{passages}) in {add.seconds:.1f} s"
            if add.added
            else ""
        )
    return f"synced {root}: {files_line(changes)}{gone}{added}{removed}{refused}; {documents} in the index"


def watch_folder(folder, index_path: Path, wait: float, **sync) -> None:
    """Keep the index in step with the folder until Ctrl-C (the sync under way ends first)."""
    from ..index import Index
    from ..ingest.watch import stopped_by_signals, watch

    with Index.open(index_path, wait) as index, stopped_by_signals() as stop:
        if not sync.get("quiet"):
            click.echo(f"watching {folder.root} (Ctrl-C stops)", err=True)
        watch(
            [folder.root],
            lambda paths: sync_once(index, folder, watching=True, **sync),
            ignore=[index_path],
            stop=stop,
        )
    if not sync.get("quiet"):
        click.echo(f"stopped watching {folder.root}; {len(index)} in the index", err=True)
