"""Folders of Markdown notes made in code, for tests/test_sync.py and benchmarks/sync.py, and an index's
contents as `export --vectors` writes them, to compare a synced index with a fresh ingest of the same folder.

A note is a few records (title and text: the committed sample's docstrings, or SciFact abstracts) under
Markdown headings, so the longer ones are cut into several passages."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Metadata that says when a file was read, not what it holds: a re-ingest that did not read an untouched file
# keeps the time it was first read, a fresh ingest takes the file's time now.
TIMES = ("modified",)


def records(path: Path, count: int) -> list[tuple[str, str]]:
    """(title, text) of the first `count` documents of a JSONL corpus with a non-empty text."""
    found = []
    with open(path) as lines:
        for line in lines:
            doc = json.loads(line)
            if doc.get("text", "").strip():
                found.append((doc.get("title") or doc.get("id") or doc.get("_id"), doc["text"]))
                if len(found) == count:
                    break
    return found


def note(parts: Sequence[tuple[str, str]]) -> str:
    """A Markdown note: the first record's title as its heading, each record a section."""
    lines = [f"# {parts[0][0]}", ""]
    for title, text in parts:
        lines += [f"## {title}", "", text.strip(), ""]
    return "\n".join(lines)


def write_folder(root: Path, corpus: list[tuple[str, str]], files: int, per_note: int = 1) -> list[Path]:
    """`files` notes of `per_note` records each (taken in turn, around the corpus), in two subfolders."""
    paths = []
    for i in range(files):
        parts = [corpus[(i * per_note + j) % len(corpus)] for j in range(per_note)]
        path = root / f"part-{i % 2}" / f"note-{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(parts))
        paths.append(path)
    return paths


def edit(path: Path, words: str = "An edited paragraph, added later, about something else entirely.") -> None:
    path.write_text(path.read_text() + f"\n## Edited\n\n{words}\n")


def contents(index_path: Path) -> dict[str, dict[str, Any]]:
    """Each document's exported fields by id (metadata without TIMES; `vector` as an array, one row per
    passage)."""
    from semsearch import Index

    out = io.StringIO()
    with Index.open(index_path) as index:
        index.export(out, vectors=True)
    found = {}
    for line in out.getvalue().splitlines()[1:]:
        doc = json.loads(line)
        doc["metadata"] = {k: v for k, v in doc.get("metadata", {}).items() if k not in TIMES}
        doc["vector"] = np.atleast_2d(np.asarray(doc["vector"], dtype=np.float32))
        found[doc["id"]] = doc
    return found


def differences(synced: dict[str, dict], fresh: dict[str, dict], tolerance: float = 0.02) -> list[str]:
    """What differs between two indexes' contents: ids, any exported field but the vectors exactly, and the
    vectors (an int8 encoder quantizes each batch's activations by their range, so the same text encoded
    beside other texts moves a little) by cosine within `tolerance` of 1."""
    found = []
    if set(synced) != set(fresh):
        found.append(
            f"ids: only synced {sorted(set(synced) - set(fresh))[:5]}, only fresh "
            f"{sorted(set(fresh) - set(synced))[:5]}"
        )
    for doc_id in sorted(set(synced) & set(fresh)):
        a, b = synced[doc_id], fresh[doc_id]
        for key in sorted((set(a) | set(b)) - {"vector"}):
            if a.get(key) != b.get(key):
                found.append(f"{doc_id}: {key} differs")
        if a["vector"].shape != b["vector"].shape:
            found.append(f"{doc_id}: {a['vector'].shape[0]} passages, fresh {b['vector'].shape[0]}")
            continue
        cosine = np.sum(a["vector"] * b["vector"], 1) / (
            np.linalg.norm(a["vector"], axis=1) * np.linalg.norm(b["vector"], axis=1)
        )
        if cosine.min() < 1 - tolerance:
            found.append(f"{doc_id}: a vector at cosine {cosine.min():.4f} of the fresh one")
    return found
