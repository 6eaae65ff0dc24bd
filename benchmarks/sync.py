"""Sync (issue 34): a 1,000-file Markdown folder (SciFact abstracts, one a file) ingested, 1% of its files
edited and the folder ingested again; the second index compared with a fresh ingest of the edited folder;
files deleted and pruned; then `--watch` timed over edits. Written to benchmarks/results/sync.md.

    .venv/bin/python benchmarks/sync.py [--files 1000] [--edits 20]

Every ingest is a whole `semsearch ingest` process: its wall time and its CPU time (user + system, itself and
its children) are both reported, as the machine is shared and wall time swings with the others' load."""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

from folders import contents, differences, edit, records, write_folder  # noqa: E402
from scale import command_line, markdown_table  # noqa: E402

SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
OUT = REPO / "benchmarks" / "results" / "sync.md"
SEMSEARCH = [sys.executable, "-m", "semsearch", "ingest"]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def timed(*args: str) -> tuple[float, float, str]:
    """(wall s, CPU s, stderr) of one `semsearch ingest` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([*SEMSEARCH, *args], env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ingest {args} failed: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr.strip().splitlines()[-1]


def text_of(index: Path, doc_id: str) -> str:
    from semsearch import Index

    with Index.open(index) as opened:
        found = opened.store.existing_ids([doc_id])
        return opened.store.get([found[doc_id][0]])[found[doc_id][0]]["text"] if found else ""


def watch_latencies(folder: Path, index: Path, paths: list[Path], edits: int) -> tuple[list[float], int]:
    """Seconds from an edited file's close to its new text in the index, for each edit; the exit status."""
    command = [*SEMSEARCH, str(folder), "--index", str(index), "--watch"]
    process = subprocess.Popen(command, env=ENV, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
    latencies = []
    try:
        while not any("watching" in line for line in lines):
            time.sleep(0.05)
        time.sleep(1)
        for n in range(edits):
            path = paths[(n * 37) % len(paths)]
            marker = f"Watched edit number {n} of the benchmark."
            edit(path, marker)  # written and closed here
            closed = time.perf_counter()
            doc_id = path.relative_to(folder).as_posix()
            while marker not in text_of(index, doc_id):
                if time.perf_counter() - closed > 60:
                    raise SystemExit(f"edit {n} not seen in 60 s: {lines}")
                time.sleep(0.02)
            latencies.append(time.perf_counter() - closed)
            time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        return latencies, process.wait(timeout=60)
    finally:
        process.kill()


def prune_check(index: Path, gone: list[str], sentences: dict[str, str]) -> dict[str, int]:
    """What of the gone files' documents can still be found: ids in the store, their rows in the vector index,
    keyword hits on a sentence of each, dense hits on it among every document."""
    from semsearch import Index

    with Index.open(index) as opened:
        live = set(opened.store.vector_pks().tolist())
        held = set(opened.vectors.ids().tolist())
        keyword = dense = 0
        for doc_id in gone:
            keyword += any(h.id == doc_id for h in opened.search(sentences[doc_id], k=10, mode="keyword"))
            dense += any(
                h.id == doc_id for h in opened.search(sentences[doc_id], k=len(opened), mode="dense")
            )
        return {
            "gone ids still stored": len(set(gone) & opened.store.ids()),
            "vector rows not of a stored passage": len(held - live),
            "keyword hits": keyword,
            "dense hits": dense,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args()
    if not SCIFACT.is_file():
        raise SystemExit(f"needs {SCIFACT} (the shared SciFact corpus)")
    # a note: an abstract's title and first three sentences (a whole abstract a file takes the first ingest
    # half an hour beside the other jobs on this machine)
    corpus = [
        (title, ". ".join(text.split(". ")[:3]).rstrip(".") + ".")
        for title, text in records(SCIFACT, args.files + 100)
    ]
    work = Path(tempfile.mkdtemp(prefix="semsearch-sync-"))
    folder, synced, fresh = work / "notes", work / "synced", work / "fresh"
    paths = write_folder(folder, corpus[: args.files], files=args.files)
    rows, lines = [], []

    wall, cpu, line = timed(str(folder), "--index", str(synced))
    rows.append({"run": "first ingest", "wall s": f"{wall:.1f}", "CPU s": f"{cpu:.1f}"})
    lines.append(line)
    first_wall, first_cpu = wall, cpu

    edited = paths[::100][: max(1, args.files // 100)]  # 1% of the files
    for n, path in enumerate(edited):
        edit(path, corpus[args.files + n][1])  # another abstract appended
    wall, cpu, line = timed(str(folder), "--index", str(synced))
    rows.append(
        {
            "run": f"second ingest, {len(edited)} files edited",
            "wall s": f"{wall:.1f}",
            "CPU s": f"{cpu:.1f}",
            "of the first (wall)": f"{wall / first_wall:.1%}",
            "of the first (CPU)": f"{cpu / first_cpu:.1%}",
        }
    )
    lines.append(line)
    wall, cpu, line = timed(str(folder), "--index", str(fresh))
    rows.append({"run": "fresh ingest of the edited folder", "wall s": f"{wall:.1f}", "CPU s": f"{cpu:.1f}"})
    lines.append(line)
    found = differences(contents(synced), contents(fresh))

    gone = paths[50::100][: max(1, args.files // 100)]
    sentences = {p.relative_to(folder).as_posix(): p.read_text().split("\n")[4].split(". ")[0] for p in gone}
    for path in gone:
        path.unlink()
    wall, cpu, line = timed(str(folder), "--index", str(synced), "--prune")
    rows.append(
        {"run": f"--prune, {len(gone)} files deleted", "wall s": f"{wall:.1f}", "CPU s": f"{cpu:.1f}"}
    )
    lines.append(line)
    findable = prune_check(synced, list(sentences), sentences)

    latencies, status = watch_latencies(folder, synced, [p for p in paths if p.exists()], args.edits)
    ordered = sorted(latencies)
    watch_row = {
        "edits": len(latencies),
        "min s": f"{ordered[0]:.2f}",
        "median s": f"{ordered[len(ordered) // 2]:.2f}",
        "90th s": f"{ordered[int(0.9 * (len(ordered) - 1))]:.2f}",
        "max s": f"{ordered[-1]:.2f}",
        "within 5 s": f"{sum(x <= 5 for x in latencies)}/{len(latencies)}",
        "exit status after Ctrl-C": status,
    }

    load = os.getloadavg()[0]
    out = [
        "# Sync: a folder ingested again, pruned and watched",
        "",
        f"`{command_line()}` ({args.files} Markdown files, each the title and first three sentences of a SciFact",
        f"abstract, made by the benchmark; defaults; load average {load:.1f} on 2 cores at the end: wall times swing with the",
        "others' jobs, CPU times much less).",
        "",
        "## Ingest again after editing 1% of the files",
        "",
        *markdown_table(rows),
        "Summary lines:",
        "",
        *(f"    {line}" for line in lines),
        "",
        "## The synced index against a fresh ingest of the edited folder",
        "",
        "Every document's id, title, text, metadata (less `modified`, the time a file was read) and passage",
        "spans compared exactly, and each passage's vector by cosine (int8 quantizes a batch's activations by",
        "their range: the same text beside others moves a little).",
        "",
        f"Differences: {len(found)}"
        + (": " + "; ".join(found[:10]) if found else " (the same documents, passages and spans)"),
        "",
        "## What of the pruned files can still be found",
        "",
        *markdown_table([findable]),
        "## --watch: from an edited file's close to its text in the index",
        "",
        *markdown_table([watch_row]),
    ]
    OUT.write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
