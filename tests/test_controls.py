"""Facets, pages and similar documents (issue 35) on real indexes: facet counts against a count in Python over the
documents themselves, for every kind of value; pages concatenated against one deeper request in every mode (an
approximate index, rerank, a filter; windows crossed); a page asked of a generation the index has left; similar
documents against brute force over the stored vectors; the CLI's output."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import as_kept, copy_index

from semsearch import Document, Index
from semsearch.cli import main
from semsearch.errors import GenerationChanged, SettingsError
from semsearch.transforms import normalize_rows

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("controls")

DIM, COUNT = 16, 600
WORDS = ["river", "stone", "cloud", "lamp", "garden", "window", "music", "paper"]
FIELDS = ["year", "price", "tags", "flag", "address.city", "label"]
MODES = ("dense", "keyword", "hybrid")
APPROXIMATE = ("hnsw", "ivf", "pq")


def typed_documents(rng: np.random.Generator) -> list[dict]:
    """Documents with every kind of metadata value: ints (some as digit strings), floats, strings, lists (a
    member repeated), booleans, a nested field, nulls and missing fields; "zebra" in a known few."""
    docs = []
    for i in range(COUNT):
        doc = {"id": f"d{i}", "text": " ".join(rng.choice(WORDS, 6)) + (" zebra" if i % 7 == 0 else "")}
        year = int(rng.integers(2000, 2010))
        doc["year"] = str(year) if i % 11 == 0 else year
        if i % 5:
            doc["price"] = float(rng.choice([0.5, 1.25, 2.0, 3.75, 10.0]))
        doc["tags"] = list(rng.choice(["a", "b", "c", "d"], int(rng.integers(0, 4))))
        if i % 13 == 0:
            doc["tags"] = ["a", "a"]
        doc["flag"] = bool(i % 3) if i % 17 else "true"
        doc["address"] = {"city": str(rng.choice(["Oslo", "Lima", "Pune"]))}
        doc["label"] = None if i % 4 == 0 else f"L{i % 9}"
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    """A flat index of vectors made elsewhere (nothing encoded) over the typed documents, and copies refitted to
    HNSW, IVF and IVF-PQ."""
    rng = np.random.default_rng(35)
    docs = typed_documents(rng)
    vectors = rng.normal(size=(COUNT, DIM)).astype(np.float32)
    root = tmp_path_factory.mktemp("controls")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    np.save(root / "vectors.npy", vectors)
    with Index.create(root / "flat", model="none", dim=DIM, transform="none", index_type="flat") as index:
        index.ingest(corpus, vectors=root / "vectors.npy")
    for kind in APPROXIMATE:
        with Index.open(copy_index(root / "flat", root / kind)) as index:
            index.refit(index_type=kind)
    return docs, vectors, root


# ---- facets -------------------------------------------------------------------------------------------------


def values_at(doc: dict, path: str) -> list:
    value = doc
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, list) else [] if value is None else [value]


def named(value) -> str:
    """A value as `--where FIELD=VALUE` names it (the rule facets.py documents, written again here)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)


def brute_facets(docs: list[dict], keep) -> tuple[dict, dict]:
    counts, stats = {}, {}
    for path in FIELDS:
        found: dict[str, int] = {}
        numbers = []
        for doc in filter(keep, docs):
            for name in {named(v) for v in values_at(doc, path)}:
                found[name] = found.get(name, 0) + 1
            numbers += [
                v for v in values_at(doc, path) if isinstance(v, int | float) and not isinstance(v, bool)
            ]
        counts[path] = found
        if numbers:
            stats[path] = {"min": min(numbers), "max": max(numbers)}
    return counts, stats


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", [None, ["flag=true"], ["year>=2004", "tags=a"]])
def test_facets_equal_a_count_over_the_documents(typed, mode, where):
    docs, vectors, root = typed

    def admitted(doc):
        conditions = {
            "flag=true": doc["flag"] in (True, "true"),
            "year>=2004": isinstance(doc["year"], int) and doc["year"] >= 2004,
            "tags=a": "a" in doc["tags"],
        }
        keyword = mode != "keyword" or "zebra" in doc["text"].split()
        return keyword and all(conditions[c] for c in where or [])

    with Index.open(root / "flat") as index:
        results = index.search_vectors(
            vectors[:1], k=5, where=where, texts=["zebra"], mode=mode, facets=FIELDS, facet_values=1000
        )[0]
    counts, stats = brute_facets(docs, admitted)
    assert results.facets == counts and results.facet_stats == stats
    for shown in results.facets.values():  # most frequent first, ties by value
        assert list(shown.items()) == sorted(shown.items(), key=lambda item: (-item[1], item[0]))


