"""A query's options resolved once, into one typed object that search and keyword retrieval take: each option
asked is checked; one not asked is the index's own (the mode and weight its corpus calibrated, its rerank
depth), else the defaults of settings.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import GenerationChanged, SettingsError
from ..settings import (
    DEFAULT_ALPHA,
    DEFAULT_CROP,
    DEFAULT_FUSION,
    DEFAULT_MODE,
    DEFAULT_TYPOS,
    FACET_VALUES,
    Fusion,
    SearchMode,
    at_least,
    check_alpha,
)
from .lengths import Band, choice_for, recorded_bands


@dataclass(frozen=True)
class QueryDefaults:
    """What an index answers with when a query does not say: from its settings and its calibration."""

    mode: SearchMode = DEFAULT_MODE
    alpha: float = DEFAULT_ALPHA
    rerank: int = 0
    calibrated: bool = False  # the mode and alpha were chosen by the corpus (calibration.py)
    bands: tuple[
        Band, ...
    ] = ()  # a mode and alpha per query length (lengths.py; none: `mode` and `alpha` for all)

    @classmethod
    def of(
        cls,
        fusible: bool,
        rerank: int,
        calibrated_mode: str | None,
        calibrated_alpha: float | None,
        bands: tuple[Band, ...] = (),
    ):
        """`fusible`: the index has keywords and a model (else dense is all it can do)."""
        if not fusible:
            return cls(SearchMode.DENSE, DEFAULT_ALPHA, rerank)
        if calibrated_mode is None:
            return cls(DEFAULT_MODE, DEFAULT_ALPHA, rerank)
        alpha = DEFAULT_ALPHA if calibrated_alpha is None else calibrated_alpha
        return cls(SearchMode(calibrated_mode), alpha, rerank, calibrated=True, bands=bands)

    def chosen_for(self, texts: Sequence[str]) -> tuple[SearchMode, float, tuple[float, ...]]:
        """The mode, weight and weights per query these texts take by their lengths' bands: their one mode if
        they share it, else hybrid, a side's band weighing that side alone (1 dense, 0 keyword)."""
        chosen = [choice_for(self.bands, text) for text in texts]
        pairs = [
            (self.mode, self.alpha) if band is None else (SearchMode(band.mode), band.alpha)
            for band in chosen
        ]
        modes = {mode for mode, _ in pairs}
        if len(modes) == 1:
            mode = modes.pop()
            return mode, pairs[0][1], tuple(alpha for _, alpha in pairs)
        sides = {SearchMode.DENSE: 1.0, SearchMode.KEYWORD: 0.0}
        weights = tuple(sides.get(mode, alpha) for mode, alpha in pairs)
        return SearchMode.HYBRID, weights[0], weights

    @classmethod
    def recorded(cls, fusible: bool, rerank: int, calibration: dict | None) -> QueryDefaults:
        """The defaults of an index whose manifest records this calibration (calibration.py; None or a
        skipped one: the default mode and weight)."""
        chosen = calibration if calibration and "skipped" not in calibration else {}
        return cls.of(fusible, rerank, chosen.get("mode"), chosen.get("alpha"), recorded_bands(chosen))

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value,
            "alpha": self.alpha,
            "rerank": self.rerank,
            "calibrated": self.calibrated,
            **({"bands": [asdict(band) for band in self.bands]} if self.bands else {}),
        }


@dataclass(frozen=True)
class QueryOptions:
    """How the queries of one call are answered."""

    mode: SearchMode
    alpha: float  # hybrid's dense weight
    fusion: Fusion
    rerank: int  # candidates re-scored by the kept raw vectors (0: off)
    typos: int = DEFAULT_TYPOS  # edits a keyword query word may hold (typos.py; 0: none)
    crop: int = DEFAULT_CROP  # a hit's snippet, in words (snippets.py; 0: none)
    alphas: tuple[
        float, ...
    ] = ()  # each query's own dense weight, by its length's band (none: `alpha` for all)

    def alpha_of(self, query: int) -> float:
        """The dense weight the `query`th query of the call is fused at."""
        return self.alphas[query] if self.alphas else self.alpha

    @classmethod
    def resolve(
        cls,
        defaults: QueryDefaults,
        *,
        mode: SearchMode | str | None = None,
        alpha: float | None = None,
        fusion: Fusion | str | None = None,
        rerank: int | None = None,
        texts: bool = True,
        typos: int | None = None,
        crop: int | None = None,
        queries: Sequence[str] = (),
    ) -> QueryOptions:
        """The options asked, checked, the rest from `defaults`. A weight asked without a mode means hybrid
        on a calibrated index (whose own mode may be dense); without `texts` (vectors only) the mode is dense
        unless asked. Neither mode nor weight asked, `queries` (the texts) take their lengths' bands."""
        alphas: tuple[float, ...] = ()
        if mode is None and alpha is None and texts and queries and defaults.bands:
            mode, banded, alphas = defaults.chosen_for(queries)
            alpha = banded if mode is SearchMode.HYBRID else None
            alphas = alphas if mode is SearchMode.HYBRID else ()
        if mode is None:
            if not texts:
                mode = SearchMode.DENSE
            elif alpha is not None and defaults.calibrated:
                mode = SearchMode.HYBRID
            else:
                mode = defaults.mode
        alpha = check_alpha(alpha)
        if alpha is None:
            alpha = defaults.alpha if texts else DEFAULT_ALPHA
        return cls(
            mode=SearchMode.parse(mode, "mode"),
            alpha=alpha,
            fusion=Fusion.parse(fusion or DEFAULT_FUSION, "fusion"),
            rerank=at_least(defaults.rerank if rerank is None else rerank, 0, "rerank"),
            typos=check_typos(DEFAULT_TYPOS if typos is None else typos),
            crop=at_least(DEFAULT_CROP if crop is None else crop, 0, "crop"),
            alphas=alphas,
        )


@dataclass(frozen=True)
class Page:
    """What a search asks beside its query: where the page starts (`offset`), the metadata fields to count
    (`facets`: names, or one comma-separated string) and how many values of each (`facet_values`), the
    generation an earlier page read (`generation`: refused with GenerationChanged once the index has moved on),
    how many hits one document may fill (`per_document`: 0 no cap; None a document once, its further places
    where fewer documents match than the page holds: search.py), and whether a hit's JSON carries its
    document's whole text (`full_text`; else its passage and snippet: hits.py)."""

    offset: int = 0
    facets: Sequence[str] | str | None = None
    facet_values: int = FACET_VALUES
    generation: int | None = None
    per_document: int | None = None
    full_text: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.full_text, bool):
            raise SettingsError(f"must be true or false, got {self.full_text!r}", setting="full_text")

    def check(self, generation: int) -> int:
        """The generation this page reads: the index's now, which must be the one asked if one was."""
        if self.generation is not None and self.generation != generation:
            raise GenerationChanged(self.generation, generation)
        return generation


def check_typos(typos: int) -> int:
    """0, 1 or 2."""
    if isinstance(typos, bool) or not isinstance(typos, int) or not 0 <= typos <= 2:
        raise SettingsError(f"typos must be 0, 1 or 2, not {typos!r}", setting="typos")
    return typos
