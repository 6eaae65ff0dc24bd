"""The table of bad inputs (issue 30): every CLI command and every HTTP endpoint, driven through careless and
hostile inputs. Each must give one line (or one JSON error), exit 1 or 2 (the HTTP status 4xx), never a
traceback or a 500, and leave the index as it was. Used by tests/test_bad_inputs.py, and by
benchmarks/bad_inputs.py to write benchmarks/results/bad-inputs.md.

CLI rows: (command arguments; "{index}", "{vectors_index}", "{corpus:NAME}", "{file}", "{dir}", "{dangling}",
"{busy_port}" are filled in by `Fixtures`), and whether the input is bad (exit 1 or 2) or merely odd (exit 0 is
right: a filter no document meets answers nothing). HTTP rows: (method, path, query params, JSON body or raw
bytes, expected status)."""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HUGE = "9223372036854775808"  # 2**63: past SQLite's and FAISS's integers
HUGER = "18446744073709551616"  # 2**64
DEEP = "[" * 5000 + "]" * 5000  # deeper than Python's JSON parser goes (RecursionError)
ODD = "\u202e\ufeff\u200b\U0001f600"  # right-to-left override, BOM, zero-width space, an emoji

CORPORA: dict[str, bytes] = {
    "empty": b"",
    "blank": b"\n\n   \n",
    "deep": (DEEP + "\n").encode(),
    "deep-field": ('{"id": "a", "text": "t", "x": ' + DEEP + "}\n").encode(),
    "not-json": b'{"id": "a", "text": \n',
    "nan": b'{"id": "a", "text": "t", "x": NaN}\n',
    "nul-id": b'{"id": "a\\u0000b", "text": "t"}\n',
    "newline-id": b'{"id": "a\\nb", "text": "t"}\n',
    "dotted": b'{"id": "a", "text": "t", "a.b": 1}\n',
    "repeated": b'{"id": "a", "text": "t"}\n{"id": "a", "text": "u"}\n',
    "binary": b"\xff\xfe\x00garbage\n",
    "fake.gz": b"not gzip at all\n",
    "array": b"[1, 2, 3]\n",
    "no-text": b'{"id": "a", "title": ""}\n',
    "int-text": b'{"id": "a", "text": 5}\n',
    "bool-id": b'{"id": true, "text": "t"}\n',
    "huge-number": b'{"id": "a", "text": "t", "n": 1e999}\n',
    "surrogate": b'{"id": "a", "text": "\\ud800"}\n',
    "good": b'{"id": "fresh-1", "text": "a good document"}\n',
}

