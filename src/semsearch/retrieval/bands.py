"""A weight per query length: one weight per index cannot suit a query of three keywords and a pasted
paragraph alike (SciFact's real queries peak at 0.3 short, 0.4 as asked and 0.2 as a paragraph, keyword's side
gaining with the query's words). Beside each sentence pseudo-query (calibration.py) the calibration asks two more
of the same target: a short one (the sentence's first SHORT_WORDS words that are not stopwords) and a paragraph
(the sentence, PARAGRAPH_WORDS words drawn from its target's rest and as many from OTHERS other targets), as
evaluation/query_styles.py builds the real query styles. Every pseudo-query falls in the band of its length in
the keyword side's words (lengths.py); a band moves the index's weight by as far as its own pseudo-queries peak
from where the sentences as drawn peak (chosen_bands), and a query takes its length's band. A record without
bands: every length takes its one weight. A corpus of entries has its short band chosen by known items instead
(calibration_entries.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..cjk import HAN
from ..settings import SearchMode
from .keywords import STOPWORDS
from .lengths import BANDS, WORD, band_of

SHORT_WORDS = 4
PARAGRAPH_WORDS = 15
OTHERS = 3
# The most a band moves from the index's weight: the pseudo-queries find the direction, but overshoot it where a
# paragraph's words drawn from its target's rest find it by keyword alone (Cranfield's documents glued ten to
# one: -0.4 measured, the real paragraph queries peaking 0.1 lower than asked; at most 0.2 moved, the five
# English sets of benchmarks/results/calibration-choice.md land within 0.015 of their best weight, 0.055 uncapped).
MOST_MOVED = 0.2
HAN_CHARACTER = re.compile(f"[{HAN}]")  # compiled once: `spaced` asks it of every word of 500 paragraphs


class Drawn(Protocol):
    query: str  # the sentence (or span) taken out of its document
    rest: str  # the document without it


class Target(Drawn, Protocol):
    pk: int  # the document
    key: int  # its draw key (drawing.py)


def short_query(sentence: str) -> str:
    """The sentence's first SHORT_WORDS words that are not stopwords (all its words if every one is)."""
    words = WORD.findall(sentence)
    content = [word for word in words if word.lower() not in STOPWORDS] or words
    return spaced(content[:SHORT_WORDS])


def paragraph_query(
    at: int, drawn: Sequence[Drawn], rng: np.random.Generator, words: Sequence[list[str]] | None = None
) -> str:
    """The `at`th pseudo-query followed by PARAGRAPH_WORDS words drawn from its target's rest and as many from
    OTHERS other targets, shuffled: a paragraph-long need whose vocabulary is partly off topic. `words`: each
    target's rest cut into words (WORD) already."""
    words_of = (lambda i: words[i]) if words is not None else (lambda i: WORD.findall(drawn[i].rest))
    on_topic = words_of(at)
    others = [i for i in rng.choice(len(drawn), min(OTHERS + 1, len(drawn)), replace=False) if i != at][
        :OTHERS
    ]
    off_topic = [word for i in others for word in words_of(i)]
    picked = list(rng.choice(on_topic, PARAGRAPH_WORDS)) if on_topic else []
    picked += list(rng.choice(off_topic, PARAGRAPH_WORDS)) if off_topic else []
    rng.shuffle(picked)
    return spaced([drawn[at].query, *picked])


def paragraph_queries(drawn: Sequence[Drawn], rng: np.random.Generator) -> list[str]:
    """Every target's paragraph_query in turn, each rest cut into words once (not four times)."""
    words = [WORD.findall(target.rest) for target in drawn]
    return [paragraph_query(at, drawn, rng, words) for at in range(len(drawn))]


def by_length(drawn: Sequence[Target], seed: int, most: int) -> list[Target]:
    """The targets asked short and as a paragraph too: every one if they are `most` or fewer (in their order),
    else the `most` first in an order each one's draw key fixes (its document's content: drawing.py), whatever
    else was drawn."""
    if len(drawn) <= most:
        return list(drawn)
    return sorted(drawn, key=lambda q: np.random.default_rng([seed, q.key]).random())[:most]


def spaced(words: Sequence[str]) -> str:
    """Words joined by spaces, but Han characters run together as Chinese is written."""
    out = ""
    for word in words:
        han_join = out and HAN_CHARACTER.match(word) and HAN_CHARACTER.match(out[-1])
        out += word if not out or han_join else " " + word
    return out


