"""A folder laid out to be attacked through `serve`'s /files route, and every path form tried against it (the
test, tests/test_files_route.py, and the table, benchmarks/files_route.py, share them).

Around the ingested folder `docs/`: files outside it (`outside/`, the index's own), links out of it (a file, a
folder, and one swapped in after the ingest), a document deleted after the ingest, files in it the ingest never
recorded (made later, hidden). Each holds a marker of its own; no answer may hold any of them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

SECRET = b"SECRET-OUTSIDE-7f3a9c"
SECRET_DIR = b"SECRET-LINKED-FOLDER-51be02"
GONE = b"DELETED-DOCUMENT-0c44d1"
LATER = b"NEVER-INGESTED-9e1f7b"
HIDDEN = b"HIDDEN-FILE-3d8a20"
SQLITE = b"SQLite format 3"
PASSWD = b"root:x:0:0"
FORBIDDEN = (SECRET, SECRET_DIR, GONE, LATER, HIDDEN, SQLITE, PASSWD)


def write_pdf(path: Path, pages: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


@dataclass
class Layout:
    base: Path
    docs: Path
    index: Path
    secret: Path


def build(base: Path, semsearch: list[str]) -> Layout:
    """The folder, ingested by a real `semsearch ingest`, then changed as an attacker would hope."""
    outside, docs, index = base / "outside", base / "docs", base / "index"
    (outside / "dir").mkdir(parents=True)
    (docs / "sub").mkdir(parents=True)
    secret = outside / "secret.txt"
    secret.write_bytes(SECRET + b" the file outside the folder\n")
    (outside / "dir" / "secret2.txt").write_bytes(SECRET_DIR + b" a file in a folder linked in\n")
    (docs / "notes.md").write_text("# Notes\n\nThe zebra crossing rules.\n\n## More\n\nParking rules.\n")
    (docs / "sub" / "inner.md").write_text("# Inner\n\nA nested note about lighthouses.\n")
    (docs / "sub" / "gone.md").write_bytes(b"# Gone\n\n" + GONE + b" soon deleted from the index.\n")
    (docs / "sub" / "swap.md").write_text("# Swap\n\nReplaced by a link after the ingest.\n")
    (docs / "page.html").write_text('<html><body><h1 id="top">Page</h1><p>An HTML page.</p></body></html>')
    (docs / ODD_NAME).write_text("# Odd\n\nA name with a space, a hash, a question mark and an umlaut.\n")
    (docs / ".hidden.md").write_bytes(b"# Hidden\n\n" + HIDDEN + b"\n")
    write_pdf(docs / "manual.pdf", ["A manual's first page.", "Its second page on zebras.", "A third."])
    os.symlink(secret, docs / "link.txt")  # a file link out: the walk follows it, the route must not
    os.symlink(outside / "dir", docs / "linkdir")  # a folder link out
    done = subprocess.run(
        [*semsearch, "ingest", str(docs), "--index", str(index), "--quiet"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    from semsearch import Index

    with Index.open(index) as opened:
        assert opened.delete(["sub/gone.md"]) == 1
    (docs / "sub" / "swap.md").unlink()
    os.symlink(secret, docs / "sub" / "swap.md")  # swapped in after the ingest
    (docs / "later.md").write_bytes(b"# Later\n\n" + LATER + b"\n")  # inside, never recorded
    return Layout(base, docs, index, secret)


ODD_NAME = "odd name #1 \u00fc?.md"  # its address must be percent-encoded to be found

DOTS = [  # `..` as a path may spell it
    "..",
    "%2e%2e",
    "%2E%2E",
    ".%2e",
    "%2e.",
    "%252e%252e",
    "%c0%ae%c0%ae",
    "%ef%bc%8e%ef%bc%8e",
    "%u002e%u002e",
    "....",
    "..;",
    ".%00.",
]
SLASHES = ["/", "%2f", "%2F", "%252f", "%5c", "%255c", "%c0%af", "\\", "//", "/./"]


def forms(layout: Layout) -> list[tuple[str, str]]:
    """(what is tried, the request target) for every form, each meant to reach a byte it must not."""
    absolute = str(layout.secret)
    tried = []
    for dots in DOTS:
        for slash in SLASHES:
            step = dots + slash
            for target in ("outside/secret.txt", "index/documents.db"):
                tried.append((f"{dots} {slash} to {target}", "/files/" + step + target))
            tried.append((f"{dots} {slash} x8 to /etc/passwd", "/files/" + step * 8 + "etc/passwd"))
            tried.append((f"in a path: sub{slash}{dots}", f"/files/sub{slash}{step}{step}outside/secret.txt"))
    tried += [
        ("absolute", "/files/" + absolute),
        ("absolute, doubled slash", "/files//" + absolute.lstrip("/")),
        ("absolute, encoded slash", "/files/%2f" + absolute.lstrip("/")),
        ("absolute, every slash encoded", "/files/" + absolute.replace("/", "%2f")),
        ("absolute /etc/passwd", "/files//etc/passwd"),
        ("the tail of an absolute path", "/files/" + absolute.lstrip("/")),
        ("the folder's tail, then out", "/files/docs/../outside/secret.txt"),
        ("the folder's tail, encoded", "/files/docs/%2e%2e/outside/secret.txt"),
        ("Windows drive", "/files/C:%5cWindows%5cwin.ini"),
        ("Windows separators", "/files/..%5c..%5coutside%5csecret.txt"),
        ("the index's own file", "/files/index/documents.db"),
        ("the index's manifest", "/files/../index/manifest.json"),
        ("a file link out", "/files/link.txt"),
        ("a file link out, by the folder's tail", "/files/docs/link.txt"),
        ("a file in a folder link out", "/files/linkdir/secret2.txt"),
        ("a link swapped in after the ingest", "/files/sub/swap.md"),
        ("a link swapped in, as raw", "/files/sub/swap.md?raw=1"),
        ("a deleted document's file", "/files/sub/gone.md"),
        ("a deleted document's file, raw", "/files/sub/gone.md?raw=1"),
        ("a file made after the ingest", "/files/later.md"),
        ("a hidden file the walk left out", "/files/.hidden.md"),
        ("NUL after a name", "/files/notes.md%00"),
        ("NUL before a suffix", "/files/later.md%00.pdf"),
        ("a raw NUL byte", "/files/later.md\x00"),
        ("doubled slash inside", "/files/sub//gone.md"),
        ("a dot component", "/files/./later.md"),
        ("a dot component inside", "/files/sub/./gone.md"),
        ("a trailing slash", "/files/sub/gone.md/"),
        ("the folder itself", "/files/docs"),
        ("the folder itself, slash", "/files/docs/"),
        ("nothing", "/files/"),
        ("another case", "/files/LATER.MD"),
        ("a full URL as path", "/files/http://127.0.0.1/../outside/secret.txt"),
        ("the route's own path again", "/files/files/../outside/secret.txt"),
        ("the static mount, out", "/static/../../outside/secret.txt"),
        ("the static mount, encoded", "/static/%2e%2e/%2e%2e/%2e%2e/outside/secret.txt"),
    ]
    return tried


def served_right(layout: Layout) -> list[tuple[str, str, bytes]]:
    """(what, the request target, the bytes it must answer): the files the index holds, as asked."""
    docs = layout.docs
    return [
        ("a Markdown file, raw", "/files/notes.md?raw=1", (docs / "notes.md").read_bytes()),
        ("by its folder's tail", "/files/docs/notes.md?raw=1", (docs / "notes.md").read_bytes()),
        ("nested", "/files/sub/inner.md?raw=1", (docs / "sub" / "inner.md").read_bytes()),
        ("a PDF", "/files/manual.pdf", (docs / "manual.pdf").read_bytes()),
        ("an HTML file", "/files/page.html", (docs / "page.html").read_bytes()),
        ("an odd name, encoded", "/files/" + quote(ODD_NAME) + "?raw=1", (docs / ODD_NAME).read_bytes()),
    ]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def request(url: str, target: str, key: str | None = None) -> Answer:
    """One GET of `target` sent as it is written (no client normalises it), on a connection of its own."""
    host, port = url.removeprefix("http://").split(":")
    head = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode("utf-8", "surrogateescape") + b"\r\n")
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    top, _, body = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    headers: dict[str, str] = {}  # a header sent twice (two policies): its values joined by ", "
    for name, _, value in (line.partition(":") for line in lines[1:]):
        name = name.strip().lower()
        headers[name] = f"{headers[name]}, {value.strip()}" if name in headers else value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = dechunked(body)
    return Answer(status, headers, body)


def dechunked(body: bytes) -> bytes:
    out = b""
    while body:
        size, _, rest = body.partition(b"\r\n")
        length = int(size.split(b";")[0] or b"0", 16)
        if length == 0:
            break
        out, body = out + rest[:length], rest[length + 2 :]
    return out


def leaked(answer: Answer) -> list[bytes]:
    return [marker for marker in FORBIDDEN if marker in answer.body]


SEMSEARCH = [sys.executable, "-m", "semsearch"]
