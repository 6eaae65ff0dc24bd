"""Issue 34, the ingest front: a folder of every kind of file (Markdown, HTML, PDF, DOCX, text, code, CSV,
Parquet; written in code by tests/mixedfolder.py) ingests into one index with the real model,
each file's sentence found in its file with its metadata, its types kept and its place in the file; bad files
named one a line (nothing written without --skip-invalid); unknown files counted as ignored; the walk's rules
(hidden, .gitignore, include/exclude, a symlink loop) and content sniffing on the source alone."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from mixedfolder import PARQUET_ROWS, SENTENCES, TABLE_ROWS, write_folder

from semsearch import Index
from semsearch.cli import main
from semsearch.cli.query import place as printed_place
from semsearch.documents import Location
from semsearch.errors import DataError
from semsearch.ingest.documents import Corpus, read_corpus
from semsearch.ingest.sources import FieldNames, open_source, tablerows
from semsearch.ingest.sources.formats import kind_of
from semsearch.storage.locations import sections_json
from semsearch.storage.places import stored_sections

pytestmark = pytest.mark.xdist_group("sources")


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bad_files(root: Path) -> dict[str, str]:
    """Files of known kinds that cannot be read, under `root`: name -> the reason the error must give."""
    from fpdf import FPDF
    from fpdf.enums import EncryptionMethod

    (root / "bad").mkdir(parents=True, exist_ok=True)
    pdf = FPDF()
    pdf.add_page()  # a page and no text: what a scan without a text layer gives
    pdf.output(str(root / "bad/scan.pdf"))
    locked = FPDF()
    locked.add_page()
    locked.set_font("helvetica", size=12)
    locked.cell(0, 10, "Words behind a password.")
    locked.set_encryption(owner_password="o", user_password="u", encryption_method=EncryptionMethod.RC4)
    locked.output(str(root / "bad/locked.pdf"))
    (root / "bad/broken.docx").write_bytes(b"PK\x03\x04 not really a zip archive")
    (root / "bad/latin1.md").write_bytes("# Caf\xe9\n\nna\xefve\n".encode("latin-1"))
    (root / "bad/ids.csv").write_text("id,text\na,first row\na,second row\n")
    (root / "bad/noid.csv").write_text("name,text\nx,a row without an id column\n")
    return {
        "bad/scan.pdf": "no text layer",
        "bad/locked.pdf": "encrypted (a password is needed)",
        "bad/broken.docx": "cannot be read as docx",
        "bad/latin1.md": "not UTF-8 at line 1",
        "bad/ids.csv": "id 'a' appears twice",
        "bad/noid.csv": "no id column",
    }


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The mixed folder with its bad files, ingested in one command with --skip-invalid."""
    root = write_folder(tmp_path_factory.mktemp("sources") / "folder")
    reasons = bad_files(root)
    (root / "bad/ids.csv").unlink()  # a repeated id refuses the corpus even with --skip-invalid: apart below
    index = root.parent / "index"
    result = run("ingest", root, "--index", index, "--skip-invalid")
    assert result.exit_code == 0, result.output
    return root, index, result, reasons


def search(index: Path, text: str, **options):
    with Index.open(index) as opened:
        return opened.search(text, k=options.pop("k", 1), **options)


