"""The options several commands share (cli.py's and cli_copies.py's): one definition each."""

from __future__ import annotations

from pathlib import Path

import click

from .settings import DEFAULT_WAIT

DEFAULT_INDEX = Path("indexes") / "default"
INDEX_PATH = click.Path(file_okay=False, path_type=Path)


def index_option(func):
    """--index, defaulting to indexes/default (or $SEMSEARCH_INDEX)."""
    return click.option(
        "--index",
        "index_path",
        type=INDEX_PATH,
        envvar="SEMSEARCH_INDEX",
        default=DEFAULT_INDEX,
        show_default="indexes/default, or $SEMSEARCH_INDEX",
        help="The index directory.",
    )(func)


def required_index_option(func):
    """--index with no default (or $SEMSEARCH_INDEX): for commands that replace or copy a whole index."""
    return click.option(
        "--index",
        "index_path",
        type=INDEX_PATH,
        envvar="SEMSEARCH_INDEX",
        required=True,
        help="The index directory.",
    )(func)


def wait_option(func):
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=DEFAULT_WAIT,
        show_default=True,
        help="Seconds to wait for another process writing to the same index before giving up.",
    )(func)


def quiet_option(func):
    return click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")(func)