CLI: list[tuple[list[str], bool]] = [
    # query
    (["query", "", "--index", "{index}"], True),
    (["query", "   ", "--index", "{index}"], True),
    (["query", "--index", "{index}"], True),
    (["query", "x", "--vector", "{file}", "--index", "{index}"], True),
    (["query", "x", "-k", "0", "--index", "{index}"], True),
    (["query", "x", "-k", "-1", "--index", "{index}"], True),
    (["query", "x", "-k", "1e3", "--index", "{index}"], True),
    (["query", "x", "-k", "nan", "--index", "{index}"], True),
    (["query", "x", "-k", HUGE, "--mode", "keyword", "--index", "{index}"], True),
    (["query", "x", "-k", HUGE, "--mode", "hybrid", "--index", "{index}"], True),
    (["query", "x", "-k", HUGE, "--mode", "dense", "--index", "{index}"], True),
    (["query", "x", "--where", f"n={HUGER}", "--index", "{index}"], True),
    (["query", "x", "--where", f"year={HUGER}", "--index", "{index}"], False),
    (["query", "x", "--where", f"year>{HUGER}", "--index", "{index}"], False),
    (["query", "x", "--where", "year>nan", "--index", "{index}"], True),
    (["query", "x", "--where", "year<-inf", "--index", "{index}"], True),
    (["query", "x", "--where", "year>abc", "--index", "{index}"], True),
    (["query", "x", "--where", "=", "--index", "{index}"], True),
    (["query", "x", "--where", "", "--index", "{index}"], True),
    (["query", "x", "--where", "year==2000", "--index", "{index}"], True),
    (["query", "x", "--where", '"a.b"=1', "--index", "{index}"], True),
    (["query", "x", "--where", f"{ODD}=1", "--index", "{index}"], True),
    (["query", "x", "--where", "kind=\u0000", "--index", "{index}"], False),
    (["query", "x", "--mode", "bogus", "--index", "{index}"], True),
    (["query", "x", "--alpha", "2", "--index", "{index}"], True),
    (["query", "x", "--alpha", "nan", "--index", "{index}"], True),
    (["query", "x", "--fusion", "bogus", "--index", "{index}"], True),
    (["query", "x", "--rerank", "-1", "--index", "{index}"], True),
    (["query", "x", "--rerank", HUGE, "--index", "{index}"], False),  # every candidate re-scored
    (["query", "--vector", "{dir}/missing.npy", "--index", "{index}"], True),
    (["query", "--vector", "{file}", "--index", "{index}"], True),
    (["query", "--vector", "{dir}/wide.npy", "--index", "{index}"], True),
    (["query", "x", "--index", "{dir}/no-index-here"], True),
    (["query", "x", "--index", "{dangling}"], True),
    (["query", "x", "--index", "{file}"], True),
    (["query", "x", "--index", "{dir}/empty-dir"], True),
    (["query", "text", "--index", "{vectors_index}"], True),
    (["query", ODD, "--index", "{index}"], False),
    (["query", "\ud800", "--index", "{index}"], True),
    (["query", "word " * 50_000, "--index", "{index}", "-k", "1"], False),
    # ingest (into the shared index, which must not change, or into a new directory)
    *[
        (["ingest", "{corpus:" + name + "}", "--index", "{index}"], True)
        for name in CORPORA
        if name != "good"
    ],
    (["ingest", "{dir}/missing.jsonl", "--index", "{index}"], True),
    (["ingest", "{dir}", "--index", "{index}"], True),
    (["ingest", "{corpus:good}", "--index", "{index}", "--transform", "pca"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--dims", "0"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--dims", HUGER], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--power", "nan"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--power", "2"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--chunk-tokens", "-1"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--batch-size", "0"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--cluster", "not a url"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--cluster", "tcp://x:1", "--workers", "2"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--vectors", "{dir}/missing.npy"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--vectors", "{dir}/objects.npy"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--model", "{dir}/no-model"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--transform", "bogus"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--index-type", "bogus"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--recall-target", "nan"], True),
    (["ingest", "{corpus:good}", "--index", "{dir}/new", "--recall-target", "2"], True),
    (["ingest", "{corpus:good}", "--index", "{file}"], True),
    (["ingest", "{corpus:good}", "--index", "{dangling}"], True),
    # refit
    (["refit", "--dims", "abc", "--index", "{index}"], True),
    (["refit", "--dims", "0", "--index", "{index}"], True),
    (["refit", "--dims", HUGER, "--index", "{index}"], True),
    (["refit", "--power", "-1", "--index", "{index}"], True),
    (["refit", "--power", "nan", "--index", "{index}"], True),
    (["refit", "--transform", "bogus", "--index", "{index}"], True),
    (["refit", "--recall-target", "nan", "--index", "{index}"], True),
    (["refit", "--index", "{dir}/no-index-here"], True),
    # delete
    (["delete", "--index", "{index}"], True),
    (["delete", "no-such-id", "--index", "{index}"], True),
    (["delete", "", "--index", "{index}"], True),
    (["delete", "--where", "year>nan", "--index", "{index}"], True),
    (
        ["delete", "--where", "year!=-1", "--index", "{index}"],
        True,
    ),  # every document, no --yes off a terminal
    (["delete", "--where", f"year={HUGER}", "--index", "{index}"], False),  # none: deletes nothing
    (["delete", "x", "--index", "{dangling}"], True),
    # info, check
    (["info", "--index", "{dir}/no-index-here"], True),
    (["info", "--index", "{file}"], True),
    (["info", "--index", "{dangling}"], True),
    (["check", "--index", "{dir}/no-index-here"], True),
    (["check", "--index", "{dangling}"], True),
    (["check", "--drop-missing", "--index", "{index}"], True),
    # serve
    (["serve", "--port", "70000", "--index", "{index}"], True),
    (["serve", "--port", "{busy_port}", "--index", "{index}"], True),
    (["serve", "--host", "not a host", "--port", "0", "--index", "{index}"], True),
    (["serve", "--threads", "0", "--index", "{index}"], True),
    (["serve", "--index", "{dir}/no-index-here"], True),
    # bench
    (["bench", "--beir", "{dir}/no-such-dir"], True),
    (["bench", "--sts", "{file}", "--dims", "abc"], True),
    (["bench"], True),
]

