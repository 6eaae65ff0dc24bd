"""Reading what is only pictures (the `ocr` extra): how a file's text is extracted (`Extraction`: the --ocr mode,
the languages, the engine installed), and the key of that, recorded with each file a folder's ingest read
(storage/synced.py), so a change of mode, languages or engine reads the files it concerns again. The engines sit
behind one small interface (engines.py), chosen by what is installed, in the order measured best
(benchmarks/results/ocr.md); pages.py turns pictures into pages of text. Nothing here imports an engine: the
workers that parse files do, on the first page they recognize."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, replace
from functools import cache
from glob import glob

from ...errors import DataError

MODES = ("auto", "never", "always")
# Bumped when what extraction makes of the same bytes changes (rendering, page rules): files read again.
EXTRACTOR_VERSION = 1
OCR_KINDS = ("pdf", "image")  # the kinds whose text depends on the extraction's settings
INSTALL = (
    "pip install 'semsearch[ocr]' and apt-get install tesseract-ocr tesseract-ocr-eng (tesseract-ocr-chi-sim "
    "for Chinese)"
)
# What a user may write for a language, as Tesseract names its trained data
LANGUAGE_NAMES = {
    "en": "eng",
    "english": "eng",
    "zh": "chi_sim",
    "zh-cn": "chi_sim",
    "zh-hans": "chi_sim",
    "chinese": "chi_sim",
    "zh-tw": "chi_tra",
    "zh-hant": "chi_tra",
}
DEFAULT_LANGUAGES = ("eng",)
# The engines in the order of preference (measured: benchmarks/results/ocr.md), each with the Python package
# it needs and the languages it reads (None: those whose trained data is installed).
ENGINES: dict[str, tuple[str, frozenset[str] | None]] = {
    "tesseract": ("tesserocr", None),
    "rapidocr": ("rapidocr_onnxruntime", frozenset({"eng", "chi_sim"})),
}
ENGINE_PACKAGES = {"tesseract": "tesserocr", "rapidocr": "rapidocr-onnxruntime"}
TESSDATA_PLACES = ("/usr/share/tesseract-ocr/*/tessdata", "/usr/share/tessdata", "/usr/local/share/tessdata")


@dataclass(frozen=True)
class Extraction:
    """How a file's text is extracted: `ocr` one of MODES, the Tesseract names of the `languages`, and the
    `engine` that recognizes (None: none installed that reads them; pictures then wait for the extra)."""

    ocr: str = "never"
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    engine: str | None = None

    @property
    def recognizes(self) -> bool:
        return self.ocr != "never" and self.engine is not None

    @property
    def wants_engine(self) -> bool:
        """Pictures are documents, to recognize (whether or not an engine is here to do it)."""
        return self.ocr != "never"

    def key(self, kind: str | None) -> str:
        """What a file of this kind was read with, as recorded with it: '' for kinds OCR never touches."""
        if kind not in OCR_KINDS:
            return ""
        if not self.recognizes:
            return f"v{EXTRACTOR_VERSION} ocr={self.ocr if self.ocr == 'never' else 'unavailable'}"
        package = ENGINE_PACKAGES[self.engine or ""]
        return f"v{EXTRACTOR_VERSION} ocr={self.ocr} {self.engine} {_version(package)} {'+'.join(self.languages)}"

    def described(self) -> str:
        package = ENGINE_PACKAGES[self.engine or ""]
        return f"{self.engine} ({package} {_version(package)}, {'+'.join(self.languages)})"


TEXT_LAYERS_ONLY = Extraction()  # as before OCR: --ocr never


def extraction(ocr: str | None = None, languages: str | None = None) -> Extraction:
    """The extraction an ingest asks for: `ocr` auto (the default), never or always; `languages` comma or plus
    separated (en, zh, or Tesseract's names: eng, chi_sim, fra ...). With `always` an engine must be here; a
    language no installed engine reads is an error naming what to install."""
    mode = ocr or "auto"
    if mode not in MODES:
        raise DataError(f"--ocr is one of {', '.join(MODES)}, not {mode!r}")
    wanted = tuple(_language(name) for name in (languages or "").replace("+", ",").split(",") if name.strip())
    wanted = wanted or DEFAULT_LANGUAGES
    chosen = Extraction(mode, wanted)
    if mode == "never":
        return chosen
    engine = engine_for(wanted)
    if engine is None and (mode == "always" or languages):
        have = installed_engines()
        if not have:
            raise DataError(f"--ocr {mode} needs an OCR engine: {INSTALL}")
        missing = [name for name in wanted if name not in _tesseract_languages()]
        raise DataError(
            f"no OCR engine installed reads {', '.join(missing or wanted)}: apt-get install "
            + " ".join(f"tesseract-ocr-{name.replace('_', '-')}" for name in missing or wanted)
        )
    return replace(chosen, engine=engine)


def engine_for(languages: tuple[str, ...]) -> str | None:
    """The first engine of ENGINES installed that reads every one of the languages."""
    for name, (module, reads) in ENGINES.items():
        if importlib.util.find_spec(module) is None:
            continue
        known = _tesseract_languages() if reads is None else reads
        if set(languages) <= known:
            return name
    return None


def installed_engines() -> list[str]:
    return [name for name, (module, _) in ENGINES.items() if importlib.util.find_spec(module) is not None]


def tessdata() -> str | None:
    """Where Tesseract's trained data is: $TESSDATA_PREFIX, else where Debian and others put it."""
    if os.environ.get("TESSDATA_PREFIX"):
        return os.environ["TESSDATA_PREFIX"]
    for pattern in TESSDATA_PLACES:
        for found in sorted(glob(pattern), reverse=True):
            if glob(os.path.join(found, "*.traineddata")):
                return found
    return None


@cache
def _tesseract_languages() -> frozenset[str]:
    place = tessdata()
    if place is None:
        return frozenset()
    return frozenset(
        os.path.basename(path)[: -len(".traineddata")] for path in glob(f"{place}/*.traineddata")
    )


def _language(name: str) -> str:
    name = name.strip().lower()
    return LANGUAGE_NAMES.get(name, name)


@cache
def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def needs_ocr_line(names: list[str]) -> str:
    """The one line of the picture files left unread for want of an engine."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    counted = "1 file needs" if len(names) == 1 else f"{len(names)} files need"
    return f"{counted} OCR to be read ({shown}): {INSTALL}"


BLANK_PAGES_SHOWN = 10  # page numbers a blank pages line lists, then how many more


def blank_pages_line(name: str, pages: tuple[int, ...]) -> str:
    """The one line of a file read whose pages include some OCR recognized and found no text on."""
    shown = ", ".join(map(str, pages[:BLANK_PAGES_SHOWN]))
    more = f" and {len(pages) - BLANK_PAGES_SHOWN} more" if len(pages) > BLANK_PAGES_SHOWN else ""
    return f"blank pages: {name}: {'page' if len(pages) == 1 else 'pages'} {shown}{more} (no text found)"
