"""`semsearch serve`: the HTTP API and search page over one index or several."""

from __future__ import annotations

from pathlib import Path

import click

from .options import DEFAULT_INDEX, INDEX_PATH


@click.command()
@click.option("--index", "index_paths", type=INDEX_PATH, multiple=True, envvar="SEMSEARCH_INDEX",
              help="An index directory (repeatable: each is served at /indexes/NAME/..., NAME its directory's "
              "name; the first also at the bare routes). Default: indexes/default, or $SEMSEARCH_INDEX.")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0: any free.")
@click.option("--api-key", envvar="SEMSEARCH_API_KEY", help="Writes need it (Bearer); none: read-only.")
@click.option("--search-key", envvar="SEMSEARCH_SEARCH_KEY", help="Searches need it or the api key.")
@click.option("--keys", "keys_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              envvar="SEMSEARCH_KEYS", help="A JSON file of keys, each with its indexes, write right and where "
              "(docs/serving.md); re-read on SIGHUP.")  # fmt: skip
@click.option("--wait", type=click.FloatRange(min=0), default=2.0, show_default=True, help="Seconds a "
              "write waits for another writer before answering 503.")  # fmt: skip
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True, help="Searches run "
              "at once in each process, a thread each with the index open.")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes "
              "searching in parallel, each with the index open (its memory once per process).")  # fmt: skip
@click.option("--backup-dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              envvar="SEMSEARCH_BACKUP_DIR", help="Where POST /backup (api key) writes backups; none: refused.")  # fmt: skip
@click.option("--no-files", is_flag=True, help="Do not serve the ingested files (GET /files/PATH, "
              "where hits' location.url points).")  # fmt: skip
@click.option("--shards", "shards_path", type=click.Path(path_type=Path), help="Serve this sharded index "
              "(semsearch shard) instead of --index: its searches and GET /shards.")  # fmt: skip
@click.option("--local-cluster", type=click.IntRange(min=1), help="With --shards: the shards on a local "
              "Dask cluster of N workers (none: in this process).")  # fmt: skip
@click.option("--cluster", help="With --shards: the shards on the Dask scheduler at this address.")
def serve(index_paths, host, port, api_key, search_key, keys_file, wait, threads, workers, backup_dir, no_files,
          shards_path, local_cluster, cluster):  # fmt: skip
    """Serve indexes over HTTP: a JSON API, a search page at / and the files an index ingested at
    /files/PATH (read-only; --no-files: not).

    \b
    Examples:
        SEMSEARCH_API_KEY=secret semsearch serve --index indexes/papers --port 8000
        semsearch serve --index indexes/notes --index indexes/mail --keys keys.json
    """
    from functools import partial

    from ..errors import SemsearchError
    from ..index import Index
    from ..server import ServerSettings
    from ..server import serve as run
    from ..server.indexes import named_indexes

    settings = ServerSettings(
        api_key=api_key,
        search_key=search_key,
        keys_file=str(keys_file) if keys_file else None,
        write_wait=wait,
        threads=threads,
        backup_dir=str(backup_dir) if backup_dir else None,
        files=not no_files,
    )
    if shards_path is not None:
        from ..server.shards import serve_sharded
        from ..sharded import ShardedIndex

        engine = local_cluster or cluster
        opened = partial(ShardedIndex.open, shards_path, engine)
        return serve_sharded(opened, host, port, settings, lambda line: click.echo(line, err=True))
    try:
        named = named_indexes([Path(p) for p in index_paths] or [DEFAULT_INDEX])
    except SemsearchError as error:
        raise click.UsageError(str(error)) from None
    run({name: partial(Index.open, path) for name, path in named.items()}, host, port, settings, workers)
