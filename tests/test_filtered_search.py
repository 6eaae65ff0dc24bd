"""Filtered search is exact by strategy (strategy.py): on 15,000 clustered vectors, where hnsw (over floats and
over 8-bit codes), ivf and pq are really approximate, every type returns what brute force over the matching
rows as the index keeps them returns, for filters on numbers, strings, lists, missing fields and several
conditions at once; the approximate path, where the rule takes it, reaches the recall it is tuned for and is
verified."""

import json
import shutil
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import as_kept, copy_index
from test_filters import CONDITIONS as FILTER_CONDITIONS
from test_filters import corpus as filter_corpus
from test_filters import expected
from test_legacy import LEGACY

from semsearch import Index
from semsearch.cli import main
from semsearch.errors import SettingsError
from semsearch.retrieval import strategy, tuning
from semsearch.storage.filters import Condition, condition_sql, where_sql
from semsearch.storage.store import SCHEMA_VERSION, DocumentStore

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("filtered_search")

DOCS, DIM, QUERIES, K = 15_000, 48, 20, 10
TYPES = ["flat", "hnsw", "hnsw-sq8", "ivf", "pq"]
FILTERS = [
    ["b<1"],  # 0.1%
    ["b<20"],  # 2%
    ["b<300"],  # 30%
    ["b>=100"],  # 90%
    ["g=g7"],  # a string, 2%
    ["g!=g7"],
    ["opt!=3"],  # documents without `opt` count as different
    ["opt=null"],  # ... and as null
    ["tags=t1"],  # a list member
    ["b<500", "g!=g1", "opt>=2"],  # several conditions
]


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    return unit(centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM)))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(12)
    centres = rng.standard_normal((300, DIM))
    vectors, queries = clustered(rng, DOCS, centres), clustered(rng, QUERIES, centres)
    docs = []
    for i in range(DOCS):
        doc = {
            "id": f"d{i}",
            "text": f"doc {i}",
            "b": int(rng.integers(0, 1000)),
            "g": f"g{rng.integers(0, 50)}",
        }
        if rng.random() < 0.7:
            doc["opt"] = int(rng.integers(0, 5))
        if rng.random() < 0.5:
            doc["tags"] = [f"t{t}" for t in rng.choice(8, size=2, replace=False)]
        docs.append(doc)
    return docs, vectors, queries


@pytest.fixture(scope="module")
def indexes(data, tmp_path_factory):
    docs, vectors, _ = data
    root = tmp_path_factory.mktemp("filtered")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    np.save(root / "vectors.npy", vectors)
    with Index.create(root / "flat", model="none", dim=DIM, transform="none", index_type="flat") as index:
        index.ingest(corpus, vectors=root / "vectors.npy")
    made = {"flat": Index.open(root / "flat")}
    for kind in TYPES[1:]:
        made[kind] = Index.open(copy_index(root / "flat", root / kind))
        made[kind].refit(index_type=kind)
    yield made
    for index in made.values():
        index.close()


def brute_force(docs, vectors, queries, where) -> list[list[tuple[str, float]]]:
    """Exact over the raw vectors as the index keeps them (hnsw-sq8's codes only find its candidates)."""
    keep = set.intersection(*(expected(docs, condition) for condition in where))
    rows = np.array([i for i, doc in enumerate(docs) if doc["id"] in keep])
    scores = queries @ unit(as_kept(vectors[rows])).T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :K]
    return [[(docs[rows[j]]["id"], float(s[j])) for j in o] for s, o in zip(scores, order)]


def same(hits, truth) -> bool:
    """The same ranking; rows whose scores tie (within float error) may come in either order."""
    if len(hits) != len(truth) or any(abs(h.score - t[1]) > strategy.TIE for h, t in zip(hits, truth)):
        return False
    cut = truth[-1][1] - strategy.TIE  # the last place may go to any row tied with it
    return {h.id for h in hits if h.score > cut} == {t[0] for t in truth if t[1] > cut}


def recall(found, truth) -> float:
    return np.mean([len({h.id for h in f} & {t[0] for t in t_}) / len(t_) for f, t_ in zip(found, truth)])


