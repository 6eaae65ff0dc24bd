"""LangChain over semsearch (the `langchain` extra): `SemsearchVectorStore`, a LangChain VectorStore on an index
directory, and `SemsearchEmbeddings`, the bundled int8 encoder as LangChain Embeddings.

The store opens the index at its path, or creates it (with `index_options`, as `Index.create` takes them). With
no `embedding`, semsearch encodes (its own model, transform, keyword index and calibrated hybrid search); with a
LangChain `Embeddings`, the index holds vectors made elsewhere (model "none", as `ingest --vector-field`), made
when the first documents arrive, and queries are that model's vectors. Ids are semsearch's: adding an id again
replaces the document. `filter` takes the `--where` language (a list of 'FIELD OP VALUE' strings) or a dict
(`{"year": {"$gte": 2015}, "lang": "en"}`), ANDed; search_kwargs may name `mode` (dense, keyword, hybrid, or
calibrated: the index's own choice), `alpha`, `fusion`, `rerank`, `typos` and `per_document`.

A search answers places, the unit a model is fed: each LangChain Document is one hit's passage
(`page_content`), its `id` the document's; a passage of a document cut into several adds `document_id` and its
`start` and `end` in the document's text to the metadata, and `location` (page, lines, headings) where known.

An Index's SQLite connection belongs to the thread that opened it, so the store keeps one thread that owns the
index and runs every call there: LangChain's async defaults (a call in an executor thread) work as they are."""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

try:
    from langchain_core.documents import Document as LangchainDocument
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
    from langchain_core.vectorstores.utils import maximal_marginal_relevance
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "semsearch.integrations.langchain needs the langchain extra: pip install 'semsearch[langchain]'"
    ) from error

from ..documents import Document
from ..errors import SettingsError
from ..index import Hit, Index
from ..retrieval.hits import SEARCH_OPTIONS as HIT_OPTIONS
from ..settings import NO_MODEL, IndexOptions
from ..storage.manifest import FILE

__all__ = ["SemsearchEmbeddings", "SemsearchVectorStore", "where_of"]

T = TypeVar("T")
SEARCH_OPTIONS = ("rerank", *(name for name in HIT_OPTIONS if name not in ("crop", "full_text")))
CALIBRATED = "calibrated"  # search_kwargs' mode for the index's own calibrated choice (mode and weight)
OPERATORS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def where_of(filter: dict[str, Any] | Sequence[str] | str | None) -> list[str]:
    """A LangChain filter as `--where` conditions (filters.py): a dict of field -> value or {"$op": value}
    ($eq, $ne, $gt, $gte, $lt, $lte; "$and": [dicts]), or the conditions themselves."""
    if filter is None:
        return []
    if isinstance(filter, str):
        return [filter]
    if not isinstance(filter, dict):
        return list(filter)
    conditions = []
    for field, value in filter.items():
        if field == "$and":
            conditions += [c for part in value for c in where_of(part)]
        elif field.startswith("$"):
            raise SettingsError(
                f"{field}: not in the where language (AND of conditions only)", setting="filter"
            )
        elif isinstance(value, dict):
            for operator, operand in value.items():
                if operator not in OPERATORS:
                    known = ", ".join(OPERATORS)
                    raise SettingsError(f"{field}: {operator} is not one of {known}", setting="filter")
                conditions.append(f"{field}{OPERATORS[operator]}{literal(operand)}")
        else:
            conditions.append(f"{field}={literal(value)}")
    return conditions


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


class SemsearchEmbeddings(Embeddings):
    """The encoder of a semsearch index as LangChain Embeddings: the bundled int8 all-MiniLM-L6-v2 by default
    (`IndexOptions` fields choose another model, backend or quantization), or an existing index's (`index=`).
    Its vectors are the encoder's raw ones (an index's transform applies on top of them)."""

    def __init__(self, index: str | Path | None = None, **options: Any):
        from ..encoding.factory import make_encoder
        from ..ingest.creation import new_settings

        if index is not None:
            with Index.open(index) as opened:
                settings, path = opened.settings, Path(index)
        else:
            settings, path = new_settings(IndexOptions(**options)), Path(".")
        self.encoder = make_encoder(path, settings, settings.quantize)
        self.dim = settings.encoder_dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encoder.encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encoder.encode([text])[0].tolist()


