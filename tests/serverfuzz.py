"""The HTTP API fuzzed from its own OpenAPI document with schemathesis (the `test` extra): what
tests/test_server_fuzz.py sends a few hundred of and benchmarks/server_fuzz.py thousands."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

ADMIN = "admin-key-for-the-fuzzer"
SEARCHER = "search-key-for-the-fuzzer"
KEYS = [ADMIN, SEARCHER, None, "a-key-nobody-was-given"]  # the first drawn most: the admin reaches most
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Bounds of a small server: a rerank of max_k candidates by the cross-encoder takes seconds at the default 1000
# (the fuzzer tries each bound's edges, whatever they are)
LIMITS = {"max_k": 20, "max_offset": 100, "max_batch": 4, "write_wait": 10}


def fuzzed(app, examples: int) -> tuple[int, dict[str, int]]:
    """Every operation of the app's document fuzzed; the requests sent, and the statuses answered."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    sent, statuses = 0, {}
    for result in schema.get_all_operations():
        operation = result.ok()
        if (
            operation.label == "GET /mcp"
        ):  # a stream of the server's notifications, open until the client leaves
            continue
        # an index's mounted routes run the bare routes' handlers: what they add is the {index} a request names
        mounted = operation.path.startswith("/indexes/{index}/")
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(
                max_examples=max(2, examples // 5) if mounted else examples,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode), key=st.sampled_from(KEYS))
            def send(case, key):
                nonlocal sent
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                response = case.call_and_validate(headers=headers, checks=CHECKS)
                sent += 1
                statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1

            try:
                send()
            except Unsatisfiable:  # nothing of it can be invalid (GET / takes no parameters)
                assert mode is GenerationMode.NEGATIVE
    return sent, statuses
