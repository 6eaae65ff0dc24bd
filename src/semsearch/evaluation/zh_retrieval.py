"""Chinese retrieval sets built from sentence-pair files (the senteval_cn layout, `text1<TAB>text2<TAB>label`):
each text1 with a label-1 partner is a query, its label-1 partners are relevant, and every other sentence of the
file is a distractor. The query's own sentence is not a document of its set (it would be found first)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..errors import SemsearchError

POSITIVE = 1.0  # the label of a paraphrase in the 0/1 tasks (ATEC, BQ, LCQMC, PAWSX)


@dataclass(frozen=True)
class SentencePair:
    text1: str
    text2: str
    label: float


@dataclass(frozen=True)
class RetrievalSet:
    name: str
    corpus: dict[str, str]  # doc id -> sentence
    queries: dict[str, str]  # query id -> sentence
    qrels: dict[str, dict[str, int]]  # query id -> relevant doc id -> 1
    own: dict[str, str]  # query id -> the doc id of its own sentence (left out of its ranking)


def read_pairs(path: str | Path, limit: int | None = None) -> list[SentencePair]:
    """The pairs of a senteval_cn file (at most `limit`); a malformed line is an error naming file and line."""
    path = Path(path)
    out: list[SentencePair] = []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            for number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
                if not row:
                    continue
                if len(row) != 3:
                    raise SemsearchError(
                        f"{path}:{number}: expected text1<TAB>text2<TAB>label, got {len(row)} fields"
                    )
                try:
                    label = float(row[2])
                except ValueError:
                    raise SemsearchError(f"{path}:{number}: label: not a number: {row[2]!r}") from None
                out.append(SentencePair(row[0].strip(), row[1].strip(), label))
                if limit is not None and len(out) >= limit:
                    break
    except OSError as error:
        raise SemsearchError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise SemsearchError(f"{path}: not UTF-8 text") from None
    return out


def retrieval_set(
    name: str, pairs: list[SentencePair], max_queries: int | None = None, relevant_at: float = POSITIVE
) -> RetrievalSet:
    """The retrieval set of a pair file's pairs (see the module's docstring), queries in file order; a pair is
    a paraphrase at label `relevant_at` or above (1 of the 0/1 tasks; 4 of STS-B's 0-5, as the English one)."""
    ids: dict[str, str] = {}
    for pair in pairs:
        for text in (pair.text1, pair.text2):
            ids.setdefault(text, f"d{len(ids)}")
    partners: dict[str, set[str]] = {}
    for pair in pairs:
        if pair.label >= relevant_at and pair.text1 != pair.text2:
            partners.setdefault(pair.text1, set()).add(ids[pair.text2])
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    own: dict[str, str] = {}
    for text, relevant in partners.items():
        if max_queries is not None and len(queries) >= max_queries:
            break
        query_id = f"q{len(queries)}"
        queries[query_id] = text
        qrels[query_id] = dict.fromkeys(sorted(relevant), 1)
        own[query_id] = ids[text]
    corpus = {doc_id: text for text, doc_id in ids.items()}
    return RetrievalSet(name, corpus, queries, qrels, own)


def without_own(run: dict[str, dict[str, float]], own: dict[str, str]) -> dict[str, dict[str, float]]:
    """A run with each query's own sentence taken out of its ranking."""
    return {q: {d: s for d, s in docs.items() if d != own.get(q)} for q, docs in run.items()}


def grouped(data: RetrievalSet, size: int, seed: int = 0) -> RetrievalSet:
    """Multi-sentence documents from a set: its sentences but the queries' own, shuffled (seeded) and joined
    `size` to a document with a Chinese full stop; a document is relevant to a query where it holds one of
    the query's relevant sentences."""
    import random

    owns = set(data.own.values())
    sentences = [doc_id for doc_id in data.corpus if doc_id not in owns]
    random.Random(seed).shuffle(sentences)
    corpus, holder = {}, {}
    for start in range(0, len(sentences), size):
        doc_id = f"g{start // size}"
        members = sentences[start : start + size]
        corpus[doc_id] = "".join(data.corpus[m].rstrip("。") + "。" for m in members)
        holder.update(dict.fromkeys(members, doc_id))
    qrels = {
        query_id: dict.fromkeys(sorted({holder[d] for d in relevant if d in holder}), 1)
        for query_id, relevant in data.qrels.items()
    }
    qrels = {query_id: relevant for query_id, relevant in qrels.items() if relevant}
    queries = {query_id: data.queries[query_id] for query_id in qrels}
    return RetrievalSet(f"{data.name}-{size}", corpus, queries, qrels, {})
