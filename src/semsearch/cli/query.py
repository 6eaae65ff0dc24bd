"""`semsearch query`: search an index and print its hits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..settings import (
    DEFAULT_ALPHA,
    DEFAULT_FUSION,
    DEFAULT_K,
    DEFAULT_MODE,
    Fusion,
    SearchMode,
    check_k,
)

if TYPE_CHECKING:
    from ..retrieval.search import Hit
from .options import (
    checked,
    choice_option,
    index_option,
    shorten,
)


@click.command()
@click.argument("text", required=False)
@index_option
@click.option(
    "--vector",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Query with a vector made elsewhere instead of TEXT: an .npy file of one vector, or a JSON list.",
)
@click.option(
    "-k",
    "k",
    type=int,
    default=DEFAULT_K,
    show_default=True,
    callback=checked(check_k),
    help="How many results.",
)
@click.option(
    "--where",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Filter on metadata before the search (repeatable, all must hold); also !=, <, <=, >, >=.",
)
@click.option(
    "--rerank",
    type=click.IntRange(min=0),
    help="Re-score the top N candidates by cosine of the kept raw encoder vectors (0: off; default: the "
    "index's own setting, see `info`).",
)
@choice_option(
    "--mode",
    SearchMode,
    help="dense (the vectors), keyword (bm25 over the words) or hybrid (both, fused). Default: the index's "
    f"(the one its calibration chose, else {DEFAULT_MODE} where it has a keyword index; `info` shows it).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1),
    help="hybrid: the dense side's weight, 0 to 1, overriding the index's calibrated one (default: that, else "
    f"{DEFAULT_ALPHA}; `info` shows it). Given alone, it asks for hybrid search.",
)
@choice_option(
    "--fusion",
    Fusion,
    help=f"hybrid: convex (each side's scores min-max normalised, weighted by --alpha) or rrf (reciprocal rank "
    f"fusion). Default: {DEFAULT_FUSION}.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per result and line.")
def query(text, index_path, vector, k, where, rerank, mode, alpha, fusion, as_json):
    """Search an index for the documents closest in meaning to TEXT (or to a --vector).

    \b
    Example:
        semsearch query "how do vaccines work" -k 5 --where 'year>=2015' --where 'lang=en'
    """
    if (text is None) == (vector is None):
        raise click.UsageError("give the query TEXT or a --vector FILE (one of them)")
    from ..index import Index

    how = dict(mode=mode, alpha=alpha, fusion=fusion)
    with Index.open(index_path) as index:
        if vector is None:
            hits = index.search(text, k=k, where=list(where), rerank=rerank, **how)
        else:
            from ..ingest.documents import read_query_vector

            query_vector = read_query_vector(vector)[None]
            hits = index.search_vectors(query_vector, k=k, where=list(where), rerank=rerank, **how)[0]
    for rank, hit in enumerate(hits, start=1):
        if as_json:
            click.echo(json.dumps(hit.to_json(), ensure_ascii=False))
        else:
            title = f"{hit.title}: " if hit.title else ""
            click.echo(f"{rank:>3}. [{hit.score:.3f}] {hit.id}  {shorten(title + hit.text, 100)}")
            if hit.location:
                click.echo(f"      at {place(hit)}")
            if hit.passage:
                start, end = hit.passage["start"], hit.passage["end"]
                click.echo(f"      passage [{start}:{end}]: " + shorten(hit.passage["text"], 80))
            if hit.metadata:
                click.echo("      " + shorten(", ".join(f"{k}={v}" for k, v in hit.metadata.items()), 100))
    if not hits and not as_json:
        click.echo("no results", err=True)


def place(hit: Hit) -> str:
    """Where a hit is in its file, as an editor or a browser opens it: `path:line`, `path (page 3)` or
    `path#anchor`, then the heading path (`path`: the metadata's, else the id)."""
    location = hit.location or {}
    path = str(hit.metadata.get("path") or hit.id)
    if location.get("line_start") is not None:
        path += f":{location['line_start']}"
    elif location.get("page") is not None:
        path += f" (page {location['page']})"
    if location.get("anchor"):
        path += f"#{location['anchor']}"
    headings = location.get("headings")
    return f"{path}  {' > '.join(headings)}" if headings else path
