"""The OCR engines behind one interface: `recognize(image) -> text`, the text in the engine's reading order with
a line break at the end of each line and a blank line between blocks. Each engine is made once in a thread
(loading its models costs more than a page) and reused for every page the thread recognizes: an engine's state
is one page at a time, and both release the GIL while they read, so pages.py recognizes a file's pages on a
few threads at once, an engine each.

- Tesseract through tesserocr (its C++ API in process: no program started, no image file written a page);
  the trained data Debian's tesseract-ocr-* packages install.
- RapidOCR (PP-OCRv4 models inside its wheel, run by ONNX Runtime): Chinese and English."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from . import tessdata

if TYPE_CHECKING:
    from PIL.Image import Image

# Tesseract writes a space between CJK characters (each its own "word"): taken out, so words read as written
CJK = r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
_CJK_SPACE = re.compile(rf"(?<={CJK}) +(?={CJK})")
_MADE_HERE = threading.local()  # this thread's engines, by name and languages


class Engine(Protocol):
    def recognize(self, image: Image) -> str: ...


class Tesseract:
    def __init__(self, languages: tuple[str, ...]):
        import tesserocr

        self.api = tesserocr.PyTessBaseAPI(
            path=tessdata() or "", lang="+".join(languages), psm=tesserocr.PSM.AUTO
        )

    def recognize(self, image: Image) -> str:
        self.api.SetImage(image)
        return tidy(self.api.GetUTF8Text())


class RapidOcr:
    """Lines put together from the boxes RapidOCR finds: a box whose middle is within the height of the line
    being read joins it (left to right), else it starts the next line."""

    def __init__(self, languages: tuple[str, ...]):
        from rapidocr_onnxruntime import RapidOCR

        self.engine = RapidOCR()

    def recognize(self, image: Image) -> str:
        import numpy as np

        found, _ = self.engine(np.asarray(image.convert("RGB")))
        lines: list[list[tuple[float, str]]] = []
        bottom = middle_of_line = None
        for box, text, _score in found or []:
            ys = [point[1] for point in box]
            top, low, left = min(ys), max(ys), min(point[0] for point in box)
            middle = (top + low) / 2
            if lines and middle_of_line is not None and abs(middle - middle_of_line) < (low - top) / 2:
                lines[-1].append((left, text))
            else:
                if lines and bottom is not None and top - bottom > (low - top):
                    lines.append([])  # a gap taller than a line: a new block
                lines.append([(left, text)])
                middle_of_line = middle
            bottom = low
        return tidy("\n".join(" ".join(text for _, text in sorted(line)) for line in lines))


MADE: dict[str, Callable[[tuple[str, ...]], Engine]] = {"tesseract": Tesseract, "rapidocr": RapidOcr}


def engine(name: str, languages: tuple[str, ...]) -> Engine:
    """This thread's engine of that name and languages, made on first use."""
    made: dict[tuple[str, tuple[str, ...]], Engine] = _MADE_HERE.__dict__.setdefault("engines", {})
    if (name, languages) not in made:
        made[name, languages] = MADE[name](languages)
    return made[name, languages]


def tidy(text: str) -> str:
    """The engine's text with its lines as they came, trailing spaces and form feeds dropped, CJK unspaced."""
    lines = [_CJK_SPACE.sub("", line.rstrip()) for line in text.replace("\f", "").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
