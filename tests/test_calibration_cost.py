"""What makes a calibration cheap (issue 38: renewing one costs at most 10% of the ingest), each checked against
an independent computation: the sweep's ranks, read from every weight at once, are the ranks of `fuse`'s own
lists; the scratch copy read shallow ranks as brute force; the batched rerank scores each row's cosine; the
scratch bm25 matrix ranks as FTS5; the cache keeps the paragraphs a renewal asks again."""

from __future__ import annotations

import random

from semsearch.retrieval.search import Documents, Match, fuse
from semsearch.retrieval.sweep import CUTOFF, WEIGHTS, fused_ranks, rank_in, target_ranks
from semsearch.settings import Fusion


def test_sweep_ranks_are_the_ranks_of_fused_lists():
    """Random lists with shared and tied scores (few decimals): every weight's rank as `fuse` orders them, a
    query at a time and all at once (lists of every length side by side, as Documents)."""
    draw = random.Random(0)
    found = 0
    cases, expected = [], []
    for _ in range(600):
        pool = range(40)
        dense_pks, keyword_pks = (
            draw.sample(pool, draw.randint(0, 25)),
            draw.sample(pool, draw.randint(0, 25)),
        )
        digits = draw.choice([1, 2, 6])
        dense = [
            Match(pk, s)
            for pk, s in zip(
                dense_pks, sorted((round(draw.random(), digits) for _ in dense_pks), reverse=True)
            )
        ]
        keyword = [
            Match(pk, s)
            for pk, s in zip(
                keyword_pks, sorted((round(draw.random(), digits) for _ in keyword_pks), reverse=True)
            )
        ]
        target = draw.choice(pool)
        ranks = fused_ranks(target, dense, keyword)
        for weight, rank in zip(WEIGHTS, ranks):
            fused = (
                dense
                if weight == 1
                else keyword
                if weight == 0
                else fuse(dense, keyword, weight, Fusion.CONVEX, CUTOFF)
            )
            assert rank == rank_in(target, fused), (weight, target, dense, keyword)
            found += rank > 0
        cases.append((target, dense, keyword))
        expected.append(ranks)
    assert found > 1000  # the targets were found, at many ranks
    targets, dense, keyword = zip(*cases)
    together = target_ranks(targets, [Documents.of(d) for d in dense], [Documents.of(k) for k in keyword])
    assert together.tolist() == expected