def test_the_approximate_types_are_really_approximate(data, indexes):
    """At their cheapest settings hnsw, ivf and pq miss some of flat's top 10 here: the corpus tests them."""
    _, _, queries = data
    exact = [[h.id for h in hits] for hits in indexes["flat"].search_vectors(queries, K, rerank=0)]
    cheapest = {
        "hnsw": {"efSearch": 10},
        "hnsw-sq8": {"efSearch": 10},
        "ivf": {"nprobe": 1},
        "pq": {"nprobe": 1},
    }
    for kind, params in cheapest.items():
        index = indexes[kind]
        assert index.vectors.kind == kind
        ranked = index.vectors.search(index.transform.project(queries), K, params=params)
        found = [[index.store.get([pk])[pk]["id"] for pk, _ in result] for result in ranked]
        assert np.mean([len(set(f) & set(e)) / K for f, e in zip(found, exact)]) < 1.0, kind


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("where", FILTERS, ids=lambda w: " & ".join(w))
def test_filtered_results_equal_brute_force(data, indexes, kind, where):
    docs, vectors, queries = data
    index = indexes[kind]
    truth = brute_force(docs, vectors, queries, where)
    assert len(truth[0]) > 0, "a filter that keeps nothing tests nothing"
    found = index.search_vectors(queries, K, where=where, rerank=0)
    allowed = len(set.intersection(*(expected(docs, c) for c in where)))
    if strategy.plan(index.vectors, allowed) is None:  # the exact path: the same, always
        assert all(same(f, t) for f, t in zip(found, truth)), (kind, where)
    else:  # the approximate path: tuned for FILTERED_RECALL, verified
        assert recall(found, truth) >= strategy.FILTERED_RECALL, (kind, where)
    assert all(len(f) == min(K, allowed) for f in found)


@pytest.mark.parametrize("tuned", [True, False], ids=["tuned", "untuned"])
@pytest.mark.parametrize("kind", TYPES[1:])
def test_the_approximate_path_when_taken_reaches_its_recall(data, indexes, kind, tuned, monkeypatch):
    """Pushed onto the approximate path where it can be (exact_rows 0; untuned: an index built before tuning,
    its fixed parameters scaled by selectivity) at 60%, 30%, 10% and 3% of the rows: recall@10 against brute
    force at least FILTERED_RECALL, k results each."""
    docs, vectors, queries = data
    index = indexes[kind]
    forced = {**(index.vectors.params or {}), "exact_rows": 0} if tuned else {"exact_rows": 0}
    monkeypatch.setattr(index.vectors, "params", forced)
    approximate = 0
    for where in (["b<600"], ["b<300"], ["b<100"], ["b<30"]):
        approximate += strategy.plan(index.vectors, len(expected(docs, where[0]))) is not None
        truth = brute_force(docs, vectors, queries, where)
        found = index.search_vectors(queries, K, where=where, rerank=0)
        assert recall(found, truth) >= strategy.FILTERED_RECALL, (kind, where)
        assert all(len(f) == K for f in found)
    levels = (index.vectors.params or {}).get("filtered")
    assert approximate >= (min(1, len(levels)) if tuned else 4)  # 60% takes the 1/2 level where there is one


def test_verification_catches_a_wrong_answer(data, indexes):
    """An approximate answer that misses a better allowed row of the sample is redone exactly."""
    docs, vectors, queries = data
    index = indexes["hnsw"]
    allowed = np.arange(0, DOCS, 7, dtype=np.int64)
    exact = strategy.Exact(index.vectors, lambda pks: index.transform.project(index.raw.get(pks)))
    projected = index.transform.project(queries)
    right = exact.top(projected, K, allowed)
    worst = [list(reversed(exact.top(-projected[i : i + 1], K, allowed)[0])) for i in range(QUERIES)]
    wrong = strategy.unverified(exact, projected, K, allowed, [[(pk, -s) for pk, s in w] for w in worst])
    assert wrong == list(range(QUERIES))
    assert strategy.unverified(exact, projected, K, allowed, right) == []


# ---- the typed metadata table (store schema 2) ------------------------------------------------------------


def conditions_of(texts):
    return [Condition.parse(text) for text in texts]


def test_every_condition_reads_an_index_not_the_documents_json(indexes):
    store = indexes["flat"].store
    for where in FILTERS + [["g=3"], ["b=7"], ["flag=true"], ["tags!=null"], ["id=d5"]]:
        for condition in conditions_of(where):
            sql, params, _ = condition_sql(condition)
            plan = " ".join(str(row[-1]) for row in store.db.execute("EXPLAIN QUERY PLAN " + sql, params))
            assert "INDEX" in plan and "SCAN" not in plan, (condition, plan)


