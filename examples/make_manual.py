"""Builds examples/manual.pdf: a short manual laid out as real ones are, for the README's tour of a long document
and for tests: a title page, a table of contents (dot leaders and page numbers), chapters and sections with an
outline (PDF bookmarks), each section on pages of its own, and a back-of-book index.

    .venv/bin/python examples/make_manual.py [OUT.pdf]      (needs fpdf2: pip install 'semsearch[test]')

The output is deterministic (a fixed creation date): the same fpdf2 gives the same bytes.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

TITLE = "The Tidewater Database Manual"
# chapter -> sections, each with its text (a page each)
CHAPTERS: dict[str, dict[str, str]] = {
    "Getting Started": {
        "Installing on Linux": (
            "Download the package for your distribution and install it with the system package manager. On "
            "Debian and Ubuntu run apt install tidewater; on Fedora run dnf install tidewater. The installer "
            "creates a service user, a data directory under /var/lib/tidewater and a systemd unit that starts "
            "the server at boot. Check the installation by running tidewater --version in a terminal."
        ),
        "Configuration Files": (
            "The server reads its settings from tidewater.conf at start. Each line sets one key to a value: the "
            "port it listens on, the size of its page cache, the directory of its write-ahead log. A setting "
            "given on the command line wins over the file. Reload the file without a restart by sending the "
            "server the HUP signal; keys that need a restart are listed in the log when they change."
        ),
    },
    "Storing Data": {
        "Tables and Columns": (
            "A table holds rows of typed columns: integers, floating point numbers, text, timestamps and "
            "binary blobs. Declare a primary key for every table; rows are stored in its order on disk, so a "
            "range of keys is read sequentially. Adding a column to a large table is instant: old rows read "
            "the column's default until they are written again."
        ),
        "Advanced Indexing": (
            "Beyond the primary key, a secondary index keeps a second sorted copy of some columns, so lookups "
            "by those columns skip the full scan. Partial indexes cover only the rows matching a condition, "
            "expression indexes sort by a computed value such as lower(name), and covering indexes carry extra "
            "columns so a query is answered from the index alone. Build a large index concurrently to keep "
            "writes flowing while it is made."
        ),
        "Compression": (
            "Pages are compressed with LZ4 by default; zstd at level 3 saves a third more space on text-heavy "
            "tables at a small cost in CPU. Compression applies to new pages: rewrite a table to compress its "
            "old ones. Already compressed blobs such as images gain nothing and are stored as they are."
        ),
    },
    "Operations": {
        "Backup and Restore": (
            "A backup copies the data files and the write-ahead log while the server keeps running. Schedule "
            "a full backup weekly and keep the log segments in between: a restore replays them to any moment "
            "you choose. Test a restore regularly on a spare machine, because a backup that was never restored "
            "is only a hope."
        ),
        "Replication": (
            "A replica follows its primary by streaming the write-ahead log over the network and applying it. "
            "Reads can go to replicas to spread the load; writes always go to the primary. When the primary "
            "fails, promote the most up-to-date replica and point the others at it; the lag of each replica is "
            "shown in the status view."
        ),
        "Monitoring and Alerts": (
            "The server exports metrics over HTTP in the Prometheus format: queries per second, cache hit ratio, "
            "replication lag, disk usage and lock waits. Alert on a falling cache hit ratio and a growing lag "
            "before users notice slow answers; the slow query log names the statements worth a look."
        ),
    },
}
INDEX_TERMS = [
    "backup",
    "cache",
    "columns",
    "compression",
    "configuration",
    "covering index",
    "expression index",
    "installation",
    "lag",
    "metrics",
    "partial index",
    "primary key",
    "replica",
    "restore",
    "secondary index",
    "systemd",
    "write-ahead log",
    "zstd",
]
FIXED_DATE = datetime(2024, 1, 1, tzinfo=timezone.utc)


def section_pages() -> list[tuple[str, str, int]]:
    """(chapter, section, page) of every section, a page each after the title and contents pages."""
    out, page = [], 3
    for chapter, sections in CHAPTERS.items():
        for section in sections:
            out.append((chapter, section, page))
            page += 1
    return out


def write_manual(path: Path, outline: bool = True) -> Path:
    """The manual at `path`; without `outline`, no bookmarks (its headings are then only in its contents)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(TITLE)
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.multi_cell(0, 10, TITLE, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "Version 3.1. For administrators and developers.", new_x="LMARGIN", new_y="NEXT")
    places = section_pages()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    numbered = {}
    for number, chapter in enumerate(CHAPTERS, 1):
        first = next(page for owner, _, page in places if owner == chapter)
        pdf.cell(0, 6, leader(f"{number} {chapter}", first), new_x="LMARGIN", new_y="NEXT")
        for sub, (_, section, page) in enumerate([p for p in places if p[0] == chapter], 1):
            numbered[section] = f"{number}.{sub}"
            pdf.cell(0, 6, leader(f"   {number}.{sub} {section}", page), new_x="LMARGIN", new_y="NEXT")
    pdf.cell(0, 6, leader("Index", len(places) + 3), new_x="LMARGIN", new_y="NEXT")
    for number, chapter in enumerate(CHAPTERS, 1):
        for section, text in CHAPTERS[chapter].items():
            pdf.add_page()
            if section == next(iter(CHAPTERS[chapter])):
                if outline:
                    pdf.start_section(f"{number} {chapter}", level=0)
                pdf.set_font("Helvetica", "B", 14)
                pdf.multi_cell(0, 8, f"{number} {chapter}", new_x="LMARGIN", new_y="NEXT")
            if outline:
                pdf.start_section(section, level=1)
            pdf.set_font("Helvetica", "B", 12)
            pdf.multi_cell(0, 8, f"{numbered[section]} {section}", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 10)
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    if outline:
        pdf.start_section("Index", level=0)
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "Index", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    for term in INDEX_TERMS:
        pages = sorted({page for _, section, page in places if term.split()[0] in text_of(section).lower()})
        pdf.cell(
            0, 6, f"{term}, {', '.join(str(page) for page in pages) or '3'}", new_x="LMARGIN", new_y="NEXT"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def text_of(section: str) -> str:
    return next(sections[section] for sections in CHAPTERS.values() if section in sections)


def leader(title: str, page: int, width: int = 60) -> str:
    """A contents line: the title, a dot leader, the page number."""
    dots = max(3, width - len(title) - len(str(page)))
    return f"{title} {'.' * dots} {page}"


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("manual.pdf")
    print(write_manual(out))
