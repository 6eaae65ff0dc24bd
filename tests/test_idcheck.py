"""The corpus check's repeated ids (idcheck.py) on real files: a repeat found wherever it is, with both lines, as
the dict of every id it replaced found it; hashes that agree for different ids are no repeat."""

import json

import pytest

from semsearch.errors import DataError
from semsearch.ingest import idcheck
from semsearch.ingest.documents import Corpus

DOCUMENTS = 70_000  # beyond a block of anything, and the repeat far from its first place


def corpus(path, ids):
    path.write_text(
        "".join(json.dumps({"id": doc_id, "text": f"text {n}"}) + "\n" for n, doc_id in enumerate(ids))
    )
    return Corpus(path)


def test_a_repeated_id_far_from_its_first_place_names_both_lines(tmp_path):
    ids = [f"doc-{n}" for n in range(DOCUMENTS)]
    ids[DOCUMENTS - 5] = "doc-3"  # line 69,996 repeats line 4
    ids[DOCUMENTS - 2] = "doc-9"  # a later repeat: the first one is reported
    with pytest.raises(DataError) as error:
        corpus(tmp_path / "c.jsonl", ids).check()
    message = str(error.value)
    assert f"line {DOCUMENTS - 4}, field 'id': id 'doc-3' appears twice (first at line 4)" in message


def test_unique_ids_pass_and_are_counted(tmp_path):
    assert corpus(tmp_path / "c.jsonl", [f"doc-{n}" for n in range(DOCUMENTS)]).check().count == DOCUMENTS


def test_ids_whose_hashes_agree_are_not_a_repeat(tmp_path, monkeypatch):
    monkeypatch.setattr(idcheck, "_hash", len)  # every id of one length collides
    ids = [f"d{n:04d}" for n in range(3000)]
    assert corpus(tmp_path / "unique.jsonl", ids).check().count == 3000
    ids[2500] = "d0042"  # a real repeat among thousands of colliding hashes
    with pytest.raises(
        DataError, match=r"line 2501, field 'id': id 'd0042' appears twice \(first at line 43\)"
    ):
        corpus(tmp_path / "repeat.jsonl", ids).check()
