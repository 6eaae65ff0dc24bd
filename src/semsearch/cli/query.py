"""`semsearch query`: search an index and print its hits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import settings
from ..settings import (
    DEFAULT_ALPHA,
    DEFAULT_FUSION,
    DEFAULT_MODE,
    FACET_VALUES,
    MAX_FACET_VALUES,
    Fusion,
    SearchMode,
)

if TYPE_CHECKING:
    from ..retrieval.hits import Hit, Results
from .options import (
    Command,
    choice_option,
    index_option,
    json_option,
    page_options,
    search_options,
    shorten,
)


def place_options(func: Command) -> Command:
    """--per-document and --full-text: how many hits one document may fill, and whether --json carries each
    hit's whole document (query and similar take them)."""
    func = click.option(
        "--full-text",
        is_flag=True,
        help="--json: each hit with its document's whole text as `text` (else its passage and snippet only).",
    )(func)
    return click.option(
        "--per-document",
        type=click.IntRange(min=0),
        metavar="N",
        help="At most N hits of one document (0: no cap). Default: a document once, at its best place, while "
        "at least k documents match; where fewer do, their further places fill the k.",
    )(func)


@click.command()
@click.argument("text", required=False)
@index_option
@click.option(
    "--vector",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Query with a vector made elsewhere instead of TEXT: an .npy file of one vector, or a JSON list.",
)
@search_options
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
@page_options
@place_options
@click.option(
    "--facets",
    metavar="FIELD[,FIELD]",
    multiple=True,
    help="Count the values of these metadata fields among the documents the query covers (its filters', and "
    "in keyword mode holding a query word): the most frequent, with min and max for numbers.",
)
@click.option(
    "--facet-values",
    type=click.IntRange(1, MAX_FACET_VALUES),
    default=FACET_VALUES,
    show_default=True,
    help="How many values of each facet field, the most frequent first.",
)
@click.option(
    "--typos",
    type=click.IntRange(0, 2),
    default=settings.DEFAULT_TYPOS,
    show_default=True,
    help="keyword side: edits a query word the index lacks may hold to match an index word (1 from 5 letters, "
    "2 from 9; weighted below exact words). 0: exact words only.",
)
@click.option(
    "--crop",
    type=click.IntRange(min=0),
    default=settings.DEFAULT_CROP,
    show_default=True,
    help="Words of each hit's snippet: the part of its best passage that answers, matched words marked "
    "(0: no snippets).",
)
@json_option
def query(
    text,
    index_path,
    vector,
    k,
    where,
    rerank,
    mode,
    alpha,
    fusion,
    offset,
    generation,
    per_document,
    full_text,
    facets,
    facet_values,
    typos,
    crop,
    as_json,
):
    """Search an index for the documents closest in meaning to TEXT (or to a --vector).

    \b
    Example:
        semsearch query "how do vaccines work" -k 5 --where 'year>=2015' --where 'lang=en'
        semsearch query "how do vaccines work" --offset 10 --facets year,journal
    """
    if (text is None) == (vector is None):
        raise click.UsageError("give the query TEXT or a --vector FILE (one of them)")
    from ..index import Index

    how = dict(mode=mode, alpha=alpha, fusion=fusion, offset=offset, generation=generation)
    how |= dict(facets=list(facets), facet_values=facet_values)
    how |= dict(typos=typos, crop=crop, per_document=per_document, full_text=full_text)
    with Index.open(index_path) as index:
        if vector is None:
            hits = index.search(text, k=k, where=list(where), rerank=rerank, **how)
        else:
            from ..ingest.documents import read_query_vector

            query_vector = read_query_vector(vector)[None]
            hits = index.search_vectors(query_vector, k=k, where=list(where), rerank=rerank, **how)[0]
    print_results(hits, as_json)


def print_results(hits: Results, as_json: bool) -> None:
    """The hits, a JSON line each (hits.py's shape), or for people the places of one document under it, in the
    order of its best (each place with its rank from the page's offset); then the facets."""
    from ..retrieval.hits import hit_json

    if as_json:
        for hit in hits:
            click.echo(json.dumps(hit_json(hit, hits.full_text), ensure_ascii=False))
    for (rank, hit), *further in grouped(hits) if not as_json else []:
        title = f"{hit.title}: " if hit.title else ""
        opening = hit.text if hit.passage is None else hit.passage["text"]
        click.echo(f"{rank:>3}. [{hit.score:.3f}] {hit.id}  {shorten(title + opening, 100)}")
        print_place(hit, "      ")
        if hit.metadata:
            click.echo("      " + shorten(", ".join(f"{k}={v}" for k, v in hit.metadata.items()), 100))
        for rank, hit in further:
            click.echo(f"      {rank:>3}. [{hit.score:.3f}] another place of {hit.id}")
            print_place(hit, "           ")
    if not hits and not as_json:
        click.echo("no results", err=True)
    if hits.facets is None:
        return
    if as_json:
        click.echo(json.dumps({"facets": hits.facets, "facet_stats": hits.facet_stats}, ensure_ascii=False))
        return
    for name, counts in hits.facets.items():
        values = ", ".join(f"{value} {n}" for value, n in counts.items()) or "none"
        stats = (hits.facet_stats or {}).get(name)
        bounds = f" (min {stats['min']}, max {stats['max']})" if stats else ""
        click.echo(f"facet {name}: {values}{bounds}")


def grouped(hits: Results) -> list[list[tuple[int, Hit]]]:
    """The ranked hits by document, each document's places together (in rank order), documents in the order of
    their best place."""
    documents: dict[str, list[tuple[int, Hit]]] = {}
    for rank, hit in enumerate(hits, start=hits.offset + 1):
        documents.setdefault(hit.id, []).append((rank, hit))
    return list(documents.values())


def print_place(hit: Hit, indent: str) -> None:
    """A place's lines: where it is in its file, its passage's span, its snippet."""
    if hit.location:
        click.echo(f"{indent}at {place(hit)}")
    if hit.passage:
        click.echo(f"{indent}passage [{hit.passage['start']}:{hit.passage['end']}]")
    if hit.snippet:
        click.echo(indent + emphasized(hit.snippet))


def place(hit: Hit) -> str:
    """Where a hit is in its file, as an editor or a browser opens it: `path:line` (a CSV row too), `path (page
    3)`, `path (row 7)` (a Parquet row) or `path#anchor`, then the heading path (`path`: the metadata's, else
    the id)."""
    location = hit.location or {}
    path = str(hit.metadata.get("path") or hit.id)
    if location.get("line_start") is not None:
        path += f":{location['line_start']}"
    elif location.get("page") is not None:
        path += f" (page {location['page']})"
    elif location.get("row") is not None:
        path += f" (row {location['row']})"
    if location.get("anchor"):
        path += f"#{location['anchor']}"
    headings = location.get("headings")
    return f"{path}  {' > '.join(headings)}" if headings else path


def emphasized(snippet: dict) -> str:
    """A snippet on one line, its highlights bold (click.echo drops the styling where the output is not a
    terminal: piped, the text is plain)."""
    text, at, pieces = snippet["text"], 0, []
    for start, end in snippet["highlights"]:
        pieces += [text[at:start], click.style(text[start:end], bold=True)]
        at = end
    pieces.append(text[at:])
    return " ".join("".join(pieces).split())
