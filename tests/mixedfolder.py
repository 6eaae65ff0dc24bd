"""A folder of every kind of file `semsearch ingest DIR` reads, written in code (the PDF by fpdf2, the DOCX by
python-docx, the Parquet file by pyarrow): each file holds one sentence found nowhere else, so a search for it
must come back to that file, at the place recorded here. Used by tests/test_sources.py and
benchmarks/files.py (which makes many copies)."""

from __future__ import annotations

import datetime
from pathlib import Path

# file -> (its sentence, the location a hit on it must carry)
SENTENCES = {
    "notes/garden.md": (
        "Tomatoes need a sunny wall and deep watering twice a week.",
        {"line_start": 12, "line_end": 15, "headings": ["Garden", "Vegetables"]},
    ),
    "site/guide.html": (
        "The lighthouse keeper trims the wick before every storm.",
        {"anchor": "keeping-the-light", "headings": ["Lighthouses", "Keeping the light"]},
    ),
    "papers/volcano.pdf": ("Basalt columns form when thick lava flows cool slowly.", {"page": 2}),
    "reports/bees.docx": (
        "Honeybees communicate the direction of flowers with a waggle dance.",
        {"headings": ["Bees", "Dance"]},
    ),
    "plain/readme.txt": ("The ferry to the island leaves every hour from pier four.", {"line_start": 1}),
    "code/orbit.py": (
        "Kepler's third law relates the orbital period to the semi-major axis.",
        {"line_start": 1},
    ),
}
TABLE_ROWS = [
    # id, text, title, year, price, active, published, tags
    ("r1", "Glaciers carve U-shaped valleys as they creep downhill.", "Glaciers", 2001, 1.5, True),
    ("r2", "A violin's sound post carries vibrations to the back plate.", "Violins", 2015, 2.25, False),
    ("r3", "Sourdough rises with wild yeast and lactic acid bacteria.", "Bread", 2023, 3.0, True),
]
PARQUET_ROWS = [
    ("p1", "Octopuses change colour with cells called chromatophores.", 7, 0.5, True),
    ("p2", "The printing press spread pamphlets across Europe within decades.", 9, 1.25, False),
]


def markdown() -> str:
    sentence = SENTENCES["notes/garden.md"][0]
    return (
        "---\ntitle: Garden notes\ntags: [garden, summer]\ndate: 2024-05-01\nrating: 4\ndraft: false\n---\n"
        "# Garden\n\nNotes from the allotment.\n\n## Vegetables\n\n"  # lines 8-13, after 7 of front matter
        f"{sentence}\nPinch out the side shoots.\n\n## Flowers\n\nDahlias flower until the first frost.\n"
    )


def html() -> str:
    sentence = SENTENCES["site/guide.html"][0]
    return f"""<!DOCTYPE html><html><head><title>Lighthouse guide</title></head><body>
<nav id="top"><a href="/">Home</a> <a href="/menu">The navigation menu repeated on every page</a></nav>
<header><p>Site banner with the site's name</p></header>
<div class="sphinxsidebar"><p>Sidebar: search this site</p></div>
<main id="content"><h1>Lighthouses</h1><p>Towers that guide ships.</p>
<section id="keeping-the-light"><h2>Keeping the light</h2><p>{sentence}</p>
<ul><li>Polish the lens.</li><li>Log the weather.</li></ul></section>
<section id="history"><h2>History</h2><p>The first lighthouse stood at Alexandria.</p></section></main>
<footer><p>Copyright footer text</p></footer></body></html>"""


def write_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Volcanic rocks")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 10, "Volcanoes release gas and ash when pressure builds in the magma chamber.")
    pdf.add_page()
    pdf.multi_cell(0, 10, SENTENCES["papers/volcano.pdf"][0])
    pdf.output(str(path))


def write_docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Bees at work"
    document.add_heading("Bees", level=1)
    document.add_paragraph("Bees pollinate crops and wild plants.")
    document.add_heading("Dance", level=2)
    document.add_paragraph(SENTENCES["reports/bees.docx"][0])
    document.add_heading("Hives", level=2)
    document.add_paragraph("A hive holds one queen and thousands of workers.")
    document.save(str(path))


def write_tables(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = ["id,text,title,year,price,active"]
    lines += [
        ",".join(map(str, row)).replace(",True", ",true").replace(",False", ",false") for row in TABLE_ROWS
    ]
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "tables/facts.csv").write_text("\n".join(lines) + "\n")
    stamp = datetime.datetime(2025, 3, 4, 5, 6, 7)
    table = pa.table(
        {
            "id": [row[0] for row in PARQUET_ROWS],
            "text": [row[1] for row in PARQUET_ROWS],
            "count": pa.array([row[2] for row in PARQUET_ROWS], pa.int64()),
            "score": pa.array([row[3] for row in PARQUET_ROWS], pa.float64()),
            "active": [row[4] for row in PARQUET_ROWS],
            "published": pa.array([stamp, stamp + datetime.timedelta(days=400)], pa.timestamp("us")),
            "tags": [["sea", "animal"], ["print"]],
        }
    )
    pq.write_table(table, root / "tables/items.parquet", row_group_size=1)


def write_folder(root: Path) -> Path:
    """The mixed folder under `root`, with an ignored HEIF photo and a file of no known kind."""
    for name in SENTENCES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / "notes/garden.md").write_text(markdown())
    (root / "site/guide.html").write_text(html())
    write_pdf(root / "papers/volcano.pdf")
    write_docx(root / "reports/bees.docx")
    (root / "plain/readme.txt").write_text(
        SENTENCES["plain/readme.txt"][0] + "\n\nTickets are sold on board.\n"
    )
    (root / "code/orbit.py").write_text(
        f'"""{SENTENCES["code/orbit.py"][0]}"""\n\n\ndef period(a):\n    return a**1.5\n'
    )
    write_tables(root)
    (root / "images").mkdir(exist_ok=True)
    # a HEIF photo: a picture of a kind not read (PNG, JPEG, TIFF and WebP are: tests/test_ocr.py)
    (root / "images/photo.heic").write_bytes(b"\x00\x00\x00\x18ftypheic" + bytes(64))
    (root / "data.bin").write_bytes(bytes(range(256)))
    return root