ADMIN = "admin-key-for-bad-inputs"
Q = {"q": "parse a date"}
HTTP: list[tuple[str, str, dict[str, Any] | None, Any, int]] = [
    # GET /search
    ("GET", "/search", {}, None, 400),
    ("GET", "/search", {"q": ""}, None, 400),
    ("GET", "/search", {"q": "   "}, None, 400),
    ("GET", "/search", {**Q, "alpha": "0.5"}, None, 200),
    ("GET", "/search", {**Q, "alpha": "2"}, None, 400),
    ("GET", "/search", {**Q, "alpha": "nan"}, None, 400),
    ("GET", "/search", {**Q, "alpha": "abc"}, None, 400),
    ("GET", "/search", {**Q, "k": "0"}, None, 400),
    ("GET", "/search", {**Q, "k": "-1"}, None, 400),
    ("GET", "/search", {**Q, "k": "abc"}, None, 400),
    ("GET", "/search", {**Q, "k": "1e3"}, None, 400),
    ("GET", "/search", {**Q, "k": HUGE}, None, 400),
    ("GET", "/search", {**Q, "k": "9" * 5000}, None, 400),
    ("GET", "/search", {**Q, "rerank": "-1"}, None, 400),
    ("GET", "/search", {**Q, "mode": "bogus"}, None, 400),
    ("GET", "/search", {**Q, "fusion": "bogus"}, None, 400),
    ("GET", "/search", {**Q, "where": "year>nan"}, None, 400),
    ("GET", "/search", {**Q, "where": "nosuch=1"}, None, 400),
    ("GET", "/search", {**Q, "where": f"year={HUGER}"}, None, 200),
    ("GET", "/search", {**Q, "where": "="}, None, 400),
    ("GET", "/search", {"q": ODD}, None, 200),
    ("GET", "/search", {"q": "a\u0000b"}, None, 200),
    ("GET", "/search", {"q": "word " * 5_000, "k": "1"}, None, 200),
    # POST /search
    ("POST", "/search", None, b"{not json", 400),
    ("POST", "/search", None, b"\xff\xfe", 400),
    ("POST", "/search", None, DEEP.encode(), 400),
    ("POST", "/search", None, [], 400),
    ("POST", "/search", None, {"q": 5}, 400),
    ("POST", "/search", None, {**Q, "k": True}, 400),
    ("POST", "/search", None, {**Q, "k": 1.5}, 400),
    ("POST", "/search", None, {**Q, "k": [1]}, 400),
    ("POST", "/search", None, {**Q, "alpha": "nan"}, 400),
    ("POST", "/search", None, {**Q, "alpha": None}, 200),
    ("POST", "/search", None, {**Q, "alpha": [0.5]}, 400),
    ("POST", "/search", None, {**Q, "mode": 5}, 400),
    ("POST", "/search", None, {**Q, "where": 5}, 400),
    ("POST", "/search", None, {**Q, "where": [5]}, 400),
    ("POST", "/search", None, {**Q, "unknown": 1}, 400),
    # POST /search/batch
    ("POST", "/search/batch", None, {}, 400),
    ("POST", "/search/batch", None, {"queries": []}, 400),
    ("POST", "/search/batch", None, {"queries": [5]}, 400),
    ("POST", "/search/batch", None, {"queries": ["x"] * 1000}, 400),
    ("POST", "/search/batch", None, {"queries": "x"}, 400),
    # documents
    ("POST", "/documents", None, b"", 422),
    ("POST", "/documents", None, b"{not json", 422),
    ("POST", "/documents", None, [1, 2], 422),
    ("POST", "/documents", None, [{"id": "a"}], 422),
    ("POST", "/documents", None, [{"id": "a\u0000b", "text": "t"}], 422),
    ("POST", "/documents", None, [{"id": "a", "text": "t", "a.b": 1}], 422),
    ("POST", "/documents", None, DEEP.encode(), 422),
    ("POST", "/documents", None, ('{"id": "a", "text": "t", "x": ' + DEEP + "}").encode(), 422),
    ("DELETE", "/documents", {}, None, 400),
    ("DELETE", "/documents", {"where": "year!=-1"}, None, 409),
    ("DELETE", "/documents", {"where": "year!=-1", "confirm": "maybe"}, None, 400),
    ("DELETE", "/documents", {"where": "year>nan"}, None, 400),
    ("DELETE", "/documents", {"id": "no-such-id"}, None, 404),
    ("GET", "/documents/no-such-id", None, None, 404),
    ("GET", "/documents/a%00b", None, None, 404),
    ("DELETE", "/documents/no-such-id", None, None, 404),
    # routes
    ("GET", "/nosuch", None, None, 404),
    ("PUT", "/search", None, None, 405),
]


