"""Calibration: the keyword/vector balance a corpus chooses for itself, without labelled queries.

Inverse-cloze pseudo-queries (Lee et al., ACL 2019): a sentence taken out of a document is a query, and the rest of
that document its one relevant answer. Documents are drawn in an order their content fixes (drawing.py: a key
of the seed, each one's id and content hash, never its pk or an earlier draw, so a corpus calibrates as a fresh
calibration of it does however it was ingested); their sentence is removed from them in a scratch copy of the
index (the targets re-encoded and overlaid on the vector index's rows, their text changed in the keyword index
inside a SQLite savepoint that is rolled back), so neither side can find the sentence's own words or vector. A
corpus of fewer documents than the queries it wants (a manual, a folder of a few dozen long pages) is asked of
its passages instead: a sentence's target is its passage, the place a search of few documents answers
(calibration_places.py). Each query is searched as a real one
is (dense: the vector index, rerank, MaxP; keyword: bm25, by a matrix of the scratch content read once; each side
FUSION_DEPTH deep), and every fusion weight of a grid scored by nDCG@10 of the target.

A document of fewer than MIN_SENTENCES sentences gives a cropped span of its words instead, and a document of
several passages is cropped rather than re-encoded (cropping.py). The size rule counts passages (vector rows),
not documents; an index that cannot be judged records why (Skipped), which `info` shows. A weight per query
(perquery.py) is fitted beside the fixed one and recorded, not used (benchmarks/results/defaults.md).

The choice, with a tie rule favouring dense (the model's own ranking, the safer side where keyword matching is
weak): dense alone if it is within TIE of the best weight; else hybrid at the largest weight within TIE of the
best fused one; keyword alone only if it beats every fused weight by more than TIE. One side alone stands only
if it beats the default (hybrid at DEFAULT_ALPHA) beyond noise (choice.py); else the best fused weight that does,
else the default (`rule` says which). Where the sentences measure nothing (UNINFORMED: documents of unrelated
sentences glued together, whose rest says nothing about the sentence taken out), known items choose instead: each
sentence's first words asked of the index as it is (`known_items`). Each target is also asked short and as a
paragraph, and a band per query length moves the weight toward where those peak (bands.py); where the sentences
are entries, each its own topic (a glossary: their rarest terms seldom recur in their documents), the short band
is chosen by known items of those terms instead (calibration_entries.py). The cost is the encoding of at most
QUERIES sentences and their one-passage documents and 2 x QUERIES searches, whatever the corpus's size.
A renewal (`refit`) draws as a fresh calibration does, and finds the vectors of the texts it encoded before
in the calibration cache (storage/calibrationcache.py): after a fifth of the corpus changed, about a fifth of
its texts is encoded, and by the upsert that made the calibration stale, whose model runs already
(`encode_ahead`): the renewal then starts none.

Size: the draw, the sweep's searches and the known items share one pseudo-query type and its encoder; the
targets (calibration_targets.py), the encoders and what the cache keeps (calibration_encoding.py), the scratch
copy's searches (calibration_scratch.py), the entries (calibration_entries.py), the bands' lengths (bands.py),
the choice (choice.py) and the sweep's scoring (sweep.py) are apart."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from ..cjk import word_count
from ..settings import FUSION_DEPTH, SearchMode
from ..storage.calibrationcache import CalibrationCache
from ..storage.store import DocumentStore
from . import drawing, perquery
from .bands import banded_ranks, by_length, chosen_bands, paragraph_queries, short_query
from .calibration_encoding import encoders, save_draw
from .calibration_entries import entries, terms_asked, with_entries
from .calibration_places import PlaceTargets, drawn_places, place_rankings
from .calibration_scratch import rankings
from .calibration_targets import Cut, Targets
from .calibration_targets import without as without  # where the tests find it
from .choice import NOISE, TIE, choose
from .cropping import CROP_WORDS, crop
from .drawing import CLOZE, CROP, PseudoQuery, sentences
from .keywords import KeywordRetriever
from .search import DenseRetriever, Match, dense_documents
from .sweep import WEIGHTS, gains_of, sweep_ranks
from .sweep import sweep_weights as sweep_weights  # where the tests find it

QUERIES = 256  # pseudo-queries at most
# ... and at most one per QUERY_SHARE passages (vector rows): a target of one passage is re-encoded (1/16 of the
# ingest's encoding at most), a target of several is cropped, not re-encoded (calibration_targets.py), so a
# calibration stays under 10% of the ingest it follows (benchmarks/results/calibration/cost.md). Passages, not
# documents: 500 long documents of 5,000 passages give queries enough; fewer documents than queries are asked
# of their places.
QUERY_SHARE = 16
MIN_QUERIES = 50  # fewer than this: too little to judge, not calibrated
MIN_PASSAGES = MIN_QUERIES * QUERY_SHARE  # 800: a smaller index keeps the default weight
SCANNED = 8  # documents read at most per pseudo-query wanted: a corpus of one-sentence texts stops early
SEED = 16
MIN_SENTENCES = 3  # in a document that gives a query: the rest keeps at least two
QUERY_WORDS = (4, 64)  # a pseudo-query's words, at least and at most
METRIC = "ndcg@10"
# Sentences whose best weight scores below this (nDCG@10) find no neighbours in their documents: where most were
# cut from documents of several sentences, those sentences are unrelated (pieces glued together), the inverse
# cloze measures nothing, and the index chooses from known items instead (`known_items`)
UNINFORMED = 0.05
# Targets asked short and as a paragraph too, at most (bands.py); the others as their sentence only. Every one:
# the bands' noise test needs them all where a band moves (of samples of 128 of their ~250 targets, 43% keep
# SciFact's moves and 37% Cranfield's; of 96, 7% and 7%: benchmarks/results/calibration/bands-cost.md)
LENGTH_TARGETS = QUERIES
Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Calibration:
    """What a calibration chose and saw; the manifest keeps it (`info` shows it)."""

    mode: str  # the default search mode it chose: dense, hybrid or keyword
    alpha: float  # hybrid's default dense weight
    queries: int
    seed: int
    documents: int  # in the index when calibrated
    sides: dict[str, float]  # nDCG@10 of the pseudo-queries: dense, keyword, hybrid (at alpha)
    sweep: dict[str, float]  # nDCG@10 at each dense weight ("0.0" keyword alone ... "1.0" dense alone)
    seconds: float
    passages: int | None = None  # vector rows when calibrated (None: a record without them)
    rule: str | None = None  # "best", or why the default weight stood (None: a record without the noise rule)
    per_query: dict[str, Any] | None = None  # weights per query fitted beside the fixed one (perquery.py)
    metric: str = METRIC
    tie: float = TIE
    noise: float = NOISE  # standard errors a weight must beat the default one by
    # each weight's rank of every pseudo-query's target, a character each (RANKS: "0" beyond CUTOFF), so the
    # choice can be made again from the record (choice.py); None: a record without them
    ranks: dict[str, str] | None = None
    # documents added, replaced or deleted since (the index counts them: calibration_age.py); None: not counted
    changed: int | None = None
    # texts (pseudo-queries and targets) whose vectors came from the last calibration (None: no cache)
    reused: int | None = None
    # where the sentences measured nothing (UNINFORMED): the known items' sweep and ranks, which chose mode and
    # alpha (`known_items`); None: the sentences chose
    known: dict[str, Any] | None = None
    # a choice per query length (bands.py): band name -> its most keyword tokens, pseudo-queries, mode, alpha,
    # rule, sweep and ranks; None: a record without bands (every length takes `mode` and `alpha`)
    bands: dict[str, dict[str, Any]] | None = None
    # targets asked short and as a paragraph too (LENGTH_TARGETS at most); None: every one, or no bands
    by_length: int | None = None
    # what a pseudo-query's target was: its document ("documents"), or its passage where documents are fewer
    # than the queries wanted ("places": calibration_places.py)
    targets: str = "documents"
    # where the sentences are entries, each its own topic (calibration_entries.py): their rarest terms'
    # recurrence and the known items that chose the short band; None: the cloze's short queries chose it
    entries: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def gains(self) -> dict[str, np.ndarray] | None:
        """Each weight's nDCG@10 per pseudo-query, from the recorded ranks (None: none recorded)."""
        return {weight: gains_of(ranks) for weight, ranks in self.ranks.items()} if self.ranks else None

    def choosing_gains(self) -> dict[str, np.ndarray] | None:
        """The gains that chose mode and alpha: the known items' where they were asked, else the sentences'."""
        if self.known:
            return {weight: gains_of(ranks) for weight, ranks in self.known["ranks"].items()}
        return self.gains()

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Calibration | None:
        """The calibration recorded, or None (none recorded, or the record of a skipped one)."""
        if not data or "skipped" in data:
            return None
        return cls(
            **{f.name: data[f.name] for f in fields(cls) if f.name in data}
        )  # fields of later versions: not ours