def test_facets_show_the_most_frequent_and_refuse_what_is_not_a_field(typed):
    docs, vectors, root = typed
    with Index.open(root / "flat") as index:
        top = index.search_vectors(vectors[:1], facets="label,year", facet_values=2)[0].facets
        every = index.search_vectors(vectors[:1], facets=["label"], facet_values=100)[0].facets
        assert list(top["label"].items()) == list(every["label"].items())[:2] and len(top["year"]) == 2
        for fields, flag in (("nope", "facets"), ("title", "facets")):
            with pytest.raises(SettingsError) as error:
                index.search_vectors(vectors[:1], facets=fields)
            assert error.value.setting == flag and fields in str(error.value)
        types = index.info()["field_types"]
    assert types["tags"]["list"] == COUNT and types["price"] == {"real": sum(1 for d in docs if "price" in d)}
    strings = sum(1 for doc in docs if doc["flag"] == "true")
    assert types["flag"] == {"boolean": COUNT - strings, "string": strings}


# ---- pages --------------------------------------------------------------------------------------------------


def ids(hits) -> list[str]:
    return [hit.id for hit in hits]


@pytest.mark.parametrize("kind", ["flat", *APPROXIMATE])
def test_pages_continue_each_other_across_windows(typed, kind):
    """Pages of 25 up to 300 (crossing the windows: at 100 and 200, hnsw's at its efSearch, ivf's and pq's at 10,
    20, 40, ...) equal one request for 300, with and without rerank and a filter, in every mode."""
    _, vectors, root = typed
    with Index.open(root / kind) as index:
        for mode in MODES:
            for options in ({"rerank": 0}, {"rerank": 50, "where": ["tags=b"]}):
                options |= {"texts": ["zebra river"], "mode": mode}
                whole = ids(index.search_vectors(vectors[3:4], k=300, **options)[0])
                pages = [
                    hit
                    for offset in range(0, 300, 25)
                    for hit in ids(index.search_vectors(vectors[3:4], k=25, offset=offset, **options)[0])
                ]
                assert pages == whole and len(set(whole)) == len(whole), (mode, options)
                if mode != "keyword" and "where" not in options:
                    assert len(whole) == 300
                assert index.search_vectors(vectors[3:4], k=10, offset=COUNT, **options)[0] == []


@pytest.mark.parametrize("kind", ["flat", *APPROXIMATE])
def test_a_first_page_is_searched_as_deep_as_it_needs(typed, kind):
    """A dense first page of 10 without rerank is the vector index's own answer for 10 with its tuned
    parameters (ivf and pq: those for 10 results, not for a deeper window's 100), in the same order."""
    _, vectors, root = typed
    with Index.open(root / kind) as index:
        page = ids(index.search_vectors(vectors[5:6], k=10, mode="dense", rerank=0)[0])
        own = index.directory.vectors
        params = own.search_params  # as tuned at 10 results
        found = own.search(index.directory.transform.project(vectors[5:6]), 10 * params.get("k_factor", 1))[0]
        if kind == "pq":  # its candidates re-scored exactly by the projected raw vectors
            projected = index.directory.transform.project(vectors[5:6])[0]
            raw = index.directory.transform.project_float32(
                index.directory.raw.get(np.array([p for p, _ in found]))
            )
            found = sorted(zip([p for p, _ in found], raw @ projected), key=lambda pair: -pair[1])[:10]
        assert page == [f"d{pk}" for pk, _ in found]


def test_pages_of_a_real_index_in_every_mode(sample_encoded):
    """The real model: pages 1-10 of size 10 equal the top 100, in every mode, filtered or not."""
    with Index.open(sample_encoded) as index:
        for mode in MODES:
            for where in (None, ["kind=odd"]):
                whole = ids(index.search("read a file line by line", k=100, mode=mode, where=where))
                pages = [
                    h
                    for offset in range(0, 100, 10)
                    for h in ids(
                        index.search("read a file line by line", k=10, offset=offset, mode=mode, where=where)
                    )
                ]
                assert pages == whole and len(whole) == (100 if mode != "keyword" else len(whole))


def test_a_page_asked_of_a_generation_the_index_has_left(typed, tmp_path):
    docs, vectors, root = typed
    with Index.open(copy_index(root / "flat", tmp_path / "index")) as index:
        first = index.search_vectors(vectors[:1], k=10)[0]
        index.add([Document(id="new", text="new", metadata={"year": 2020}, vector=vectors[0] * 2)])
        with pytest.raises(GenerationChanged) as error:
            index.search_vectors(vectors[:1], k=10, offset=10, generation=first.generation)
        assert error.value.current == first.generation + 1
        again = index.search_vectors(vectors[:1], k=20)[0]  # the latest generation, pages as one request
        second = index.search_vectors(vectors[:1], k=10, offset=10, generation=again.generation)[0]
        assert (
            ids(second) == ids(again)[10:]
            and {hit.id for hit in again[:2]} == {"d0", "new"}  # d0's own direction: tied, ties by pk
            and second.generation == again.generation
        )


