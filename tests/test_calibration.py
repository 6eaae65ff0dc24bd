"""The fusion weight a corpus calibrates for itself (calibration.py), on the real model, FAISS and SQLite: the
scratch copy ranks exactly as a second, real index holding the changed documents does; the store is untouched
afterwards; an ingest records the calibration, queries use it, --alpha overrides it, refit keeps or redoes it;
small indexes are left uncalibrated and say so."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import SAMPLE, copy_index, shared_data, write_jsonl

from semsearch import Index
from semsearch.cli import main
from semsearch.evaluation.datasets import ensure_beir
from semsearch.ingest.creation import make_chunker
from semsearch.ingest.pipeline import split
from semsearch.retrieval.calibration import (
    LENGTH_TARGETS,
    MIN_PASSAGES,
    QUERY_SHARE,
    TIE,
    WEIGHTS,
    Calibration,
    Targets,
    pseudo_queries,
    rankings,
    sentences,
    sweep_weights,
)
from semsearch.retrieval.calibration import (
    gains_of as ranked_gains,
)
from semsearch.retrieval.calibration_age import STALE_SHARE
from semsearch.retrieval.choice import beats, best_weight, choose
from semsearch.retrieval.keywords import TITLE_WEIGHT
from semsearch.retrieval.search import DenseRetriever
from semsearch.settings import DEFAULT_ALPHA, FUSION_DEPTH
from semsearch.storage.analysis import register as register_analysis
from semsearch.storage.rawvectors import as_kept

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("calibration")

DOCUMENTS = 160  # over MIN_PASSAGES in passages (at 64 tokens overlapping by 16): calibrated
# raw vectors (int4: a transformed index's default) and an exact index (flat-sq8, past 1,024 rows, trains its
# codes on each corpus): the same scores in both indexes; passages
OPTIONS = dict(transform="none", chunk_tokens=64, index_type="flat", raw_precision="int4")


@pytest.fixture(scope="module")
def cranfield_beir(tmp_path_factory):
    return ensure_beir(shared_data("cranfield"), tmp_path_factory.mktemp("converted"))


@pytest.fixture(scope="module")
def cranfield(cranfield_beir):
    lines = (cranfield_beir / "corpus.jsonl").read_text().splitlines()[:DOCUMENTS]
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def index(cranfield, tmp_path_factory):
    root = tmp_path_factory.mktemp("calibrated")
    corpus = write_jsonl(root / "corpus.jsonl", cranfield)
    index = Index.create(root / "index", **OPTIONS)
    index.ingest(corpus)
    yield index
    index.close()


def test_sentences_are_cut_in_cased_and_tokenized_lower_case_text():
    text = "Cells grow fast. We show e.g. that it works. Smith et al. found 3 things! Why not?"
    assert [text[s:e] for s, e in sentences(text)] == [
        "Cells grow fast.",
        "We show e.g. that it works.",
        "Smith et al. found 3 things!",
        "Why not?",
    ]
    cranfield = "an experimental study of a wing was made . the lift was measured . it rose"
    assert [cranfield[s:e] for s, e in sentences(cranfield)] == [
        "an experimental study of a wing was made .",
        "the lift was measured .",
        "it rose",
    ]


def test_the_tie_rule_favours_dense_then_fusion():
    flat = {f"{w:.1f}": 0.5 for w in WEIGHTS}
    assert best_weight(flat) == ("dense", 0.9)  # all tied: dense alone; hybrid's weight the largest tied one
    peaked = {**flat, "0.4": 0.6, "0.6": 0.6 - TIE / 2}
    assert best_weight(peaked) == ("hybrid", 0.6)  # within TIE of the best fused weight: the larger
    assert best_weight({**peaked, "1.0": 0.6 - TIE / 2}) == ("dense", 0.6)
    assert best_weight({**peaked, "0.0": 0.6 + 2 * TIE})[0] == "keyword"
    assert best_weight({**peaked, "0.0": 0.6 + TIE / 2})[0] == "hybrid"


def gains_of(means: dict[str, float], spread: float, n: int = 256) -> dict[str, np.ndarray]:
    """Per-query gains with these means, each weight's differing from another's by +-spread per query."""
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return {w: mean + spread * signs * (float(w) - 0.5) for w, mean in means.items()}


def test_one_side_alone_replaces_fusion_only_beyond_noise():
    flat = {f"{w:.1f}": 0.5 for w in WEIGHTS}
    # all tied: the tie rule would take dense alone; nothing beats the default weight, which stands
    mode, alpha, rule = choose(gains_of(flat, 0.0))
    assert best_weight(flat)[0] == "dense" and (mode, alpha) == ("hybrid", DEFAULT_ALPHA)
    assert rule.startswith("default")
    dense_ahead = {**flat, "1.0": 0.53}
    assert choose(gains_of(dense_ahead, 0.0)) == ("dense", 0.9, "best")  # 0.03 with no spread: beyond noise
    # the same 0.03 where queries disagree widely (SE of the paired difference 0.5/sqrt(256) = 0.031): not
    assert choose(gains_of(dense_ahead, 1.0))[:2] == ("hybrid", DEFAULT_ALPHA)
    # dense alone ties the best, but only the fused weight is beyond noise (SE 0.031 against 0.025): hybrid
    mixed = {**flat, "0.8": 0.56, "0.9": 0.56, "1.0": 0.558}
    assert best_weight(mixed) == ("dense", 0.9)
    assert choose(gains_of(mixed, 1.0))[:2] == ("hybrid", 0.9)  # of those beyond noise, the tie rule's
    # a fused weight chosen by the tie rule keeps its lean to dense, unguarded: both sides stay in
    leaning = {**flat, "0.4": 0.6, "0.6": 0.6 - TIE / 2}
    assert choose(gains_of(leaning, 1.0)) == ("hybrid", 0.6, "best")


# Issue 38's held-out DBpedia entity subset: the pseudo-queries' sweep peaks at 0.7 (0.437), 0.8-1.0 within the tie
# margin (0.434-0.437), 0.5 at 0.419; too noisy for dense alone or any fused weight to beat 0.5 by two standard
# errors. The rule before took 0.5 (real queries 0.483, dense 0.505, 0.7 0.497).
NEAR_TIE = {"0.0": 0.3, "0.1": 0.33, "0.2": 0.36, "0.3": 0.385, "0.4": 0.405, "0.5": 0.419, "0.6": 0.43}
NEAR_TIE.update({"0.7": 0.437, "0.8": 0.436, "0.9": 0.435, "1.0": 0.434})


def test_a_near_tie_toward_one_side_too_noisy_for_it_takes_the_fused_weight_nearest_it_not_the_default():
    gains = gains_of(NEAR_TIE, 1.0)
    default = gains[f"{DEFAULT_ALPHA:.1f}"]
    assert best_weight(NEAR_TIE)[0] == "dense"  # the tie goes to dense alone ...
    assert not any(beats(gains[w], default) for w in NEAR_TIE if w != "0.5")  # ... which the guard refuses
    mode, alpha, rule = choose(gains)
    assert (mode, alpha) == ("hybrid", 0.9) and rule.startswith("hybrid")  # not the default 0.5
    assert NEAR_TIE[f"{alpha:.1f}"] >= max(NEAR_TIE.values()) - TIE  # never below the best beyond a tie
    mirrored = {f"{1 - float(w):.1f}": score for w, score in NEAR_TIE.items()}
    mirrored["0.0"] += 2 * TIE  # keyword alone ahead, as noisily
    assert choose(gains_of(mirrored, 1.0))[:2] == ("hybrid", 0.1)


# The pseudo-queries of Chinese sentences glued five to a document (the sets that motivated the guard), as their
# calibrations recorded them, with the real queries' nDCG@10 at each weight (benchmarks/calibration_choice.py)
GLUED = json.loads((Path(__file__).parent / "data" / "calibration-glued.json").read_text())
GUARDED = {
    "zh-LCQMC-valid-glued5": ("hybrid", 0.5),
    "zh-BQ-valid-glued5": ("hybrid", 0.3),
}  # issue 27's picks


@pytest.mark.parametrize("name", sorted(GLUED))
def test_glued_chinese_sentences_keep_what_the_guard_gave_them(name):
    figures = GLUED[name]
    gains = {weight: ranked_gains(ranks) for weight, ranks in figures["ranks"].items()}
    assert {w: round(float(g.mean()), 5) for w, g in gains.items()} == figures["sweep"]  # the record's own
    mode, alpha, _ = choose(gains)
    assert (mode, alpha) == GUARDED[name]
    real = figures["real ndcg@10"]
    assert real[f"{alpha:.1f}"] >= real["1.0"] + 0.03  # far above dense alone, where the tie rule went


@pytest.mark.slow
def test_the_scratch_copy_ranks_as_a_real_index_of_the_changed_documents(index, cranfield, tmp_path):
    """The pseudo-queries' rankings, taken from the index with their sentences removed in a scratch copy, equal
    those of a second index ingested from a corpus in which those documents really lack them."""
    store = index.store
    drawn = pseudo_queries(store, 60, seed=7)
    chunker = make_chunker(index.settings, lambda: index.encoder)
    # re-encoded targets kept at the index's raw precision, as calibrate() keeps them (an ingest would)
    kept = lambda texts: as_kept(index.encoder.encode(texts), index.settings.raw_precision)  # noqa: E731
    targets = Targets.of(drawn, store, partial(split, chunker=chunker)).encoded(kept)
    assert len(targets.queries) >= 55  # few are left out (more passages without the sentence than with it)
    assert (np.diff(targets.dropped) > 0).all() and len(targets.dropped) > len(targets.queries)  # passages
    dense = DenseRetriever(index.transform, index.vectors, index.raw)
    before = {pk: row["text"] for pk, row in store.get([q.pk for q in targets.queries]).items()}
    found = rankings(targets, store, dense, index.encoder.encode, rerank=0)
    dense_found, keyword_found = ([documents.found() for documents in side] for side in found)
    # targets given unencoded are encoded beside the keyword side (as calibrate() gives them): the same rankings
    unencoded = Targets.of(drawn, store, partial(split, chunker=chunker))
    assert unencoded.vectors is None
    later = rankings(unencoded, store, dense, index.encoder.encode, rerank=0, encode_targets=kept)
    for side, side_later in zip(found, later):
        assert [d.found() for d in side] == [d.found() for d in side_later]

    def failing(texts):
        raise OSError("the model's files went away")

    with pytest.raises(OSError, match="went away"):  # the targets' encoder fails on its thread: raised here
        rankings(unencoded, store, dense, index.encoder.encode, rerank=0, encode_targets=failing)

    # the store is as it was: texts, keyword index (FTS5's own check), and a removed sentence is found again
    after = store.get(list(before))
    assert {pk: row["text"] for pk, row in after.items()} == before
    store.db.execute("INSERT INTO keywords (keywords) VALUES ('integrity-check')")
    ids_of = {pk: row["id"] for pk, row in after.items()}
    first = targets.queries[0]
    assert ids_of[first.pk] in [hit.id for hit in index.search(first.query, k=10, mode="keyword")]

    changed = {ids_of[q.pk]: q.rest for q in targets.queries}
    real = Index.create(tmp_path / "changed", **OPTIONS)
    real.ingest(
        write_jsonl(
            tmp_path / "changed.jsonl", [{**d, "text": changed.get(d["_id"], d["text"])} for d in cranfield]
        )
    )
    texts = [q.query for q in targets.queries]
    vectors = index.encoder.encode(texts)
    every_id = {
        pk: row["id"] for pk, row in store.get([m.pk for f in dense_found + keyword_found for m in f]).items()
    }
    # calibration ranks its pseudo-queries by their exact words (retrieval/typos.py: off in a write), as here
    for mode, found in (("dense", dense_found), ("keyword", keyword_found)):
        expected = real.search_vectors(  # documents, as calibration ranks them (no further places)
            vectors, k=FUSION_DEPTH, rerank=0, texts=texts, mode=mode, typos=0, crop=0, per_document=1
        )
        for ours, theirs in zip(found, expected):
            assert [every_id[m.pk] for m in ours][:20] == [hit.id for hit in theirs][:20]
            np.testing.assert_allclose(
                [m.score for m in ours], [hit.score for hit in theirs], rtol=1e-5, atol=1e-6
            )

    sweep = sweep_weights(targets.queries, dense_found, keyword_found)
    targets_ids = [ids_of[q.pk] for q in targets.queries]
    for weight in WEIGHTS:
        how = (
            {"mode": "dense"}
            if weight == 1
            else {"mode": "keyword"}
            if weight == 0
            else {"mode": "hybrid", "alpha": weight}
        )
        # deeper than the cut-off: the score of a target just below it, for the near ties below
        results = real.search_vectors(vectors, k=20, rerank=0, texts=texts, typos=0, crop=0, **how)
        for target, hits, gain in zip(targets_ids, results, sweep[f"{weight:.1f}"]):
            ranked = [hit.id for hit in hits]
            real_rank = ranked.index(target) + 1 if target in ranked else len(ranked) + 1
            real_gain = 1 / math.log2(1 + real_rank) if real_rank <= 10 else 0.0
            if gain == pytest.approx(real_gain, abs=1e-9):
                continue
            # otherwise only across a near tie: the two indexes' scores agree to ~1e-5 (above), so two
            # documents fused within that of each other may swap (0.56309428 against 0.56309424, seen)
            our_rank = round(2 ** (1 / gain) - 1) if gain else 11
            window = [hit.score for hit in hits[min(our_rank, real_rank) - 1 : max(our_rank, real_rank)]]
            assert real_rank <= len(ranked) and max(window) - min(window) < 1e-5, (weight, target)
    real.close()


@pytest.mark.slow
def test_an_ingest_records_its_calibration_and_queries_use_it(index, tmp_path):
    calibration = index.state.calibration
    assert calibration is not None and calibration["documents"] == DOCUMENTS
    assert calibration["passages"] == index.state.rows > DOCUMENTS  # the size rule counts passages
    drawn = min(256, calibration["passages"] // QUERY_SHARE)
    assert drawn * 0.8 <= calibration["queries"] <= drawn and calibration["seed"] == 16
    assert set(calibration["sweep"]) == {f"{w:.1f}" for w in WEIGHTS}
    # the best weight, unless one side alone did not beat the default beyond noise
    best = best_weight(calibration["sweep"])
    chosen = (calibration["mode"], calibration["alpha"])
    assert chosen == best if calibration["rule"] == "best" else chosen[0] == "hybrid"
    on_disk = json.loads((index.path / "manifest.json").read_text())["calibration"]
    assert on_disk == calibration
    assert index.info()["default_alpha"] == calibration["alpha"]
    assert index.default_mode.value == calibration["mode"]

    text = "boundary layer transition on a flat plate"
    band = calibration["bands"]["short"]  # five words less stopwords: its length's band (bands.py)
    assert _ids(index.search(text)) == _ids(index.search(text, mode=band["mode"], alpha=band["alpha"]))
    other = 0.9 if calibration["alpha"] < 0.5 else 0.1
    given = index.search(text, alpha=other)  # --alpha alone: hybrid at that weight, whatever was chosen
    assert _ids(given) == _ids(index.search(text, mode="hybrid", alpha=other))
    assert given[0].scores is not None

    index.refit(calibrate=False)
    assert index.state.calibration == calibration  # kept as it was
    runner = CliRunner()
    files = _derived(index)
    segments = index.state.segments
    result = runner.invoke(main, ["refit", "--index", str(index.path), "--calibrate"])
    assert result.exit_code == 0, result.output
    assert "(transform and vector index kept): " + calibration["mode"] in result.output
    index.refresh()
    again = index.state.calibration
    assert again["sweep"] == calibration["sweep"] and again["seconds"] != calibration["seconds"]  # redone
    # ... and only that: no vector encoded into the index, the transform and vector index as they were
    assert index.state.segments == segments and _derived(index) == files
    info = runner.invoke(main, ["info", "--index", str(index.path)])
    assert f"pseudo-queries (seed 16; ndcg@10 dense {calibration['sides']['dense']:.3f}" in info.output


def test_a_small_index_is_not_calibrated_and_says_so(tmp_path):
    docs = [json.loads(line) for line in SAMPLE.read_text().splitlines()][:40]
    with Index.create(tmp_path / "small") as index:
        index.ingest(write_jsonl(tmp_path / "small.jsonl", docs))
        assert index.state.calibration["skipped"] and index.info()["default_alpha"] == DEFAULT_ALPHA
        rows = index.state.rows
        assert index.default_mode.value == "hybrid"
    info = CliRunner().invoke(main, ["info", "--index", str(tmp_path / "small")])
    assert f"none, the default weight ({rows} passages: fewer than {MIN_PASSAGES:,} give" in info.output
    refit_help = " ".join(CliRunner().invoke(main, ["refit", "--help"]).output.split())
    assert f"an index of {MIN_PASSAGES} passages or more" in refit_help


def _derived(index) -> dict[str, bytes]:
    """The generation's transform and vector index files, by name."""
    return {p.name: p.read_bytes() for p in index.directory.generation_dir.iterdir() if p.suffix != ".json"}