def test_the_cache_answers_only_the_texts_it_holds_and_ignores_what_is_not_its_own(tmp_path):
    """storage/calibrationcache.py with a deterministic stand-in encoder (the cache is storage, not the model):
    a text it holds is answered with its vector at the precision asked (rawvectors.as_kept of the encoder's,
    kept in the file as int4 codes, not float32), any other encoded; another encoder's, another precision's or
    a damaged file is ignored, a float32 file of releases before read at the precision asked; what it keeps is
    the draw, the words of its paragraphs after their queries and the vectors the last calibration used."""
    import json

    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import save_file

    from semsearch.storage.calibrationcache import FILE, CalibrationCache, text_key
    from semsearch.storage.rawvectors import as_kept

    asked: list[str] = []

    def encode(texts):
        asked.extend(texts)
        return np.stack([np.random.default_rng(list(t.encode())).standard_normal(384) for t in texts]).astype(
            np.float32
        )

    def kept(texts):  # what the calibration takes: the encoder's vectors as int4 raw vectors are kept
        return as_kept(encode(texts), "int4")

    first = CalibrationCache.load(tmp_path, "model-a")
    np.testing.assert_array_equal(first.encoder(encode, "int4")(["alpha", "beta"]), kept(["alpha", "beta"]))
    first.save(np.array([[3, 0, 5, 0], [4, 2, 9, 1]]), ["alpha and more words", ""])
    assert (tmp_path / FILE).stat().st_size < 2 * 384 * 4  # two vectors' int4 codes, less than one in float32
    # what a release before reads: no vectors, no error
    with safe_open(str(tmp_path / FILE), "numpy") as opened:
        assert opened.get_tensor("keys").size == opened.get_tensor("vectors").size == 0
    asked.clear()

    again = CalibrationCache.load(tmp_path, "model-a")
    assert again.panel.tolist() == [[3, 0, 5, 0], [4, 2, 9, 1]] and again.kept["int4"].codes.shape == (2, 192)
    assert again.kept_paragraphs() == {(3, 0, 5, 0): " and more words"}  # after the query (its span: "alpha")
    vectors = again.encoder(encode, "int4")(["beta", "gamma", "beta"])
    np.testing.assert_array_equal(vectors, kept(["beta", "gamma", "beta"]))
    assert asked[:1] == ["gamma"] and (again.reused, again.encoded) == (1, 1)  # "beta" from the file, once
    again.save(np.zeros((0, 4), np.int64))
    assert CalibrationCache.load(tmp_path, "model-a").keys.size == 2  # the texts this calibration used
    at_int8 = CalibrationCache.load(tmp_path, "model-a")
    at_int8.encoder(encode, "int8")(["beta"])
    assert (at_int8.reused, at_int8.encoded) == (0, 1)  # int4 codes are not the int8 vectors

    assert CalibrationCache.load(tmp_path, "model-b").keys.size == 0  # another encoder's vectors: never
    (tmp_path / FILE).write_bytes((tmp_path / FILE).read_bytes()[:-7])  # cut short
    assert CalibrationCache.load(tmp_path, "model-a").keys.size == 0

    metadata = {"encoder": "model-a", "paragraphs": json.dumps(["alpha and more words", ""])}
    before = {"panel": np.array([[3, 0, 5, 0], [4, 2, 9, 1]]), "keys": np.array([text_key("alpha")])}
    save_file(
        {**before, "vectors": encode(["alpha"])}, str(tmp_path / FILE), metadata=metadata
    )  # as kept before
    older = CalibrationCache.load(tmp_path, "model-a")
    assert older.kept_paragraphs() == {(3, 0, 5, 0): " and more words"}
    asked.clear()
    converted = older.encoder(encode, "int4")(["alpha"])
    assert not asked and older.reused == 1  # read from the file, at int4 as the encoder's would be kept
    np.testing.assert_array_equal(converted, kept(["alpha"]))


def test_the_scratch_copy_read_shallow_ranks_as_brute_force_over_the_changed_rows(
    sample_encoded, monkeypatch
):
    """ScratchDense reads SHALLOW rows deeper than asked and again as deep as the targets had rows only for a
    query that finds too many of theirs: its candidates equal the best rows of the index's stored vectors with
    the dropped rows left out and the new ones scored in, computed here by one matrix product (given vectors:
    other rows' raw vectors as the targets' new ones, rows' own as queries, several of them dropped)."""
    import numpy as np

    from semsearch import Index
    from semsearch.retrieval import calibration_scratch
    from semsearch.retrieval.calibration_scratch import OverlaidRaw, ScratchDense
    from semsearch.retrieval.search import DenseRetriever

    depths: list[tuple[int, int]] = []
    read = ScratchDense._base_rows

    def recorded(self, queries, projected, n, allowed):  # the real reads, the depths asked for recorded
        depths.append((len(queries), n))
        return read(self, queries, projected, n, allowed)

    monkeypatch.setattr(ScratchDense, "_base_rows", recorded)

    n = 20
    with Index.open(sample_encoded) as index:
        rows = index.store.vector_pks()
        draw = np.random.default_rng(5)
        dropped = np.sort(draw.choice(rows, 80, replace=False))
        replaced = np.sort(draw.choice(dropped, 40, replace=False))  # the targets' new passages take these
        new_vectors = index.raw.get(draw.choice(rows, len(replaced), replace=False))
        queries = index.raw.get(np.concatenate([dropped[:24], draw.choice(rows, 16, replace=False)]))
        base = DenseRetriever(index.transform, index.vectors, index.raw)
        scratch = ScratchDense(base, dropped, OverlaidRaw(index.raw, replaced, new_vectors))

        projected = index.transform.project(queries).astype(np.float64)
        kept = rows[~np.isin(rows, dropped)]
        every = np.concatenate([kept, replaced])
        stored = np.concatenate(
            [index.vectors.vectors_of(kept), index.transform.project(new_vectors)]
        ).astype(np.float64)
        scores = projected @ stored.T
        expected = [list(zip(every.tolist(), row.tolist())) for row in scores]

        for shallow in (calibration_scratch.SHALLOW, 1):
            monkeypatch.setattr(calibration_scratch, "SHALLOW", shallow)
            depths.clear()
            found = scratch.candidates(queries, n, None)
            for ours, brute in zip(found, expected):
                assert_same_ranking(ours, sorted(brute, key=lambda pair: -pair[1])[:n], 1e-5)
            assert depths[0] == (len(queries), n + shallow)
            if shallow == 1:  # the queries of dropped rows read again, as deep as the targets had rows
                assert len(depths) == 2 and 0 < depths[1][0] < len(queries)
                assert depths[1][1] == n + len(dropped)


