"""`semsearch query`: search an index and print its hits."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..retrieval.snippets import DEFAULT_CROP
from ..retrieval.typos import DEFAULT_TYPOS
from ..settings import (
    DEFAULT_ALPHA,
    DEFAULT_FUSION,
    DEFAULT_K,
    DEFAULT_MODE,
    Fusion,
    SearchMode,
    check_k,
)
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
@click.option(
    "--typos",
    type=click.IntRange(0, 2),
    default=DEFAULT_TYPOS,
    show_default=True,
    help="keyword side: edits a query word the index lacks may hold to match an index word (1 from 5 letters, "
    "2 from 9; weighted below exact words). 0: exact words only.",
)
@click.option(
    "--crop",
    type=click.IntRange(min=0),
    default=DEFAULT_CROP,
    show_default=True,
    help="Words of each hit's snippet: the part of its best passage that answers, matched words marked "
    "(0: no snippets).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per result and line.")
def query(text, index_path, vector, k, where, rerank, mode, alpha, fusion, typos, crop, as_json):
    """Search an index for the documents closest in meaning to TEXT (or to a --vector).

    \b
    Example:
        semsearch query "how do vaccines work" -k 5 --where 'year>=2015' --where 'lang=en'
    """
    if (text is None) == (vector is None):
        raise click.UsageError("give the query TEXT or a --vector FILE (one of them)")
    from ..index import Index

    how = dict(mode=mode, alpha=alpha, fusion=fusion, typos=typos, crop=crop)
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
            if hit.passage:
                start, end = hit.passage["start"], hit.passage["end"]
                click.echo(f"      passage [{start}:{end}]")
            if hit.snippet:
                click.echo("      " + emphasized(hit.snippet))
            if hit.metadata:
                click.echo("      " + shorten(", ".join(f"{k}={v}" for k, v in hit.metadata.items()), 100))
    if not hits and not as_json:
        click.echo("no results", err=True)


def emphasized(snippet: dict) -> str:
    """A snippet on one line, its highlights bold (click.echo drops the styling where the output is not a
    terminal: piped, the text is plain)."""
    text, at, pieces = snippet["text"], 0, []
    for start, end in snippet["highlights"]:
        pieces += [text[at:start], click.style(text[start:end], bold=True)]
        at = end
    pieces.append(text[at:])
    return " ".join("".join(pieces).split())
