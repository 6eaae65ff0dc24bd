"""What `semsearch ingest` prints for people as it goes (a Listener of the library's ingest:
operations/ingestoptions.py): what was skipped, the encoding's progress bar, each folder's sync, asking before a
large prune, then what was kept, calibrated, refitted or advised, and the last line counting the documents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import DataError, IndexStateError
from ..operations.deleting import Preview
from ..operations.ingestoptions import Ingested, Listener, SyncReport
from ..retrieval.calibration_age import RENEW, age
from ..settings import DRIFT_LIMIT, YOUNG_FACTOR
from .encodingbar import EncodingBar
from .options import calibrated_again, calibration_line, ingest_summary, kept_line, stale_words

if TYPE_CHECKING:
    from ..ingest.sync import FolderChanges


class PrintedIngest(Listener):
    """Prints to stderr (`quiet`: only what is skipped and what is advised); a large prune is asked on a
    terminal, else needs `yes`."""

    def __init__(self, index_path: Path, quiet: bool, yes: bool):
        self.index_path, self.quiet, self.yes = index_path, quiet, yes
        self.watched = False

    def skipped(self, error: DataError) -> None:
        click.echo(f"skipped: {error}", err=True)

    def encoding_on(self, where: str) -> None:
        if not self.quiet:
            click.echo(f"encoding on {where}", err=True)

    def encoding(self, total: int | None) -> EncodingBar:
        return EncodingBar(total, self.quiet or self.watched or total == 0)

    def confirm_prune(self, plan: Preview, index: Path) -> None:
        if self.yes:
            return
        description = plan.describe().replace("this delete", "--prune")
        if self.watched or not sys.stdin.isatty():
            raise IndexStateError(f"{description}: give --yes to confirm it (--dry-run lists them)")
        click.confirm(f"{description} ({index}). Prune?", abort=True, err=True)

    def synced(self, root: Path, report: SyncReport, documents: int, refused: list[DataError]) -> None:
        changed = report.added or report.changed or report.removed or refused
        if not self.quiet and (not self.watched or changed):
            click.echo(folder_line(root, report, documents if self.watched else None), err=True)

    def ingested(self, done: Ingested) -> None:
        if not done.synced:
            corpus_lines(done, self.index_path, self.quiet)
        # a corpus's even when quiet; a folder sync's only when not, as its other lines
        if not done.synced or not self.quiet:
            from ..ingest.ocr import blank_pages_line, needs_ocr_line

            if done.needs_ocr:
                click.echo(needs_ocr_line(done.needs_ocr), err=True)
            for name, pages in done.blank_pages:  # a file read, some of its pages blank: one line each
                click.echo(blank_pages_line(name, pages), err=True)
        if not self.quiet:
            summary = ingest_summary(
                done.report, len(done.refused), done.documents, self.index_path, done.ignored
            )
            click.echo(summary, err=True)

    def watching(self, roots: list[Path]) -> None:
        self.watched = True
        if not self.quiet:
            click.echo(f"watching {', '.join(map(str, roots))} (Ctrl-C stops)", err=True)

    def stopped(self, documents: int) -> None:
        if not self.quiet:
            click.echo(f"stopped watching; {documents} in the index", err=True)


def corpus_lines(done: Ingested, index_path: Path, quiet: bool) -> None:
    """After a corpus's ingest: vectors reused, what of an export was kept, the calibration made or stale, the
    transform refitted or advised, the script's advice."""
    report, calibration = done.report, done.state.calibration
    if report.resumed:
        click.echo(f"resumed: {report.resumed} vectors from an interrupted ingest were reused", err=True)
    kept = () if quiet else report.restored
    if kept:
        click.echo(kept_line(kept, done), err=True)
    if "calibration" not in kept and not quiet and calibrated_again(done.calibration_before, calibration):
        click.echo(f"calibrated the fusion weight: {calibration_line(calibration)}", err=True)
    elif (stale := age(calibration)) is not None and stale.stale:
        click.echo(
            f"the calibration is stale ({stale_words(stale)}): run `{RENEW} --index {index_path}`, or ingest "
            "with --refit auto",
            err=True,
        )
    if report.young:
        click.echo(
            f"fitted the transform again on all {done.documents} documents: a young index (fewer than "
            f"{YOUNG_FACTOR} documents per kept dimension) refits on every add",
            err=True,
        )
    elif report.refitted:
        click.echo(f"refitted the transform (drift was {report.drift:.3f})", err=True)
    elif report.refit_advised:
        click.echo(
            f"the corpus has drifted from the fitted transform (drift {report.drift:.3f} > "
            f"{DRIFT_LIMIT}): run `semsearch refit --index {index_path}`, or ingest with --refit auto",
            err=True,
        )
    if done.advice:  # the corpus is in a script the model was not trained on: once, before the last line
        click.echo(done.advice, err=True)


def show_dry_run(root: Path, changes: FolderChanges, total: int, prune: bool) -> None:
    """What `ingest DIR` would do, writing nothing: the files it would read, and what --prune would remove."""
    click.echo(f"would ingest {root}: {files_line(changes)}")
    if changes.gone:
        ids = changes.prunable
        shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
        verb = "would remove" if prune else "--prune would remove"
        click.echo(f"{verb} {len(ids)} of {total} documents" + (f": {shown}" if shown else ""))


def files_line(changes: FolderChanges) -> str:
    return (
        f"{len(changes.added)} files added, {len(changes.changed)} changed, {changes.unchanged} unchanged, "
        f"{len(changes.gone)} gone"
    )


def folder_line(root: Path, report: SyncReport, documents: int | None) -> str:
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
