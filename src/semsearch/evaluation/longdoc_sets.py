"""Evaluation sets built in code from the shared data (never copied into the repository), for defaults measured
on kinds of corpora the source sets are not:

- mixed-topic long documents: a BEIR set's documents in a fixed random order, PIECES at a time, concatenated
  ("Title. text" each) into one document that changes topic every piece; a query is relevant to a long document
  with the highest grade of its pieces. A shorter passage should win here.
- single-topic long documents: the documents relevant to one query concatenated (up to PIECES) into one, so
  that every part of a long document is about the same queries; the documents no query judges stay as they
  are. A longer passage (more of the topic in one vector) should not lose here.
- short sentences as retrieval (STS Benchmark): a sentence of a pair scored at least STS_RELEVANT is a query,
  the other sentence its one relevant document, in a corpus of every other sentence of the files.
- entity names (WordNet, shaped like DBpedia-entity): a noun lemma that several synsets carry is a query (two or
  three words at most), every synset carrying it relevant, among LEMMA_DOCUMENTS glosses with their lemmas as
  titles; with the first lemma alone as the title (a page's one name: a query may be an alias the title lacks);
  or without titles and asked as a question ("what does X mean"), a short web-like query (MS MARCO's shape)
  whose words the documents rarely hold.

- a glossary (WordNet glosses grouped by their lexicographer file, GLOSSARY_ENTRIES an entry "lemmas: gloss" a
  line, like a manual's glossary or a dictionary's chapter): a lemma query (as the entity names') is relevant to
  every long document holding a synset that carries it: many short entries a document, each on its own topic.
- a catalogue (a BEIR set's titles, each entry "Title: its text's first sentence", CATALOGUE_ENTRIES a line, in
  a fixed random order, like a journal's contents with their summaries): a query is a word of a few titles
  (TITLE_WORD_TITLES: as a lemma of several synsets), every long document holding an entry titled with it
  relevant; the word may stand in other entries' sentences too, which are not.

Each is written once as a BEIR directory (corpus.jsonl, queries.jsonl, qrels/test.tsv) and reused.
`subset` keeps every judged document and draws the rest (seeded) up to that many source documents."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..storage.files import atomic_write_text
from .datasets import load_beir, load_sts, read_qrels

PIECES = 10  # source documents per long document
SEED = 26
STS_RELEVANT = 4.0  # a pair scored this similar or more: the one sentence finds the other
LEMMA_DOCUMENTS = 5000  # WordNet glosses in a lemma set: the queries' synsets and others drawn
LEMMA_QUERIES = 400
TITLED = {
    "all": lambda lemmas: lemmas,
    "first": lambda lemmas: lemmas.split(",")[0],
    "none": lambda lemmas: "",
}
# a query: one to three words of letters, no numerals
GLOSSARY_ENTRIES = 24  # glosses per glossary document
GLOSSARY_DOCUMENTS = 300
LEMMA = re.compile(r"[a-z][a-z'-]+( [a-z][a-z'-]*){0,2}")
CATALOGUE_ENTRIES = 24  # titled entries per catalogue document
CATALOGUE_DOCUMENTS = 200
TITLE_WORD_TITLES = (2, 5)  # a query word stands in this many titles, at least and at most
TITLE_WORD = re.compile(r"[a-z]{4,}")  # a query: a word of letters, four at least (no numerals, no symbols)


def mixed_topic(source: Path, target: Path, subset: int | None = None, seed: int = SEED) -> Path:
    """Long documents of PIECES unrelated source documents each (see the module's docstring)."""

    def group(
        docs: list[dict], qrels: dict[str, dict[str, int]], rng: np.random.Generator
    ) -> list[list[dict]]:
        order = rng.permutation(len(docs))
        return [[docs[i] for i in order[start : start + PIECES]] for start in range(0, len(order), PIECES)]

    return _built(source, target, subset, seed, group)


def single_topic(source: Path, target: Path, subset: int | None = None, seed: int = SEED) -> Path:
    """Long documents of the documents one query judges relevant (each used once, the queries in id order, at
    most PIECES per long document); documents no query judges stay one piece each."""

    def group(
        docs: list[dict], qrels: dict[str, dict[str, int]], rng: np.random.Generator
    ) -> list[list[dict]]:
        by_id = {doc["_id"]: doc for doc in docs}
        used: set[str] = set()
        groups = []
        for query in sorted(qrels, key=_natural):
            relevant = [d for d in sorted(qrels[query], key=_natural) if d in by_id and d not in used]
            for start in range(0, len(relevant), PIECES):
                groups.append([by_id[d] for d in relevant[start : start + PIECES]])
            used.update(relevant)
        return groups + [[doc] for doc in docs if doc["_id"] not in used]

    return _built(source, target, subset, seed, group)


def documents_subset(source: Path, target: Path, subset: int, seed: int = SEED) -> Path:
    """The source's judged documents and others drawn up to `subset`, each as it is (a cheaper sweep)."""

    def group(
        docs: list[dict], qrels: dict[str, dict[str, int]], rng: np.random.Generator
    ) -> list[list[dict]]:
        return [[doc] for doc in docs]

    return _built(source, target, subset, seed, group)


def sts_retrieval(files: list[Path], target: Path) -> Path:
    """One-sentence documents: STS pairs scored at least STS_RELEVANT, the first sentence a query and the second
    its relevant document, among every sentence of `files` that is not a query."""
    if _complete(target):
        return target
    pairs = [pair for path in files for pair in load_sts(path)]
    queries: dict[str, str] = {}
    relevant: dict[str, str] = {}
    for pair in pairs:
        if pair.score >= STS_RELEVANT and pair.sentence1 != pair.sentence2 and pair.sentence1 not in queries:
            queries[pair.sentence1] = f"q{len(queries)}"
            relevant[pair.sentence1] = pair.sentence2
    sentences = dict.fromkeys(s for p in pairs for s in (p.sentence1, p.sentence2) if s not in queries)
    ids = {sentence: f"s{n}" for n, sentence in enumerate(sentences)}
    qrels = {queries[q]: {ids[d]: 1} for q, d in relevant.items() if d in ids}
    _write(
        target,
        [{"_id": ids[s], "title": "", "text": s} for s in sentences],
        {queries[q]: q for q in relevant if queries[q] in qrels},
        qrels,
    )
    return target


def wordnet_lemmas(
    source: Path,
    target: Path,
    titles: str = "all",
    asked: str = "{}",
    queries: int = LEMMA_QUERIES,
    documents: int = LEMMA_DOCUMENTS,
    seed: int = SEED,
) -> Path:
    """Lemma queries over WordNet glosses (`source`: a JSON line per synset, its lemmas the title, comma
    separated; the module's docstring): `queries` noun lemmas of two or more synsets drawn (seeded), each asked
    as `asked` formats it, every synset carrying it relevant; the synsets of every query and others drawn up to
    `documents` are the corpus, titled with `titles` of their lemmas: "all", "first" or "none"."""
    if _complete(target):
        return target
    synsets = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    carrying: dict[str, list[int]] = {}
    for at, synset in enumerate(synsets):
        for lemma in dict.fromkeys(part.strip().lower() for part in synset["title"].split(",")):
            carrying.setdefault(lemma, []).append(at)
    nouns = sorted(
        lemma
        for lemma, where in carrying.items()
        if len(where) > 1 and LEMMA.fullmatch(lemma) and any(synsets[at]["pos"] == "noun" for at in where)
    )
    rng = np.random.default_rng(seed)
    lemmas = [nouns[at] for at in sorted(rng.choice(len(nouns), min(queries, len(nouns)), replace=False))]
    kept = dict.fromkeys(at for lemma in lemmas for at in carrying[lemma])
    for at in rng.permutation(len(synsets)):
        if len(kept) >= documents:
            break
        kept.setdefault(int(at))
    corpus = [
        {
            "_id": synsets[at]["id"],
            "title": TITLED[titles](synsets[at]["title"]),
            "text": synsets[at]["text"],
        }
        for at in sorted(kept)
    ]
    asking = {f"q{n}": asked.format(lemma) for n, lemma in enumerate(lemmas)}
    qrels = {f"q{n}": {synsets[at]["id"]: 1 for at in carrying[lemma]} for n, lemma in enumerate(lemmas)}
    _write(target, corpus, asking, qrels)
    return target


def glossary(
    source: Path,
    target: Path,
    documents: int = GLOSSARY_DOCUMENTS,
    queries: int = LEMMA_QUERIES,
    seed: int = SEED,
) -> Path:
    """Long glossary documents of WordNet glosses (the module's docstring): the synsets of `queries` lemma
    queries and others drawn up to `documents` x GLOSSARY_ENTRIES, grouped by lexicographer file in id order."""
    if _complete(target):
        return target
    lemmas_set = target.parent / f"{target.name}-lemmas"
    wordnet_lemmas(source, lemmas_set, "all", "{}", queries, documents * GLOSSARY_ENTRIES, seed)
    data = load_beir(lemmas_set)
    synsets = {
        row["id"]: row
        for row in map(json.loads, source.read_text(encoding="utf-8").splitlines())
        if row.get("id")
    }
    entries = [json.loads(line) for line in data.corpus_path.read_text().splitlines() if line.strip()]
    entries.sort(key=lambda e: (synsets[e["_id"]].get("lexname", 0), e["_id"]))
    owner: dict[str, str] = {}
    corpus = []
    for n, start in enumerate(range(0, len(entries), GLOSSARY_ENTRIES)):
        group = entries[start : start + GLOSSARY_ENTRIES]
        corpus.append(
            {
                "_id": f"glossary-{n}",
                "title": "",
                "text": "\n".join(f"{e['title']}: {e['text']}." for e in group),
            }
        )
        owner.update((e["_id"], f"glossary-{n}") for e in group)
    qrels = {
        q: {owner[d]: 1 for d in judged if d in owner}
        for q, judged in read_qrels(lemmas_set / "qrels" / "test.tsv").items()
    }
    _write(target, corpus, data.queries, qrels)
    return target


def catalogue(
    source: Path,
    target: Path,
    documents: int = CATALOGUE_DOCUMENTS,
    queries: int = LEMMA_QUERIES,
    seed: int = SEED,
) -> Path:
    """Long catalogue documents of a BEIR set's titled documents (the module's docstring): `documents` x
    CATALOGUE_ENTRIES entries drawn (seeded), and `queries` words of TITLE_WORD_TITLES titles among them (not
    stopwords), each relevant to every catalogue document holding an entry titled with it."""
    from ..retrieval.drawing import sentences
    from ..retrieval.keywords import STOPWORDS

    if _complete(target):
        return target
    data = load_beir(source)
    docs = [json.loads(line) for line in data.corpus_path.read_text().splitlines() if line.strip()]
    docs = [d for d in docs if d.get("title") and d.get("text")]
    rng = np.random.default_rng(seed)
    drawn = [docs[at] for at in rng.permutation(len(docs))[: documents * CATALOGUE_ENTRIES]]
    owner, corpus = [], []
    for n, start in enumerate(range(0, len(drawn), CATALOGUE_ENTRIES)):
        lines = []
        for doc in drawn[start : start + CATALOGUE_ENTRIES]:
            first = sentences(doc["text"])[0]
            lines.append(f"{doc['title'].rstrip('.')}: {doc['text'][first[0] : first[1]].strip()}")
            owner.append(f"catalogue-{n}")
        corpus.append({"_id": f"catalogue-{n}", "title": "", "text": "\n".join(lines)})
    entries_of: dict[str, list[int]] = {}  # a title word's entries
    for at, doc in enumerate(drawn):
        for word in dict.fromkeys(re.findall(r"[a-z0-9]+", doc["title"].lower())):
            if TITLE_WORD.fullmatch(word) and word not in STOPWORDS:
                entries_of.setdefault(word, []).append(at)
    least, most = TITLE_WORD_TITLES
    words = sorted(word for word, entries in entries_of.items() if least <= len(entries) <= most)
    asked = [words[at] for at in sorted(rng.choice(len(words), min(queries, len(words)), replace=False))]
    qrels = {f"q{n}": {owner[at]: 1 for at in entries_of[word]} for n, word in enumerate(asked)}
    _write(target, corpus, {f"q{n}": word for n, word in enumerate(asked)}, qrels)
    return target


Grouping = Callable[[list[dict], dict[str, dict[str, int]], np.random.Generator], list[list[dict]]]


def _built(source: Path, target: Path, subset: int | None, seed: int, group: Grouping) -> Path:
    if _complete(target):
        return target
    data = load_beir(source)
    qrels = read_qrels(source / "qrels" / "test.tsv")
    docs = [json.loads(line) for line in data.corpus_path.read_text().splitlines() if line.strip()]
    for doc in docs:
        doc["_id"] = str(doc["_id"])
    rng = np.random.default_rng(seed)
    if subset is not None and subset < len(docs):
        judged_ids = {d for judged in qrels.values() for d in judged}
        others = [i for i, doc in enumerate(docs) if doc["_id"] not in judged_ids]
        drawn = set(rng.permutation(others)[: max(0, subset - (len(docs) - len(others)))].tolist())
        docs = [doc for i, doc in enumerate(docs) if doc["_id"] in judged_ids or i in drawn]
    owner: dict[str, str] = {}
    corpus = []
    for n, pieces in enumerate(group(docs, qrels, rng)):
        long_id = f"long-{n}"
        owner.update((doc["_id"], long_id) for doc in pieces)
        text = "\n".join((f"{d['title']}. " if d.get("title") else "") + d["text"] for d in pieces)
        if len(pieces) == 1:  # a document as it is, title kept
            corpus.append({"_id": long_id, "title": pieces[0].get("title") or "", "text": pieces[0]["text"]})
        else:
            corpus.append({"_id": long_id, "title": "", "text": text})
    long_qrels: dict[str, dict[str, int]] = {}
    for query, judged in qrels.items():
        for doc_id, grade in judged.items():
            if grade > 0 and doc_id in owner:
                mapped = long_qrels.setdefault(query, {})
                mapped[owner[doc_id]] = max(grade, mapped.get(owner[doc_id], 0))
    _write(target, corpus, {q: text for q, text in data.queries.items() if q in long_qrels}, long_qrels)
    return target


def _write(
    target: Path, corpus: list[dict], queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> None:
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    atomic_write_text(target / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in corpus))
    atomic_write_text(
        target / "queries.jsonl",
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()),
    )
    lines = ["query-id\tcorpus-id\tscore"] + [
        f"{q}\t{d}\t{g}" for q, j in qrels.items() for d, g in j.items()
    ]
    atomic_write_text(target / "qrels" / "test.tsv", "\n".join(lines) + "\n")  # last: marks the set complete


def _complete(target: Path) -> bool:
    return (target / "qrels" / "test.tsv").is_file()


def _natural(name: str) -> tuple[int, str]:
    return (int(name), name) if name.isdigit() else (1 << 62, name)