def _ids(hits) -> list[str]:
    return [hit.id for hit in hits]


@pytest.mark.slow
def test_cropped_targets_rank_as_the_index_without_the_passages_holding_the_query(index, tmp_path):
    """A document of several passages is cropped, not re-encoded: its rankings equal an exact MaxP over every
    other row's raw vector (dense) and bm25 over a copy of the store really holding the cropped texts."""
    import sqlite3

    from semsearch.retrieval.keywords import match_expression

    store = index.store
    drawn = pseudo_queries(store, 60, seed=7)
    chunker = make_chunker(index.settings, lambda: index.encoder)
    targets = Targets.drawn(drawn, store, partial(split, chunker=chunker)).encoded(index.encoder.encode)
    counts = dict(
        zip([q.pk for q in targets.queries], store.passages().counts_of([q.pk for q in targets.queries]))
    )
    cropped = [q for q in targets.queries if counts[q.pk] > 1]
    assert len(cropped) >= 30 and len(targets.rows) < len(targets.queries)  # most cropped, few re-encoded
    dense = DenseRetriever(index.transform, index.vectors, index.raw)
    found = rankings(targets, store, dense, index.encoder.encode, rerank=0)
    dense_found, keyword_found = ([documents.found() for documents in side] for side in found)

    rows = store.vector_pks()
    vectors = index.raw.get(rows)
    if len(targets.rows):  # the one-passage targets, re-encoded (here perhaps none)
        vectors[np.searchsorted(rows, targets.rows)] = targets.vectors
    kept = ~np.isin(rows, targets.dropped) | np.isin(rows, targets.rows)
    scores = index.transform.project(index.encoder.encode([q.query for q in targets.queries]))
    scores = scores @ index.transform.project(vectors[kept]).T
    owners = store.passages().owners(rows[kept])
    for found, row_scores in zip(dense_found, scores):
        best: dict[int, float] = {}
        for owner, score in zip(owners.tolist(), row_scores.tolist()):
            best[owner] = max(score, best.get(owner, -np.inf))
        exact = sorted(best.items(), key=lambda item: -item[1])[:10]
        np.testing.assert_allclose([m.score for m in found[:10]], [s for _, s in exact], rtol=1e-5, atol=1e-6)
        assert {m.pk for m in found[:5]} == {pk for pk, _ in exact[:5]} or len({s for _, s in exact[:6]}) < 6

    with sqlite3.connect(store.path) as source, sqlite3.connect(tmp_path / "copy.sqlite") as db:
        source.backup(db)  # the committed file and its write-ahead log
        register_analysis(db)  # the keyword triggers analyse the changed texts as the store does
        db.executemany(
            "UPDATE documents SET text = ? WHERE pk = ?", [(q.rest, q.pk) for q in targets.queries]
        )
        for query, found in zip(targets.queries, keyword_found):
            sql = (
                f"SELECT rowid, -bm25(keywords, {TITLE_WEIGHT}, 1.0) AS s FROM keywords WHERE keywords MATCH ? "
                "ORDER BY s DESC LIMIT 20"
            )
            expected = db.execute(sql, [match_expression(query.query)]).fetchall()
            assert [(m.pk, pytest.approx(m.score)) for m in found[:20]] == [(pk, s) for pk, s in expected]

    def failing(texts):  # the queries are encoded on a thread of their own while the keyword side ranks
        raise OSError("the model's files went away")

    with pytest.raises(OSError, match="went away"):
        rankings(targets, store, dense, failing, rerank=0)
    texts = store.get([q.pk for q in targets.queries])  # the keyword side's scratch texts rolled back
    assert all(texts[q.pk]["text"] != q.rest and q.query in texts[q.pk]["text"] for q in targets.queries)