def test_the_scratch_copy_of_a_flat_sq8_index_scores_its_decoded_codes_as_faiss_does(tmp_path):
    """Over flat-sq8 the scratch copy decodes the index's codes once and scores every query's rows by one product
    (FAISS's SQ8 scan decodes every row for every query): the same rows as FAISS's own search, the same scores up
    to a product's rounding, ties by row; the replaced rows dropped and the new ones scored in as before."""
    import numpy as np

    from semsearch import Document, Index
    from semsearch.retrieval.calibration_scratch import OverlaidRaw, ScratchDense
    from semsearch.retrieval.search import DenseRetriever

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(3000, 32)).astype("f4")
    options = dict(model="none", dim=32, transform="whiten", dims=16, index_type="flat-sq8")
    with Index.create(tmp_path / "coded", **options) as index:
        index.add([Document(id=str(i), text=f"doc {i}", vector=vectors[i]) for i in range(len(vectors))])
        assert index.vectors.kind == "flat-sq8"
        rows = index.store.vector_pks()
        dense = DenseRetriever(index.transform, index.vectors, index.raw)
        queries = (vectors[rng.choice(len(vectors), 200, replace=False)] + rng.normal(size=(200, 32))).astype(
            "f4"
        )
        no_change = ScratchDense(
            dense,
            np.zeros(0, np.int64),
            OverlaidRaw(index.raw, np.zeros(0, np.int64), np.zeros((0, 32), "f4")),
        )
        ours = no_change._base_rows(queries, index.transform.project(queries), 50, None)
        assert no_change._held is not None  # the decoded codes, read once
        theirs = dense.ranked_rows(queries, 50, None)
        for (our_rows, our_scores), (their_rows, their_scores) in zip(ours, theirs):
            assert set(our_rows.tolist()) == set(their_rows.tolist())
            np.testing.assert_allclose(our_scores, their_scores, rtol=0, atol=1e-5)
            assert (np.diff(our_scores) <= 0).all()
        # the candidates of a scratch copy with rows dropped and new ones: a brute force over decoded codes
        dropped = np.sort(rng.choice(rows, 300, replace=False))
        replaced = np.sort(rng.choice(dropped, 100, replace=False))
        new_vectors = rng.normal(size=(len(replaced), 32)).astype("f4")
        scratch = ScratchDense(dense, dropped, OverlaidRaw(index.raw, replaced, new_vectors))
        kept = rows[~np.isin(rows, dropped)]
        every = np.concatenate([kept, replaced])
        stored = np.concatenate([index.vectors.vectors_of(kept), index.transform.project(new_vectors)])
        scores = index.transform.project(queries).astype(np.float64) @ stored.astype(np.float64).T
        for found, row in zip(scratch.candidates(queries, 20, None), scores):
            best = np.argsort(-row, kind="stable")[:20]
            assert [pk for pk, _ in found[:15]] == every[best][:15].tolist() or len(
                set(np.round(row[best], 5))
            ) < 20
            np.testing.assert_allclose([score for _, score in found], row[best], rtol=0, atol=1e-5)


