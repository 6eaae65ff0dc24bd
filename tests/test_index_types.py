"""FAISS index types (flat, hnsw, hnsw-sq8, ivf, pq, auto): each retrieves close to the exact index, keeps `--where`
returning exactly k, survives deletes and upserts, and reopens to the same results."""

import json

import faiss
import numpy as np
import pytest
from conftest import SCIFACT_GROUP, as_kept, copy_index, refitted_copy

from semsearch import Index
from semsearch.errors import SettingsError
from semsearch.retrieval.search import DenseRetriever
from semsearch.retrieval.vectorindex import AUTO_FLAT_LIMIT, factory, resolve_index_type

# with the other modules of the SciFact chain, on one worker (conftest.SCIFACT_GROUP)
pytestmark = SCIFACT_GROUP

QUERIES = [
    "stem cells differentiate into neurons",
    "vaccine efficacy in children",
    "obesity and insulin resistance",
    "tumour suppressor gene mutations",
    "antibiotic resistance in bacteria",
]
# Recall@10 against flat on the 300-document SciFact subset; pq's 4-bit codes (too few rows for 8) lose most.
MIN_RECALL = {"hnsw": 0.95, "hnsw-sq8": 0.95, "ivf": 0.95, "pq": 0.5}


@pytest.fixture(scope="module")
def flat(scifact_encoded, tmp_path_factory):
    with refitted_copy(
        scifact_encoded, tmp_path_factory.mktemp("types") / "flat", "whiten", 64, 0.5
    ) as index:
        yield index


def top_ids(index: Index, k: int = 10, **options) -> list[list[str]]:
    """The vector side's answers (dense: what the index type changes)."""
    options.setdefault("mode", "dense")
    return [[hit.id for hit in hits] for hits in index.search_many(QUERIES, k=k, **options)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hnsw", "hnsw-sq8", "ivf", "pq"])
def test_each_type_retrieves_filters_and_survives_writes(kind, flat, tmp_path):
    with Index.open(copy_index(flat.path, tmp_path / kind)) as index:
        index.refit(index_type=kind)
        details = index.info()
        assert (details["index_type"], details["dims"]) == (kind, 64)
        structure = {"hnsw": "HNSW32,Flat", "hnsw-sq8": "HNSW16,SQ8", "ivf": "IVF", "pq": "IVF"}[kind]
        assert details["index_structure"].startswith(structure)
        # a vector per passage (abstracts longer than 256 tokens are cut), 300 documents
        assert len(index) == 300 and index.vectors.kind == kind
        assert index.vectors.count == index.state.passages == index.stats().count > 300
        exact, approximate = top_ids(flat, rerank=0), top_ids(index, rerank=0)
        recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact)])
        assert recall >= MIN_RECALL[kind], recall

        # filters: exactly k whenever k match, every hit matching
        for where, k in ((["year=2019", "kind=odd"], 50), (["year>=2010"], 10), (["kind=even"], 40)):
            hits = index.search("cancer treatment", k=k, where=where, rerank=0)
            expected = len(flat.search("cancer treatment", k=k, where=where, rerank=0))
            # fewer documents match than k: their further places fill it, as flat's
            assert len(hits) == expected and len(hits) >= min(k, {"year=2019": 15}.get(where[0], k))
            assert len({h.id for h in hits}) == min(k, {"year=2019": 15}.get(where[0], k))
        assert {h.metadata["year"] for h in index.search("cancer", k=15, where=["year=2019"])} == {2019}

        # delete and upsert (hnsw cannot remove in place: it is rebuilt)
        victim = approximate[0][0]
        index.delete([victim])
        assert len(index) == 299 and index.vectors.count == index.state.passages == index.stats().count
        assert victim not in {h.id for h in index.search(QUERIES[0], k=20)}
        row = index.store.get([0])[0]
        index.add([{"id": row["id"], "text": "A recipe for lemon cake with vanilla icing."}])
        assert len(index) == 299 and index.vectors.count == index.state.passages == index.stats().count
        assert index.search("how to bake a lemon cake", k=1)[0].id == row["id"]
        after = top_ids(index)
    with Index.open(tmp_path / kind) as reopened:
        assert top_ids(reopened) == after


