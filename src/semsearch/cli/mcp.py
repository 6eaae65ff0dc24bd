"""`semsearch mcp`: the indexes as Model Context Protocol tools over stdio, for a desktop assistant or a coding
agent that launches it (server/mcp_tools.py; the same tools are at /mcp on `semsearch serve`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

from .options import DEFAULT_INDEX, INDEX_PATH

INSTALL = "pip install 'semsearch[mcp]'"


@click.command()
@click.option(
    "--index",
    "index_paths",
    type=INDEX_PATH,
    multiple=True,
    envvar="SEMSEARCH_INDEX",
    help="An index directory (repeatable: the tools take an `index` argument naming one by its directory "
    "name; the first is the default). Default: indexes/default, or $SEMSEARCH_INDEX.",
)
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Add the add_documents and delete_documents tools (without it the indexes are only read).",
)
@click.option("--wait", type=click.FloatRange(min=0), default=10.0, show_default=True, help="Seconds a "
              "write waits for another process writing the same index.")  # fmt: skip
def mcp(index_paths, allow_writes, wait):
    """Serve indexes to an AI assistant as MCP tools over stdin/stdout: search, get_document, describe_index
    (and add_documents, delete_documents with --allow-writes).

    \b
    Example (what an assistant's configuration runs):
        semsearch mcp --index indexes/papers --index indexes/notes
    """
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        raise click.ClickException(f"`semsearch mcp` needs the mcp extra: {INSTALL}") from None
    from ..index import Index
    from ..server.mcp_stdio import run

    paths = [Path(p) for p in index_paths] or [DEFAULT_INDEX]
    run({name: partial(Index.open, path) for name, path in named(paths).items()}, allow_writes, wait)


def named(paths: list[Path]) -> dict[str, Path]:
    """Each index by its directory's name (by its path as given where two share a name)."""
    names = [path.name for path in paths]
    return {(p.name if names.count(p.name) == 1 else str(p)): p for p in dict.fromkeys(paths)}
