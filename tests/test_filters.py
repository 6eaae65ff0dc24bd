"""`--where` on real metadata (booleans, null, lists, nested objects, numbers and number-like strings): the
documents a filter keeps equal those a plain Python reading of the rules keeps, on a real index; what cannot be
meant is refused with a message; metadata JSON cannot hold is refused at ingest, so output stays strict JSON."""

import json
import math
import random

import pytest
from click.testing import CliRunner
from conftest import write_jsonl

from semsearch import Index
from semsearch.cli import main
from semsearch.errors import DataError, SettingsError

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("filters")

WORDS = ["river", "bridge", "garden", "engine", "letter", "station", "harbour", "valley"]


def corpus(n: int = 60) -> list[dict]:
    rng = random.Random(3)
    docs = []
    for i in range(n):
        doc = {"id": f"d{i}", "text": " ".join(rng.choice(WORDS) for _ in range(6)) + f" {i}"}
        choices = {
            "flag": [True, False, "true", None],
            "tags": [["a", "b"], ["b"], [], ["a", 3], "a"],
            "year": [2019, 2020, "2020", 2021.5, [2018, 2022]],
            "address": [{"city": "Oslo", "zip": 150}, {"city": "Rome"}, {"zip": "150"}],
            "note": [None, "x", 0],
        }
        for field, values in choices.items():
            if rng.random() < 0.8:  # some documents lack each field
                doc[field] = rng.choice(values)
        docs.append(doc)
    return docs


def values_at(doc: dict, field: str):
    """The values a condition looks at: a list's members, a scalar itself; (present, values)."""
    value = doc
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, []
        value = value[part]
    if isinstance(value, dict):
        return True, []
    return True, value if isinstance(value, list) else [value]


def expected(docs: list[dict], condition: str) -> set[str]:
    """The rules of filters.py, read plainly in Python."""
    for operator in ("!=", "<=", ">=", "=", "<", ">"):
        if operator in condition:
            field, value = condition.split(operator, 1)
            break
    keep = set()
    for doc in docs:
        present, values = values_at(doc, field)
        if operator in ("<", "<=", ">", ">="):
            numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            compare = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}[operator]
            hit = any(compare(float(v), float(value)) for v in numbers)
        elif value == "null":
            raw = doc
            for part in field.split("."):
                raw = raw.get(part) if isinstance(raw, dict) else None
            hit = raw is None
        elif value in ("true", "false"):
            hit = any(v is (value == "true") or v == value for v in values)
        else:
            try:
                as_number = float(value)
            except ValueError:
                as_number = None
            hit = any(
                (isinstance(v, str) and v == value)
                or (
                    as_number is not None
                    and isinstance(v, (int, float))
                    and not isinstance(v, bool)
                    and v == as_number
                )
                for v in values
            )
        if hit != (operator == "!="):
            keep.add(doc["id"])
    return keep


CONDITIONS = [
    "flag=true",
    "flag=false",
    "flag!=true",
    "flag=null",
    "flag!=null",
    "tags=a",
    "tags=3",
    "tags!=a",
    "year=2020",
    "year>2020",
    "year<=2018",
    "year!=2020",
    "address.city=Oslo",
    "address.zip=150",
    "address.zip>100",
    "address=Oslo",
    "note=null",
    "note=0",
    "note!=x",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    path = tmp_path_factory.mktemp("filters") / "index"
    with Index.create(path, transform="none") as made:
        made.add(corpus())
    with Index.open(path) as opened:
        yield opened


@pytest.mark.parametrize("condition", CONDITIONS)
def test_a_filter_keeps_what_the_rules_say(index, condition):
    docs = corpus()
    want = expected(docs, condition)
    got = {hit.id for hit in index.search("river bridge", k=len(docs), where=[condition], rerank=0)}
    assert got == want, condition
    assert 0 < len(want) < len(docs) or condition in ("address=Oslo",), "a condition that tests nothing"


def test_conditions_combine_with_and(index):
    docs = corpus()
    both = expected(docs, "tags=a") & expected(docs, "flag!=null")
    got = {h.id for h in index.search("river", k=len(docs), where=["tags=a", "flag!=null"], rerank=0)}
    assert got == both and both


@pytest.mark.parametrize(
    "condition, message",
    [
        ("lang==zh", "did you mean 'lang=zh'"),
        ("year=>2020", "did you mean 'year=2020'"),
        ("colour=red", "no document has a field 'colour'"),
        ("year>=recent", "compares numbers"),
    ],
)
def test_what_cannot_be_meant_is_refused(index, condition, message):
    with pytest.raises(SettingsError, match=message):
        index.search("river", where=[condition])


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": "x", "text": "t", "v": math.nan}, "field 'v': the number nan is not finite"),
        ({"id": "x", "text": "t", "v": {"deep": math.inf}}, "field 'v.deep': the number inf is not finite"),
        (
            {"id": "x", "text": "t", "lang": "en", "metadata": {"lang": "fr"}},
            "'lang' is both a top-level field",
        ),
        ({"id": "x", "text": "t", "title": "bad \ud800"}, "field 'title': a lone surrogate"),
        ({"id": "x", "text": "t", "tags": ["ok", "\udfff"]}, "field 'tags': a lone surrogate"),
    ],
)
def test_metadata_json_cannot_hold_is_refused_at_ingest(tmp_path, record, message):
    path = tmp_path / "bad.jsonl"
    # json.dumps writes NaN/Infinity tokens and \\ud800 escapes, as other tools do
    path.write_text(json.dumps({"id": "ok", "text": "fine"}) + "\n" + json.dumps(record) + "\n")
    with Index.create(tmp_path / "index", transform="none") as index, pytest.raises(DataError, match=message):
        index.ingest(path)
    result = CliRunner().invoke(main, ["ingest", str(path), "--index", str(tmp_path / "cli")])
    assert result.exit_code == 1 and "line 2" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "cli").exists()


def test_json_output_is_strict_and_ids_42_and_text_42_are_one_id(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": 42, "text": "forty two", "score": 1e300}])
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(path), "--index", str(tmp_path / "i"), "-q"]).exit_code == 0
    again = write_jsonl(tmp_path / "d.jsonl", [{"id": "42", "text": "forty two", "score": 1e300}])
    result = runner.invoke(main, ["ingest", str(again), "--index", str(tmp_path / "i")])
    assert "0 documents added (0 replaced, 1 unchanged)" in result.stderr
    out = runner.invoke(main, ["query", "forty", "--index", str(tmp_path / "i"), "--json"]).stdout
    hit = json.loads(out, parse_constant=lambda token: pytest.fail(f"not strict JSON: {token}"))
    assert hit["id"] == "42"
