"""The options of how `ingest` reads pictures of text (ingest/ocr): --ocr and --ocr-languages."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .options import Command

if TYPE_CHECKING:
    from ..ingest.ocr import Extraction


def ocr_options(command: Command) -> Command:
    """--ocr and --ocr-languages: how pictures of text (scans, photos, screenshots) are read (ingest/ocr)."""
    command = click.option(
        "--ocr-languages",
        metavar="LANGS",
        help="The languages pictures are read in, comma separated: en (the default), zh (Simplified "
        "Chinese), or Tesseract's names (eng, chi_sim, fra ...); recorded with each file read.",
    )(command)
    return click.option(
        "--ocr",
        type=click.Choice(["auto", "never", "always"]),
        help="Read pictures of text by OCR (the ocr extra): auto (the default) recognizes PDF pages without a "
        "text layer and PNG, JPEG, TIFF and WebP files; always every PDF page; never reads text layers only "
        "(pictures ignored).",
    )(command)


def extraction_of(ocr: str | None, languages: str | None) -> Extraction:
    from ..errors import DataError
    from ..ingest.ocr import extraction

    try:
        return extraction(ocr, languages)
    except DataError as error:
        raise click.UsageError(error.reason) from None
