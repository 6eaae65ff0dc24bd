"""CJK text for the keyword side, the chunker and calibration: what FTS5's unicode61 tokenizer cannot cut.

unicode61 makes one token of every run of Chinese characters (`苹果公司发布了新款手机` is one word), so no Chinese
word is ever matched. `segment` rewrites each run of Han characters as space-separated words that unicode61 then
keeps apart, applied alike to documents and queries: by default its overlapping character bigrams (Lucene's
CJKAnalyzer) and its single characters; or bigrams alone, or a segmenter's search-mode words (jieba, rjieba).
Hangul runs become their overlapping syllable bigrams (as Lucene's CJKAnalyzer makes them): Korean writes
particles onto its words (김치는, 서울은), so the space-cut word of unicode61 never equals the bare noun a query
asks for, while the noun's bigrams are among the word's. Latin text and Japanese kana pass through untouched.

Chosen by measurement (benchmarks/results/zh-retrieval.md: plain FTS5 over four Chinese retrieval sets, nDCG@10):
bigrams with unigrams beat bigrams alone on all four (+0.013 to +0.023 but PAWSX -0.003) and jieba's words on
three (PAWSX +0.011, ATEC +0.019, BQ +0.012; LCQMC -0.010), tie jieba's words with unigrams on average (0.4626
against 0.4620; jieba trails by 0.012 on PAWSX), and need no dictionary."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Literal

# Han ideographs (CJK Unified, Extension A, Compatibility): the script segment() rewrites.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAN_RUN = re.compile(f"[{HAN}]+")
# Hangul syllables and jamo: the runs segment() cuts into bigrams.
HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
HANGUL_RUN = re.compile(f"[{HANGUL}]+")
# Every CJK script, for the share of a corpus's text: Han, kana, Hangul, CJK punctuation and full-width forms.
CJK_CHAR = re.compile(
    f"[{HAN}\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af\u1100-\u11ff\uff00-\uffef]"
)
SPACE = re.compile(r"\s")  # str patterns: \s is what str.isspace() accepts (both Py_UNICODE_ISSPACE)
# Sentence ends of Chinese and Japanese text: need no space after them.
CJK_SENTENCE_ENDS = "。！？；…｡"
Method = Literal["bigram+unigram", "bigram", "jieba", "jieba+unigram"]
DEFAULT_METHOD: Method = "bigram+unigram"


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a run of Han or Hangul characters (a single character is its own word)."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def segment(text: str, method: Method = DEFAULT_METHOD, hangul: bool = True) -> str:
    """The text with each run of Han characters replaced by its words, space-separated, with spaces around them
    (`我每天早上吃一个苹果` has 苹果 among them; `用iPhone拍照` keeps `iPhone` whole). Methods: bigrams and single
    characters (the default), bigrams alone, jieba's search-mode words (needs rjieba or jieba), and those with
    single characters. Each run of Hangul becomes its bigrams (김치는 -> 김치 치는; `hangul=False`: untouched, as
    before schema 5). Other text is unchanged."""
    if text.isascii():  # no Han, no Hangul: most texts, asked twice a stored document
        return text
    if HAN_RUN.search(text):
        words = _WORDS[method]
        text = HAN_RUN.sub(lambda run: " " + " ".join(words(run.group())) + " ", text)
    if hangul and HANGUL_RUN.search(text):
        text = HANGUL_RUN.sub(lambda run: " " + " ".join(bigrams(run.group())) + " ", text)
    return text


def bigrams_and_unigrams(run: str) -> list[str]:
    """A run's bigrams, then its characters (a single character matches a one-character query word, and a
    query's characters still count where its bigrams are not in a document)."""
    return bigrams(run) + (list(run) if len(run) > 1 else [])


def _jieba_words(run: str) -> list[str]:
    """jieba's search mode: each word and the dictionary words inside a long one (中华人民共和国 -> 中华, 华人,
    人民, 共和, 共和国, 中华人民共和国). rjieba (compiled, the same words, 10x faster) where installed."""
    return [word for word in _search_cut()(run) if word.strip()]


@cache
def _search_cut() -> Callable[[str], list[str]]:
    try:
        import rjieba

        return rjieba.cut_for_search
    except ImportError:
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)  # its dictionary-loading notes are not ours to print
        return jieba.lcut_for_search


_WORDS = {
    "bigram+unigram": bigrams_and_unigrams,
    "bigram": bigrams,
    "jieba": _jieba_words,
    "jieba+unigram": lambda run: _jieba_words(run) + list(run),
}


def cjk_characters(text: str) -> int:
    """How many of the text's characters are CJK (Han, kana, Hangul, CJK punctuation)."""
    return len(CJK_CHAR.findall(text))


def letters(text: str) -> int:
    """The text's characters that are not whitespace: the denominator of its CJK share."""
    return len(text) - len(SPACE.findall(text))


# CJK punctuation and full-width punctuation: not words.
CJK_PUNCTUATION = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20"
# A reader's word: two Han characters (most Chinese words have two), or a run of other non-space characters.
WORD = re.compile(f"[{HAN}]{{1,2}}|[^\\s{HAN}{CJK_PUNCTUATION}]+")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where the text's words are (see WORD): what calibration crops from and counts, so an unspaced Chinese
    sentence has words too (`我每天早上吃一个苹果` has five)."""
    return [match.span() for match in WORD.finditer(text)]


def word_count(text: str) -> int:
    """Words as a reader counts them (word_spans)."""
    return len(word_spans(text))
