"""The evaluation data loaders on small files the tests write, and on the shared data where present."""

import json

import pytest
from conftest import shared_data, write_jsonl

from semsearch.errors import DataError
from semsearch.evaluation.datasets import cranfield_to_beir, ensure_beir, load_beir, load_sts


def make_beir(root, qrels_text, split="test"):
    root.mkdir()
    write_jsonl(root / "corpus.jsonl", [{"_id": "d1", "title": "T", "text": "x"}, {"_id": "d2", "text": "y"}])
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "first"}, {"_id": "q2", "text": "second"}])
    (root / "qrels").mkdir()
    (root / "qrels" / f"{split}.tsv").write_text(qrels_text)
    return root


def test_beir_with_header_and_graded_relevance(tmp_path):
    root = make_beir(tmp_path / "mini", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\n")
    data = load_beir(root)
    assert data.name == "mini"
    assert data.corpus_path == root / "corpus.jsonl"
    assert data.qrels == {"q1": {"d1": 2, "d2": 1}}
    assert data.queries == {"q1": "first"}  # only judged queries


def test_beir_qrels_without_header_and_trec_four_columns(tmp_path):
    assert load_beir(make_beir(tmp_path / "a", "q1\td1\t1\nq2\td2\t1\n")).qrels == {
        "q1": {"d1": 1},
        "q2": {"d2": 1},
    }
    assert load_beir(make_beir(tmp_path / "b", "q2 0 d1 3\n")).qrels == {"q2": {"d1": 3}}


def test_beir_errors_name_file_and_line(tmp_path):
    root = make_beir(tmp_path / "bad", "q1\td1\t1\nq1\td2\thigh\n")
    with pytest.raises(DataError, match=r"test\.tsv, line 2, field 'score'"):
        load_beir(root)
    with pytest.raises(DataError, match="no qrels for split 'dev'.*found: test"):
        load_beir(root, "dev")
    with pytest.raises(DataError, match="not a BEIR directory"):
        load_beir(tmp_path)
    unknown = make_beir(tmp_path / "unknown-query", "q9\td1\t1\n")
    with pytest.raises(DataError, match="judged queries have no text"):
        load_beir(unknown)


def test_sts_benchmark_with_nine_field_rows_and_quotes(tmp_path):
    path = tmp_path / "sts.csv"
    path.write_text(
        "main-captions\tMSRvid\t2012test\t0000\t5.000\tA man is dancing.\tA man dances.\n"
        'main-news\theadlines\t2015\t0001\t1.5\t"Quoted" start\tno "end\tsrc-a\tsrc-b\n'
    )
    pairs = load_sts(path)
    assert [(p.sentence1, p.sentence2, p.score) for p in pairs] == [
        ("A man is dancing.", "A man dances.", 5.0),
        ('"Quoted" start', 'no "end', 1.5),
    ]


def test_sick_detected_by_its_header(tmp_path):
    path = tmp_path / "SICK.txt"
    path.write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA dog runs.\tA dog is running.\t4.8\tENTAILMENT\n"
    )
    (pair,) = load_sts(path)
    assert (pair.sentence1, pair.sentence2, pair.score) == ("A dog runs.", "A dog is running.", 4.8)


def test_sts_errors_name_line_and_field(tmp_path):
    path = tmp_path / "sts.csv"
    path.write_text("g\tf\ty\t0\t5.0\ta\tb\ng\tf\ty\t1\tfive\ta\tb\n")
    with pytest.raises(DataError, match=r"line 2, field 'field 5'.*not a number"):
        load_sts(path)
    path.write_text("g\tf\ty\t0\t5.0\ta\n")
    with pytest.raises(DataError, match=r"line 1: expected at least 7"):
        load_sts(path)


CRAN_DOCS = """.I 1
.T
wing in a slipstream .
.A
brenckman,m.
.B
j. ae. scs. 25, 1958, 324.
.W
wing in a slipstream .
  an experimental study of a wing .
.I 2
.T
a title only .
.A
.B
.W
.I
"""
CRAN_QUERIES = """.I 001
.W
what similarity laws
must be obeyed .
.I 004
.W
heat conduction in slabs .
"""
CRAN_QRELS = "1 1 1\n1 2 4\n2 2 2\n2 1 -1\n"


def test_cranfield_converts_with_its_quirks(tmp_path):
    source = tmp_path / "cranfield"
    source.mkdir()
    (source / "cran.all.1400").write_text(CRAN_DOCS)
    (source / "cran.qry").write_text(CRAN_QUERIES)
    (source / "cranqrel").write_text(CRAN_QRELS)
    out = ensure_beir(source, tmp_path / "cache")
    assert out == tmp_path / "cache" / "cranfield"
    docs = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    # the repeated title is dropped from the text; a document with no abstract keeps its title as text
    assert docs == [
        {"_id": "1", "title": "wing in a slipstream .", "text": "an experimental study of a wing ."},
        {"_id": "2", "title": "a title only .", "text": "a title only ."},
    ]
    data = load_beir(out)
    # queries .I 001 and .I 004 are the qrels' queries 1 and 2; codes 1..4 become gains 4..1, -1 is dropped
    assert data.queries == {"1": "what similarity laws must be obeyed .", "2": "heat conduction in slabs ."}
    assert data.qrels == {"1": {"1": 4, "2": 1}, "2": {"2": 3}}
    assert ensure_beir(out, tmp_path / "unused") == out  # a BEIR directory is used as it is


def test_neither_beir_nor_cranfield(tmp_path):
    with pytest.raises(DataError, match="neither a BEIR directory"):
        ensure_beir(tmp_path, tmp_path / "cache")


def test_smart_record_without_id_is_an_error(tmp_path):
    source = tmp_path / "c"
    source.mkdir()
    (source / "cran.all.1400").write_text(".I\n.T\norphan\n")
    (source / "cran.qry").write_text(CRAN_QUERIES)
    (source / "cranqrel").write_text(CRAN_QRELS)
    with pytest.raises(DataError, match=r"cran\.all\.1400, line 1, field '\.I'"):
        cranfield_to_beir(source, tmp_path / "out")


@pytest.mark.slow
def test_shared_data_loads(tmp_path):
    scifact = load_beir(shared_data("scifact"))
    assert (len(scifact.queries), sum(map(len, scifact.qrels.values()))) == (300, 339)
    cranfield = load_beir(ensure_beir(shared_data("cranfield"), tmp_path))
    assert len(cranfield.queries) == 225
    assert len(cranfield.corpus_path.read_text().splitlines()) == 1400
    assert len(load_sts(shared_data("stsb", "sts-dev.csv"))) == 1500