@pytest.mark.slow
def test_a_corpus_of_one_sentence_documents_is_calibrated_by_cropped_spans(tmp_path):
    lines = shared_data("wordnet", "corpus.jsonl").read_text().splitlines()[:900]
    docs = [{"_id": d["id"], "title": d["title"], "text": d["text"]} for d in map(json.loads, lines)]
    assert max(len(sentences(d["text"])) for d in docs) < 3  # no inverse cloze possible
    with Index.create(tmp_path / "glosses") as index:
        index.ingest(write_jsonl(tmp_path / "glosses.jsonl", docs))
        calibration = index.state.calibration
        assert "skipped" not in calibration, calibration
        assert calibration["queries"] >= 50 and calibration["passages"] == index.state.rows >= 900
        assert calibration["per_query"]["fixed"] in (calibration["alpha"], 0.0, 1.0)


def _rotated(text: str) -> str:
    """The text with its second half first: a changed document of the same words."""
    words = text.split()
    return " ".join(words[len(words) // 2 :] + words[: len(words) // 2])


@pytest.mark.slow
def test_a_calibration_counts_its_age_and_an_export_keeps_it(index, cranfield, cranfield_beir, tmp_path):
    """Upserts and deletes age the calibration (stale past STALE_SHARE, which `info` says with the command);
    an export with vectors ingested elsewhere keeps its calibration and answers every query's top-10 as the
    source does; --recalibrate calibrates the import again; --refit auto renews a stale calibration."""
    runner = CliRunner()
    source = Index.open(copy_index(index.path, tmp_path / "source"))
    recorded = source.state.calibration
    assert recorded["changed"] == 0 and recorded["ranks"] and not source.info()["calibration_age"]["stale"]
    assert Calibration.from_json(recorded).gains()["0.5"].mean() == pytest.approx(
        recorded["sweep"]["0.5"], abs=1e-5
    )
    upserted = [{**doc, "text": _rotated(doc["text"])} for doc in cranfield[: DOCUMENTS // 10]]
    assert source.add(upserted).replaced == len(upserted)
    assert source.state.calibration == {**recorded, "changed": len(upserted)}  # 10%: at the share, not past
    assert not source.info()["calibration_age"]["stale"]
    source.delete([cranfield[-1]["_id"]])
    age = source.info()["calibration_age"]
    assert (age["changed"], age["documents"], age["stale"]) == (len(upserted) + 1, DOCUMENTS, True)
    assert age["limit"] == STALE_SHARE
    info = " ".join(runner.invoke(main, ["info", "--index", str(source.path)]).output.split())
    assert f"the calibration is stale, run `semsearch refit --calibrate --index {source.path}`" in info
    shown = json.loads(runner.invoke(main, ["info", "--index", str(source.path), "--json"]).output)
    assert shown["calibration_age"]["stale"] and "ranks" not in shown["calibration"]

    exported = tmp_path / "export.jsonl"
    assert (
        runner.invoke(
            main, ["export", "--index", str(source.path), "-o", str(exported), "--vectors"]
        ).exit_code
        == 0
    )
    header = json.loads(exported.read_text().split("\n", 1)[0])
    assert header["calibration"] == source.state.calibration
    defaults = dict(mode=recorded["mode"], alpha=recorded["alpha"], rerank=source.settings.rerank)
    assert {k: v for k, v in header["query_defaults"].items() if k != "bands"} == {
        **defaults,
        "calibrated": True,
    }
    result = runner.invoke(main, ["ingest", str(exported), "--index", str(tmp_path / "imported")])
    assert result.exit_code == 0, result.output
    assert "kept the export's calibration: " + recorded["mode"] in result.output
    queries = [json.loads(line)["text"] for line in (cranfield_beir / "queries.jsonl").open()]
    with Index.open(tmp_path / "imported") as imported:
        assert imported.state.calibration == source.state.calibration
        assert imported.query_defaults == source.query_defaults
        assert [_ids(h) for h in imported.search_many(queries)] == [
            _ids(h) for h in source.search_many(queries)
        ]

    result = runner.invoke(
        main, ["ingest", str(exported), "--index", str(tmp_path / "again"), "--recalibrate"]
    )
    assert "calibrated the fusion weight" in result.output and "kept the export's" not in result.output
    with Index.open(tmp_path / "again") as again:
        assert again.state.calibration["changed"] == 0 and again.state.calibration["seed"] == recorded["seed"]

    new = write_jsonl(tmp_path / "new.jsonl", [{**cranfield[-1], "_id": "new"}])
    report = source.ingest(new, refit="auto")
    assert report.recalibrated and not report.refitted and source.state.calibration["changed"] == 0
    source.close()


@pytest.mark.slow
def test_a_renewal_encodes_only_the_pseudo_queries_of_changed_documents(index, tmp_path):
    """The calibration draws by its documents' content (drawing.py) and keeps the vectors it encoded
    (storage/calibrationcache.py): after a fifth of the draw's documents are deleted, a renewal asks the
    documents still stored the same queries and encodes only the texts it did not encode before; its draw and
    record equal a fresh calibration's of the same corpus encoding every text. The cache keeps the vectors as
    the index keeps raw vectors (int4 codes), the encoder's vectors at that precision (encoded here again)."""
    from semsearch.operations.calibrating import calibration
    from semsearch.storage.calibrationcache import FILE, CalibrationCache, encoder_name, text_key

    source = Index.open(copy_index(index.path, tmp_path / "source"))
    before = CalibrationCache.load(source.path, encoder_name(source.settings))
    assert len(before.panel) >= source.state.calibration["queries"] > 50  # the ingest's draw
    drawn = source.store.get(before.panel[::5, 0].tolist())  # a fifth of the draw's documents
    source.delete([row["id"] for row in drawn.values()])
    source.recalibrate()
    renewed, after = (
        source.state.calibration,
        CalibrationCache.load(source.path, encoder_name(source.settings)),
    )
    # its vectors: the encoder's as raw vectors keep them, the targets at the index's int4, the queries at int8
    assert source.settings.raw_precision == "int4" and set(after.kept) == {"int4", "int8"}
    assert (after.directory / FILE).stat().st_size < len(after.keys) * 512  # a third of float32's 1,536
    queries = set(after.kept["int8"].keys.tolist())
    texts = source.store.get(after.panel[:8, 0].tolist())
    asked = [texts[pk]["text"][start:end] for pk, start, end, _ in after.panel[:8].tolist()]
    asked = [text for text in asked if text_key(text) in queries]
    assert len(asked) >= 4
    np.testing.assert_array_equal(
        after.encoder(lambda texts: pytest.fail(f"{texts} encoded"), "int8")(asked),
        as_kept(source.encoder.encode(asked), "int8"),
    )
    live = set(source.store.all_pks().tolist())
    still = [row for row in before.panel.tolist() if row[0] in live]
    now = {row[0]: row for row in after.panel.tolist()}
    assert all(now[row[0]] == row for row in still if row[0] in now)  # a document kept: its same query
    assert len(after.panel) > len(set(now) & {row[0] for row in still}) > len(after.panel) / 2
    assert renewed["reused"] >= len(still) / 2  # ... their texts not encoded again

    everything = CalibrationCache(source.path, "another")  # a fresh calibration: nothing cached
    fresh = calibration(source.directory, cache=everything)
    assert everything.reused == 0 and everything.encoded > renewed["reused"] > 0
    assert fresh.ranks == renewed["ranks"] and fresh.bands == renewed["bands"]
    assert (fresh.mode, fresh.alpha, fresh.sweep) == (renewed["mode"], renewed["alpha"], renewed["sweep"])
    source.close()


def test_an_upsert_that_leaves_the_calibration_stale_readies_its_renewal(
    index, cranfield, tmp_path, monkeypatch
):
    """An upsert past the stale share encodes, while its model runs, every text the renewal will ask (its draw,
    kept in the cache): `refit --calibrate` then encodes nothing, and chooses as a calibration of the same draw
    encoding every text. An upsert that leaves the calibration current leaves the cache as it was."""
    from semsearch.encoding.encoder import Encoder
    from semsearch.operations.calibrating import calibration
    from semsearch.storage.calibrationcache import FILE, CalibrationCache, encoder_name

    source = Index.open(copy_index(index.path, tmp_path / "source"))
    cache_file = source.path / FILE
    kept = cache_file.read_bytes()
    source.add([{**doc, "text": _rotated(doc["text"])} for doc in cranfield[:2]])
    assert not source.info()["calibration_age"]["stale"] and cache_file.read_bytes() == kept
    source.add([{**doc, "text": _rotated(doc["text"])} for doc in cranfield[2 : DOCUMENTS // 5]])
    assert source.info()["calibration_age"]["stale"]
    readied = CalibrationCache.load(source.path, encoder_name(source.settings))
    live = set(source.store.all_pks().tolist())
    assert set(readied.panel[:, 0].tolist()) <= live  # drawn from the documents as they are now

    def no_encoding(self, texts, *args, **kwargs):
        pytest.fail(f"the renewal encoded {len(texts)} texts")

    with monkeypatch.context() as patched:
        patched.setattr(Encoder, "encode", no_encoding)
        source.recalibrate()
    renewed = source.state.calibration
    assert renewed["changed"] == 0 and renewed["reused"] > renewed["queries"]
    # a fresh calibration, nothing cached: the same draw, the same choice
    everything = CalibrationCache(source.path, "another")
    fresh = calibration(source.directory, cache=everything)
    assert everything.reused == 0 and everything.encoded == renewed["reused"]
    assert fresh.ranks == renewed["ranks"] and fresh.bands == renewed["bands"]
    assert (fresh.mode, fresh.alpha) == (renewed["mode"], renewed["alpha"])
    source.close()


def test_a_renewal_links_the_files_it_keeps_and_the_index_stays_whole(index, tmp_path):
    """A renewal changes only the calibration: its generation links the statistics, transform and vector index
    of the one before (the same files, not written again), which `check` finds whole once the generation before
    is gone; the index answers as before."""
    from semsearch.operations.check import check_index

    path = copy_index(index.path, tmp_path / "renewed")
    with Index.open(path) as source:
        before, asked = source.directory.generation_dir, source.search("flow over a flat plate", k=5)
        files = {file.name: file.stat().st_ino for file in before.iterdir() if file.name != "manifest.json"}
        assert {"stats.safetensors", "vectors.faiss"} <= set(files)  # and the transform's, where there is one
        source.recalibrate()
        after = source.directory.generation_dir
        assert after != before and {name: (after / name).stat().st_ino for name in files} == files
        assert [hit.id for hit in source.search("flow over a flat plate", k=5)] == [hit.id for hit in asked]
    assert check_index(path).healthy
    with Index.open(path) as reopened:
        assert [hit.id for hit in reopened.search("flow over a flat plate", k=5)] == [hit.id for hit in asked]


BANDED = {  # a record's bands, each leaning its own way (what a calibration by query length may choose)
    "short": {"most": 5, "queries": 60, "mode": "hybrid", "alpha": 0.2, "rule": "best"},
    "sentence": {"most": 23, "queries": 60, "mode": "hybrid", "alpha": 0.6, "rule": "best"},
    "paragraph": {"most": None, "queries": 60, "mode": "dense", "alpha": 0.9, "rule": "best"},
}
SHORT_TEXT = "the flat plate transition"  # 3 keyword tokens ("the" is a stopword)
SENTENCE_TEXT = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft"
)
PARAGRAPH_TEXT = " ".join([SENTENCE_TEXT] * 3)


def test_a_query_takes_the_weight_of_its_length_band_and_an_old_record_one_weight_for_all():
    from semsearch.retrieval.lengths import band_of, tokens
    from semsearch.retrieval.query import QueryDefaults, QueryOptions

    # lengths counted independently: words less stopwords
    assert [tokens(t) for t in (SHORT_TEXT, SENTENCE_TEXT, PARAGRAPH_TEXT)] == [3, 13, 39]
    assert [band_of(t) for t in (SHORT_TEXT, SENTENCE_TEXT, PARAGRAPH_TEXT)] == [
        "short",
        "sentence",
        "paragraph",
    ]
    record = {"mode": "hybrid", "alpha": 0.5, "bands": BANDED}
    defaults = QueryDefaults.recorded(True, 100, record)
    resolved = {
        t: QueryOptions.resolve(defaults, queries=[t]) for t in (SHORT_TEXT, SENTENCE_TEXT, PARAGRAPH_TEXT)
    }
    assert [(o.mode.value, o.alpha_of(0)) for o in resolved.values()] == [
        ("hybrid", 0.2),
        ("hybrid", 0.6),
        ("dense", 0.5),  # dense alone: the weight unused
    ]
    mixed = QueryOptions.resolve(defaults, queries=[SHORT_TEXT, PARAGRAPH_TEXT, SENTENCE_TEXT])
    assert mixed.mode.value == "hybrid" and mixed.alphas == (0.2, 1.0, 0.6)  # dense's band: all dense weight
    asked = QueryOptions.resolve(defaults, alpha=0.7, queries=[SHORT_TEXT, PARAGRAPH_TEXT])
    assert (asked.mode.value, asked.alphas, asked.alpha_of(1)) == ("hybrid", (), 0.7)  # asked: no bands
    assert QueryOptions.resolve(defaults, mode="keyword", queries=[SHORT_TEXT]).mode.value == "keyword"
    assert defaults.to_json()["bands"][0] == {"name": "short", "most": 5, "mode": "hybrid", "alpha": 0.2}
    old = QueryDefaults.recorded(True, 100, {"mode": "hybrid", "alpha": 0.4})  # a record before bands
    assert old.bands == () and "bands" not in old.to_json()
    for text in (SHORT_TEXT, PARAGRAPH_TEXT):
        options = QueryOptions.resolve(old, queries=[text])
        assert (options.mode.value, options.alpha_of(0)) == ("hybrid", 0.4)


@pytest.mark.slow
def test_a_calibration_chooses_a_weight_per_query_length_and_an_export_carries_it(index, tmp_path):
    """Each target asked short, as its sentence and as a paragraph; each band's choice is the rule's on the
    ranks of the pseudo-queries of its length. Searches take their length's band (the same hits as that weight
    asked), `info` shows the bands, an export -> ingest keeps them, and a record without bands searches all at
    its one weight."""
    from semsearch.retrieval.bands import MOST_MOVED
    from semsearch.retrieval.lengths import BANDS, tokens

    recorded = index.state.calibration
    bands = recorded["bands"]
    assert list(bands) == [name for name, _ in BANDS]
    # every target asked as its sentence, LENGTH_TARGETS at most short and as a paragraph too
    asked_by_length = recorded["by_length"]
    assert asked_by_length == min(LENGTH_TARGETS, recorded["queries"])
    assert sum(band["queries"] for band in bands.values()) == recorded["queries"] + 2 * asked_by_length
    weight = {"dense": 1.0, "keyword": 0.0}.get(recorded["mode"], recorded["alpha"])
    means = {n: {w: ranked_gains(r).mean() for w, r in band["ranks"].items()} for n, band in bands.items()}
    peak = {n: max(sorted(m), key=lambda w: m[w]) for n, m in means.items()}  # each band's best weight
    drawn = {w: ranked_gains(r).mean() for w, r in recorded["ranks"].items()}
    base = max(sorted(drawn), key=lambda w: drawn[w])  # where the sentences as drawn peak: the moves' origin
    for name, band in bands.items():
        assert all(len(ranks) == band["queries"] for ranks in band["ranks"].values())
        taken = {"dense": 1.0, "keyword": 0.0}.get(band["mode"], band["alpha"])
        if band["rule"].startswith("moved"):  # toward its own peak, at most MOST_MOVED, beyond noise only
            step = min(MOST_MOVED, max(-MOST_MOVED, float(peak[name]) - float(base)))
            assert taken == pytest.approx(min(1.0, max(0.0, weight + step))) and step != 0, name
            own = band["ranks"]
            assert beats(ranked_gains(own[peak[name]]), ranked_gains(own[base])), name
        else:
            assert (band["mode"], band["alpha"]) == (recorded["mode"], recorded["alpha"]), name
    # the sentences alone still choose the index's weight, as before bands
    assert (recorded["mode"], recorded["alpha"]) == choose(
        {w: ranked_gains(r) for w, r in recorded["ranks"].items()}
    )[:2]
    shown = " ".join(CliRunner().invoke(main, ["info", "--index", str(index.path)]).output.split())
    assert "by query length: short (1-5 words) " in shown and "paragraph (24+ words)" in shown

    exported = tmp_path / "export.jsonl"
    index.export(exported, vectors=True)
    lines = exported.read_text().split("\n", 1)
    header = json.loads(lines[0])
    assert header["calibration"]["bands"] == bands
    banded = {name: {**BANDED[name], "ranks": band["ranks"]} for name, band in bands.items()}
    header["calibration"] = {**header["calibration"], "bands": banded}
    exported.write_text(json.dumps(header) + "\n" + lines[1])
    with Index.create(tmp_path / "imported") as imported:
        imported.ingest(exported)
        assert imported.state.calibration["bands"] == banded  # restored as the export has it
        texts = [SHORT_TEXT, SENTENCE_TEXT, PARAGRAPH_TEXT]
        asked = [dict(mode="hybrid", alpha=0.2), dict(mode="hybrid", alpha=0.6), dict(mode="dense")]
        alone = [_ids(imported.search(text, **how)) for text, how in zip(texts, asked)]
        assert [_ids(imported.search(text)) for text in texts] == alone
        assert [_ids(hits) for hits in imported.search_many(texts)] == alone  # one call, each its own band
        assert len(set(map(tuple, alone))) == 3 and tokens(PARAGRAPH_TEXT) > 23
        old = tmp_path / "old.jsonl"
        header["calibration"] = {k: v for k, v in header["calibration"].items() if k != "bands"}
        old.write_text(json.dumps(header) + "\n" + lines[1])
    with Index.create(tmp_path / "old") as before_bands:
        before_bands.ingest(old)
        weight = dict(mode=recorded["mode"], alpha=recorded["alpha"])
        assert before_bands.query_defaults.bands == ()
        for text in texts:
            assert _ids(before_bands.search(text)) == _ids(before_bands.search(text, **weight))


def _peaked(at: str, n: int) -> dict[str, str]:
    """Ranks of `n` targets at every weight (sweep.py's record): each first at `at`, fifth elsewhere."""
    return {f"{w:.1f}": ("1" if f"{w:.1f}" == at else "5") * n for w in WEIGHTS}


def test_a_band_moves_the_index_weight_toward_its_own_peak_beyond_noise_and_at_most_most_moved():
    from semsearch.retrieval.bands import MOST_MOVED, chosen_bands

    n = 80
    leaning = {
        **_peaked("0.6", n),
        "0.8": "1" * 41 + "2" * 39,
        "0.6": "2" * 41 + "1" * 39,
    }  # 0.8 by less than noise
    picked = {"short": _peaked("0.1", n), "sentence": _peaked("0.6", n), "paragraph": leaning}
    sentences = picked["sentence"]  # long documents: their sentences are the sentence band
    bands = chosen_bands(picked, ("hybrid", 0.5), 50, sentences)
    assert bands["short"]["best"] == "0.1" and MOST_MOVED == 0.2
    assert (bands["short"]["mode"], bands["short"]["alpha"]) == ("hybrid", 0.3)  # -0.5 measured, -0.2 moved
    assert (bands["sentence"]["mode"], bands["sentence"]["alpha"]) == ("hybrid", 0.5)
    assert bands["paragraph"]["best"] == "0.8" and bands["paragraph"]["alpha"] == 0.5  # within noise: kept
    assert bands["short"]["queries"] == n and bands["short"]["ranks"] == picked["short"]
    dense = chosen_bands(picked, ("dense", 0.9), 50, sentences)
    assert (dense["short"]["mode"], dense["short"]["alpha"]) == ("hybrid", 0.8)  # from dense alone's 1.0
    assert dense["paragraph"]["mode"] == "dense"
    few = chosen_bands(picked, ("hybrid", 0.5), n + 1, sentences)  # too few pseudo-queries in every band
    assert all((b["mode"], b["alpha"]) == ("hybrid", 0.5) for b in few.values())


def test_a_band_moves_from_where_the_sentences_peak_not_from_the_sentence_band():
    """Short documents (glosses, one-sentence texts): most sentences as drawn are short, the index's weight is
    their peak already, and the short band peaking there moves nowhere; the few of sentence length that peak
    elsewhere move their band."""
    from semsearch.retrieval.bands import chosen_bands

    short, sentence = _peaked("0.7", 120), _peaked("0.5", 60)
    drawn = {w: short[w][:100] + sentence[w][:20] for w in short}  # the sentences: 100 short, 20 longer
    picked = {"short": short, "sentence": sentence, "paragraph": _peaked("0.7", 60)}
    bands = chosen_bands(picked, ("hybrid", 0.8), 50, drawn)
    assert (bands["short"]["mode"], bands["short"]["alpha"]) == ("hybrid", 0.8)  # not dense alone (+0.2)
    assert (bands["sentence"]["mode"], bands["sentence"]["alpha"]) == ("hybrid", 0.6)
    assert (bands["paragraph"]["mode"], bands["paragraph"]["alpha"]) == ("hybrid", 0.8)


def test_the_targets_asked_by_length_are_every_one_or_a_sample_fixed_by_their_documents():
    """Every target is asked short and as a paragraph (in its order) where they are LENGTH_TARGETS or fewer;
    of more, a sample fixed by their draw keys (their documents' content), not their pks: the same in any
    order of the draw, and a renewal that replaced a fifth of the targets keeps those of the others that still
    draw before the last one sampled."""
    from semsearch.retrieval.bands import by_length
    from semsearch.retrieval.calibration import QUERIES, PseudoQuery

    def key(n: int) -> float:
        return float(np.random.default_rng([16, 7919 * n + 1]).random())

    def query(n: int, pk: int) -> PseudoQuery:
        return PseudoQuery(pk, f"sentence {n}", f"rest {n}", key=7919 * n + 1)

    drawn = [query(n, n) for n in range(200)]
    assert LENGTH_TARGETS == QUERIES and by_length(drawn, 16, 200) == drawn
    sampled = by_length(drawn, 16, 64)
    first = sorted(range(200), key=key)[:64]  # counted independently
    assert [q.key for q in sampled] == [7919 * n + 1 for n in first]
    assert by_length(drawn[::-1], 16, 64) == sampled
    moved = [query(n, 5000 - n) for n in range(200)]  # the same texts stored under other pks
    assert [q.key for q in by_length(moved, 16, 64)] == [q.key for q in sampled]
    renewed = drawn[40:] + [query(n, n) for n in range(1000, 1040)]
    resampled = {q.pk for q in by_length(renewed, 16, 64)}
    last = max(key(pk) for pk in resampled)
    stayed = {pk for pk in first if pk >= 40 and key(pk) <= last}
    assert stayed <= resampled and len(stayed) > 32


@pytest.mark.slow
def test_reports_whose_rare_terms_recur_are_no_entries_and_keep_the_clozes_short_band(index):
    """Cranfield's abstracts speak of their rare terms in several sentences: not a corpus of entries
    (calibration_entries.py), so nothing more is asked and the short band stays the cloze's."""
    from semsearch.retrieval.calibration import documents_of
    from semsearch.retrieval.calibration_entries import RECURRING, entries, entry_terms, terms_asked

    store = index.store
    drawn = pseudo_queries(store, 60)
    documents = documents_of(drawn, False, store)
    assert entry_terms(drawn, store, documents)[1] >= RECURRING
    assert terms_asked(drawn, documents, store) == []
    dense = DenseRetriever(index.transform, index.vectors, index.raw)
    assert entries(drawn, documents, store, dense, index.encoder.encode, index.settings.rerank) is None
    recorded = index.state.calibration
    assert recorded["entries"] is None and not recorded["bands"]["short"]["rule"].startswith("entries")


@pytest.mark.slow
def test_known_items_are_asked_of_the_index_as_it_is_where_the_sentences_measure_nothing(index):
    """Where sentences find no neighbours in their documents (pieces glued together), the index chooses from
    known items: each sentence's first words asked of the unchanged index, whose ranks are those of real
    searches; only where most were cut from documents of several sentences."""
    from semsearch.retrieval.bands import short_query
    from semsearch.retrieval.calibration import CLOZE, CROP, UNINFORMED, known_items, uninformed

    drawn = pseudo_queries(index.store, 12)
    dense = DenseRetriever(index.transform, index.vectors, index.raw)
    known = known_items(drawn, index.store, dense, index.encoder.encode, index.settings.rerank)
    ids = {pk: row["id"] for pk, row in index.store.get([q.pk for q in drawn]).items()}
    texts = [short_query(q.query) for q in drawn]
    for side, weight in (("dense", "1.0"), ("keyword", "0.0")):
        found = index.search_many(texts, k=10, mode=side, crop=0)
        ranks = [
            next((r for r, hit in enumerate(hits, 1) if hit.id == ids[q.pk]), 0)
            for q, hits in zip(drawn, found)
        ]
        assert known["ranks"][weight] == "".join("0123456789a"[r] for r in ranks), side
    assert sum(known["ranks"]["0.0"].count(c) for c in "123") >= 6  # the sentence is still in its document
    flat = dict.fromkeys(known["sweep"], UNINFORMED / 2)
    assert uninformed(flat, drawn) and not uninformed({**flat, "0.5": UNINFORMED}, drawn)
    cropped = [type(q)(q.pk, q.query, q.rest, q.span, CROP if i % 2 else CLOZE) for i, q in enumerate(drawn)]
    assert not uninformed(flat, cropped)  # half cropped: not most of several sentences


@pytest.fixture(scope="module")
def few_long(cranfield_beir, tmp_path_factory):
    """24 documents of 10 Cranfield abstracts each (over MIN_PASSAGES at 64 tokens: calibrated, with more
    queries wanted than documents)."""
    root = tmp_path_factory.mktemp("few-long")
    abstracts = [
        json.loads(line) for line in (cranfield_beir / "corpus.jsonl").read_text().splitlines()[:240]
    ]
    glued = [
        {"_id": f"long-{start}", "text": " ".join(d["text"] for d in abstracts[start : start + 10])}
        for start in range(0, len(abstracts), 10)
    ]
    index = Index.create(root / "index", **OPTIONS)
    index.ingest(write_jsonl(root / "corpus.jsonl", glued))
    yield index
    index.close()


def _places_hold_their_sentences(targets, store) -> None:
    """Each place's sentence lies in its passage and in no passage of the scratch copy (every row holding any
    of it re-encoded without it, and ranked so by the keyword side); no two places share a row; every other
    passage is its text as stored."""
    from semsearch.retrieval.calibration_places import PlaceTargets

    assert isinstance(targets, PlaceTargets)
    pks = store.all_pks()
    counts = dict(zip(pks.tolist(), store.passages().counts_of(pks).tolist()))
    docs = store.get(pks.tolist())
    spans = store.spans([pk + i for pk, n in counts.items() if n > 1 for i in range(n)])
    owner = {pk + i: pk for pk, n in counts.items() for i in range(n)}
    renewed, dropped = set(targets.rows.tolist()), set(targets.dropped.tolist())
    held = {row: text for row, _, text in targets.passages}
    assert sorted([*held, *(dropped - renewed)]) == sorted(owner)  # every passage of the corpus, once
    assert len(renewed) == len(targets.queries) == len(targets.texts) and renewed <= dropped
    for q in targets.queries:
        text = docs[owner[q.pk]]["text"]
        assert text[q.span[0] : q.span[1]] == q.query and q.pk in renewed
        start, end = spans.get(q.pk, (0, len(text)))
        assert start <= q.span[0] < q.span[1] <= end  # inside its passage
        assert q.query not in held[q.pk] and q.query not in targets.texts[sorted(renewed).index(q.pk)]
        for row in (q.pk - 1, q.pk + 1):  # a neighbour holding part of it: left out of both sides
            if row in spans and spans[row][0] < q.span[1] and q.span[0] < spans[row][1]:
                assert row in dropped and row not in held
    for row, text in held.items():
        if row not in renewed:
            start, end = spans.get(row, (0, len(docs[owner[row]]["text"])))
            assert text == docs[owner[row]]["text"][start:end]


@pytest.mark.slow
def test_a_corpus_of_few_long_documents_calibrates_on_places(few_long, index):
    """Fewer documents than queries wanted: the pseudo-queries are drawn from passages (calibration_places.py),
    each one's target its passage without it, so the weights are measured on places (not every query 1.000 as
    its document alone is found); a corpus of at least as many documents as queries draws one a document."""
    from semsearch.retrieval.calibration import MIN_QUERIES, QUERY_WORDS, SCANNED, draw
    from semsearch.retrieval.calibration_places import drawn_places

    calibration = few_long.state.calibration
    documents, wanted = few_long.state.count, calibration["passages"] // QUERY_SHARE
    assert documents == 24 < wanted and "skipped" not in calibration
    assert calibration["targets"] == "places" and calibration["queries"] >= max(MIN_QUERIES, 2 * documents)
    assert max(calibration["sweep"].values()) < 0.99 and len(set(calibration["sweep"].values())) > 3
    chunker = make_chunker(few_long.settings, lambda: few_long.encoder)
    cut = partial(split, chunker=chunker)
    asking = draw(few_long.store, calibration["passages"], cut)
    assert len(asking.targets.queries) == calibration["queries"]
    _places_hold_their_sentences(asking.targets, few_long.store)
    again = drawn_places(few_long.store, wanted, 16, cut, QUERY_WORDS, SCANNED)
    assert again.queries == asking.targets.queries  # the same draw, by the content

    many = index.state.calibration  # 160 documents, fewer queries wanted: one sentence a document
    assert many["targets"] == "documents" and many["documents"] >= many["queries"]


@pytest.mark.slow
def test_a_renewal_of_few_long_documents_draws_as_a_fresh_calibration(few_long, tmp_path):
    """The renewal of a corpus of few long documents: nothing changed, the same places again; two documents
    deleted, every place of the others drawn again and the record that of a fresh calibration (nothing
    cached) of the corpus as it is now."""
    from semsearch.operations.calibrating import calibration
    from semsearch.storage.calibrationcache import CalibrationCache, encoder_name

    source = Index.open(copy_index(few_long.path, tmp_path / "source"))
    name = encoder_name(source.settings)
    before = CalibrationCache.load(source.path, name).panel.tolist()
    source.recalibrate()
    again = source.state.calibration
    assert CalibrationCache.load(source.path, name).panel.tolist() == before
    assert again["ranks"] == few_long.state.calibration["ranks"] and again["reused"] > 0

    owners = source.store.passages()
    owner_of = dict(
        zip([row[0] for row in before], owners.owners(np.array([row[0] for row in before])).tolist())
    )
    gone = sorted(set(owner_of.values()))[:2]
    source.delete([row["id"] for row in source.store.get(gone).values()])
    source.recalibrate()
    after = CalibrationCache.load(source.path, name).panel.tolist()
    kept = [row for row in before if owner_of[row[0]] not in gone]
    assert all(row in after for row in kept) and len(after) >= len(kept)
    renewed = source.state.calibration
    fresh = calibration(source.directory, cache=CalibrationCache(source.path, "another"))
    assert fresh.ranks == renewed["ranks"] and (fresh.mode, fresh.alpha) == (
        renewed["mode"],
        renewed["alpha"],
    )
    source.close()