def test_every_kind_is_found_in_its_file(mixed):
    root, index, _, _ = mixed
    for name, (sentence, place) in SENTENCES.items():
        (hit,) = search(index, sentence)
        assert hit.id == name
        assert hit.metadata["path"] == f"{root.as_posix()}/{name}"
        assert hit.metadata["size"] == (root / name).stat().st_size
        # the section holding the sentence (read again from the file) is at the place written by hand
        (doc,) = (d for _, d in open_source(root / name).entries())
        assert doc.id == Path(name).name  # a single file: its name
        start = doc.text.index(sentence)
        (section,) = (s for s in doc.sections if s.start <= start < s.end)
        assert doc.text.index(sentence) + len(sentence) <= section.end
        assert {k: v for k, v in section.location.to_json().items() if k in place} == place
    csv_lines = (root / "tables/facts.csv").read_text().splitlines()
    for row, (row_id, sentence, *_) in enumerate(TABLE_ROWS, start=1):
        (hit,) = search(index, sentence)
        line = next(n for n, text in enumerate(csv_lines, start=1) if sentence in text)
        assert (hit.id, hit.location) == (row_id, {"line_start": line, "line_end": line, "row": row})
        assert (
            printed_place(hit) == f"{root.as_posix()}/tables/facts.csv:{line}"
        )  # as `semsearch query` prints it
    for row, (row_id, sentence, *_) in enumerate(PARQUET_ROWS, start=1):
        (hit,) = search(index, sentence)
        assert (hit.id, hit.location) == (row_id, {"row": row})
        assert printed_place(hit) == f"{root.as_posix()}/tables/items.parquet (row {row})"