# ---- similar documents --------------------------------------------------------------------------------------


def brute_similar(vectors, docs, positive, negative, keep, k):
    unit = normalize_rows(as_kept(vectors))  # the vectors as the index keeps them
    rows = {doc["id"]: i for i, doc in enumerate(docs)}
    query = unit[[rows[p] for p in positive]].mean(axis=0)
    if negative:
        query = 2 * query - unit[[rows[n] for n in negative]].mean(axis=0)
    scores = unit @ (query / np.linalg.norm(query))
    order = [i for i in np.argsort(-scores, kind="stable") if docs[i]["id"] not in {*positive, *negative}]
    return [docs[i]["id"] for i in order if keep(docs[i])][:k]


def test_similar_equals_brute_force_and_leaves_out_the_examples(typed):
    docs, vectors, root = typed
    with Index.open(root / "flat") as index:
        for positive, negative, where in ((["d1"], [], None), (["d1", "d2"], ["d3"], ["tags=c"])):
            keep = (lambda doc: "c" in doc["tags"]) if where else (lambda doc: True)
            got = index.similar(positive, k=8, negative=negative, where=where, rerank=0)
            assert ids(got) == brute_similar(vectors, docs, positive, negative, keep, 8)
            paged = [*index.similar(positive, k=4, negative=negative, where=where, rerank=0)]
            paged += index.similar(positive, k=4, negative=negative, where=where, rerank=0, offset=4)
            assert ids(paged) == ids(got)
        with pytest.raises(Exception, match="'nope'"):
            index.similar(["nope"])


# ---- the command line ---------------------------------------------------------------------------------------


def test_the_cli_prints_pages_facets_and_similar(typed, tmp_path):
    docs, vectors, root = typed
    query = tmp_path / "query.json"
    query.write_text(json.dumps(vectors[0].tolist()))
    base = ["--index", str(root / "flat")]
    runner = CliRunner()
    lines = runner.invoke(
        main,
        [
            "query",
            "--vector",
            str(query),
            *base,
            "-k",
            "3",
            "--offset",
            "2",
            "--facets",
            "year,tags",
            "--json",
        ],
    ).output.splitlines()
    with Index.open(root / "flat") as index:
        want = index.search_vectors(vectors[:1], k=5, facets=["year", "tags"])[0]
    assert [json.loads(line)["id"] for line in lines[:3]] == ids(want)[2:]
    assert (
        json.loads(lines[3]) == {"facets": want.facets, "facet_stats": want.facet_stats} and len(lines) == 4
    )
    human = runner.invoke(
        main, ["query", "--vector", str(query), *base, "-k", "2", "--offset", "5", "--facets", "flag"]
    )
    assert (
        human.exit_code == 0
        and human.output.lstrip().startswith("6. [")
        and "facet flag: true " in human.output
    )
    similar = runner.invoke(
        main, ["similar", "d1", "d2", "--not", "d3", *base, "-k", "3", "--where", "tags=c", "--json"]
    )
    assert [json.loads(line)["id"] for line in similar.output.splitlines()] == brute_similar(
        vectors, docs, ["d1", "d2"], ["d3"], lambda doc: "c" in doc["tags"], 3
    )
    stale = runner.invoke(main, ["query", "--vector", str(query), *base, "--generation", "0"])
    assert stale.exit_code == 1 and "--generation 0: the index has been written since" in stale.output
    missing = runner.invoke(main, ["similar", "nope", *base])
    assert missing.exit_code == 1 and "no document with id 'nope'" in missing.output


def test_each_way_of_reading_a_sets_values_gives_its_documents_values():
    from semsearch.retrieval.facets import Grouped

    rng = np.random.default_rng(3)
    pks = np.repeat(np.arange(0, 4000, 2), rng.integers(0, 4, 2000))  # 0-3 values each, odd pks none
    many = np.concatenate([pks, np.full(900, 10)])  # one document of 900 values among them: no table
    for rows, table in ((pks, True), (many, False)):
        for values in (rng.integers(0, 50, len(rows)), rng.random(len(rows))):
            grouped = Grouped.of(rows, values)
            assert (grouped.table is not None) == table
            for share in (0.01, 0.1, 0.5, 1.0):  # a set's own rows, or a pass over every row
                members = np.sort(rng.choice(4100, int(4100 * share), replace=False))
                expected = np.sort(values[np.isin(rows, members)])
                assert np.array_equal(np.sort(grouped.of_members(members)), expected), (table, share)
