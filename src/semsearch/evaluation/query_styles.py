"""Query sets of different styles, built from a BEIR dataset's own queries and judgements (deterministic), to
measure the keyword side on every kind of query a user types (issue 25):

- asis: the dataset's queries as they are (SciFact's claims, Cranfield's questions);
- short: a query's first four words that are not stopwords (a keyword query);
- paragraph: a query followed by PARAGRAPH_WORDS words drawn (seeded) from its relevant documents and as many
  from documents picked at random: a paragraph-long need, its vocabulary partly off topic;
- repeated: a query followed by its own words that occur in a relevant document, said again (what a user
  stresses by repeating it).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping

from ..retrieval.keywords import STOPWORDS, WORD
from .datasets import BeirData

STYLES = ("asis", "short", "paragraph", "repeated")
SHORT_WORDS = 4
PARAGRAPH_WORDS = 15


def read_corpus(data: BeirData) -> dict[str, str]:
    """Document id -> title and text joined."""
    out = {}
    with open(data.corpus_path, encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            out[str(doc.get("_id", doc.get("id")))] = " ".join(filter(None, [doc.get("title"), doc["text"]]))
    return out


def query_styles(data: BeirData, seed: int = 0) -> dict[str, dict[str, str]]:
    """Style -> query id -> text, for every judged query of the dataset."""
    corpus = read_corpus(data)
    ids = sorted(corpus)
    rng = random.Random(seed)
    out: dict[str, dict[str, str]] = {style: {} for style in STYLES}
    for query_id, text in data.queries.items():
        relevant = [doc for doc, grade in data.qrels.get(query_id, {}).items() if grade > 0 and doc in corpus]
        words = WORD.findall(text)
        out["asis"][query_id] = text
        content = [word for word in words if word.lower() not in STOPWORDS]
        out["short"][query_id] = " ".join((content or words)[:SHORT_WORDS])
        on_topic = [word for doc in relevant for word in WORD.findall(corpus[doc])]
        off_topic = [word for doc in rng.sample(ids, 3) for word in WORD.findall(corpus[doc])]
        drawn = rng.choices(on_topic, k=PARAGRAPH_WORDS) if on_topic else []
        drawn += rng.choices(off_topic, k=PARAGRAPH_WORDS) if off_topic else []
        rng.shuffle(drawn)
        out["paragraph"][query_id] = " ".join([text, *drawn])
        relevant_words = {word.lower() for word in on_topic}
        stressed = [word for word in content if word.lower() in relevant_words]
        out["repeated"][query_id] = " ".join([text, *stressed])
    return out


def judged(styles: Mapping[str, Mapping[str, str]], style: str) -> dict[str, str]:
    """One style's queries that have any words (a short query of stopwords alone keeps them)."""
    return {query_id: text for query_id, text in styles[style].items() if WORD.search(text)}
