"""`semsearch similar`: the documents closest to documents the index holds."""

from __future__ import annotations

import click

from .options import index_option, json_option, page_options, search_options
from .query import place_options, print_results


@click.command()
@click.argument("ids", nargs=-1, required=True)
@index_option
@click.option(
    "--not", "negative", multiple=True, metavar="ID", help="A document to move away from (repeatable)."
)
@search_options
@page_options
@place_options
@json_option
def similar(
    ids, index_path, negative, k, where, rerank, offset, generation, per_document, full_text, as_json
):
    """The documents most like the documents ID... (their stored vectors and most distinctive words, fused as a
    query is; the examples themselves left out).

    \b
    Example:
        semsearch similar argparse.ArgumentParser -k 5 --not argparse.Action --where 'kind=class'
    """
    from ..index import Index

    with Index.open(index_path) as index:
        hits = index.similar(
            list(ids),
            k=k,
            where=list(where),
            rerank=rerank,
            negative=list(negative),
            offset=offset,
            generation=generation,
            per_document=per_document,
            full_text=full_text,
        )
    print_results(hits, as_json)
