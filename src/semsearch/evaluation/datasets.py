"""Evaluation data: BEIR directories, STS files (STS Benchmark or SICK) and Cranfield's SMART files.

Everything the benchmark reads comes through here, with errors naming the file, line and field."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import DataError
from ..storage.files import atomic_write_text

CRANFIELD_FILES = ("cran.all.1400", "cran.qry", "cranqrel")


@dataclass
class BeirData:
    name: str
    corpus_path: Path
    queries: dict[str, str]  # only the queries that have judgements in the split
    qrels: dict[str, dict[str, int]]  # query id -> document id -> graded relevance


@dataclass(frozen=True)
class StsPair:
    sentence1: str
    sentence2: str
    score: float


# ---- BEIR ------------------------------------------------------------------------------------------


def load_beir(directory: str | Path, split: str = "test") -> BeirData:
    """corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv (header row or not; 3 columns, or TREC's 4)."""
    directory = Path(directory)
    corpus = directory / "corpus.jsonl"
    if not corpus.is_file():
        raise DataError("not a BEIR directory: no corpus.jsonl", path=directory)
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (directory / "qrels").glob("*.tsv"))
        raise DataError(
            f"no qrels for split {split!r} (found: {', '.join(available) or 'none'})", path=qrels_path
        )
    qrels = read_qrels(qrels_path)
    queries = {
        query_id: text for query_id, text in read_queries(directory / "queries.jsonl") if query_id in qrels
    }
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise DataError(
            f"{len(missing)} judged queries have no text, e.g. {missing[:3]}",
            path=directory / "queries.jsonl",
        )
    return BeirData(directory.name, corpus, queries, qrels)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            fields = line.rstrip("\n\r").split("\t") if "\t" in line else line.split()
            if not fields or fields == [""]:
                continue
            if len(fields) == 4:  # TREC: query, iteration, document, relevance
                fields = [fields[0], fields[2], fields[3]]
            if len(fields) != 3:
                raise DataError(
                    f"expected 3 tab-separated fields, found {len(fields)}", path=path, line=number
                )
            query_id, doc_id, relevance = (f.strip() for f in fields)
            try:
                grade = int(float(relevance))
            except ValueError:
                if number == 1:
                    continue  # a header row such as query-id, corpus-id, score
                raise DataError(
                    f"relevance {relevance!r} is not a number", path=path, line=number, field="score"
                ) from None
            qrels.setdefault(query_id, {})[doc_id] = grade
    if not qrels:
        raise DataError("no relevance judgements", path=path)
    return qrels


def read_queries(path: Path) -> Iterator[tuple[str, str]]:
    if not path.is_file():
        raise DataError("no queries.jsonl", path=path)
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                query = json.loads(line)
            except ValueError as error:
                raise DataError(f"not JSON ({error})", path=path, line=number) from None
            for field in ("_id", "text"):
                if not isinstance(query, dict) or field not in query:
                    raise DataError("missing", path=path, line=number, field=field)
            yield str(query["_id"]), str(query["text"])


def ensure_beir(path: str | Path, cache_dir: str | Path) -> Path:
    """A BEIR directory as it is, or Cranfield's SMART files converted once into `cache_dir`/NAME."""
    path = Path(path)
    if (path / "corpus.jsonl").is_file():
        return path
    if all((path / name).is_file() for name in CRANFIELD_FILES):
        out = Path(cache_dir) / path.name
        if not (out / "qrels" / "test.tsv").is_file():
            cranfield_to_beir(path, out)
        return out
    raise DataError(
        "neither a BEIR directory (corpus.jsonl, queries.jsonl, qrels/) nor Cranfield's SMART files "
        f"({', '.join(CRANFIELD_FILES)})",
        path=path,
    )


# ---- STS -------------------------------------------------------------------------------------------


