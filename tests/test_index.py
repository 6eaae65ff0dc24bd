"""The Index on real components: the bundled model, FAISS, a SQLite file, SciFact documents."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import SCIFACT_GROUP, refitted_copy, write_jsonl

from semsearch import Index
from semsearch.errors import IndexStateError, SettingsError
from semsearch.evaluation.metrics import evaluate_run

# with the other modules of the SciFact chain, on one worker (conftest.SCIFACT_GROUP)
pytestmark = SCIFACT_GROUP


@pytest.fixture(scope="module")
def scifact_index(sample_encoded, tmp_path_factory):
    """The committed sample corpus, whitened to 128 dims (the name is the SciFact subset's, which it replaces
    in the default suite: the tests below check mechanics, not quality)."""
    with refitted_copy(
        sample_encoded, tmp_path_factory.mktemp("indexes") / "sample", "whiten", 128, 0.5
    ) as index:
        yield index


@pytest.mark.slow
def test_retrieval_quality_on_scifact_subset(scifact_encoded, scifact_subset, tmp_path):
    _, queries, qrels = scifact_subset
    with refitted_copy(scifact_encoded, tmp_path / "scifact", "whiten", 128, 0.5) as scifact_index:
        results = scifact_index.search_many(list(queries.values()), k=10)
    run = {qid: {h.id: h.score for h in hits} for qid, hits in zip(queries, results)}
    # Raw all-MiniLM-L6-v2 reaches 0.645 on the full 5,183 documents; 300 leave fewer distractors.
    assert evaluate_run(qrels, run, ["ndcg@10"])["ndcg@10"] > 0.85
    assert all(len(hits) == 10 for hits in results)
    assert all(hits[0].score >= hits[-1].score for hits in results)


def test_manifest_records_the_fitted_transform(scifact_index):
    info = scifact_index.info()
    assert info["documents"] == 300
    assert (info["transform"], info["dims"], info["power"]) == ("whiten", 128, 0.5)
    assert info["model_name"] == "all-MiniLM-L6-v2" and info["pooling"] == "mean"
    # a vector per passage: documents longer than the model's 256 tokens are cut (info counts both)
    assert info["passages"] == scifact_index.vectors.count == scifact_index.stats().count > 300
    assert info["long_documents"] == len(scifact_index.store.long_documents()[0]) > 0
    assert scifact_index.vectors.dim == 128
    assert info["bytes"]["raw_vectors"] >= info["passages"] * (192 + 4)  # int4 rows, a scale each


def test_where_filters_before_the_search_and_returns_exactly_k(scifact_index):
    hits = scifact_index.search("cancer", k=7, where=["kind=odd", "year>=2015"])
    assert len(hits) == 7
    assert all(h.metadata["kind"] == "odd" and h.metadata["year"] >= 2015 for h in hits)
    # 300 documents, years 2000..2019: year=2019 and kind=odd leaves exactly 15; k=50 gives all 15 once each,
    # then (the default cap) their further places, each place once
    narrow = scifact_index.search("cancer", k=50, where={"year": 2019, "kind": "odd"}, per_document=1)
    assert len(narrow) == 15
    filled = scifact_index.search("cancer", k=50, where={"year": 2019, "kind": "odd"})
    assert [h.id for h in filled[:15]] == [h.id for h in narrow] and len(filled) > 15
    assert {h.id for h in filled} == {h.id for h in narrow}
    assert len({(h.id, h.passage["start"] if h.passage else 0) for h in filled}) == len(filled)
    unfiltered = scifact_index.search("cancer", k=50)
    assert not {h.id for h in narrow} <= {h.id for h in unfiltered[:15]}  # a post-filter would lose these


def test_where_values_are_bound_not_spliced(scifact_index):
    assert scifact_index.search("cancer", k=5, where=["kind=x' OR '1'='1"]) == []
    with pytest.raises(SettingsError, match="no document has a field"):
        scifact_index.search("cancer", where=["genre=news"])
    with pytest.raises(SettingsError, match="compares numbers"):
        scifact_index.search("cancer", where=["year>=recent"])


def test_reopened_in_a_new_process_gives_identical_results(scifact_index):
    hits = scifact_index.search("stem cells differentiate into neurons", k=5)
    script = (
        "import json, sys; from semsearch import Index\n"
        "hits = Index.open(sys.argv[1]).search('stem cells differentiate into neurons', k=5)\n"
        "print(json.dumps([[h.id, h.score] for h in hits]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(scifact_index.path)], capture_output=True, text=True, check=True
    )
    other = json.loads(out.stdout)
    assert [h.id for h in hits] == [i for i, _ in other]
    np.testing.assert_allclose([h.score for h in hits], [s for _, s in other], atol=1e-5)


def test_append_keeps_the_transform_and_skips_unchanged_documents(scifact_index, tmp_path):
    path = tmp_path / "copy"
    shutil.copytree(scifact_index.path, path)
    index = Index.open(path)
    # exact words: a correction for a word the corpus lacks ("protein") goes when an added document brings it
    before = index.search("protein folding", k=3, typos=0)
    new = write_jsonl(
        tmp_path / "new.jsonl",
        [
            {
                "id": "new-1",
                "title": "Protein folding",
                "text": "Chaperones help proteins fold correctly.",
                "year": 2021,
                "kind": "new",
            },
            {
                "id": "new-2",
                "text": "Whitening makes sentence embeddings isotropic.",
                "year": 2021,
                "kind": "new",
            },
        ],
    )
    report = index.ingest(new)
    assert (report.added, report.unchanged) == (2, 0)
    assert len(index) == 302 and index.info()["dims"] == 128
    assert index.search("chaperones and protein folding", k=1, where=["kind=new"])[0].id == "new-1"
    again = index.ingest(new)
    assert (again.added, again.unchanged) == (0, 2)
    reopened = Index.open(path)
    assert len(reopened) == 302
    assert [h.id for h in reopened.search("protein folding", k=3, where=["kind!=new"], typos=0)] == [
        h.id for h in before
    ]
    changed = write_jsonl(
        tmp_path / "changed.jsonl", [{"id": "new-1", "text": "Mitochondria make ATP.", "kind": "new"}]
    )
    assert index.ingest(changed).replaced == 1
    assert len(Index.open(path)) == 302
    assert index.vectors.count == index.state.passages == index.stats().count
    hits = index.search("chaperones and protein folding", k=5, where=["kind=new"])
    assert {(h.id, h.text) for h in hits} == {
        ("new-1", "Mitochondria make ATP."),
        ("new-2", "Whitening makes sentence embeddings isotropic."),
    }
    # The replaced vector left the statistics: they equal those of the live raw vectors, computed afresh.
    live = index.raw.get(index.store.vector_pks()).astype(np.float64)
    np.testing.assert_allclose(index.stats().covariance(), np.cov(live, rowvar=False), atol=1e-9)


def test_api_add_and_small_corpus_whitening(tmp_path):
    # Fewer documents than dimensions: whitening must keep only the spanned directions.
    docs = [
        {"id": str(i), "text": text}
        for i, text in enumerate(
            [
                "the cat sat on the mat",
                "dogs chase cats",
                "stock markets fell sharply",
                "the central bank raised rates",
                "a recipe for tomato soup",
                "how to bake bread at home",
            ]
        )
    ]
    index = Index.create(tmp_path / "small", transform="whiten")
    index.add(docs)
    assert index.info()["dims"] == 5  # 6 documents span 5 centred directions
    hits = index.search("interest rates and the economy", k=2)
    assert {h.id for h in hits} & {"2", "3"}
    assert all(np.isfinite(h.score) for h in hits)


def test_open_rejects_what_is_not_an_index(tmp_path):
    with pytest.raises(IndexStateError, match="does not exist"):
        Index.open(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexStateError, match="not a semsearch index"):
        Index.open(tmp_path / "empty")


def test_an_index_from_a_newer_format_is_refused(scifact_index, tmp_path):
    path = tmp_path / "future"
    shutil.copytree(scifact_index.path, path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["format_version"] = 99
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexStateError, match="newer semsearch"):
        Index.open(path)


def test_drift_after_an_ingest_of_another_kind_advises_a_refit_and_auto_does_it(tiny_bert, tmp_path):
    first = [{"id": f"a{i}", "text": f"the cat sat on mat number {i} in the quiet house"} for i in range(80)]
    other = [
        {"id": f"b{i}", "text": f"{i * 7919} {i * 31} 0x{i:04x} ; ; == {{}} [] {i % 13}"} for i in range(80)
    ]
    index = Index.create(tmp_path / "kept", model=tiny_bert, transform="whiten", dims=16)
    index.add(first)
    assert index.state.drift == pytest.approx(0, abs=1e-9)
    report = index.add(other)
    assert report.drift > 0.25 and report.refit_advised and not report.refitted
    assert index.info()["drift"] == report.drift
    unchanged_transform = index.transform.matrix.copy()

    auto = Index.create(tmp_path / "auto", model=tiny_bert, transform="whiten", dims=16)
    auto.add(first)
    report = auto.add(other, refit="auto")
    assert report.refitted and not report.refit_advised
    assert auto.state.drift == pytest.approx(0, abs=1e-9)
    assert not np.allclose(auto.transform.matrix, unchanged_transform)
    # the refitted index equals one built in one go on both sets
    fresh = Index.create(tmp_path / "fresh", model=tiny_bert, transform="whiten", dims=16)
    fresh.add(first + other)
    query = "cat on a mat"
    assert [h.id for h in auto.search(query, k=10)] == [h.id for h in fresh.search(query, k=10)]


def test_defaults_chosen_by_the_benchmark(tiny_bert, tmp_path):
    bundled = Index.create(tmp_path / "bundled")
    m = bundled.settings
    assert (m.transform, m.power, m.dims_requested, m.rerank) == ("whiten", 0.5, 128, 100)
    # `--transform whiten` alone is the seeds' full whitening; no rerank when every dim is kept
    seeds = Index.create(tmp_path / "seeds", transform="whiten").settings
    assert (seeds.power, seeds.dims_requested, seeds.rerank) == (1.0, None, 0)
    # a raw BERT (no sentence-transformers config): raw cosine is not what it was trained for, no rerank
    raw = Index.create(tmp_path / "raw", model=tiny_bert).settings
    assert (raw.transform, raw.power, raw.dims_requested, raw.rerank) == ("whiten", 0.5, 32, 0)
    with pytest.raises(IndexStateError, match="rerank 100 \\(asked 5\\)"):
        Index.open(tmp_path / "bundled").check_compatible(rerank=5)