@dataclass(frozen=True)
class Skipped:
    """Why an index was not calibrated (it keeps the default weight); the manifest keeps it, `info` says it."""

    skipped: str  # the reason, a sentence
    documents: int
    passages: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pseudo_queries(store: DocumentStore, count: int, seed: int = SEED) -> list[PseudoQuery]:
    """Up to `count` pseudo-queries, one a document, reading documents in the draw's order (drawing.py: by a key
    of the seed and each one's id and content, never its pk or an earlier draw) and at most SCANNED x count of
    them; each one's sentence drawn by a generator of its key. A corpus of fewer documents than `count` is asked
    of its passages instead (calibration_places.py)."""
    pks, keys = drawing.document_keys(store, seed)
    pks, keys = pks[: SCANNED * count].tolist(), keys[: SCANNED * count].tolist()
    out: list[PseudoQuery] = []
    for start in range(0, len(pks), count):
        rows = store.get(pks[start : start + count])
        for pk, key in zip(pks[start : start + count], keys[start : start + count]):
            found = _drawn(pk, rows[pk]["text"] if pk in rows else "", drawing.generator(key))
            if found is not None:
                out.append(replace(found, key=key))
                if len(out) == count:
                    return out
    return out


def _drawn(pk: int, text: str, rng: np.random.Generator) -> PseudoQuery | None:
    """A document's one pseudo-query: a sentence, else a cropped span; None for too little text."""
    cut, found = CLOZE, _cloze(text, rng)
    if found is None:
        cut, found = CROP, crop(text, rng)
    return None if found is None else PseudoQuery(pk, *found, cut)