def test_ivf_filter_that_misses_the_probed_lists_still_returns_k(tmp_path):
    """3,000 vectors in 75 inverted lists, 8 probed: a filter keeping 30 rows spread over every list makes
    the approximate search find fewer than k; the engine scores so few allowed rows exactly (strategy.py)."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3000, 32)).astype(np.float32)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"v{i}", "text": f"v {i}", "g": i % 100}) + "\n" for i in range(3000))
    )
    np.save(tmp_path / "v.npy", vectors)
    with Index.create(tmp_path / "ivf", model="none", dim=32, transform="none", index_type="ivf") as index:
        index.ingest(corpus, vectors=tmp_path / "v.npy")
        assert index.info()["index_structure"].startswith("IVF75,Flat nprobe=")  # tuned (tuning.py)
        query = vectors[[7]]
        members = np.arange(5, 3000, 100)  # pks of g=5
        probed = index.vectors.search(index.transform.project(query), 10, members, {"nprobe": 8})[0]
        assert len(probed) < 10  # the approximate search alone misses
        hits = index.search_vectors(query, k=10, where=["g=5"])[0]
        assert len(hits) == 10 and {h.metadata["g"] for h in hits} == {5}
        # exact search ranks the vectors as the index keeps them, by the query as given
        kept = as_kept(vectors)
        unit = kept / np.linalg.norm(kept, axis=1, keepdims=True)
        best = members[np.argsort(-(unit[members] @ (query[0] / np.linalg.norm(query[0]))))[:10]]
        assert [h.id for h in hits] == [f"v{i}" for i in best]


@pytest.mark.slow
def test_auto_picks_by_corpus_size_and_unknown_types_are_refused(flat, tmp_path, monkeypatch):
    assert (
        resolve_index_type("auto", AUTO_FLAT_LIMIT) == "flat-sq8"
    )  # flat below 1,024 rows (test_flat_codes)
    assert resolve_index_type("auto", AUTO_FLAT_LIMIT + 1) == "hnsw-sq8"
    # by dims too: the same documents switch sooner when the vectors are wider
    assert resolve_index_type("auto", 20_000, dim=384) == "hnsw-sq8"
    assert (
        resolve_index_type("auto", 20_000, dim=64)
        == resolve_index_type("auto", 100_000, dim=64)
        == "flat-sq8"
    )
    with pytest.raises(SettingsError, match="unknown index type 'annoy'"):
        resolve_index_type("annoy", 10)
    with Index.open(copy_index(flat.path, tmp_path / "auto")) as index:
        index.refit(index_type="auto")
        assert (index.info()["index_type"], index.vectors.kind) == ("auto", "flat")  # fewer than 1,024 rows
        with pytest.raises(SettingsError, match="unknown index type"):
            index.refit(index_type="annoy")
    # above its budget auto picks HNSW over 8-bit codes, tuned for the recall target
    monkeypatch.setattr(factory, "AUTO_FLAT_LIMIT", 1)
    with Index.open(copy_index(flat.path, tmp_path / "graph")) as index:
        index.refit(index_type="auto")
        assert (index.info()["index_type"], index.vectors.kind) == ("auto", "hnsw-sq8")
        exact, approximate = top_ids(flat, rerank=0), top_ids(index, rerank=0)
        recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact)])
        assert recall >= MIN_RECALL["hnsw-sq8"], recall
        # a byte a dimension, where hnsw keeps four; its scores are those of its codes as FAISS decodes them,
        # within a few thousandths of the float32 projection's (flat's stored vectors)
        inner = faiss.downcast_index(index.vectors.index.index)
        codes = faiss.downcast_index(inner.storage)
        assert codes.code_size == index.vectors.dim
        decoded = codes.reconstruct_n(0, inner.ntotal)
        row_of = {int(pk): row for row, pk in enumerate(faiss.vector_to_array(index.vectors.index.id_map))}
        encoded = index.encoder.encode(QUERIES)
        found = DenseRetriever(index.transform, index.vectors, index.raw).candidates(encoded, 10, None)
        for query, ranked in zip(flat.transform.project(encoded), found):
            pks, scores = np.array([pk for pk, _ in ranked]), np.array([score for _, score in ranked])
            expected = decoded[[row_of[int(pk)] for pk in pks]] @ query
            assert len(pks) == 10 and np.allclose(scores, expected, atol=1e-5)
            assert np.abs(scores - flat.vectors.vectors_of(pks) @ query).max() < 0.01


def test_a_build_adds_the_same_blocks_of_live_rows_whatever_the_segments_layout():
    """build.rechunked: the rows of blocks cut anywhere (segments, rows replaced among them) come out in blocks
    of the sizes asked (BLOCK_ROWS after them), in order, the first `skip` rows left out (a checkpoint's, which
    may fall inside a block); what an hnsw graph depends on (VectorIndex.blocks)."""
    import numpy as np

    from semsearch.ingest.build import rechunked

    rows = np.arange(1000)
    vectors = np.stack([rows, -rows], 1).astype(np.float32)
    for cuts in ([0, 1000], [0, 7, 300, 301, 999, 1000], [0, 512, 1000]):
        blocks = [(rows[a:b], vectors[a:b]) for a, b in zip(cuts, cuts[1:])]
        out = list(rechunked(blocks, [300, 200]))
        assert [len(pks) for pks, _ in out] == [300, 200, 500]
        assert np.array_equal(np.concatenate([pks for pks, _ in out]), rows)
        assert np.array_equal(np.concatenate([v for _, v in out]), vectors)
        skipped = list(rechunked(blocks, [300, 200], skip=350))
        assert [len(pks) for pks, _ in skipped] == [150, 500] and skipped[0][0][0] == 350


def test_an_hnsw_rows_level_is_drawn_from_its_position_alone(tmp_path):
    """FAISS draws an hnsw row's level from a generator it does not save, which starts again at each load: here
    each row's level is a function of its position, so a graph appended to after a save and a load is the graph
    of the same adds made in one process (an export's import makes its source's graph: test_export)."""
    import faiss
    import numpy as np

    from semsearch.retrieval.vectorindex import create_index, load_index

    rng = np.random.default_rng(4)
    vectors = rng.normal(size=(2500, 16)).astype(np.float32)

    def graph(reload: bool) -> tuple[np.ndarray, np.ndarray]:
        index = create_index(16, "hnsw", 2500)
        for start, end in ((0, 1500), (1500, 2300), (2300, 2500)):
            index.add(vectors[start:end], np.arange(start, end))
            if reload:
                index.save(tmp_path)
                index = load_index(tmp_path, index.blocks)
        inner = faiss.downcast_index(index.index.index).hnsw
        assert index.blocks == [1500, 800, 200]
        probabilities.append(faiss.vector_to_array(inner.assign_probas))
        return faiss.vector_to_array(inner.levels), faiss.vector_to_array(inner.neighbors)

    probabilities: list[np.ndarray] = []
    once, reloaded = graph(False), graph(True)
    assert np.array_equal(once[0], reloaded[0]) and np.array_equal(once[1], reloaded[1])
    levels = once[0] - 1  # FAISS keeps a level plus one; its distribution: assign_probas
    assert abs(np.mean(levels == 0) - probabilities[0][0]) < 0.01 and levels.max() >= 1


def test_every_index_type_names_a_backend_that_reads_back_as_itself(tmp_path):
    """The factory's names are the `--index-type` values: each makes an index of its kind, which a save and a
    load, and a cluster's bytes, read back as the same kind holding the same rows and answering the same."""
    from semsearch.retrieval.vectorindex import INDEX_TYPES, create_index, index_of_bytes, load_index

    rng = np.random.default_rng(8)
    vectors = rng.normal(size=(1200, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert INDEX_TYPES[-1] == "auto"
    for kind in INDEX_TYPES[:-1]:
        index = create_index(16, kind, len(vectors))
        assert index.kind == kind and index.count == 0
        if index.training_rows:
            index.train(vectors)
        index.add(vectors, np.arange(len(vectors)) * 3)
        index.save(tmp_path)
        answers = index.search(vectors[:3], 5)
        for again in (load_index(tmp_path, index.blocks), index_of_bytes(index.to_bytes())):
            assert type(again) is type(index) and again.description == index.description, kind
            assert np.array_equal(again.ids(), np.arange(len(vectors)) * 3), kind
            assert again.search(vectors[:3], 5) == answers, kind
    with pytest.raises(SettingsError, match="unknown index type"):
        create_index(16, "auto", 10)
