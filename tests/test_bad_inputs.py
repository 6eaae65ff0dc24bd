"""Issue 30's table of bad inputs (tests/badinputs.py): each CLI command in process (click's CliRunner) and
each HTTP endpoint of a real server, none answering with a traceback or a 500, the index as it was; and
hypothesis where a generator finds more than a table: the --where grammar, JSONL lines, search parameters."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from badinputs import ADMIN, CLI, HTTP, Fixtures, first_error, traceback_in, vectors_corpus
from click.testing import CliRunner
from conftest import copy_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semsearch.cli import main
from semsearch.errors import SemsearchError

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("bad_inputs")

httpx = pytest.importorskip("httpx")


def fingerprint(index: Path) -> dict[str, str]:
    """Every file's bytes (hashed) but the writer lock and SQLite's shared memory: equal means untouched."""
    return {
        str(p.relative_to(index)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(index.rglob("*"))
        if p.is_file() and p.name != "writer.lock" and not p.name.endswith(("-shm", "-wal"))
    }


@pytest.fixture(scope="module")
def fixtures(sample_encoded, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-inputs")
    index = copy_index(sample_encoded, root / "index")
    vectors_index = root / "vectors-index"
    made = CliRunner().invoke(
        main,
        [
            "ingest",
            str(vectors_corpus(root / "v.jsonl")),
            "--vector-field",
            "vector",
            "--index",
            str(vectors_index),
            "-q",
        ],
    )
    assert made.exit_code == 0, made.output
    made = Fixtures(root, index, vectors_index)
    yield made
    made.close()


def test_no_cli_input_gives_a_traceback_and_the_index_stays_as_it_was(fixtures):
    assert len(CLI) >= 60
    before = fingerprint(fixtures.index)
    failures = []
    for args, bad in CLI:
        filled = fixtures.fill(args)
        result = CliRunner().invoke(main, filled)
        escaped = result.exception is not None and not isinstance(result.exception, SystemExit)
        wrong_exit = result.exit_code not in ((1, 2) if bad else (0, 1, 2))
        if escaped or wrong_exit or traceback_in(result.output) or (bad and not first_error(result.output)):
            failures.append((args, result.exit_code, repr(result.exception), result.output[-500:]))
        assert not (fixtures.dir / "new").exists() or not any((fixtures.dir / "new").iterdir()), args
    assert not failures, "\n".join(map(str, failures))
    assert fingerprint(fixtures.index) == before


def test_no_http_input_gives_a_500(fixtures, tmp_path):
    from test_server import running_server

    assert len(HTTP) >= 30
    served = copy_index(fixtures.index, tmp_path / "served")
    failures = []
    with running_server(served, api_key=ADMIN) as url, httpx.Client(base_url=url, timeout=60) as client:
        before = fingerprint(served)
        headers = {"Authorization": f"Bearer {ADMIN}"}
        for method, path, params, body, status in HTTP:
            content = body if isinstance(body, bytes) else None
            payload = None if isinstance(body, bytes) or body is None else body
            answer = client.request(
                method, path, params=params, json=payload, content=content, headers=headers
            )
            error = answer.status_code >= 400
            shaped = "error" in answer.json() if error else "took_ms" in answer.json()
            if answer.status_code != status or not shaped:
                failures.append((method, path, params, str(body)[:80], answer.status_code, answer.text[:300]))
        assert fingerprint(served) == before
    assert not failures, "\n".join(map(str, failures))
    with running_server(fixtures.vectors_index) as url:  # a text query where there is no model: the client's
        answer = httpx.get(f"{url}/search", params={"q": "text"}, timeout=60)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "no_model", answer.text


# ---- generated inputs ------------------------------------------------------------------------------------------

FIELDS = st.sampled_from(["year", "kind", "id", "title", "a.b", "year.x", "", " ", "ünï", '"q"', "x\u0000"])
OPERATORS = st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "==", "=<", ""])
VALUES = st.one_of(
    st.text(max_size=12),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["null", "true", "false", "nan", "inf", "-inf", "1e999", "18446744073709551616"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(FIELDS, OPERATORS, VALUES), min_size=1, max_size=3))
def test_the_where_grammar_parses_or_refuses_and_the_store_answers(fixtures, conditions):
    from semsearch import Index
    from semsearch.retrieval.search import allowed_rows

    where = [field + operator + value for field, operator, value in conditions]
    with Index.open(fixtures.index) as index:
        try:
            rows = allowed_rows(index.store, where)
        except SemsearchError as error:
            assert str(error) and "\n" not in str(error)
        else:
            assert rows is None or len(rows) <= len(index)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
RECORDS = st.fixed_dictionaries(
    {}, optional={"id": JSON, "_id": JSON, "text": JSON, "title": JSON, "metadata": JSON}
).flatmap(
    lambda base: st.dictionaries(st.text(max_size=5), JSON, max_size=3).map(lambda extra: {**extra, **base})
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(RECORDS, JSON))
def test_a_jsonl_line_is_a_document_or_one_error_naming_its_line(record):
    from semsearch.errors import DataError
    from semsearch.ingest.documents import Document, parse_document
    from semsearch.ingest.jsonl import _parsed

    line = json.dumps(record, allow_nan=True)
    value = _parsed(line, "c.jsonl", 7)
    try:
        document = value if isinstance(value, DataError) else parse_document(value, path="c.jsonl", line=7)
    except DataError as error:
        document = error
    if isinstance(document, DataError):
        assert str(document).startswith("c.jsonl, line 7")
    else:
        assert isinstance(document, Document) and document.text.strip()


PARAMETERS = st.dictionaries(
    st.sampled_from(["k", "rerank", "alpha", "mode", "fusion", "where"]),
    st.one_of(
        st.text(max_size=10),
        st.integers(),
        st.floats(),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=2),
    ),
)


@settings(max_examples=400, deadline=None)
@given(PARAMETERS)
def test_search_parameters_are_options_or_a_400(values):
    from semsearch.server.protocol import ApiError, ServerSettings
    from semsearch.server.schemas import search_options

    try:
        options = search_options(values, ServerSettings())
    except ApiError as error:
        assert error.status == 400
    else:
        assert 1 <= options["k"] <= 1000
        if "alpha" in options:
            assert 0 <= options["alpha"] <= 1
