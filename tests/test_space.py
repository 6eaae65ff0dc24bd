"""Space is reclaimed: deleting most documents shrinks the index directory (the raw rows of deleted documents
are compacted away, the document store vacuumed), a killed writer's spool does not stay, and the compacted
index answers exactly as before for the documents it keeps, through later writes and refits."""

import json

from conftest import SAMPLE

from semsearch import Index
from semsearch.ingest.sources.fields import FieldNames
from semsearch.storage.rawcompaction import COMPACT_MIN_ROWS


def size(path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def corpus_bytes(path) -> int:
    """What grows with the corpus: the raw vectors and the document store (a generation's statistics and
    transform are the same size whatever the corpus holds)."""
    return size(path / "raw") + sum(
        size(p) if p.is_dir() else p.stat().st_size for p in path.glob("documents.db*")
    )


def test_deleting_most_documents_shrinks_the_index(tmp_path):
    docs = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    path = tmp_path / "index"
    queries = ["parse a date from a string", "read a file line by line", "random numbers", "sort a list"]
    keep = ["datetime", "time", "random"]
    where = [f"module!={module}" for module in keep]
    with Index.create(path) as index:
        index.add(docs[:150])
        index.add(docs[150:])  # two segments
        before = {
            q: [(h.id, h.score) for h in index.search(q, k=8, where=[f"module={keep[0]}"], mode="dense")]
            for q in queries
        }
        (path / "raw" / ".spool-000000000300-4242").write_bytes(b"")  # left by a killed writer
        full, full_corpus = size(path), corpus_bytes(path)
        removed = index.delete(where=where)
        assert removed >= COMPACT_MIN_ROWS and len(index) == len(docs) - removed
        after = {  # dense: bm25's statistics change with the corpus, the vectors must not
            q: [(h.id, h.score) for h in index.search(q, k=8, where=[f"module={keep[0]}"], mode="dense")]
            for q in queries
        }
        assert after == before  # the kept documents' vectors and scores, untouched by the compaction
        assert size(path) < full  # the store vacuumed; the previous generation's files stay for its readers
        # later writes and a refit work on the compacted segment; the previous generation's files are gone
        rows = index.state.next_pk  # the new document's first row names its segment
        index.add([{**docs[0], "id": "new-argparse", "module": "random"}])
        raw = sorted(p.name for p in (path / "raw").iterdir())
        segment = [f"seg-{rows:012d}.npy", f"seg-{rows:012d}.scale.npy"]  # int8 rows and their scales
        compacted = ["seg-g000003.npy", "seg-g000003.pks.npy", "seg-g000003.scale.npy"]
        assert raw == segment + compacted, raw  # no spool
        index.refit("pca", 16)
        assert len(index.search("argparse", k=3, where=["module=random"])) == 3
    with Index.open(path) as reopened:
        assert len(reopened) == len(docs) - removed + 1
        assert reopened.raw.get(reopened.store.vector_pks()).shape == (reopened.state.passages, 384)
        kept = reopened.store.get(list(range(reopened.state.next_pk))).values()
    with Index.create(tmp_path / "fresh") as fresh:  # the same documents ingested afresh (its store packed)
        fresh.add([{"id": r["id"], "title": r["title"], "text": r["text"], **r["metadata"]} for r in kept])
    # both closed (no write-ahead log): the compacted index holds about what a fresh one of its documents holds
    assert corpus_bytes(path) < 1.5 * corpus_bytes(tmp_path / "fresh"), (
        corpus_bytes(path),
        corpus_bytes(tmp_path / "fresh"),
        full_corpus,
    )


def test_a_first_ingest_leaves_its_store_packed(tmp_path):
    """The first generation's store is vacuumed as it is published: within a page of SQLite's own packed copy
    of it (VACUUM INTO, made here), with no free page, answering as before and taking writes after. 4,000
    documents in random id order with their own vectors (no model): unpacked, their id, metadata and
    keyword indexes leave pages part full (tens of pages here)."""
    import sqlite3

    import numpy as np

    rng = np.random.default_rng(7)
    words = sorted({w for line in SAMPLE.read_text().splitlines() for w in json.loads(line)["text"].split()})
    corpus = tmp_path / "given.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "id": rng.bytes(8).hex(),
                    "text": " ".join(rng.choice(words, 15)),
                    "tag": rng.bytes(4).hex(),
                    "vector": rng.normal(size=8).round(4).tolist(),
                }
            )
            + "\n"
            for _ in range(4000)
        )
    )
    path = tmp_path / "index"
    with Index.create(path, model="none", dim=8) as index:
        index.ingest(corpus, FieldNames(vector="vector"))
        answer = [h.id for h in index.search_vectors(np.ones((1, 8), np.float32), k=5, mode="dense")[0]]
    store = path / "documents.db"
    packed = tmp_path / "packed.db"
    with sqlite3.connect(store) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
        assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
        db.execute("VACUUM INTO ?", [str(packed)])
    assert abs(store.stat().st_size - packed.stat().st_size) <= page
    with Index.open(path) as index:
        hits = index.search_vectors(np.ones((1, 8), np.float32), k=5, mode="dense")[0]
        assert [h.id for h in hits] == answer
        more = tmp_path / "more.jsonl"
        more.write_text(json.dumps({"id": "new", "text": "one more", "tag": "x", "vector": [1.0] * 8}) + "\n")
        assert index.ingest(more, FieldNames(vector="vector")).added == 1 and len(index) == 4001