@dataclass
class Fixtures:
    """The files and directories the CLI rows name, made under `root` around an index."""

    root: Path
    index: Path
    vectors_index: Path

    def __post_init__(self):
        self.dir = self.root / "inputs"
        self.dir.mkdir(exist_ok=True)
        (self.dir / "empty-dir").mkdir(exist_ok=True)
        self.file = self.dir / "plain.txt"
        self.file.write_text("not an index, not a vector\n")
        self.dangling = self.dir / "dangling"
        if not self.dangling.is_symlink():
            self.dangling.symlink_to(self.dir / "nowhere")
        np.save(self.dir / "wide.npy", np.ones(7, dtype=np.float32))
        # An .npy that declares Python objects (its payload would be a pickle), written by hand: nothing pickles.
        with open(self.dir / "objects.npy", "wb") as handle:
            np.lib.format.write_array_header_1_0(
                handle, {"descr": "|O", "fortran_order": False, "shape": (1,)}
            )
            handle.write(b"\x80\x04N.")
        for name, data in CORPORA.items():
            (self.dir / f"{name}.jsonl" if not name.endswith(".gz") else self.dir / name).write_bytes(data)
        self.busy = socket.socket()
        self.busy.bind(("127.0.0.1", 0))
        self.busy.listen(1)

    def corpus(self, name: str) -> Path:
        return self.dir / (name if name.endswith(".gz") else f"{name}.jsonl")

    def fill(self, args: list[str]) -> list[str]:
        values = {
            "index": str(self.index),
            "vectors_index": str(self.vectors_index),
            "file": str(self.file),
            "dir": str(self.dir),
            "dangling": str(self.dangling),
            "busy_port": str(self.busy.getsockname()[1]),
        }

        def one(arg: str) -> str:
            arg = re.sub(r"\{corpus:([^}]+)\}", lambda m: str(self.corpus(m.group(1))), arg)
            return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), arg)

        return [one(arg) for arg in args]

    def close(self) -> None:
        self.busy.close()


def vectors_corpus(path: Path, count: int = 20, dim: int = 8) -> Path:
    """Documents that bring their own vectors: an index of them has no model."""
    rng = np.random.default_rng(0)
    lines = [
        json.dumps({"id": f"v{n}", "text": f"vector document {n}", "vector": rng.normal(size=dim).tolist()})
        for n in range(count)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def shown(args: list[str], width: int = 70) -> str:
    """An argument list as a table cell: control and odd characters escaped, long ones cut."""
    text = " ".join(json.dumps(a) if not a or " " in a or '"' in a else json.dumps(a)[1:-1] for a in args)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def first_error(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error")]
    return (errors or lines or [""])[0]


def traceback_in(text: str) -> bool:
    return "Traceback (most recent call last)" in text
