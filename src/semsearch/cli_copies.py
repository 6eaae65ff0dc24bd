"""`semsearch backup`, `restore` and `export`: the command line of operations/backup.py and export.py,
registered by cli.py. Progress bars go to standard error; the summary line gives sizes and times."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .cli_options import quiet_option, required_index_option, wait_option


def bar_of(quiet: bool, label: str, unit: str = "B", total: int | None = None):
    from tqdm import tqdm

    scaled = unit == "B"
    return tqdm(
        total=total,
        desc=label,
        unit=unit,
        unit_scale=scaled,
        unit_divisor=1024 if scaled else 1000,
        disable=quiet,
        file=sys.stderr,
        dynamic_ncols=True,
    )


def human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


@click.command()
@click.argument("dest", type=click.Path(path_type=Path))
@required_index_option
@click.option("--archive", is_flag=True, help="Write one .tar.gz file at DEST instead of a directory.")
@quiet_option
def backup(dest, index_path, archive, quiet):
    """Copy an index, as of its latest generation, to DEST while it is read and written.

    DEST is itself an index (query it with --index DEST), with backup.json: every file's sha256, which
    `semsearch check --index DEST` verifies. Unchanged raw vectors are hard-linked on the same file system.

    \b
    Example:
        semsearch backup backups/papers-monday --index indexes/papers
    """
    from .operations.backup import backup as make

    with bar_of(quiet, "backup") as bar:
        report = make(index_path, dest, archive=archive, progress=bar.update, total=_total_of(bar))
    if not quiet:
        linked = f", {human(report.linked_bytes)} of it hard-linked" if report.linked_bytes else ""
        click.echo(
            f"backed up generation {report.generation} of {index_path} ({report.documents:,} documents) to "
            f"{dest}: {report.files} files, {human(report.bytes)}{linked}, in {report.seconds:.2f} s",
            err=True,
        )


def _total_of(bar):
    def total(size: int) -> None:
        bar.total = size
        bar.refresh()

    return total


@click.command()
@click.argument("backup_path", metavar="BACKUP", type=click.Path(exists=True, path_type=Path))
@required_index_option
@click.option("--force", is_flag=True, help="Replace the index at --index even when it is healthy.")
@wait_option
@quiet_option
def restore(backup_path, index_path, force, wait, quiet):
    """Put a backup (a directory or .tar.gz made by `semsearch backup`) in place of the index at --index.

    The backup is verified against its checksums first; a healthy index is replaced only with --force.
    Readers see the old index or the restored one, never a mix.

    \b
    Example:
        semsearch restore backups/papers-monday --index indexes/papers
    """
    from .operations.backup import restore as put_back

    started = time.perf_counter()
    with bar_of(quiet, "verifying") as bar:
        report = put_back(
            backup_path, index_path, force=force, wait=wait, progress=bar.update, total=_total_of(bar)
        )
    if not quiet:
        replaced = f"; it replaced an index that was {report.replaced}" if report.replaced else ""
        click.echo(
            f"restored generation {report.generation} ({report.documents:,} documents) from {backup_path} to "
            f"{index_path} in {time.perf_counter() - started:.2f} s{replaced}",
            err=True,
        )