def test_a_rerank_reading_every_query_at_once_scores_each_by_its_cosine(sample_encoded):
    """search.rerank reads every query's rows in one gather: each query's rows come back re-scored by the
    cosine of the raw vectors (computed here in float64 from the rows read one by one), best first, cut to k;
    a query without candidates gets none."""
    import numpy as np

    from semsearch import Index
    from semsearch.retrieval.search import listed, rerank, rows_of

    with Index.open(sample_encoded) as index:
        rows = index.store.vector_pks()
        draw = np.random.default_rng(3)
        queries = index.raw.get(draw.choice(rows, 6, replace=False)) + 0.01
        ranked = [[(int(pk), 0.0) for pk in draw.choice(rows, 30, replace=False)] for _ in range(5)] + [[]]
        ranked[1] += ranked[0][:10]  # rows shared between queries are read once
        ranked[1] = list(dict.fromkeys(ranked[1]))
        for k in (len(rows), 7):
            out = [listed(found) for found in rerank(index.raw, queries, [rows_of(r) for r in ranked], k)]
            assert out[-1] == [] and len(out) == len(ranked)
            for query, candidates, result in zip(queries, ranked, out):
                if not candidates:
                    continue
                cosine = {}
                for pk, _ in candidates:
                    vector = index.raw.get(np.array([pk]))[0].astype(np.float64)
                    cosine[pk] = vector @ query / np.linalg.norm(vector) / np.linalg.norm(query)
                best = sorted(cosine.values(), reverse=True)[:k]
                assert len(result) == min(k, len(candidates))
                np.testing.assert_allclose([s for _, s in result], best, atol=1e-5)
                np.testing.assert_allclose([cosine[pk] for pk, _ in result], best, atol=1e-5)


