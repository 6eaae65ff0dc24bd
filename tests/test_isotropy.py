"""Isotropy figures (transforms/isotropy.py): `info --json` against a brute-force computation with the encoder,
full whitening makes the indexed vectors isotropic, every write keeps the figures current, an index written
before they were kept still opens and shows them, `inspect` draws its figures, the server's panel gets them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, SAMPLE, command_here, copy_index, write_jsonl

from semsearch import Index
from semsearch.encoding import Encoder
from semsearch.settings import TransformKind, TransformSpec
from semsearch.transforms import fit_transform
from semsearch.transforms.isotropy import figures
from semsearch.transforms.stats import RunningStats

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("isotropy")

SEMSEARCH = [sys.executable, "-m", "semsearch"]
LEGACY = REPO / "tests" / "data" / "legacy-v1"
SENTENCES = 500  # more than the model's 384 dimensions: whitening keeps them all


def brute_force_mean_cosine(vectors: np.ndarray) -> float:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    gram = unit.astype(np.float64) @ unit.T.astype(np.float64)
    n = len(unit)
    return float((gram.sum() - np.trace(gram)) / (n * (n - 1)))


@pytest.fixture(scope="module")
def sentences(tmp_path_factory):
    """Sentences cut from the sample's docstrings (held out: no index of the suite holds them as documents),
    one passage each."""
    found = []
    for line in SAMPLE.read_text().splitlines():
        for sentence in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
            if 20 <= len(sentence) <= 200 and sentence not in found:
                found.append(sentence)
    assert len(found) >= SENTENCES
    records = [{"id": f"s{i}", "text": text} for i, text in enumerate(found[:SENTENCES])]
    return write_jsonl(tmp_path_factory.mktemp("sentences") / "sentences.jsonl", records)


def info_json(path) -> dict:
    result = command_here("info", "--index", path, "--json")  # `inspect` below runs as a process
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_info_against_brute_force_and_full_whitening(sentences, tmp_path):
    path = tmp_path / "index"
    with Index.create(path, transform="none", chunk_tokens=256) as index:  # a sentence is one passage
        assert index.ingest(sentences).added == SENTENCES
        settings = index.settings
    texts = [json.loads(line)["text"] for line in sentences.read_text().splitlines()]
    encoder = Encoder(
        settings.model,
        pooling=settings.pooling,
        quantize=settings.quantize,
        backend=settings.backend,
        int8_method=settings.int8_method,
    )
    independent = brute_force_mean_cosine(encoder.encode(texts))
    isotropy = info_json(path)["isotropy"]
    assert isotropy["over"] == "passages" and isotropy["rows"] == SENTENCES
    # every row: from the running sums where the kept rows are unit vectors, else from the rows themselves
    # (int8 rows' norms are 1 only to within their rounding)
    assert isotropy["raw"]["method"].startswith(("exact", f"all {SENTENCES} passages"))
    assert abs(isotropy["raw"]["mean_cosine"] - independent) < 0.02
    assert independent > 0.05  # the bundled model's vectors are not isotropic: the test can fail

    result = command_here("refit", "--index", path, "--transform", "whiten", "--power", "1")
    assert result.returncode == 0, result.stderr
    whitened = info_json(path)["isotropy"]
    assert whitened["raw"]["mean_cosine"] == isotropy["raw"]["mean_cosine"]  # the same raw vectors
    assert abs(whitened["transformed"]["mean_cosine"]) < 0.02
    assert whitened["transformed"]["effective_rank"] > whitened["raw"]["effective_rank"]
    assert whitened["transformed"]["mean_norm"] < 0.01 < whitened["raw"]["mean_norm"]
    assert whitened["advice"]["whitening"] == "unlikely to help"  # the bundled model, mean pooling


def test_figures_match_brute_force_for_unit_and_other_vectors():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(400, 24)) * np.linspace(3, 0.1, 24) + 1.5  # a narrow, off-centre cone
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for rows, method in ((unit, "exact"), (vectors, "all 400 passages, normalised")):
        stats = RunningStats.of(rows)
        whiten = fit_transform(TransformSpec(TransformKind.WHITEN, None, 1.0), stats)
        found = figures(stats, whiten, rows)
        assert found["raw"]["method"].startswith(method)
        assert abs(found["raw"]["mean_cosine"] - brute_force_mean_cosine(rows)) < 1e-6
        assert abs(found["raw"]["mean_norm"] - np.linalg.norm(unit.mean(axis=0))) < 1e-6
        gram = unit @ unit.T
        off = gram[~np.eye(len(unit), dtype=bool)]
        assert abs(found["raw"]["sd_cosine"] - off.std()) < 1e-4
        projected = whiten.project(rows).astype(np.float64)
        assert abs(found["transformed"]["mean_cosine"] - brute_force_mean_cosine(projected)) < 1e-6
        assert found["transformed"]["effective_rank"] > 1.3 * found["raw"]["effective_rank"]
        assert found["raw"]["top1_variance"] > found["transformed"]["top1_variance"]


def test_writes_keep_the_figures_current(sample_encoded, tmp_path):
    path = copy_index(sample_encoded, tmp_path / "index")
    with Index.open(path) as index:
        before = index.state.isotropy
        assert before["rows"] == index.state.rows
        index.add([{"id": "new-1", "text": "A brand new document about parsing dates."}])
        assert index.state.isotropy["rows"] == before["rows"] + 1
        assert index.state.isotropy["raw"]["mean_cosine"] != before["raw"]["mean_cosine"]
        index.refit("whiten", power=1.0)
        whitened = index.state.isotropy["transformed"]
        assert whitened["effective_rank"] > before["transformed"]["effective_rank"]
        assert index.info()["isotropy"]["raw"] == index.state.isotropy["raw"]
    stored = json.loads((path / "manifest.json").read_text())
    assert stored["isotropy"]["rows"] == before["rows"] + 1


def test_an_index_written_before_the_figures_opens_and_shows_them(tmp_path):
    path = tmp_path / "legacy"
    shutil.copytree(LEGACY / "index", path)
    assert "isotropy" not in json.loads((path / "manifest.json").read_text())
    with Index.open(path) as index:
        assert index.state.isotropy is None
        shown = index.info()["isotropy"]
        assert shown["rows"] == index.state.rows and 0 < shown["raw"]["mean_cosine"] < 1
        assert "transformed" in shown and shown["advice"]["whitening"]
        index.add([{"id": "new-1", "text": "def parse(text): return text"}])
        assert index.state.isotropy["rows"] == shown["rows"] + 1
    assert "isotropy" in json.loads((path / "manifest.json").read_text())


def test_inspect_draws_the_figures(sample_encoded, tmp_path):
    path = copy_index(sample_encoded, tmp_path / "index")
    out = tmp_path / "figures"
    result = subprocess.run(
        [*SEMSEARCH, "inspect", "--index", str(path), "--out", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for name in ("spectrum.png", "cosines.png", "word-frequency.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    table = json.loads((out / "isotropy.json").read_text())
    assert table["transform"].startswith("whiten P=1")  # an index without a transform: against full whitening
    assert table["pairs"]["random"]["transformed"] < table["pairs"]["random"]["raw"]
    assert table["word_frequency"]["tokens"] > 100 and "raw" in table["word_frequency"]
    assert "| mean_cosine |" in (out / "isotropy.md").read_text()


def test_inspect_refuses_a_missing_index(tmp_path):
    result = subprocess.run(
        [*SEMSEARCH, "inspect", "--index", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "does not exist" in result.stderr and "Traceback" not in result.stderr
