"""The evaluation sets built in code (evaluation/longdoc_sets.py), on a small BEIR directory and STS file."""

from __future__ import annotations

import json

from semsearch.evaluation.datasets import load_beir
from semsearch.evaluation.longdoc_sets import (
    PIECES,
    documents_subset,
    glossary,
    mixed_topic,
    single_topic,
    sts_retrieval,
    wordnet_lemmas,
)


def _source(root):
    docs = [{"_id": f"d{i}", "title": f"T{i}", "text": f"text of document {i}."} for i in range(25)]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": "1", "text": "first"}, {"_id": "2", "text": "second"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    judged = [("1", "d3", 1), ("1", "d17", 2), ("2", "d3", 2), ("2", "d4", 1), ("2", "d9", 0)]
    (root / "qrels" / "test.tsv").write_text("".join(f"{q}\t{d}\t{g}\n" for q, d, g in judged))
    return root


def _corpus(directory):
    return {
        d["_id"]: d["text"] for d in map(json.loads, (directory / "corpus.jsonl").read_text().splitlines())
    }


def test_mixed_topic_documents_hold_ten_pieces_and_carry_the_judgements(tmp_path):
    out = mixed_topic(_source(tmp_path / "src"), tmp_path / "mixed")
    corpus, data = _corpus(out), load_beir(out)
    assert len(corpus) == 3 and sorted(t.count("\n") + 1 for t in corpus.values()) == [5, PIECES, PIECES]
    owner = {f"d{i}": long for long, text in corpus.items() for i in range(25) if f"document {i}." in text}
    assert data.qrels["1"] == {owner["d3"]: 1, owner["d17"]: 2} or owner["d3"] == owner["d17"]
    assert data.qrels["2"][owner["d3"]] == 2  # the highest grade of its pieces
    assert owner["d9"] not in data.qrels["2"] or owner["d9"] in (owner["d3"], owner["d4"])  # grade 0: none
    assert "T3. text of document 3." in corpus[owner["d3"]]


def test_single_topic_documents_are_one_querys_relevant_documents(tmp_path):
    out = single_topic(_source(tmp_path / "src"), tmp_path / "single")
    corpus, data = _corpus(out), load_beir(out)
    assert data.qrels["1"] == {"long-0": 2}  # d3 and d17 together
    assert "document 3." in corpus["long-0"] and "document 17." in corpus["long-0"]
    assert data.qrels["2"] == {"long-0": 2, "long-1": 1}  # d3 (used by query 1) and d4 alone
    assert len(corpus) == 25 - 2  # the rest one piece each


def test_a_subset_keeps_every_judged_document(tmp_path):
    out = documents_subset(_source(tmp_path / "src"), tmp_path / "sub", subset=8)
    corpus = _corpus(out)
    assert len(corpus) == 8 and {"text of document 3.", "text of document 17."} <= set(corpus.values())


def test_sts_pairs_become_queries_and_their_one_relevant_sentence(tmp_path):
    rows = [
        ("5.000", "A man is dancing.", "A man dances."),
        ("1.000", "A cat sleeps.", "A dog runs."),
        ("4.200", "Kids play ball.", "Children play with a ball."),
    ]
    path = tmp_path / "sts.csv"
    path.write_text("".join(f"g\tf\ty\t{n:04d}\t{s}\t{a}\t{b}\n" for n, (s, a, b) in enumerate(rows)))
    out = sts_retrieval([path], tmp_path / "sts")
    corpus, data = _corpus(out), load_beir(out)
    assert set(data.queries.values()) == {"A man is dancing.", "Kids play ball."}
    assert "A man is dancing." not in corpus.values() and "A cat sleeps." in corpus.values()
    for query, judged in data.qrels.items():
        assert len(judged) == 1
        assert {data.queries[query]: corpus[next(iter(judged))]} in (
            {"A man is dancing.": "A man dances."},
            {"Kids play ball.": "Children play with a ball."},
        )


