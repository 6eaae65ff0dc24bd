"""The library does what the commands do: `Index.ingest_into(PATH, folder)` and `Index.ingest(folder)` from
Python give the index `semsearch ingest folder --index PATH` gives (documents, passages, vectors, the files
recorded for `serve`, the calibration), first build and sync alike; and the surfaces above the facade (the CLI,
the server, MCP, LangChain) reach the index only through its methods."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import mixedfolder
from folders import contents, differences

from semsearch import Index, IngestOptions

SOURCE = Path(__file__).resolve().parents[1] / "src" / "semsearch"
SURFACES = [SOURCE / "cli", SOURCE / "server", SOURCE / "integrations"]
# what the Index holds of its open directory, for the evaluation, benchmarks and tests (DirectoryParts)
PARTS = {
    "store",
    "raw",
    "encoder",
    "transform",
    "vectors",
    "directory",
    "manifest",
    "generation_dir",
    "stats",
}
AN_HOUR = 3600


def settled(root: Path) -> None:
    """Every file's time an hour back, so that each ingest records it as sure (sync.UNSURE_NS) whenever it runs."""
    past = time.time() - AN_HOUR
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))


def command(*arguments: object) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "semsearch", *map(str, arguments)], capture_output=True, text=True, timeout=600
    )
    assert process.returncode == 0, process.stderr[-2000:]


def recorded(index_path: Path) -> tuple[dict, dict | None, int]:
    """The files the index records of each folder, its calibration (its timing left out), its passages."""
    with Index.open(index_path) as index:
        files = {root: index.store.recorded_files(root) for root in index.store.file_roots()}
        calibration = {k: v for k, v in (index.state.calibration or {}).items() if "seconds" not in k}
        return files, calibration, index.state.passages


def same_index(made: Path, commanded: Path) -> None:
    assert not differences(contents(made), contents(commanded))
    assert recorded(made) == recorded(commanded)


def test_the_library_ingests_and_syncs_a_folder_as_the_command_does(tmp_path):
    folder = mixedfolder.write_folder(tmp_path / "mixed")
    settled(folder)
    made, commanded = tmp_path / "made", tmp_path / "commanded"
    done = Index.ingest_into(made, folder, transform="whiten", dims=16)
    command("ingest", folder, "--index", commanded, "--transform", "whiten", "--dims", "16", "--quiet")
    assert done.report.added == done.documents > 5 and not (tmp_path / ".made.partial").exists()
    same_index(made, commanded)

    (folder / "notes" / "garden.md").write_text("# Tides\n\nThe moon pulls the oceans into two bulges.\n")
    (folder / "plain" / "readme.txt").unlink()
    (folder / "notes" / "added.md").write_text("# Glaciers\n\nIce sheets carve valleys as they move.\n")
    settled(folder)
    with Index.open(made) as index:
        report = index.ingest(folder, prune=True)
        assert report.added == 2 and len(index) == done.documents
    command("ingest", folder, "--index", commanded, "--prune", "--quiet")
    same_index(made, commanded)
    again = Index.ingest_into(made, folder, ingest=IngestOptions(prune=True))
    assert again.report.added == 0 and again.report.unchanged == again.documents


def test_the_surfaces_reach_the_index_only_through_its_methods():
    """No part of the open directory read through an Index, and no attribute set on one, in the CLI, the
    server, MCP or LangChain."""
    found = []
    for path in (p for surface in SURFACES for p in surface.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and (node.attr in PARTS or isinstance(node.ctx, ast.Store)):
                holder = node.value
                name = holder.id if isinstance(holder, ast.Name) else getattr(holder, "attr", "")
                if name == "index" or name.endswith("_index"):
                    found.append(f"{path.relative_to(SOURCE)}:{node.lineno} {ast.unparse(node)}")
    assert not found, found


def test_a_file_ingested_from_python_is_recorded_for_serve(tmp_path):
    """`Index.ingest(file)` records the file as the command does, so that `serve` serves it."""
    note = tmp_path / "notes" / "ferry.md"
    note.parent.mkdir()
    note.write_text("# Ferry\n\nThe ferry to the island leaves every hour from pier four.\n")
    with Index.create(tmp_path / "index") as index:
        index.ingest(note)
        assert index.served_files(["notes", "ferry.md"]) == [(str(note.parent.resolve()), "ferry.md")]
        assert index.served_files(["elsewhere.md"]) == []
