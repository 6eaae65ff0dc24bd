"""GET /facets/ranges: a number or date field's values among a search's documents as a few ranges, each with
its count and the filter that finds its documents, for the search page's buttons where a field holds too many
values to offer one each (a folder's `size` and `modified`: a value a file). The ranges: operations/facetranges.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import Route

from .protocol import answer, error_answer, error_of
from .schemas import BUCKETS, Operation, described

if TYPE_CHECKING:
    from ..index import Index


def facet_ranges(
    index: Index, q: str | None, fields: list[str], where: list[str], mode: str | None, buckets: int
) -> dict[str, Any]:
    index.refresh()
    found = index.facet_ranges(fields, q, where, mode, buckets)
    return {"ranges": {name: found[name] for name in fields if found[name]}}


def facet_range_routes(service: Callable[[Request], Any], operation: Operation) -> list[Route]:
    @described(GET=operation)
    async def get_ranges(request: Request):
        started = time.perf_counter()
        try:
            values = operation.query(request.query_params)
            found = await service(request).read(
                request,
                facet_ranges,
                values["q"],
                values["fields"],
                values["where"],
                values["mode"],
                values["buckets"] or BUCKETS,
            )
            return answer(found, started)
        except Exception as error:
            return error_answer(error_of(error), started)

    return [Route("/facets/ranges", get_ranges, methods=["GET"])]
