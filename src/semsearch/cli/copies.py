"""`semsearch backup`, `restore` and `export`: the command line of operations/backup.py and export.py.
Progress bars go to standard error; the summary line gives sizes and times."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .options import (
    advance_of,
    bar_of,
    human,
    index_option,
    quiet_option,
    required_index_option,
    total_of,
    wait_option,
)


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
    from ..operations.backup import backup as make

    with bar_of(quiet, "backup") as bar:
        report = make(index_path, dest, archive=archive, progress=advance_of(bar), total=total_of(bar))
    if not quiet:
        linked = f", {human(report.linked_bytes)} of it hard-linked" if report.linked_bytes else ""
        click.echo(
            f"backed up generation {report.generation} of {index_path} ({report.documents:,} documents) to "
            f"{dest}: {report.files} files, {human(report.bytes)}{linked}, in {report.seconds:.2f} s",
            err=True,
        )


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
    from ..operations.backup import restore as put_back

    started = time.perf_counter()
    with bar_of(quiet, "verifying") as bar:
        report = put_back(
            backup_path, index_path, force=force, wait=wait, progress=advance_of(bar), total=total_of(bar)
        )
    if not quiet:
        replaced = f"; it replaced an index that was {report.replaced}" if report.replaced else ""
        click.echo(
            f"restored generation {report.generation} ({report.documents:,} documents) from {backup_path} to "
            f"{index_path} in {time.perf_counter() - started:.2f} s{replaced}",
            err=True,
        )


@click.command()
@index_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The JSONL file to write (.gz: compressed); default: standard output.",
)
@click.option(
    "--vectors", is_flag=True, help="Include each document's raw vectors: an import encodes nothing."
)
@quiet_option
def export(index_path, output, vectors, quiet):
    """Write an index's documents as JSONL: a header line with its settings, then one document per line
    (id, title, text, metadata; with --vectors its raw vectors). `semsearch ingest FILE` makes the same index
    again, in this or a later version of semsearch.

    \b
    Example:
        semsearch export --index indexes/papers -o papers.jsonl --vectors
    """
    from ..index import Index

    started = time.perf_counter()
    with Index.open(index_path) as index, bar_of(quiet, "exporting", "doc", len(index)) as bar:
        count = index.export(output or sys.stdout, vectors=vectors, progress=advance_of(bar))
    if not quiet:
        where = f"{output} ({human(output.stat().st_size)})" if output else "standard output"
        click.echo(
            f"exported {count:,} documents{' with their vectors' if vectors else ''} of {index_path} to "
            f"{where} in {time.perf_counter() - started:.2f} s",
            err=True,
        )
