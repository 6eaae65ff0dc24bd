"""Pictures into pages of text: the frames of an image file (a TIFF's every page; any other image is page 1)
and the PDF pages that have no text layer of their own, each decoded or rendered, recognized and let go (a
1,000-page scan is never held at once: at most two images a recognizing thread, their texts kept).

A file's pages are recognized on RECOGNIZING_THREADS threads at once (`Recognizer`), an engine each (the engines
release the GIL while they read): a scan of one file in a parsing worker uses more than one core, while the
file's decoding and PDFium's rendering stay on the thread that reads the file, one page after another.

Limits: an image of more than PIXEL_LIMIT pixels is refused unread (a decompression bomb: a few kilobytes that
decode to gigabytes); Pillow's own limit, enforced as an error rather than its warning."""

from __future__ import annotations

import io
import os
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from ..sources.formats import Unreadable
from . import Extraction
from .engines import engine
from .progress import page_recognized

if TYPE_CHECKING:
    from PIL.Image import Image

PIXEL_LIMIT = 89_478_485  # Pillow's Image.MAX_IMAGE_PIXELS: 1/4 GiB of 24-bit pixels
RENDER_DPI = 300  # a PDF page is rendered at most at this resolution to be recognized (Tesseract's advice)
MIN_DPI = 150  # and at least at this one (a coarser scan is enlarged: Tesseract misreads small letters)
FEW_CHARACTERS = 32  # a text layer of fewer non-space characters over a full-page image is a scan's stamp
IMAGE_COVER = 0.5  # an image over this share of the page is a full-page one
# pages of one file recognized at once: the cores, at most 4 (each thread's engine holds its models, ~30 MB)
RECOGNIZING_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


def recognized(image: Image, extraction: Extraction) -> str:
    text = engine(extraction.engine or "", extraction.languages).recognize(image)
    page_recognized()
    return text


def image_pages(data: bytes) -> Iterator[tuple[int, Image]]:
    """(page number, decoded image) for each frame of an image file, one at a time."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = PIXEL_LIMIT
    number = 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            picture = Image.open(io.BytesIO(data))
            for number, frame in enumerate(ImageSequence.Iterator(picture), start=1):
                if (
                    frame.size[0] * frame.size[1] > PIXEL_LIMIT
                ):  # a later frame of a TIFF: not checked on open
                    raise Image.DecompressionBombError(frame.size)
                frame.load()
                yield number, frame.convert("L")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Unreadable(
            f"page {number + 1}: an image over the limit of {PIXEL_LIMIT:,} pixels (a decompression bomb?)"
        ) from None
    except UnidentifiedImageError:
        raise Unreadable("not an image Pillow can read (damaged or of another kind)") from None
    except (OSError, ValueError, SyntaxError) as error:  # what Pillow raises on a truncated or damaged image
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise Unreadable(f"page {max(number, 1)}: a truncated or damaged image ({reason})") from None


_POOLS: dict[
    int, ThreadPoolExecutor
] = {}  # by thread count: kept for the process's life, as their engines are
_POOLS_LOCK = threading.Lock()


def recognizing_pool(threads: int) -> ThreadPoolExecutor:
    """The process's threads that recognize, made at first use: each keeps its engine from file to file (made
    per file, a folder of pictures would load Tesseract's models again for every one)."""
    with _POOLS_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="ocr")
        return _POOLS[threads]


class Recognizer:
    """Images recognized on a few threads while the caller reads on: `submit` hands an image over (it is closed
    once read) and answers its text's Future, waiting first while 2 x threads images are unread."""

    def __init__(self, extraction: Extraction, threads: int | None = None):
        threads = threads or RECOGNIZING_THREADS
        self.extraction, self.held = extraction, 2 * threads
        self.pool = recognizing_pool(threads)
        self.unread: deque[Future[str]] = deque()

    def submit(self, image: Image) -> Future[str]:
        while self.unread and (self.unread[0].done() or len(self.unread) >= self.held):
            self.unread.popleft().exception()  # waits; its error is raised where its text is asked for
        text = self.pool.submit(self._read, image)
        self.unread.append(text)
        return text

    def _read(self, image: Image) -> str:
        try:
            return recognized(image, self.extraction)
        finally:
            image.close()

    def __enter__(self) -> Recognizer:
        return self

    def __exit__(self, *exc: object) -> None:
        """This file's pages not started are dropped, those being read waited for (an error left them unasked)."""
        for text in self.unread:
            text.cancel()
        wait(self.unread)


def recognized_pages(pages: Iterable[tuple[int, Image]], extraction: Extraction) -> Iterator[tuple[int, str]]:
    """(page number, text) in the pages' order, recognized a few at once (Recognizer)."""
    with Recognizer(extraction) as recognizer:
        texts = [(number, recognizer.submit(image)) for number, image in pages]
        for number, text in texts:
            yield number, text.result()


def needs_recognition(page: Any, text: str, extraction: Extraction) -> bool:
    """A PDF page to recognize: every page with --ocr always; with auto one with no text layer, or whose text
    layer is only a few characters over a full-page image (a scanner's stamp, a page number)."""
    if not extraction.recognizes:
        return False
    if extraction.ocr == "always":
        return True
    visible = len("".join(text.split()))
    return visible == 0 or (visible < FEW_CHARACTERS and _largest_image(page)[0] >= IMAGE_COVER)


def pdf_page_image(page: Any) -> Image:
    """A PDF page (pypdfium2's PdfPage) rendered in grey to be recognized: at the resolution of the scan it holds
    (within MIN_DPI and RENDER_DPI: more pixels than the scan's add time, not letters), else at RENDER_DPI; at
    most PIXEL_LIMIT pixels. A copy of PDFium's bitmap, which is freed here: PDFium is not thread-safe, and the
    image is read on another thread."""
    width, height = page.get_size()
    cover, dpi = _largest_image(page)
    dpi = min(RENDER_DPI, max(MIN_DPI, dpi)) if dpi and cover >= IMAGE_COVER else RENDER_DPI
    scale = min(dpi / 72, (PIXEL_LIMIT / max(width * height, 1)) ** 0.5)
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        shared = bitmap.to_pil()
        image = shared.copy()
        shared.close()
        return image
    finally:
        bitmap.close()


def _largest_image(page: Any) -> tuple[float, float | None]:
    """The share of the page its largest image covers, and that image's resolution in dots per inch."""
    import pypdfium2.raw as raw

    width, height = page.get_size()
    covered, dpi = 0.0, None
    for item in page.get_objects(filter=(raw.FPDF_PAGEOBJ_IMAGE,), max_depth=2):
        left, bottom, right, top = item.get_bounds()
        area = max(0.0, min(right, width) - max(left, 0)) * max(0.0, min(top, height) - max(bottom, 0))
        if area > covered:
            covered, dpi = area, item.get_px_size()[0] / max((right - left) / 72, 1e-6)
    return covered / max(width * height, 1), dpi