def load_sts(path: str | Path) -> list[StsPair]:
    """STS Benchmark (score, sentence 1, sentence 2 in tab-separated fields 5-7, no quoting: some rows have
    9 fields) or SICK (a header row naming sentence_A, sentence_B, relatedness_score), detected."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such file", path=path)
    pairs = []
    with _open_text(path) as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        first = next(rows, None)
        if first is None:
            raise DataError("empty file", path=path)
        numbered: Iterable[list[str]]
        if "sentence_A" in first:  # SICK
            columns = {name: first.index(name) for name in ("sentence_A", "sentence_B", "relatedness_score")}
            left, right, score, start = (
                columns["sentence_A"],
                columns["sentence_B"],
                columns["relatedness_score"],
                2,
            )
            numbered = rows
        else:
            left, right, score, start = 5, 6, 4, 1
            numbered = _chain_first(first, rows)
        for number, row in enumerate(numbered, start):
            if not row or row == [""]:
                continue
            if len(row) <= max(left, right, score):
                raise DataError(
                    f"expected at least {max(left, right, score) + 1} tab-separated fields, found {len(row)}",
                    path=path,
                    line=number,
                )
            try:
                value = float(row[score])
            except ValueError:
                raise DataError(
                    f"score {row[score]!r} is not a number",
                    path=path,
                    line=number,
                    field=f"field {score + 1}",
                ) from None
            pairs.append(StsPair(row[left].strip(), row[right].strip(), value))
    if not pairs:
        raise DataError("no sentence pairs", path=path)
    return pairs


def _chain_first(first: list[str], rows: Iterator[list[str]]) -> Iterator[list[str]]:
    yield first
    yield from rows


# ---- Cranfield -------------------------------------------------------------------------------------


def read_smart(path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(id, {field letter: text}) records of a SMART file: `.I id` starts a record, `.T`, `.A`, `.B`, `.W`
    start its fields."""
    record_id: str | None = None
    fields: dict[str, list[str]] = {}
    current: str | None = None
    missing_id_line: int | None = None
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            marker = re.match(r"^\.([A-Z])(?:\s+(.*))?$", line.rstrip("\n"))
            if marker and marker.group(1) == "I":
                if record_id is not None:
                    yield record_id, _joined(fields)
                # cran.all.1400 ends with a bare `.I`: a record without an id is dropped if it stays empty.
                record_id, fields, current = (marker.group(2) or "").strip() or None, {}, None
                missing_id_line = number if record_id is None else None
            elif marker:
                if missing_id_line is not None:
                    raise DataError("a record without an id", path=path, line=missing_id_line, field=".I")
                current = marker.group(1)
                fields.setdefault(current, [])
            elif current is None:
                if line.strip():
                    raise DataError("text outside a .I record", path=path, line=number)
            else:
                fields[current].append(line.strip())
    if record_id is not None:
        yield record_id, _joined(fields)


def _joined(fields: dict[str, list[str]]) -> dict[str, str]:
    return {key: " ".join(part for part in lines if part) for key, lines in fields.items()}


def cranfield_to_beir(source: str | Path, out: str | Path) -> Path:
    """Cranfield (cran.all.1400, cran.qry, cranqrel) in BEIR layout, qrels as the `test` split.

    Two quirks: the queries' `.I` numbers skip values, while cranqrel numbers the queries 1..225 in file
    order; relevance codes run 1 (complete answer) to 4 (minimal interest), -1 for not relevant, so the
    graded relevance written is 5 - code and code -1 is left out."""
    source, out = Path(source), Path(out)
    corpus_lines = []
    for doc_id, fields in read_smart(source / "cran.all.1400"):
        title, text = fields.get("T", ""), fields.get("W", "")
        # .W repeats the title; keep it once. A few documents have no abstract: their title is the text.
        if title and text.startswith(title):
            text = text[len(title) :].strip()
        corpus_lines.append(json.dumps({"_id": doc_id, "title": title, "text": text or title or "(empty)"}))
    query_lines = [
        json.dumps({"_id": str(position), "text": fields.get("W", ""), "original_id": query_id})
        for position, (query_id, fields) in enumerate(read_smart(source / "cran.qry"), 1)
    ]
    qrel_lines = ["query-id\tcorpus-id\tscore"]
    with _open_text(source / "cranqrel") as handle:
        for number, line in enumerate(handle, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 3:
                raise DataError(
                    f"expected 3 fields, found {len(parts)}", path=source / "cranqrel", line=number
                )
            query, doc, code = parts
            if int(code) > 0:
                qrel_lines.append(f"{int(query)}\t{int(doc)}\t{5 - int(code)}")
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "corpus.jsonl", "\n".join(corpus_lines) + "\n")
    atomic_write_text(out / "queries.jsonl", "\n".join(query_lines) + "\n")
    # Written last: its presence marks a complete conversion.
    atomic_write_text(out / "qrels" / "test.tsv", "\n".join(qrel_lines) + "\n")
    return out


def _open_text(path: Path) -> TextIO:
    try:
        return open(path, encoding="utf-8", newline="")
    except OSError as error:
        raise DataError(f"cannot read ({error.strerror})", path=path) from None