def _cloze(
    text: str, rng: np.random.Generator, taken: Sequence[tuple[int, int]] = ()
) -> tuple[str, str, tuple[int, int]] | None:
    """A sentence of the text (of QUERY_WORDS words) and the text without it; None for too few sentences.
    `taken`: spans already drawn from it, which the sentence does not overlap and which leave it fewer."""
    spans = sentences(text)
    if len(spans) - len(taken) < MIN_SENTENCES:
        return None
    fitting = [
        (s, e)
        for s, e in spans
        if QUERY_WORDS[0] <= word_count(text[s:e]) <= QUERY_WORDS[1]
        and not any(s < end and start < e for start, end in taken)
    ]
    if not fitting:
        return None
    start, end = fitting[int(rng.integers(len(fitting)))]
    return text[start:end], (text[:start] + text[end:]).strip(), (start, end)


def calibrate(
    *,
    store: DocumentStore,
    dense: DenseRetriever,
    encode: Encode,
    cut: Cut,
    rerank: int,
    queries: int | None = None,
    seed: int = SEED,
    precision: str = "float32",
    cache: CalibrationCache | None = None,
    lengths: bool = True,
    length_targets: int = LENGTH_TARGETS,
) -> Calibration | Skipped:
    """The fusion weight and default mode this index's own documents choose (see the module's docstring), from
    `queries` pseudo-queries (None: one per QUERY_SHARE passages, at most QUERIES), or why it cannot judge
    (Skipped): fewer than MIN_PASSAGES passages, or fewer than MIN_QUERIES pseudo-queries to be drawn.
    `precision`: the raw vectors' (rawvectors.py); the re-encoded targets are taken so (rawvectors.as_kept), as an
    ingest would keep them, and the queries at query_precision(precision), as the cache keeps them.
    `cache`: the last calibration's pseudo-queries and vectors (storage/calibrationcache.py): its documents still
    stored give their queries again and their texts are not encoded again; it is saved with this one's.
    `lengths` False: the sentences alone, one weight for every query length (no bands: what it costs them);
    `length_targets`: how many targets at most are asked short and as a paragraph too (LENGTH_TARGETS)."""
    started = time.perf_counter()
    documents, passages = store.count(), dense.vectors.count
    if isinstance(asking := draw(store, passages, cut, queries, seed, lengths, length_targets), str):
        return Skipped(asking, documents, passages)
    targets, kept, sampled, asked = asking.targets, asking.targets.queries, asking.sampled, asking.asked
    encode_target, encode = encoders(encode, precision, cache)
    places = isinstance(targets, PlaceTargets)
    ranked_by = place_rankings if places else rankings
    every_dense, every_keyword = ranked_by(targets, store, dense, encode, rerank, asked, encode_target)
    every_rank = sweep_ranks(kept + sampled + sampled, every_dense, every_keyword)
    dense_found, keyword_found = every_dense[: len(kept)], every_keyword[: len(kept)]
    ranks = {weight: ranked[: len(kept)] for weight, ranked in every_rank.items()}
    gains = {weight: gains_of(ranked) for weight, ranked in ranks.items()}
    sweep = {weight: round(float(gain.mean()), 5) for weight, gain in gains.items()}
    mode, alpha, rule = choose(gains)
    known = None
    if not places and uninformed(sweep, kept):  # a place's neighbours are its document's
        known = known_items(kept, store, dense, encode, rerank)
        mode, alpha, rule = choose({weight: gains_of(ranked) for weight, ranked in known["ranks"].items()})
        rule = f"known items: the sentences find no neighbours (best {max(sweep.values()):.3f}); {rule}"
    fixed = {SearchMode.DENSE.value: 1.0, SearchMode.KEYWORD.value: 0.0}.get(mode, alpha)
    per_query = perquery.fitted(
        perquery.features(dense_found, keyword_found),
        np.stack([gains[f"{w:.1f}"] for w in WEIGHTS], 1),
        fixed,
    )
    chose = sweep if known is None else known["sweep"]  # the figures that chose
    bands = (
        chosen_bands(banded_ranks(asked, every_rank), (mode, alpha), MIN_QUERIES, ranks) if lengths else None
    )
    found = None  # a corpus of entries: known items choose the short band (calibration_entries.py)
    if bands and known is None and mostly_sentences(kept):
        found = entries(sampled, documents_of(sampled, places, store), store, dense, encode, rerank)
        bands = with_entries(bands, found)
    if cache is not None:
        asking.keep(cache)
    return Calibration(
        mode=mode,
        alpha=alpha,
        queries=len(targets.queries),
        seed=seed,
        documents=documents,
        passages=passages,
        per_query=per_query.to_json(),
        sides={"dense": chose["1.0"], "keyword": chose["0.0"], "hybrid": chose[f"{alpha:.1f}"]},
        sweep=sweep,
        rule=rule,
        ranks=ranks,
        changed=0,
        reused=None if cache is None else cache.reused,
        bands=bands,
        by_length=len(sampled) if lengths else None,
        known=known,
        targets="places" if places else "documents",
        entries=found,
        seconds=round(time.perf_counter() - started, 3),
    )