class SemsearchVectorStore(VectorStore):
    """A LangChain VectorStore on the semsearch index at `path` (opened, or created with `index_options`)."""

    def __init__(self, path: str | Path, embedding: Embeddings | None = None, **index_options: Any):
        self.path, self.embedding, self.index_options = Path(path), embedding, index_options
        self.thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="semsearch-langchain")
        self.index: Index | None = None
        if embedding is None or (self.path / FILE).exists():
            self.run(self._open, None)

    # ---- the thread that owns the index ----

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        return self.thread.submit(fn, *args).result()

    def _open(self, width: int | None) -> Index | None:
        """The index, opened or created (an index of given vectors needs their `width`: None, not yet)."""
        if self.index is None:
            options = dict(self.index_options)
            if self.embedding is not None:
                if width is None and not (self.path / FILE).exists():
                    return None
                options.update(model=NO_MODEL, dim=width)
            self.index = Index.open_or_create(self.path, IndexOptions(**options))
        return self.index

    def close(self) -> None:
        if self.index is not None:
            self.run(self.index.close)
            self.index = None
        self.thread.shutdown(wait=True)

    def __enter__(self) -> SemsearchVectorStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def embeddings(self) -> Embeddings | None:
        if self.embedding is None and self.index is not None:
            return IndexEmbeddings(self)
        return self.embedding

    # ---- writing ----

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict] | None = None,
        *,
        ids: Sequence[str | None] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Add or replace documents (an id given again replaces its document; ids left None are made)."""
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        made = [str(i) if i is not None else str(uuid.uuid4()) for i in (ids or [None] * len(texts))]
        if not texts:
            return []
        vectors = (
            None if self.embedding is None else np.asarray(self.embedding.embed_documents(texts), "float32")
        )
        # the last of a repeated id wins, as a second add_texts would
        last = {doc_id: n for n, doc_id in enumerate(made)}
        documents = [
            Document(
                id=made[n],
                text=texts[n],
                metadata=dict(metadatas[n] or {}),
                vector=None if vectors is None else vectors[n],
            )
            for n in sorted(last.values())
        ]
        self.run(self._add, documents, None if vectors is None else vectors.shape[1])
        return made

    def _add(self, documents: list[Document], width: int | None) -> None:
        index = self._open(width)
        assert index is not None  # opened: semsearch encodes, or the vectors' width is given
        index.add(documents)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete by ids (those not stored are ignored) and/or `where=` / `filter=` conditions."""
        where = where_of(kwargs.get("where") or kwargs.get("filter"))
        return self.run(self._delete, list(ids or []), where)

    def _delete(self, ids: list[str], where: list[str]) -> bool:
        index = self._open(None)
        if index is None or len(index) == 0 or (not ids and not where):
            return True
        missing = set(index.missing(ids))
        stored = [doc_id for doc_id in ids if doc_id not in missing]
        if ids and not stored:
            return True
        index.delete(stored, where)
        return True

    # ---- reading ----

    def get_by_ids(self, ids: Sequence[str], /) -> list[LangchainDocument]:
        return self.run(self._get, list(ids))

    def _get(self, ids: list[str]) -> list[LangchainDocument]:
        index = self._open(None)
        if index is None:
            return []
        index.refresh()
        found = index.get(ids)
        return [
            LangchainDocument(
                id=doc_id, page_content=found[doc_id]["text"], metadata=found[doc_id]["metadata"]
            )
            for doc_id in ids
            if doc_id in found
        ]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[LangchainDocument]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict | Sequence[str] | None = None, **kwargs: Any
    ) -> list[tuple[LangchainDocument, float]]:
        """The k best documents with semsearch's score (cosine for dense; higher is better)."""
        vector = None if self.embedding is None else self.embedding.embed_query(query)
        return self.run(self._search, query, vector, k, where_of(filter), kwargs)

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: dict | Sequence[str] | None = None, **kwargs: Any
    ) -> list[LangchainDocument]:
        hits = self.run(self._search, None, embedding, k, where_of(filter), kwargs)
        return [doc for doc, _ in hits]

    def _search(
        self, query: str | None, vector: Sequence[float] | None, k: int, where: list[str], kwargs: dict
    ) -> list[tuple[LangchainDocument, float]]:
        return [(as_document(hit), float(hit.score)) for hit in self._hits(query, vector, k, where, kwargs)]

    def _hits(
        self, query: str | None, vector: Sequence[float] | None, k: int, where: list[str], kwargs: dict
    ) -> Sequence[Hit]:
        index = self._open(None)
        if index is None:
            return []
        options = {name: kwargs[name] for name in SEARCH_OPTIONS if kwargs.get(name) is not None}
        options["crop"] = 0  # the passage is the answer: no snippet made
        if options.get("mode") == CALIBRATED:
            del options["mode"]
        if vector is None:
            assert query is not None  # a search without a vector is one by text
            return index.search(query, k=k, where=where, **options)
        texts = [query] if query is not None and options.get("mode") in ("keyword", "hybrid") else None
        return index.search_vectors(np.asarray([vector], "float32"), k, where, texts=texts, **options)[0]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """Relevance in [0, 1] from a dense search's cosine (-1 .. 1)."""
        return lambda score: min(1.0, max(0.0, (1.0 + score) / 2.0))

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[LangchainDocument, float]]:
        """Relevance in [0, 1] by the mode that answered: dense (1 + cosine) / 2; hybrid's convex fusion its
        score as it is (a weighted sum of min-max normalised scores); keyword and rrf the score over the best's."""
        found = self.similarity_search_with_score(query, k, **kwargs)
        mode = self.run(self._mode_of, kwargs)
        if mode == "dense":
            score = self._select_relevance_score_fn()
            return [(doc, score(value)) for doc, value in found]
        if mode == "hybrid" and kwargs.get("fusion") in (None, "convex"):
            return [(doc, min(1.0, max(0.0, value))) for doc, value in found]
        best = max((value for _, value in found), default=1.0) or 1.0
        return [(doc, min(1.0, max(0.0, value / best))) for doc, value in found]

    def _mode_of(self, kwargs: dict) -> str:
        asked = kwargs.get("mode")
        if asked not in (None, CALIBRATED):
            return asked
        if self.embedding is not None and asked is None:
            return "dense"  # vectors given: dense unless asked (Index.search_vectors)
        index = self._open(None)
        return index.default_mode.value if index is not None else "dense"

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: dict | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> list[LangchainDocument]:
        """k of the fetch_k best documents, each chosen for relevance less its likeness to those already
        chosen, in the index's own space (its transform applied to the kept raw vectors)."""
        vector = None if self.embedding is None else self.embedding.embed_query(query)
        return self.run(self._mmr, query, vector, k, fetch_k, lambda_mult, where_of(filter), kwargs)

    def max_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[LangchainDocument]:
        where = where_of(kwargs.pop("filter", None))
        return self.run(self._mmr, None, embedding, k, fetch_k, lambda_mult, where, kwargs)

    def _mmr(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        fetch_k: int,
        lambda_mult: float,
        where: list[str],
        kwargs: dict[str, Any],
    ) -> list[LangchainDocument]:
        hits = self._hits(query, vector, max(k, fetch_k), where, kwargs)
        if not hits:
            return []
        found, index = [as_document(hit) for hit in hits], self.index
        assert index is not None  # it answered the hits
        if vector is None:
            assert query is not None  # a search without a vector is one by text
            raw_query = index.encode([query])
        else:
            raw_query = np.asarray([vector], "float32")
        query_vector, vectors = map(unit, index.hit_vectors(hits, raw_query))  # each place's own passage
        chosen = maximal_marginal_relevance(query_vector[0], vectors.tolist(), lambda_mult, k)
        return [found[n] for n in chosen]

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        path: str | Path = "indexes/langchain",
        **index_options: Any,
    ) -> SemsearchVectorStore:
        """A store at `path` holding the texts (embedding None: semsearch encodes them)."""
        store = cls(path, embedding, **index_options)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    def _get_retriever_tags(self) -> list[str]:
        return ["SemsearchVectorStore", *(["external embeddings"] if self.embedding else [])]


class IndexEmbeddings(Embeddings):
    """The store's own index's encoder as Embeddings (what `embeddings` answers when semsearch encodes)."""

    def __init__(self, store: SemsearchVectorStore):
        self.store = store

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        index = self.store.index
        assert index is not None  # `embeddings` gives these only while the index is open
        return self.store.run(lambda: index.encode(texts).tolist())

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def as_document(hit: Any) -> LangchainDocument:
    """A hit as LangChain's Document: its place's passage, with where it is."""
    metadata = dict(hit.metadata)
    if hit.passage is not None:
        metadata |= {"document_id": hit.id, "start": hit.passage["start"], "end": hit.passage["end"]}
    if hit.location:
        metadata["location"] = hit.location
    text = hit.text if hit.passage is None else hit.passage["text"]
    return LangchainDocument(id=hit.id, page_content=text, metadata=metadata)


def unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)