def test_a_csv_row_knows_its_lines_and_a_parquet_row_its_number(tmp_path):
    """Rows with quoted fields over several lines, CRLF line ends and an empty line: each row's physical lines
    as the file was written (counted here while writing it), for CSV and TSV; a Parquet row its number."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = {"a": "first row", "b": "a text\nover two lines", "c": 'with "quotes", a comma', "d": "x\ny\nz"}
    for delimiter, suffix in ((",", "csv"), ("\t", "tsv")):
        lines, expected, line = [f"id{delimiter}text"], {}, 2
        for row, (doc_id, text) in enumerate(texts.items(), start=1):
            if doc_id == "c":
                lines.append("")  # an empty line: no row
                line += 1
            lines.append(f'{doc_id}{delimiter}"{text.replace(chr(34), 2 * chr(34))}"')
            expected[doc_id] = {"line_start": line, "line_end": line + text.count("\n"), "row": row}
            line += text.count("\n") + 1
        path = tmp_path / f"rows.{suffix}"
        path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
        docs = {doc.id: doc for _, doc in open_source(path).entries()}
        assert {doc_id: doc.sections[0].location.to_json() for doc_id, doc in docs.items()} == expected
        assert {doc_id: doc.text.replace("\r\n", "\n") for doc_id, doc in docs.items()} == texts
    pq.write_table(pa.table({"id": list(texts), "text": list(texts.values())}), tmp_path / "r.parquet", 3)
    docs = [doc for _, doc in open_source(tmp_path / "r.parquet").entries()]
    assert [doc.sections[0].location.to_json() for doc in docs] == [{"row": n} for n in range(1, 5)]
    for doc in docs:  # one section, the whole text; hashed as its sections read back from a store are
        stored = replace(doc, sections=stored_sections(sections_json(doc)))
        assert [(section.start, section.end) for section in doc.sections] == [(0, len(doc.text))]
        assert (doc.content_hash, doc.passages_hash) == (stored.content_hash, stored.passages_hash)


def test_metadata_and_types(mixed):
    root, index, _, _ = mixed
    assert {h.metadata["type"] for h in search(index, "anything", k=20, where=["path!=null"])} == {
        "markdown",
        "html",
        "pdf",
        "docx",
        "text",
        "code",
        "csv",
        "parquet",
    }
    titles = {h.id: h.title for h in search(index, "anything", k=20)}
    assert titles["notes/garden.md"] == "Garden notes"  # front matter
    assert titles["site/guide.html"] == "Lighthouse guide"  # <title>
    assert titles["papers/volcano.pdf"] == "Volcanic rocks"  # PDF metadata
    assert titles["reports/bees.docx"] == "Bees at work"  # DOCX core properties
    assert titles["plain/readme.txt"] == "readme.txt"  # none of its own: the file name
    ids = lambda *where: {h.id for h in search(index, "anything", k=20, where=list(where))}  # noqa: E731
    assert ids("tags=garden", "rating=4", "draft=false", "date>=2024-05-01") == {"notes/garden.md"}
    assert ids("modified>=2000-01-01") >= set(SENTENCES)
    assert not ids("modified<2000-01-01") & set(SENTENCES)
    assert ids("count>=8") == {"p2"} and ids("published>=2026-01-01") == {"p2"} and ids("tags=sea") == {"p1"}
    assert ids("year>2010", "active=false") == {"r2"} and ids("price=2.25") == {"r2"}


def test_summary_counts_refused_and_ignored(mixed):
    root, _, result, reasons = mixed
    lines = result.stderr.splitlines()
    for name, reason in reasons.items():
        if name != "bad/ids.csv":
            (line,) = [line for line in lines if f"{root.as_posix()}/{name}" in line]
            assert line.startswith("skipped: ") and reason in line
    assert "read 16 documents, 5 refused (2 files of unknown type ignored)" in lines[-1]


def test_bad_files_refuse_the_corpus_one_line_each(mixed, tmp_path):
    root, _, _, _ = mixed
    folder = tmp_path / "folder"
    (folder / "good").mkdir(parents=True)
    (folder / "good/ok.md").write_text("# Fine\n\nA readable note.\n")
    reasons = bad_files(folder)
    result = run("ingest", folder, "--index", tmp_path / "index")
    assert result.exit_code == 1 and "Traceback" not in result.output
    for name, reason in reasons.items():
        (line,) = [line for line in result.stderr.splitlines() if f"{folder.as_posix()}/{name}" in line]
        assert reason in line
    assert "6 files refused: nothing written" in result.stderr
    assert not (tmp_path / "index").exists()


def test_unreadable_and_oversize_files(tmp_path, monkeypatch):
    from semsearch.ingest.sources import files

    (tmp_path / "big.txt").write_text("x" * 2000)
    (tmp_path / "locked.md").write_text("# Locked\n")
    (tmp_path / "locked.md").chmod(0)
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1000)
    errors = {str(e.path): e.reason for _, e in open_source(tmp_path).entries() if isinstance(e, Exception)}
    assert errors[f"{tmp_path.as_posix()}/big.txt"] == "larger than 0 MiB (2000 bytes)"
    if not os.access(tmp_path / "locked.md", os.R_OK):
        assert errors[f"{tmp_path.as_posix()}/locked.md"] == "cannot read: Permission denied"


def test_walk_hidden_gitignore_globs_and_a_symlink_loop(tmp_path):
    for name in ["a.md", ".hidden.md", ".dir/b.md", "build/c.md", "sub/d.md", "sub/e.log.md", "sub/keep.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"# {name}\n\nwords\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "sub/.gitignore").write_text("*.log.md\n")
    (tmp_path / "sub/loop").symlink_to(tmp_path, target_is_directory=True)  # back up: read once
    (tmp_path / "sub/linked.md").symlink_to(tmp_path / "a.md")  # a link to a file is followed

    def ids(**walk):
        return sorted(doc.id for _, doc in open_source(tmp_path, **walk).entries())

    assert ids() == ["a.md", "sub/d.md", "sub/keep.txt", "sub/linked.md"]
    assert "build/c.md" in ids(no_ignore=True) and "sub/e.log.md" in ids(no_ignore=True)
    assert {".hidden.md", ".dir/b.md"} <= set(ids(hidden=True))
    assert ids(include=["*.md"], exclude=["sub/linked.md"]) == ["a.md", "sub/d.md"]
    assert ids(include=["sub/**"]) == ["sub/d.md", "sub/keep.txt", "sub/linked.md"]


def test_kind_by_suffix_and_content():
    pdf, html, jsonl = b"%PDF-1.7\n", b"<!DOCTYPE html><html>", b'{"id": 1, "text": "x"}\n'
    assert kind_of("paper.txt", pdf) == "pdf"  # the content wins over a suffix that lies
    assert kind_of("page.pdf", html) == "html"
    assert kind_of("page", html) == "html" and kind_of("LICENSE", b"MIT License\n") == "text"
    assert kind_of("notes.md", b"# x") == "markdown" and kind_of("x.py", b"import os") == "code"
    assert (
        kind_of("photo.heic", b"\x00\x00\x00\x18ftypheic") is None
        and kind_of("blob", bytes(range(256))) is None
    )
    assert (
        kind_of("photo.png", b"\x89PNG\r\n\x1a\n") == "image"
        and kind_of("x.jpg", b"\xff\xd8\xff\xe0") == "image"
    )
    assert (
        kind_of("scan", b"II*\x00") == "image"
        and kind_of("shot.webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image"
    )
    assert kind_of("fake.png", b"# not a picture\n") == "text"
    assert kind_of("corpus.data", jsonl, given=True) == "jsonl"  # named on the command line: JSONL as always
    assert kind_of("corpus.data", jsonl) is None  # met in a directory: an unknown suffix is ignored


def test_sections_cover_pieces_of_the_text(mixed):
    root, _, _, _ = mixed
    for place, doc in open_source(root, FieldNames()).entries():
        if not hasattr(doc, "sections") or doc.sections is None:
            continue
        ends = 0
        for section in doc.sections:
            assert ends <= section.start < section.end <= len(doc.text), place
            assert doc.text[ends : section.start].strip() == "", place  # nothing left out between
            assert isinstance(section.location, Location)
            ends = section.end
        assert doc.text[ends:].strip() == ""


def test_parquet_is_read_a_row_group_at_a_time_with_its_vectors(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    vectors = np.random.default_rng(0).standard_normal((10, 8)).astype(np.float32)
    table = pa.table(
        {
            "doc": [f"d{i}" for i in range(10)],
            "body": [f"text {i}" for i in range(10)],
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
        }
    )
    pq.write_table(table, tmp_path / "v.parquet", row_group_size=3)
    corpus = Corpus(tmp_path / "v.parquet", FieldNames(id="doc", text="body", vector="emb"))
    assert corpus.check().vector_width == 8
    docs = list(corpus.documents())
    assert [d.id for d in docs] == [f"d{i}" for i in range(10)]
    assert np.array_equal(np.stack([d.vector for d in docs]), vectors)
    batches = tablerows.messages(str(tmp_path / "v.parquet"), "parquet", corpus.source.fields)
    assert [len(columns[0]) for _, _, columns, _ in batches] == [3, 3, 3, 1]  # never the whole table at once


def test_a_batch_crosses_the_pipe_a_row_a_frame_and_reads_back_the_same():
    """The reader's message for a batch: its head, then each row's values as a frame of its own followed by its
    vector's bytes (the ingest holds a row at a time, never a batch's values: they raised Python's arenas'
    high-water mark above JSONL's); read back, the same names, values and vectors, and where the pipe ends
    inside a batch, its rows stop there and the next read says so."""
    import io
    import json

    import numpy as np

    names = ["id", "text", "year", "tags"]
    columns = [[f"d{i}" for i in range(50)], [f"words of row {i} " * 8 for i in range(50)], list(range(50))]
    columns.append([["a", i] if i % 2 else None for i in range(50)])
    vectors = np.random.default_rng(3).standard_normal((50, 4)).astype(np.float32)
    pipe = io.BytesIO()
    tablerows.write_message(pipe, ("rows", names, columns, vectors))
    tablerows.write_message(pipe, ("end",))
    pipe.seek(0)
    _, read_names, rows = tablerows.read_message(pipe)
    rows = list(rows)
    assert read_names == names and [values for values, _ in rows] == [list(row) for row in zip(*columns)]
    assert np.array_equal(np.stack([vector for _, vector in rows]), vectors)
    assert tablerows.read_message(pipe) == ("end",) and tablerows.read_message(pipe) is None
    pipe.seek(0)
    length = int.from_bytes(pipe.read(tablerows.LENGTH_BYTES), "little")
    assert json.loads(pipe.read(length))["rows"] == 50
    for i, row in enumerate(zip(*columns)):  # a frame a row, its vector after it
        length = int.from_bytes(pipe.read(tablerows.LENGTH_BYTES), "little")
        assert json.loads(pipe.read(length)) == list(row)
        assert pipe.read(vectors[i].nbytes) == vectors[i].tobytes()
    cut = io.BytesIO(pipe.getvalue()[: pipe.tell() // 2])
    _, _, rows = tablerows.read_message(cut)
    assert 0 < len(list(rows)) < 50 and tablerows.read_message(cut) is None


def test_parquet_vectors_of_every_list_type_and_the_ones_refused(tmp_path):
    import subprocess
    import sys

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    vectors = np.random.default_rng(1).standard_normal((7, 5))
    columns = {
        "list<double>": pa.array(vectors.tolist(), type=pa.list_(pa.float64())),
        "large_list<float>": pa.array(vectors.tolist(), type=pa.large_list(pa.float32())),
        "fixed<int8>": pa.array(np.round(vectors * 10).tolist(), type=pa.list_(pa.int8(), 5)),
    }
    for name, column in columns.items():
        path = tmp_path / "kinds.parquet"
        pq.write_table(pa.table({"id": [f"d{i}" for i in range(7)], "text": ["t"] * 7, "v": column}), path, 3)
        docs = list(read_corpus(path, FieldNames(vector="v")))
        expected = np.round(vectors * 10) if "int8" in name else vectors
        assert np.array_equal(np.stack([d.vector for d in docs]), expected.astype(np.float32)), name
    refused = {
        "widths differ": pa.array([[1.0, 2.0], [3.0]]),
        "a null vector": pa.array([[1.0, 2.0], None]),
        "a null number": pa.array([[1.0, 2.0], [3.0, None]]),
        "strings": pa.array([["a", "b"], ["c", "d"]]),
        "not a list": pa.array([1.0, 2.0]),
        "empty lists": pa.array([[], []], type=pa.list_(pa.float32())),
    }
    for case, column in refused.items():
        path = tmp_path / f"{case}.parquet"
        pq.write_table(pa.table({"id": ["a", "b"], "text": ["x", "y"], "v": column}), path)
        entries = list(open_source(path, FieldNames(vector="v")).entries())
        errors = [str(error) for _, error in entries if isinstance(error, DataError)]
        assert errors == [f"{path}, row 1, field 'v': vectors must be lists of numbers of one width"], case
    # Read by a child process: the reading process never loads pyarrow (nor pandas, which pyarrow's NumPy
    # conversion imports), whose pages and data would stay resident for the rest of an ingest
    script = (
        "import sys; from semsearch.ingest.documents import read_corpus, FieldNames; "
        f"docs = list(read_corpus({str(tmp_path / 'kinds.parquet')!r}, FieldNames(vector='v'))); "
        "print(len(docs), 'pyarrow' in sys.modules, 'pandas' in sys.modules)"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.stdout == "7 False False\n", ran.stderr


def test_a_table_file_is_read_by_a_child_process_kept_only_while_reads_follow(tmp_path, monkeypatch):
    """The reader of table files is a child process: kept for the next file, ended once idle, ended when its
    reader stops early (not left writing), and a child killed mid-file is a one-line error at its row."""
    import signal
    import time

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from semsearch.ingest.sources import tablereader

    rows, group, width = 600, 200, 256  # a row group's vectors (200 kB): more than the pipe holds
    vectors = np.random.default_rng(2).standard_normal((rows, width)).astype(np.float32)
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(rows)],
            "text": ["t"] * rows,
            # from the array's buffer: pa.array(ndarray) imports pandas (a second here)
            "v": pa.FixedSizeListArray.from_arrays(
                pa.Array.from_buffers(pa.float32(), rows * width, [None, pa.py_buffer(vectors)]), width
            ),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=group)
    source = open_source(tmp_path / "t.parquet", FieldNames(vector="v"))
    docs = [doc for _, doc in source.entries()]
    assert np.array_equal(np.stack([doc.vector for doc in docs]), vectors)
    kept = tablereader._kept
    assert kept is not None and kept.alive

    entries = source.entries()
    next(entries)
    assert tablereader._kept is kept  # the same child for the next file: no new start
    entries.close()  # stopped after a row: the child, blocked writing the rest, is ended
    assert not kept.alive and tablereader._kept is None

    entries = source.entries()
    next(entries)
    tablereader._kept.process.send_signal(signal.SIGKILL)
    *rest, (place, last) = list(entries)
    assert isinstance(last, DataError) and "its reader stopped" in str(last) and len(rest) < rows - 1
    assert str(last).startswith(f"{tmp_path / 't.parquet'}, row {len(rest) + 2}: cannot read")

    monkeypatch.setattr(tablereader, "KEPT_SECONDS", 0.1)
    assert len(list(source.entries())) == rows
    kept, waited = tablereader._kept, time.perf_counter()
    while kept.alive and time.perf_counter() < waited + 5:
        time.sleep(0.05)
    assert not kept.alive and tablereader._kept is None  # idle: ended, nothing beside a later peak


def test_docx_reads_the_parts_it_needs_as_python_docx_reads_the_whole_document():
    """A DOCX with what Word writes (a Title, headings whose style ids a German Word localizes, a list style,
    tabs, a line break, a hyperlink, merged cells, a table nested in a cell): the same text, title, sections
    and heading paths as python-docx's own Document() API gives, read here independently."""
    import io
    import zipfile

    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls
    from docx.table import Table

    from semsearch.ingest.sources.formats import docx as parser

    document = docx.Document()
    document.add_paragraph("Styled title", style="Title")
    document.add_heading("One", 1)
    paragraph = document.add_paragraph("tab\there")
    run = paragraph.add_run("after")
    run.add_break()
    run.add_text("next line")
    link = f'<w:hyperlink {nsdecls("w", "r")} r:id="rId99"><w:r><w:t>link text</w:t></w:r></w:hyperlink>'
    paragraph._p.append(parse_xml(link))
    document.add_paragraph("a list item", style="List Paragraph")
    document.add_heading("Two", 2)
    table = document.add_table(rows=3, cols=3)
    for n, cell in enumerate(table._cells):
        cell.text = f"c{n}"
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(1, 2).merge(table.cell(2, 2))
    table.cell(2, 0).add_table(rows=1, cols=1).cell(0, 0).text = "nested"
    document.add_heading("Three", 3)
    document.add_paragraph("the end", style="Quote")
    written = io.BytesIO()
    document.save(written)
    german = io.BytesIO()  # Word in German: the heading and title styles' ids are "berschrift1", "Titel"
    with zipfile.ZipFile(written) as source, zipfile.ZipFile(german, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            for n in (1, 2, 3):
                data = data.replace(f'"Heading{n}"'.encode(), f'"berschrift{n}"'.encode())
            data = data.replace(b'w:styleId="Title"', b'w:styleId="Titel"')
            target.writestr(item, data.replace(b'<w:pStyle w:val="Title"/>', b'<w:pStyle w:val="Titel"/>'))
    for data in (written.getvalue(), german.getvalue()):
        reference = docx.Document(io.BytesIO(data))
        blocks, path = [], []
        for block in reference.iter_inner_content():
            if isinstance(block, Table):
                texts = [" | ".join(cell.text.strip() for cell in row.cells) for row in block.rows]
            else:
                texts, style = [block.text], block.style.name
                if style.startswith("Heading "):
                    path = path[: int(style[8:]) - 1] + [block.text]
            blocks += [(text.strip(), tuple(path)) for text in texts if text.strip()]
        parsed = parser.parse(data)
        assert parsed.text == "\n\n".join(text for text, _ in blocks)
        assert parsed.title == "Styled title"
        found = {(parsed.text[s.start : s.end], s.location.headings) for s in parsed.sections}
        for text, headings in blocks:  # each block in a section whose heading path is the document's
            assert any(text in part and headings == path for part, path in found), (text, headings)
        assert [s.location.headings for s in parsed.sections][1:] == [
            ("One",),
            ("One", "Two"),
            ("One", "Two", "Three"),
        ]
        assert (
            "berschrift1" not in parsed.text and "c0\nc1 | c0\nc1 | c2" in parsed.text
        )  # a merged cell spans


def test_html_without_main_keeps_the_content_and_leaves_the_furniture():
    from semsearch.ingest.sources.formats import html

    links = " | ".join(f'<a href="/p{i}.html">Page {i}</a>' for i in range(6))
    page = f"""<html><head><title>Old theme</title></head><body>
    <div id="hd"><div class="global-nav">{links}</div></div>
    <div class="yui-b"><div id="s-setup" class="section"><h1>Setup</h1><p>Install the package first.</p>
    <div id="s-linux" class="section"><h2>Linux</h2><p>Use the <a href="x">system</a> package manager.</p>
    <dl><dt id="opt-force">--force</dt><dd>Overwrite existing files.</dd></dl></div></div></div>
    <div class="yui-b"><h3>Browse</h3><ul><li>{links}</li></ul></div>
    <footer>Footer words</footer></body></html>""".encode()
    parsed = html.parse(page)
    assert parsed.title == "Old theme"
    assert "Page 3" not in parsed.text and "Footer words" not in parsed.text and "Browse" not in parsed.text
    places = {parsed.text[s.start : s.end].split("\n")[0]: s.location for s in parsed.sections}
    assert places["Setup"] == Location(anchor="s-setup", headings=("Setup",))
    assert places["Linux"] == Location(anchor="s-linux", headings=("Setup", "Linux"))
    linux = next(s for s in parsed.sections if s.location.anchor == "s-linux")
    assert "Overwrite existing files." in parsed.text[linux.start : linux.end]


def test_an_html_page_ends_with_its_outline_as_a_section_of_its_own():
    """The page's title and headings (read here from the source by a regular expression), in order, after its
    text: a passage summing the page up, as a theme's sidebar table of contents does; no anchor (the page)."""
    import re

    from mixedfolder import html as page

    from semsearch.ingest.sources.formats import html

    parsed = html.parse(page().encode())
    headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", page())
    last = parsed.sections[-1]
    assert (
        parsed.text[last.start : last.end]
        == f"Lighthouse guide: {'; '.join(headings)}"
        == parsed.text[last.start :]
    )
    assert last.location == Location() and len(headings) == 3
    single = html.parse(b"<html><body><main><h1>One</h1><p>Only one heading here.</p></main></body></html>")
    assert single.text == "One\n\nOnly one heading here."  # fewer than two headings: no outline


def test_an_index_page_of_links_smaller_than_its_sidebar_is_read_not_refused():
    """A documentation site's index page (a heading and a table of contents, like Django's
    topics/db/examples/index.html) whose sidebar holds more text: kept with its list, not refused as empty."""
    from semsearch.ingest.sources.formats import html

    sidebar = " ".join(f'<li><a href="/s{i}.html">Sidebar entry number {i}</a></li>' for i in range(12))
    toc = "".join(f'<li><a href="r{i}.html">Relationship kind {i}</a></li>' for i in range(3))
    page = f"""<html><head><title>Examples</title></head><body><div id="main-part">
    <div id="s-examples" class="section"><h1>Examples</h1><ul>{toc}</ul></div></div>
    <div class="sphinxsidebar"><h3>Browse</h3><ul>{sidebar}</ul></div></body></html>""".encode()
    parsed = html.parse(page)
    assert "Examples" in parsed.text and "Relationship kind 2" in parsed.text and "Browse" not in parsed.text


def test_a_table_of_contents_that_is_most_of_the_content_stays_and_the_header_of_links_goes():
    """An index page (like Django's ref/contrib/postgres/index.html): a heading, an introduction and a table of
    contents of the pages below it that is most of the section holding the page's prose but, beside the
    site's header, sidebar and footer of links, less than half of the whole page: the list is content."""
    from semsearch.ingest.sources.formats import html

    menu = " | ".join(f'<a href="/m{i}.html">Menu item {i}</a>' for i in range(8))
    toc = "".join(f'<li><a href="t{i}.html">Specific topic number {i}</a></li>' for i in range(6))
    page = f"""<html><head><title>Topics</title></head><body><div id="hd">{menu}</div>
    <div id="s-topics" class="section"><h1>Topics</h1><p>Features found in one database only.</p>
    <p>Code that uses them runs on that database alone, which suits projects that will never move.</p>
    <div class="toctree-wrapper"><ul>{toc}</ul></div></div>
    <div class="sphinxsidebar"><ul><li>{menu}</li></ul></div><div id="ft">{menu}</div></body></html>"""
    parsed = html.parse(page.encode())
    assert "Specific topic number 5" in parsed.text and "Features found" in parsed.text
    assert "Menu item" not in parsed.text
    tiny = html.parse(page.replace(toc, "").encode())  # the header alone is no longer most of the page
    assert "Features found" in tiny.text and "Menu item" not in tiny.text


def test_a_dataframe_is_a_table_with_its_types():
    import pandas as pd

    frame = pd.DataFrame(
        {
            "id": ["f1", "f2"],
            "text": [
                "Penguins huddle together to survive the polar winter.",
                "Kites fly best in steady wind.",
            ],
            "stars": [5, 3],
            "ratio": [0.25, 0.75],
            "seen": [True, False],
            "when": pd.to_datetime(["2021-06-01 10:00", "2027-01-02 03:04"]),
            "tags": [["bird", "ice"], []],
        }
    )
    corpus = Corpus(frame)  # what Index.add(frame) and Index.ingest(frame) read
    assert corpus.check().count == 2
    first, second = corpus.documents()
    assert first.metadata == {
        "stars": 5,
        "ratio": 0.25,
        "seen": True,
        "when": "2021-06-01T10:00:00",
        "tags": ["bird", "ice"],
    }
    assert type(first.metadata["stars"]) is int and second.metadata["when"] == "2027-01-02T03:04:00"


def test_restructuredtext_sections_carry_their_heading_path_and_lines(tmp_path):
    """A .rst file (docutils): each sentence's section has the titles above it as its path (overlined or not,
    any adornment) and a line range holding the sentence's line, both counted here from the lines written."""
    written = [
        ("", "==========", "Field guide", "==========", "", "The guide opens with a word on owls."),
        ("Birds", "=====", "", "Birds lay eggs in spring."),
        ("Owls", "----", "", "Owls hunt at night.", "", ".. include:: /etc/hostname", ""),
        ("Geese", "-----", "", "Geese fly in a vee.", "", ".. note:: A note inside the geese section."),
        ("Fish", "=====", "", "Fish breathe through gills."),
    ]
    paths = [
        ["Field guide"],
        ["Field guide", "Birds"],
        ["Field guide", "Birds", "Owls"],
        ["Field guide", "Birds", "Geese"],
        ["Field guide", "Fish"],
    ]
    lines = [line for block in written for line in (*block, "")]
    path = tmp_path / "guide.rst"
    path.write_text("\n".join(lines))
    ((_, doc),) = open_source(path).entries()
    assert doc.title == "Field guide" and doc.metadata["type"] == "rst"
    for block, heading_path in zip(written, paths):
        sentence = block[-1] if block[-1] else block[-4]
        line = lines.index(sentence) + 1
        title_line = lines.index(block[2] if not block[0] else block[0]) + 1
        start = doc.text.index(sentence)
        (section,) = (s for s in doc.sections if s.start <= start < s.end)
        location = section.location
        assert list(location.headings) == heading_path
        assert location.line_start <= line <= location.line_end
        assert location.line_start == title_line - (not block[0])  # an overlined title starts at its overline
