"""Long documents as passages: a document longer than a passage's token budget becomes passages of at most that
many word pieces of the model's own tokenizer, overlapping, cut at a sentence end where one falls in a passage's
second half, else at a word's end, else (one word longer than half a passage) anywhere. Chinese and Japanese
text has no spaces: there every boundary between word pieces beside a Han or kana character is a word's end,
and a sentence ends at 。！？；… without a space after it. Each passage is encoded
with the document's title before it and, in a document whose sections have headings, its section's innermost
heading unless it begins with it (a section's later passages, a PDF page under a heading begun pages before:
on four Debian manuals this finds a section's page first for 0.80 of its titles against 0.69 without,
benchmarks/results/manuals.md), all within `chunk_tokens` with the special tokens, so the encoder truncates
nothing. A passage is a character span of the document's text (its text is never copied).

A document read from a file brings its sections (a heading's text, a page, a run of paragraphs): no passage
crosses one. A section longer than a passage is cut as above inside it; neighbouring sections that fit together
are one passage when they share their place (page, anchor, heading path), so a passage's location is right for
all of its text. Joining sections under the first's heading path as well (a heading's lone sentence with its
subsections) found nothing more on real documentation and pointed 1.4% more hits at a section around the one
holding the words (benchmarks/results/html-docs.md).

A stretch that only lists other places (a table of contents, a back-of-book index: listings.py) is cut into no
passage, so the section it names answers a query for its title instead: a section that is one, or a passage of a
document without sections. A document that is all listing keeps its passages (it has nothing else to answer)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..cjk import CJK_SENTENCE_ENDS, HAN
from ..documents import Document, Location, Section, passage_locations
from ..encoding import Tokenizer
from ..encoding.external import UnitTokenizer
from .listings import MIN_LINES, is_listing

Span = tuple[int, int]  # character offsets [start, end) in a document's text
SENTENCE_ENDS = ".!?;:"
UNSPACED = re.compile(
    f"[{HAN}\u3040-\u30ff{CJK_SENTENCE_ENDS}\u3000-\u303f\uff00-\uffef]"
)  # no spaces between
PIECE_CHARS = 100_000  # a long text is tokenized in pieces this long, cut at whitespace: bounded memory
TITLE_SHARE = 4  # a title takes at most 1 / TITLE_SHARE of a passage's tokens (the rest of it is left out)


@dataclass(frozen=True)
class Passage:
    """One vector's worth of a document: what encode_partition takes (a text to embed, or a given vector)."""

    span: Span
    embedding_text: str
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class Chunker:
    tokenizer: Tokenizer | UnitTokenizer
    chunk_tokens: int  # a passage's tokens, title and special tokens included
    overlap: int
    merge: str = "same"  # which neighbouring sections share a passage (MERGES)
    headings: bool = True  # a passage is encoded with its section's heading after the title (HEADINGS)

    def split(self, docs: Sequence[Document]) -> list[list[Passage]]:
        """Each document's passages, in order: one (the whole document) unless it is longer than a passage;
        one that brings its own vectors keeps the passages they were made for."""
        out: list[list[Passage]] = [[] for _ in docs]
        long: list[int] = []
        for i, doc in enumerate(docs):
            if doc.vector is not None:
                out[i] = given_passages(doc)
            # A word piece covers at least one character: a text shorter than the budget in characters fits.
            elif len(doc.embedding_text) + self.specials <= self.chunk_tokens and len(doc.sections or ()) < 2:
                out[i] = [Passage((0, len(doc.text)), doc.embedding_text)]
            else:
                long.append(i)
        if not long:
            return out
        titles = self._titles([docs[i].title or "" for i in long])
        for i, title, offsets in zip(long, titles, self._offsets([docs[i].text for i in long])):
            doc = docs[i]
            prefixes = self._heading_prefixes(doc) if self.headings and doc.sections else {}
            budget = self.chunk_tokens - self.specials - max([title[1], *(n for _, n in prefixes.values())])
            overlap = min(self.overlap, budget // 2)
            if doc.sections:
                spans = sectioned(doc, offsets, budget, overlap, MERGES[self.merge])
            else:
                spans = unlisted(doc.text, cut(doc.text, offsets, budget, overlap))
            prefix = f"{title[0]} " if title[0] else ""
            if prefixes:
                places = passage_locations(doc, spans)
                befores = [
                    prefix
                    if place is None or _opens_with(doc.text, span, place.headings)
                    else f"{prefixes[place.headings][0]} "
                    for span, place in zip(spans, places)
                ]
            else:
                befores = [prefix] * len(spans)
            out[i] = [
                Passage(span, before + doc.text[span[0] : span[1]]) for span, before in zip(spans, befores)
            ]
        return out

    def _heading_prefixes(self, doc: Document) -> dict[tuple[str, ...], tuple[str, int]]:
        """Each heading path of the document's sections -> what precedes its passages (the title and the
        innermost heading, cut to the title's share of the tokens) and its length in tokens."""
        paths = list(dict.fromkeys(section.location.headings for section in doc.sections or ()))
        texts = [
            " ".join(part for part in (doc.title or "", path[-1] if path else "") if part) for path in paths
        ]
        return dict(zip(paths, self._titles(texts)))

    @property
    def specials(self) -> int:
        return self.tokenizer.special_tokens

    def _titles(self, titles: list[str]) -> list[tuple[str, int]]:
        """Each title as it precedes its passages (cut to its share of the tokens) and its length in tokens."""
        limit = self.chunk_tokens // TITLE_SHARE
        out = []
        for title, offsets in zip(titles, self.tokenizer.spans(titles)):
            if len(offsets) > limit:
                title, offsets = title[: offsets[limit - 1][1]], offsets[:limit]
            out.append((title, len(offsets)))
        return out

    def _offsets(self, texts: list[str]) -> list[np.ndarray]:
        """Word-piece offsets of each whole text, tokenized in pieces cut at whitespace (a 16 MB line at once
        would hold gigabytes)."""
        pieces, owners = [], []
        for n, text in enumerate(texts):
            for begin, end in _pieces(text):
                pieces.append((begin, text[begin:end]))
                owners.append(n)
        found = self.tokenizer.spans([piece for _, piece in pieces])
        out: list[list[np.ndarray]] = [[] for _ in texts]
        for owner, (begin, _), offsets in zip(owners, pieces, found):
            out[owner].append(np.asarray(offsets, dtype=np.int64).reshape(-1, 2) + begin)
        return [np.concatenate(parts) if parts else np.zeros((0, 2), np.int64) for parts in out]


def _opens_with(text: str, span: Span, headings: tuple[str, ...]) -> bool:
    """Whether a passage begins with its own heading (a section's first, as HTML and Markdown put it): no
    heading before it then, or it would be said twice (no heading path: nothing to say)."""
    if not headings:
        return True
    head = " ".join(text[span[0] : span[0] + 2 * len(headings[-1]) + 16].split())
    return head.startswith(headings[-1]) or head.partition(" ")[2].startswith(headings[-1])


def given_passages(doc: Document) -> list[Passage]:
    """A document that brings its vectors: one passage, or (a vector per passage, from an export) its spans."""
    if doc.vector is None or doc.vector.ndim == 1 or doc.passages is None:
        return [Passage((0, len(doc.text)), doc.embedding_text, doc.vector)]
    return [Passage(span, "", row) for span, row in zip(doc.passages, doc.vector)]


# Whether a section may join the passage a section `first` begins (both fitting in it): never; when it has the
# same place (page, anchor, heading path: lines aside); when it lies under the first's heading path (a
# subsection, or the same); always. All on one page: a passage's location names one.
Joinable = Callable[[Location, Location], bool]
MERGES: dict[str, Joinable] = {
    "none": lambda first, then: False,
    "same": lambda first, then: (
        (first.page, first.anchor, first.headings) == (then.page, then.anchor, then.headings)
    ),
    "nested": lambda first, then: (
        first.page == then.page and then.headings[: len(first.headings)] == first.headings
    ),
    "any": lambda first, then: first.page == then.page,
}


def sectioned(
    doc: Document, offsets: np.ndarray, budget: int, overlap: int, joinable: Joinable
) -> list[Span]:
    """The passages of a document with sections: within each section (cut by `cut` when it is longer than
    `budget` word pieces), or several whole sections that fit together and are `joinable` to the first; a
    section of no word pieces (blank) takes none. A document of only blank sections is one passage."""
    starts = offsets[:, 0]
    pieces = [
        (section, int(np.searchsorted(starts, section.start)), int(np.searchsorted(starts, section.end)))
        for section in doc.sections or ()
    ]
    pieces = [(section, low, high) for section, low, high in pieces if high > low]
    places = [piece for piece in pieces if not is_listing(doc.text[piece[0].start : piece[0].end])]
    pieces = places or pieces
    spans: list[Span] = []
    at = 0
    while at < len(pieces):
        section, low, high = pieces[at]
        stop = at + 1
        if high - low <= budget:
            while (
                stop < len(pieces)
                and pieces[stop][2] - low <= budget
                and joinable(section.location, pieces[stop][0].location)
            ):
                stop += 1
            last = min(int(offsets[pieces[stop - 1][2] - 1, 1]), pieces[stop - 1][0].end)
            spans.append((int(offsets[low, 0]), last))
        else:
            spans += _within(doc.text, section, offsets[low:high], budget, overlap)
        at = stop
    return spans or [(0, len(doc.text))]


def unlisted(text: str, spans: list[Span]) -> list[Span]:
    """The spans that are not listings (all of them where every one is): a span is one when its own whole lines
    are and, where they are fewer than MIN_LINES, so are as many lines around them (a passage holds a line or two
    of dot leaders)."""
    if len(spans) < 2:
        return spans

    def listing(span: Span) -> bool:
        own = _whole_lines(text, span)
        return is_listing(text[slice(*own)], 1) and is_listing(text[slice(*_lines_around(text, own))])

    kept = [span for span in spans if not listing(span)]
    return kept or spans


def _whole_lines(text: str, span: Span) -> Span:
    end = text.find("\n", span[1])
    return text.rfind("\n", 0, span[0]) + 1, len(text) if end < 0 else end


def _lines_around(text: str, lines: Span) -> Span:
    start, end = lines
    while text.count("\n", start, end) + 1 < MIN_LINES and (start > 0 or end < len(text)):
        start = text.rfind("\n", 0, max(start - 1, 0)) + 1
        following = text.find("\n", end + 1)
        end = len(text) if following < 0 else following
    return start, end


def _within(text: str, section: Section, offsets: np.ndarray, budget: int, overlap: int) -> list[Span]:
    """A long section's passages (`cut` of its own text), as spans of the document's text."""
    begin = int(offsets[0, 0])
    end = min(int(offsets[-1, 1]), section.end)
    local = np.minimum(offsets, end) - begin  # a word piece running past the section ends with it
    return [(begin + a, begin + b) for a, b in cut(text[begin:end], local, budget, overlap)]


def _pieces(text: str) -> list[Span]:
    spans, begin = [], 0
    while begin < len(text):
        end = len(text) if len(text) - begin <= PIECE_CHARS else text.rfind(" ", begin, begin + PIECE_CHARS)
        if end <= begin:
            end = min(len(text), begin + PIECE_CHARS)
        spans.append((begin, end))
        begin = end
    return spans


def cut(text: str, offsets: np.ndarray, budget: int, overlap: int) -> list[Span]:
    """The passages of a text whose word pieces are at `offsets` (n x 2 character spans): at most `budget`
    pieces each, the next starting `overlap` pieces before the previous one's end, at a word's start."""
    n = len(offsets)
    if n <= budget:
        return [(0, len(text))]
    budget = max(budget, 1)
    # Piece t starts a word when whitespace (or nothing) separates it from piece t-1; a sentence when that
    # whitespace follows a sentence's end.
    gap = np.ones(n, dtype=bool)
    gap[1:] = offsets[1:, 0] > offsets[:-1, 1]
    last = [text[end - 1] if end else "" for end in offsets[:-1, 1]]  # each piece's last character
    ends_sentence = np.zeros(n, dtype=bool)
    ends_sentence[1:] = [char in SENTENCE_ENDS for char in last]
    sentence = gap & ends_sentence
    if UNSPACED.search(text):  # unspaced text: a piece beside a Han or kana character starts a word
        unspaced = np.zeros(n, dtype=bool)
        unspaced[1:] = [
            bool(UNSPACED.match(char)) or bool(UNSPACED.match(text[begin : begin + 1]))
            for char, begin in zip(last, offsets[1:, 0])
        ]
        ends_unspaced = np.zeros(n, dtype=bool)  # ... and one after 。！？ a sentence
        ends_unspaced[1:] = [char in CJK_SENTENCE_ENDS for char in last]
        sentence |= ends_unspaced
        gap |= unspaced
    spans: list[Span] = []
    start = 0
    while start < n:
        stop = min(start + budget, n)
        if stop < n:  # the last sentence start, else word start, in the passage's second half
            half = start + max(1, budget // 2)
            for starts in (sentence, gap):
                found = np.flatnonzero(starts[half : stop + 1])
                if len(found):
                    stop = half + int(found[-1])
                    break
        spans.append((int(offsets[start, 0]), int(offsets[stop - 1, 1])))
        if stop >= n:
            break
        following = stop - overlap
        words = np.flatnonzero(gap[max(following, start + 1) : stop + 1])
        start = max(following, start + 1) + int(words[0]) if len(words) else stop
    return spans
