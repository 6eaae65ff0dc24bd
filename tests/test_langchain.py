"""LangChain: SemsearchVectorStore passes LangChain's own standard suite (langchain-tests'
VectorStoreIntegrationTests, sync and async, nothing skipped) on a real index per test (vectors made by the
suite's embeddings: an index of given vectors), and with semsearch's own encoder a retriever answers as
`semsearch query` does."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
pytest.importorskip("langchain_tests", reason="langchain-tests (the test extra) is not installed")

from langchain_tests.integration_tests import VectorStoreIntegrationTests  # noqa: E402

from semsearch import Index  # noqa: E402
from semsearch.integrations.langchain import SemsearchVectorStore, where_of  # noqa: E402


class TestStandardSuite(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self, tmp_path):
        store = SemsearchVectorStore(tmp_path / "index", embedding=self.get_embeddings())
        try:
            yield store
        finally:
            store.close()


def test_a_filter_is_the_where_language():
    assert where_of({"lang": "en", "year": {"$gte": 2015, "$lt": 2020}, "draft": False, "x": None}) == [
        "lang=en",
        "year>=2015",
        "year<2020",
        "draft=false",
        "x=null",
    ]
    assert where_of({"$and": [{"a": 1}, {"b": {"$ne": "c"}}]}) == ["a=1", "b!=c"]
    assert where_of(["year>=2015"]) == ["year>=2015"]


@pytest.mark.slow
def test_a_retrieval_chain_answers_as_semsearch_query(scifact_encoded, scifact_subset):
    """as_retriever() in a LangChain chain gives `semsearch query`'s top 10 (another process) for the same
    settings: the index's own calibrated default, and dense with a filter."""
    import json
    import subprocess
    import sys

    from langchain_core.runnables import RunnableLambda

    query = next(iter(scifact_subset[1].values()))
    cases = [
        ({}, []),
        ({"mode": "dense", "filter": {"kind": "even"}}, ["--mode", "dense", "--where", "kind=even"]),
    ]
    with SemsearchVectorStore(scifact_encoded) as store:
        for search_kwargs, flags in cases:
            retriever = store.as_retriever(search_kwargs={"k": 10, **search_kwargs})
            chain = retriever | RunnableLambda(lambda documents: [document.id for document in documents])
            command = [sys.executable, "-m", "semsearch", "query", query, "--index", str(scifact_encoded)]
            printed = subprocess.run([*command, "-k", "10", "--json", *flags], capture_output=True, text=True)
            assert printed.returncode == 0, printed.stderr
            expected = [json.loads(line)["id"] for line in printed.stdout.splitlines()]
            assert len(expected) == 10 and chain.invoke(query) == expected

        keyword = store.as_retriever(search_kwargs={"k": 5, "mode": "keyword"}).invoke(query)
        fetched = [doc.id for doc in store.similarity_search(query, k=12, mode="dense")]
        chosen = [doc.id for doc in store.max_marginal_relevance_search(query, k=4, fetch_k=12, mode="dense")]
        relevance = store.similarity_search_with_relevance_scores(query, k=10)
    with Index.open(scifact_encoded) as index:
        assert [doc.id for doc in keyword] == [hit.id for hit in index.search(query, k=5, mode="keyword")]
    assert len(set(chosen)) == 4 and set(chosen) <= set(fetched)
    assert all(0 <= score <= 1 for _, score in relevance) and relevance[0][1] >= relevance[-1][1]