def test_the_scratch_keyword_matrix_ranks_as_fts5_inside_the_scratch(sample_encoded, tmp_path):
    """Inside a scratch copy (store.scratch: documents' texts changed in a savepoint), the bm25 matrix read of
    the scratch content ranks every query as FTS5 itself does there: the same documents in the same order,
    the same scores, asked one at a time or all at once; a word taken out of a document no longer finds it; the
    committed store is untouched."""
    from conftest import copy_index

    from semsearch import Index
    from semsearch.retrieval.bm25matrix import Bm25Matrix
    from semsearch.retrieval.keywords import TITLE_WEIGHT, KeywordRetriever, match_expression

    with Index.open(copy_index(sample_encoded, tmp_path / "index")) as index:
        store = index.store
        pks = store.all_pks()[::15].tolist()
        texts = {pk: row["text"] for pk, row in store.get(pks).items()}
        halves = {pk: " ".join(text.split()[len(text.split()) // 2 :]) for pk, text in texts.items()}
        # plain words (FTS5 asks a word its tokenizer cuts in two, as `get_dialect`, as a phrase; the matrix
        # each term), some of them lost in the scratch; five paragraph-long
        words = [[word for word in text.split() if word.isalpha()] for text in texts.values()]
        queries = [" ".join(plain[:12]) for plain in words] + [" ".join(plain[:60]) for plain in words][:5]
        with store.scratch(halves):
            matrix = Bm25Matrix.read(store, scratch=True)
            keyword = KeywordRetriever(store, store.count())
            for text in queries:
                ours = matrix.top(keyword.terms(text), 100, None)
                fts5 = store.keyword_ranking(match_expression(text), 100, TITLE_WEIGHT)
                assert_same_ranking(ours, fts5, 1e-9)
            # every query at once, as a calibration asks them: each exactly as asked alone
            together = matrix.top_many([keyword.terms(text) for text in queries], 100, None)
            for text, (found, scores) in zip(queries, together):
                assert list(zip(found.tolist(), scores.tolist())) == matrix.top(
                    keyword.terms(text), 100, None
                )
            rows = store.get(pks)
            left = {  # each word's terms alone (a text's leave its stopwords out)
                pk: {
                    term
                    for word in f"{rows[pk]['title'] or ''} {halves[pk]}".split()
                    for term in keyword.terms(word)
                }
                for pk in pks
            }
            lost = {  # a word of a document whose terms are in neither its title nor its half left
                pk: word
                for pk, text in texts.items()
                for word in text.split()[:12]
                if word.isalpha() and not set(keyword.terms(word)) & left[pk]
            }
            assert lost, "some document loses a word in the scratch"
            for pk, word in lost.items():
                assert pk not in matrix.holding(list(keyword.terms(word)))
        assert {pk: row["text"] for pk, row in store.get(pks).items()} == texts


def assert_same_ranking(ours, theirs, tolerance: float) -> None:
    """Two rankings of (pk, score), best first, alike but for the order of scores tied within `tolerance`: the
    same scores rank by rank, and every pk both hold scored alike (one only holds at a tie across the cut)."""
    import numpy as np

    assert len(ours) == len(theirs)
    np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=tolerance, atol=tolerance)
    scored = dict(theirs)
    for pk, score in ours:
        assert abs(scored.get(pk, theirs[-1][1]) - score) <= tolerance * max(1.0, abs(score)), pk
    assert sum(pk in scored for pk, _ in ours) >= len(ours) - 2


def test_a_corpus_of_fewer_documents_than_wanted_is_read_only_until_each_is_found(tmp_path):
    """dense_documents wants no more documents than there are: a corpus of 12 documents of many passages is
    read until each of them is found, not to its last row (a folder of 50 pages read every row of each query to
    find 100: half of its calibration), and without rerank ranks them as a read of every row does (MaxP)."""
    import numpy as np

    from semsearch import Index
    from semsearch.retrieval.search import DenseRetriever, dense_documents
    from semsearch.transforms.base import normalize_rows

    topics = [
        "river",
        "mountain",
        "violin",
        "harbour",
        "orchard",
        "comet",
        "glacier",
        "bakery",
        "tram",
        "falcon",
    ]
    texts = [
        " ".join(
            f"The {topics[(d + k) % len(topics)]} number {k} of part {d} stands here." for k in range(14)
        )
        for d in range(12)
    ]
    with Index.create(tmp_path / "few", transform="none", chunk_tokens=24) as index:
        index.add([{"id": str(d), "text": text} for d, text in enumerate(texts)])
        rows = index.store.vector_pks()
        assert len(rows) > 4 * 12  # many passages each
        depths: list[int] = []

        class Recorded(DenseRetriever):
            def ranked_rows(self, queries, n, allowed):
                depths.append(n)
                return super().ranked_rows(queries, n, allowed)

        queries = index.encoder.encode(["a comet over the harbour", "violin in the orchard"])
        for query in queries:
            depths.clear()
            reader = Recorded(index.transform, index.vectors, index.raw)
            (found,) = dense_documents(reader, index.store.passages(), query[None], 20, None, 0)
            scores = (normalize_rows(index.raw.get(rows)) @ normalize_rows(query[None]).T)[:, 0]
            owners = index.store.passages().owners(rows)
            by_score = owners[np.argsort(-scores, kind="stable")]
            every = list(dict.fromkeys(by_score.tolist()))  # MaxP over every row
            assert found.pks.tolist() == every and len(every) == 12
            assert len(set(by_score[: depths[-1]].tolist())) == 12  # the last depth read holds them all
            if len(depths) > 1:
                assert len(set(by_score[: depths[-2]].tolist())) < 12  # ... the one before did not
            assert depths[0] == 24  # twice the documents wanted (they have several passages), not 2 x 20