@dataclass
class Asking:
    """What a calibration asks, drawn before it searches (`draw`): the pseudo-queries drawn, their targets,
    those asked short and as a paragraph too (`sampled`), and every text searched: each target's sentence,
    then the sampled ones short, then as their paragraphs."""

    drawn: list[PseudoQuery]
    targets: Targets
    sampled: list[PseudoQuery]
    paragraphs: list[str]

    @property
    def asked(self) -> list[str]:
        return (
            [q.query for q in self.targets.queries]
            + [short_query(q.query) or q.query for q in self.sampled]
            + self.paragraphs
        )

    def keep(self, cache: CalibrationCache) -> None:
        """Save the draw, and the paragraph each sampled query was asked as, in `cache` (with what it encoded)."""
        save_draw(cache, self.drawn, self.sampled, self.paragraphs)


def draw(
    store: DocumentStore,
    passages: int,
    cut: Cut,
    queries: int | None = None,
    seed: int = SEED,
    lengths: bool = True,
    length_targets: int = LENGTH_TARGETS,
) -> Asking | str:
    """What `calibrate` asks of an index of `passages` vector rows (its arguments), or why it cannot judge."""
    if not store.has_keywords:
        return "no keyword index to fuse with"
    if passages < MIN_PASSAGES:
        return (
            f"{passages:,} passages: fewer than {MIN_PASSAGES:,} give fewer than {MIN_QUERIES} pseudo-queries "
            f"(one per {QUERY_SHARE} passages)"
        )
    wanted = queries or min(QUERIES, passages // QUERY_SHARE)
    if store.count() < wanted:  # few documents (one manual): the places their passages are
        return places_asked(store, wanted, seed, cut, lengths, length_targets)
    drawn = pseudo_queries(store, wanted, seed)
    if len(drawn) < MIN_QUERIES:  # before encoding anything
        return (
            f"only {len(drawn)} pseudo-queries among the documents read, fewer than {MIN_QUERIES}: too few "
            f"have {MIN_SENTENCES} sentences or {2 * CROP_WORDS[0]} words"
        )
    targets = Targets.drawn(drawn, store, cut)  # encoded beside the keyword side (rankings)
    if len(targets.queries) < MIN_QUERIES:
        return (
            f"only {len(targets.queries)} pseudo-queries keep a target, fewer than {MIN_QUERIES} (their "
            "documents' every passage holds the query)"
        )
    return asked_by_length(drawn, targets, seed, lengths, length_targets)


def places_asked(
    store: DocumentStore, wanted: int, seed: int, cut: Cut, lengths: bool, length_targets: int
) -> Asking | str:
    """What a calibration asks of an index of fewer documents than `wanted`: places (calibration_places.py)."""
    targets = drawn_places(store, wanted, seed, cut, QUERY_WORDS, SCANNED)
    if len(targets.queries) < MIN_QUERIES:
        return (
            f"only {len(targets.queries)} passages among those read hold a sentence of {QUERY_WORDS[0]} to "
            f"{QUERY_WORDS[1]} words, fewer than {MIN_QUERIES}"
        )
    return asked_by_length(targets.queries, targets, seed, lengths, length_targets)


def asked_by_length(
    drawn: list[PseudoQuery], targets: Any, seed: int, lengths: bool, length_targets: int
) -> Asking:
    """What is asked of these targets: every one as its sentence, which alone chooses the index's weight; up to
    `length_targets` of them short and as a paragraph too (bands.py), sampled by their keys and their paragraphs
    drawn in that order, so the same corpus asks the same."""
    sampled = by_length(targets.queries, seed, length_targets) if lengths else []
    return Asking(drawn, targets, sampled, paragraph_queries(sampled, np.random.default_rng(seed)))


def encode_ahead(
    store: DocumentStore, passages: int, cut: Cut, encode: Encode, precision: str, cache: CalibrationCache
) -> int:
    """Encode into `cache` every text the next calibration of this index will draw and encode, and keep that
    draw: the calibration then encodes nothing (a stale index's upsert, whose model runs already, readies its
    renewal so). Returns how many texts were encoded (0 where it could not judge)."""
    if isinstance(asking := draw(store, passages, cut), str):
        return 0
    encode_target, encode_query = encoders(encode, precision, cache)
    before = cache.encoded
    asking.targets.encoded(encode_target)
    encode_query(asking.asked)
    if mostly_sentences(asking.targets.queries):
        places = isinstance(asking.targets, PlaceTargets)
        encode_query(terms_asked(asking.sampled, documents_of(asking.sampled, places, store), store))
    asking.keep(cache)
    return cache.encoded - before


def uninformed(sweep: dict[str, float], drawn: Sequence[PseudoQuery]) -> bool:
    """Whether the sentences measured nothing: their best weight under UNINFORMED, most of them cut from
    documents of several sentences (a corpus of one-sentence texts is cropped: its spans say what they can)."""
    return max(sweep.values()) < UNINFORMED and mostly_sentences(drawn)


def mostly_sentences(drawn: Sequence[PseudoQuery]) -> bool:
    """Whether most pseudo-queries are sentences cut from documents of several (not cropped spans)."""
    return sum(q.cut == CLOZE for q in drawn) * 2 > len(drawn)


def documents_of(drawn: Sequence[PseudoQuery], places: bool, store: DocumentStore) -> list[int]:
    """The document each pseudo-query's sentence stands in: its target, or its place's owner."""
    pks = np.array([q.pk for q in drawn], dtype=np.int64)
    return (store.passages().owners(pks) if places else pks).tolist()


def known_items(
    drawn: Sequence[PseudoQuery], store: DocumentStore, dense: DenseRetriever, encode: Encode, rerank: int
) -> dict[str, Any]:
    """Each sentence's first words (bands.short_query) asked of the index as it is, the sentence left in its
    document: a query for a piece of a document whose other pieces say nothing about it (a paraphrase of one of
    the sentences glued together, as the glued Chinese sets' real queries are). Their sweep and ranks."""
    texts = [short_query(q.query) or q.query for q in drawn]
    dense_found = dense_documents(dense, store.passages(), encode(texts), FUSION_DEPTH, None, rerank)
    scored = KeywordRetriever(store, store.count()).top(texts, FUSION_DEPTH, None)
    keyword_found = [[Match(pk, score) for pk, score in result] for result in scored]
    ranks = sweep_ranks(drawn, dense_found, keyword_found)
    return {"sweep": {w: round(float(gains_of(r).mean()), 5) for w, r in ranks.items()}, "ranks": ranks}
