"""GET /facets/ranges: a number or date field's values among a search's documents as a few ranges, each with
its count and the filter that finds its documents, for the search page's buttons where a field holds too many
values to offer one each (a folder's `size` and `modified`: a value a file). The ranges: operations/facetranges.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import Route

from ..settings import SearchMode
from .protocol import ApiError, answer, bounded_int, error_answer, error_of, string_list

if TYPE_CHECKING:
    from ..index import Index

BUCKETS = 5
MAX_BUCKETS = 20


def facet_ranges(
    index: Index, q: str | None, fields: list[str], where: list[str], mode: str | None, buckets: int
) -> dict[str, Any]:
    index.refresh()
    found = index.facet_ranges(fields, q, where, mode, buckets)
    return {"ranges": {name: found[name] for name in fields if found[name]}}


def facet_range_routes(service: Callable[[], Any]) -> list[Route]:
    async def get_ranges(request: Request):
        started = time.perf_counter()
        params = request.query_params
        try:
            fields = string_list(params.getlist("fields"), "fields")
            if not fields:
                raise ApiError(400, "bad_parameter", "name the fields: fields=FIELD")
            buckets = bounded_int(params.get("buckets"), "buckets", 2, MAX_BUCKETS) or BUCKETS
            mode = params.get("mode") or None
            if mode is not None and mode not in {m.value for m in SearchMode}:
                raise ApiError(
                    400, "bad_parameter", f"mode must be one of {', '.join(m.value for m in SearchMode)}"
                )
            found = await service(request).read(
                request, facet_ranges, params.get("q"), fields, params.getlist("where"), mode, buckets
            )
            return answer(found, started)
        except Exception as error:
            return error_answer(error_of(error), started)

    return [Route("/facets/ranges", get_ranges, methods=["GET"])]
