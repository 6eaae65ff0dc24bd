"""Builds examples/scans/warranty.png: a page of text as a scanner gives it (a PDF written with fpdf2, its page
rendered in grey at 150 dpi with pypdfium2, cropped to the text), for the README's tour to search by OCR.

    .venv/bin/python examples/make_scan.py      (fpdf2 and pypdfium2: the test and files extras)
"""

from __future__ import annotations

import io
from pathlib import Path

TEXT = (
    "Warranty notice. The pump and its motor are covered for twenty-four months from the date of delivery. "
    "Replacement bearings and seals are supplied free of charge when the maintenance schedule printed on the "
    "housing was followed: drain the reservoir every quarter and record the pressure readings in the log. "
    "Damage caused by running the pump dry is not covered."
)


def main() -> None:
    import pypdfium2 as pdfium
    from fpdf import FPDF
    from PIL import ImageOps

    pdf = FPDF(format="A5")
    pdf.add_page()
    pdf.set_font("helvetica", "B", 14)
    pdf.cell(0, 10, "Service and warranty", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, TEXT)
    page = pdfium.PdfDocument(io.BytesIO(bytes(pdf.output())))[0]
    image = page.render(scale=150 / 72, grayscale=True).to_pil()
    box = ImageOps.invert(image).getbbox()
    image = image.crop((max(box[0] - 40, 0), max(box[1] - 40, 0), box[2] + 40, box[3] + 40))
    out = Path(__file__).parent / "scans" / "warranty.png"
    image.save(out, optimize=True)
    print(out, image.size, out.stat().st_size)


if __name__ == "__main__":
    main()