def test_a_lemma_is_a_query_and_every_synset_carrying_it_relevant(tmp_path):
    synsets = [
        ("n1", "bank, depository financial institution", "a financial institution", "noun"),
        ("n2", "bank", "sloping land beside a body of water", "noun"),
        ("v1", "bank", "tip laterally", "verb"),
        ("n3", "5, five", "the cardinal number", "noun"),
        ("n4", "five", "a team of basketball players", "noun"),
        ("n5", "solo", "a single performance", "noun"),
        *[(f"x{i}", f"other{i}", f"an unrelated gloss {i}", "noun") for i in range(20)],
    ]
    source = tmp_path / "wordnet.jsonl"
    source.write_text(
        "".join(json.dumps({"id": i, "title": t, "text": x, "pos": p}) + "\n" for i, t, x, p in synsets)
    )
    out = wordnet_lemmas(source, tmp_path / "entities", documents=10)
    data = load_beir(out)
    asked = {text: data.qrels[query] for query, text in data.queries.items()}
    assert asked == {"bank": {"n1": 1, "n2": 1, "v1": 1}, "five": {"n3": 1, "n4": 1}}  # no numerals, no solo
    titled = {d["_id"]: d["title"] for d in map(json.loads, (out / "corpus.jsonl").read_text().splitlines())}
    assert len(titled) == 10 and {"n1", "n2", "v1", "n3", "n4"} <= set(titled) and titled["n2"] == "bank"
    web = wordnet_lemmas(source, tmp_path / "web", titles="none", asked="what does {} mean", documents=10)
    assert set(load_beir(web).queries.values()) == {"what does bank mean", "what does five mean"}
    assert {d["title"] for d in map(json.loads, (web / "corpus.jsonl").read_text().splitlines())} == {""}
    aliases = wordnet_lemmas(source, tmp_path / "aliases", titles="first", documents=10)
    first = {
        d["_id"]: d["title"] for d in map(json.loads, (aliases / "corpus.jsonl").read_text().splitlines())
    }
    assert first["n1"] == "bank" and first["n3"] == "5"  # "five" is n3's alias: its title lacks it


def test_a_glossary_groups_glosses_by_their_file_and_carries_the_lemma_judgements(tmp_path):
    """Glosses grouped by lexicographer file into long documents of GLOSSARY_ENTRIES "lemmas: gloss" lines; a
    lemma query relevant to every glossary document holding a synset that carries it."""
    from semsearch.evaluation.longdoc_sets import GLOSSARY_ENTRIES

    synsets = [
        ("n1", "bank, depository financial institution", "a financial institution", "noun", 1),
        ("n2", "bank", "sloping land beside a body of water", "noun", 2),
        ("n3", "five", "the cardinal number", "noun", 1),
        ("n4", "five", "a team of basketball players", "noun", 2),
        *[(f"x{i:02}", f"other{i}", f"an unrelated gloss {i}", "noun", i % 3) for i in range(60)],
    ]
    source = tmp_path / "wordnet.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": i, "title": t, "text": x, "pos": p, "lexname": n}) + "\n"
            for i, t, x, p, n in synsets
        )
    )
    out = glossary(source, tmp_path / "glossary", documents=2)
    data = load_beir(out)
    corpus = _corpus(out)
    assert len(corpus) == 2 and all(len(text.splitlines()) == GLOSSARY_ENTRIES for text in corpus.values())
    holding = {pk: {line.split(":")[0] for line in text.splitlines()} for pk, text in corpus.items()}
    for query, text in data.queries.items():
        wanted = {pk for pk, lemmas in holding.items() if any(text in lemma.split(", ") for lemma in lemmas)}
        assert set(data.qrels[query]) == wanted
    assert "bank, depository financial institution: a financial institution." in "\n".join(corpus.values())


def test_a_catalogue_lists_titled_entries_and_judges_a_title_word_by_the_entries_titled_with_it(tmp_path):
    """Titled documents as catalogue entries ("Title: its first sentence.", CATALOGUE_ENTRIES a document); a
    query is a word of TITLE_WORD_TITLES titles, relevant to every catalogue document holding an entry titled
    with it, not to those whose entries only say it."""
    from semsearch.evaluation.longdoc_sets import CATALOGUE_ENTRIES, TITLE_WORD_TITLES, catalogue

    topics = ["kinase", "receptor", "neuron", "tumour", "insulin", "protein"]
    docs = [
        {
            "_id": f"d{i}",
            "title": f"{topics[i % len(topics)].title()} observations in cohort {i}",
            "text": f"Cohort {i} was studied for {topics[(i + 1) % len(topics)]}. A second sentence.",
        }
        for i in range(30)
    ]
    root = tmp_path / "src"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "unused"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("1\td0\t1\n")
    out = catalogue(root, tmp_path / "catalogue", documents=2)
    corpus, data = _corpus(out), load_beir(out)
    lines = {pk: text.splitlines() for pk, text in corpus.items()}
    assert sorted(len(entries) for entries in lines.values()) == [30 - CATALOGUE_ENTRIES, CATALOGUE_ENTRIES]
    assert (
        "Kinase observations in cohort 0: Cohort 0 was studied for receptor."
        in lines["catalogue-0"] + lines["catalogue-1"]
    )
    # five titles each (within TITLE_WORD_TITLES); "observations" and "cohort" stand in all thirty: no query
    assert TITLE_WORD_TITLES[0] <= 5 <= TITLE_WORD_TITLES[1] and sorted(data.queries.values()) == sorted(
        topics
    )
    for query, word in data.queries.items():
        titled = {pk for pk, entries in lines.items() if any(e.lower().startswith(word) for e in entries)}
        assert set(data.qrels[query]) == titled
