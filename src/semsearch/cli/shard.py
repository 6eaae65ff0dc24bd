"""`semsearch shard`: the command line of operations/sharding.py."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .options import quiet_option, required_index_option, wait_option


@click.command()
@required_index_option
@click.option("--shards", "count", type=int, required=True, help="How many shards to cut the index into.")
@click.option(
    "--out", type=click.Path(path_type=Path), required=True, help="The new sharded index directory."
)
@wait_option
@quiet_option
def shard(index_path, count, out, wait, quiet):
    """Cut an index into shards by document, nothing encoded again, to search as one (ShardedIndex).

    Each shard in OUT is an ordinary index (info, check and backup work on it) holding every passage of its
    documents, coded by the source's transform and trained vector index; OUT's shards.json names them and
    keywords.json holds the whole corpus's keyword statistics.

    \b
    Example:
        semsearch shard --index indexes/papers --shards 3 --out indexes/papers-3
    """
    from ..operations.sharding import cut

    started = time.perf_counter()
    told = None if quiet else (lambda line: click.echo(line, err=True))
    manifest = cut(index_path, count, out, wait, told)
    if not quiet:
        documents = sum(entry.documents for entry in manifest.shards)
        click.echo(
            f"cut {index_path} ({documents:,} documents) into {len(manifest.shards)} shards in {out} in "
            f"{time.perf_counter() - started:.1f} s",
            err=True,
        )