def banded_ranks(asked: Sequence[str], ranks: dict[str, str]) -> dict[str, dict[str, str]]:
    """The ranks (a character per pseudo-query at each weight: sweep.py) of the pseudo-queries `asked` falling in
    each band by their length."""
    names = [band_of(text) for text in asked]
    return {
        name: {
            weight: "".join(r for r, band in zip(ranked, names) if band == name)
            for weight, ranked in ranks.items()
        }
        for name, _ in BANDS
    }


def chosen_bands(
    picked: dict[str, dict[str, str]], index_choice: tuple[str, float], least: int, sentences: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Each band's record from the ranks of its pseudo-queries (`picked`: banded_ranks): how many, the mode and
    weight it takes, by which rule, its best weight, sweep and ranks (so the choice can be made again).

    The pseudo-queries lean to keyword against real queries (a sentence shares rare words with the rest of its
    own document more than a user's question does: the index's rule corrects that with its tie to dense), but
    how far the best weight moves from one length to another they measure well (SciFact's real queries peak
    0.1-0.2 lower as a paragraph than as asked, and so do its pseudo-queries). So a band takes the index's weight
    (`index_choice`) moved by as much as its best weight lies from the best weight of the sentences as drawn
    (`sentences`: their ranks, every length; the record's `ranks`), MOST_MOVED at most, where that is beyond
    noise (choice.beats: its gains at its best weight against at the sentences', paired); else, and for a band
    of fewer than `least` pseudo-queries (or sentences), the index's weight. The sentences, not the sentence
    band: where documents are short (a gloss, a one-sentence Chinese text), most sentences fall in the short
    band (WordNet's glosses: 488 of 768 pseudo-queries there, 158 in the sentence band; ATEC's: 499 and 13), the
    index's weight is theirs already, and a move from the sentence band's few counted their lean twice (WordNet
    lemmas, glosses titled by their first: short +0.2 to dense alone, -0.019 nDCG@10 against the best fixed
    weight, -0.006 from the sentences; benchmarks/results/calibration-rule-variants.md).
    """
    from .choice import beats
    from .sweep import gains_of

    gains = {name: {w: gains_of(ranked) for w, ranked in by.items()} for name, by in picked.items()}
    best = {
        name: max(by, key=lambda w: float(by[w].mean()) if len(by[w]) else 0.0) for name, by in gains.items()
    }
    base = max(sentences, key=lambda w: float(gains_of(sentences[w]).mean()) if sentences[w] else 0.0)
    mode, alpha = index_choice
    weight = {SearchMode.DENSE.value: 1.0, SearchMode.KEYWORD.value: 0.0}.get(mode, alpha)
    counted = {name: len(next(iter(by.values()))) for name, by in picked.items()}
    out = {}
    for name, most in BANDS:
        own = gains[name]
        if min(counted[name], len(next(iter(sentences.values())))) < least:
            moved, rule = 0.0, f"index: fewer than {least} pseudo-queries here or sentences"
        elif best[name] != base and beats(own[best[name]], own[base]):
            moved = max(-MOST_MOVED, min(MOST_MOVED, float(best[name]) - float(base)))
            rule = (
                f"moved {moved:+.1f}: its best weight {best[name]} beats the sentences' {base} beyond noise"
            )
        else:
            moved, rule = 0.0, "index: its best weight ties the sentences'"
        chosen = round(min(1.0, max(0.0, weight + moved)), 1)
        band_mode, band_alpha = (mode, alpha) if moved == 0 else mode_of(chosen, alpha)
        out[name] = {
            "most": most,
            "queries": counted[name],
            "mode": band_mode,
            "alpha": band_alpha,
            "rule": rule,
            "best": best[name],
            "sweep": {w: round(float(g.mean()), 5) if len(g) else None for w, g in own.items()},
            "ranks": picked[name],
        }
    return out


def mode_of(weight: float, alpha: float) -> tuple[str, float]:
    """The mode and hybrid weight of a dense weight: 1 dense alone, 0 keyword alone (`alpha` kept for both)."""
    if weight >= 1.0:
        return SearchMode.DENSE.value, alpha
    if weight <= 0.0:
        return SearchMode.KEYWORD.value, alpha
    return SearchMode.HYBRID.value, weight