def test_the_typed_table_and_the_json_agree(tmp_path):
    """test_filters' corpus (booleans, null, lists, nested objects, number-like strings): each condition keeps
    the same rows read from the typed table as from the JSON (the path a read-only schema-1 store takes)."""
    with Index.create(tmp_path / "i", transform="none") as index:
        index.add(filter_corpus())
        store = index.store
        known = set(store.fields())
        for text in FILTER_CONDITIONS + ["id=d3", "id!=d3", "title=null"]:
            where, params = where_sql([Condition.parse(text)], known)
            by_json = sorted(row[0] for row in store.db.execute("SELECT pk FROM documents" + where, params))
            assert store.matching_pks([Condition.parse(text)]).tolist() == by_json, text


def test_filters_are_cached_per_generation_and_see_every_write(tmp_path):
    docs = [{"id": f"d{i}", "text": f"doc {i}", "b": i % 10} for i in range(40)]
    with Index.create(tmp_path / "i", transform="none") as index:
        index.add(docs)
        first = index.store.matching_pks(conditions_of(["b<3"]))
        assert index.store.matching_pks(conditions_of(["b<3"])) is first  # cached
        assert index.store.matching_pks(conditions_of(["b!=1"])).tolist() == [
            i for i in range(40) if i % 10 != 1
        ]
        index.add([{"id": "new", "text": "new doc", "b": 1}, {"id": "d0", "text": "doc 0 again", "b": 9}])
        assert {h.id for h in index.search("doc", k=50, where=["b<3"], rerank=0)} == {
            f"d{i}" for i in range(1, 40) if i % 10 < 3
        } | {"new"}
        index.delete(where=["b=2"])
        assert {h.id for h in index.search("doc", k=50, where=["b<3"], rerank=0)} == {
            f"d{i}" for i in range(1, 40) if i % 10 < 2
        } | {"new"}
    with Index.open(tmp_path / "i") as again:  # another process's view: the same rows
        assert len(again.store.matching_pks(conditions_of(["b<3"]))) == 8


def test_a_previous_release_store_is_migrated_and_filters_as_before(tmp_path):
    shutil.copytree(LEGACY / "index", tmp_path / "legacy")
    db = tmp_path / "legacy" / DocumentStore.FILE
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] < 2  # made before the typed table
        by_json = sorted(
            pk for (pk,) in conn.execute("SELECT pk FROM documents WHERE metadata ->> '$.kind' = 'function'")
        )
    read_only = DocumentStore(db, read_only=True)  # cannot migrate: reads the JSON
    assert read_only.schema_version < 2
    assert read_only.matching_pks(conditions_of(["kind=function"])).tolist() == by_json
    read_only.close()
    with Index.open(tmp_path / "legacy") as index:
        assert index.store.schema_version == SCHEMA_VERSION
        assert index.store.matching_pks(conditions_of(["kind=function"])).tolist() == by_json
        hits = index.search("parse a date", k=50, where=["kind=function"], rerank=0)
        assert len(hits) == len(by_json) and {h.metadata["kind"] for h in hits} == {"function"}
        rows = index.store.db.execute("SELECT count(DISTINCT pk) FROM meta").fetchone()[0]
        assert rows == len(index)


# ---- recall-target tuning -------------------------------------------------------------------------------------


def test_build_tunes_for_the_recall_target_and_records_it(indexes, tmp_path):
    """Each approximate type records the parameters tuned at build and the recall@10 measured with them (at
    least the target) in its manifest and `info`; a refit to another target tunes again."""
    for kind in TYPES[1:]:
        details = indexes[kind].info()
        params = details["search_params"]
        assert details["recall_target"] == 0.95 and details["measured_recall"] >= 0.95, kind
        assert ("efSearch" if kind.startswith("hnsw") else "nprobe") in params and params["exact_rows"] >= 0
        assert all(level["recall"] >= tuning.FILTERED_TARGET for level in params["filtered"])
    assert indexes["flat"].info()["search_params"] == {}
    with Index.open(copy_index(indexes["hnsw"].path, tmp_path / "hnsw")) as index:
        before = index.info()["search_params"]["efSearch"]
        result = CliRunner().invoke(main, ["refit", "--index", str(index.path), "--recall-target", "0.99"])
        assert result.exit_code == 0, result.output
        index.refresh()
        details = index.info()
        assert details["recall_target"] == 0.99 and details["measured_recall"] >= 0.99
        assert details["search_params"]["efSearch"] > before
        assert index.vectors.search_params["efSearch"] == details["search_params"]["efSearch"]
    with pytest.raises(SettingsError, match="recall_target"):
        Index.create(tmp_path / "bad", transform="none", recall_target=1.5)
