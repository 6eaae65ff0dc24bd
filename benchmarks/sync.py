"""Sync: a 1,000-file Markdown folder (SciFact abstracts, one a file) ingested, 1% of its files
edited and the folder ingested again; the second index compared with a fresh ingest of the edited folder;
files deleted and pruned; then `--watch` timed over edits. Written to benchmarks/results/sync.md.

    python -m benchmarks sync sync [--files 1000] [--edits 20]

Every ingest is a whole `semsearch ingest` process: its wall time and its CPU time (user + system, itself and
its children) are both reported, as the machine is shared and wall time swings with the others' load.

Part `concurrent-reads`: Readers beside a writer, for a while: what a search, an open or a check meets while another process writes.

    python -m benchmarks sync concurrent-reads [--seconds 150] [--work DIR] [--against SRC]

STS-B dev's 2,648 sentences are ingested once; then, for `--seconds`, one process writes in turn (upserts of 60
rewritten sentences, a delete of 10, `refit --calibrate`, upserts of 30 with `--refit auto`), while a reader process
runs two threads: one opens the index afresh and searches it (5 hits asked) and searches a long-lived
handle too; the other runs `check_index` (every file verified). Any exception, a search of fewer than 5 hits or
a check that finds damage is counted against its kind. `--against SRC` runs the same with another semsearch
(a `src` directory, its readers and its writer) after this one, for the figures before a change.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.suite import DATA, OUT, REPO, Rows, made_by, require, results_header, tests_helpers

tests_helpers()

from folders import contents, differences, edit, records, write_folder  # noqa: E402

from benchmarks.suite import markdown_table  # noqa: E402

CLAIM = "Folder sync equals a fresh ingest of the edited folder; readers beside a writer meet no error"

SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
SYNC_OUT = OUT / "sync.md"
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


def sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=20)


def sync(config: argparse.Namespace) -> Rows:
    """A folder re-ingested after edits equals a fresh ingest of it; prune; --watch (sync.md)."""
    require(SCIFACT, "SciFact corpus")
    # a note: an abstract's title and first three sentences (a whole abstract a file takes the first ingest
    # half an hour beside the other jobs on this machine)
    corpus = [
        (title, ". ".join(text.split(". ")[:3]).rstrip(".") + ".")
        for title, text in records(SCIFACT, config.files + 100)
    ]
    work = Path(tempfile.mkdtemp(prefix="semsearch-sync-"))
    folder, synced, fresh = work / "notes", work / "synced", work / "fresh"
    paths = write_folder(folder, corpus[: config.files], files=config.files)
    rows, lines = [], []

    wall, cpu, line = timed(str(folder), "--index", str(synced))
    rows.append({"run": "first ingest", "wall s": f"{wall:.1f}", "CPU s": f"{cpu:.1f}"})
    lines.append(line)
    first_wall, first_cpu = wall, cpu

    edited = paths[::100][: max(1, config.files // 100)]  # 1% of the files
    for n, path in enumerate(edited):
        edit(path, corpus[config.files + n][1])  # another abstract appended
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

    gone = paths[50::100][: max(1, config.files // 100)]
    sentences = {p.relative_to(folder).as_posix(): p.read_text().split("\n")[4].split(". ")[0] for p in gone}
    for path in gone:
        path.unlink()
    wall, cpu, line = timed(str(folder), "--index", str(synced), "--prune")
    rows.append(
        {"run": f"--prune, {len(gone)} files deleted", "wall s": f"{wall:.1f}", "CPU s": f"{cpu:.1f}"}
    )
    lines.append(line)
    findable = prune_check(synced, list(sentences), sentences)

    latencies, status = watch_latencies(folder, synced, [p for p in paths if p.exists()], config.edits)
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
        made_by(
            f"{config.files} Markdown files, each the title and first three sentences of a SciFact abstract, made by "
            f"the benchmark; defaults; load average {load:.1f} on 2 cores at the end: wall times swing with the "
            "others' jobs, CPU times much less"
        ),
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
    SYNC_OUT.write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return {"differences": found, "findable": findable, "watch": watch_row}


QUERIES = ("a man is playing a guitar", "a woman slicing an onion")
READER = """
import json, sys, threading, time
from semsearch import Index
from semsearch.operations.check import check_index

index, seconds, queries = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
stop, errors = time.time() + seconds, []
counts = {"opens and searches": 0, "long-lived searches": 0, "checks": 0}

def searches():
    long_lived = Index.open(index)
    while time.time() < stop:
        try:
            with Index.open(index) as fresh:
                got = fresh.search(queries[0], k=5)
                assert len(got) == 5, f"a fresh reader's search took {len(got)} hits of 5"
            counts["opens and searches"] += 1
            got = long_lived.search(queries[1], k=5)
            assert len(got) == 5, f"a long-lived reader's search took {len(got)} hits of 5"
            counts["long-lived searches"] += 1
        except Exception as error:
            errors.append(repr(error)[:200])
    long_lived.close()

def checks():
    while time.time() < stop:
        try:
            report = check_index(index)
            assert report.healthy, report.summary()
            counts["checks"] += 1
        except Exception as error:
            errors.append(repr(error)[:200])

threads = [threading.Thread(target=searches), threading.Thread(target=checks)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({"counts": counts, "errors": errors}))
"""


def semsearch(source: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run([sys.executable, "-m", "semsearch", *args], env=env, capture_output=True, text=True)


def readers_beside_writer(source: Path, first: Path, corpus: list[dict], work: Path, seconds: float) -> dict:
    """The readers (a process of their own, on `source`) beside the writes, on a copy of the index `first`."""
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(first, index)
    env = {**os.environ, "PYTHONPATH": str(source)}
    readers = subprocess.Popen(
        [sys.executable, "-c", READER, str(index), str(seconds), *QUERIES],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    rng, gone, writes, failed = random.Random(1), set(), 0, []
    stop = time.time() + seconds

    def batch(n: int, tag: str, deleting: bool = False) -> tuple[Path, list[str]]:
        chosen = rng.sample([d for d in corpus if d["_id"] not in gone], n)
        for d in chosen:
            (gone.add if deleting else gone.discard)(d["_id"])
        path = work / f"{tag}.jsonl"
        path.write_text("".join(json.dumps({**d, "text": f"{d['text']} ({tag})"}) + "\n" for d in chosen))
        return path, [d["_id"] for d in chosen]

    while time.time() < stop:
        writes += 1
        step = writes % 4
        if step == 0:
            args = ("ingest", str(batch(60, f"u{writes}")[0]), "--index", str(index), "-q")
        elif step == 1:
            args = ("delete", "--index", str(index), *batch(10, f"d{writes}", deleting=True)[1])
        elif step == 2:
            args = ("refit", "--index", str(index), "--calibrate")
        else:
            args = ("ingest", str(batch(30, f"v{writes}")[0]), "--index", str(index), "-q", "--refit", "auto")
        if (done := semsearch(source, *args)).returncode:
            failed.append(f"{args[0]}: {done.stderr.strip().splitlines()[-1:]}")
    read = json.loads(readers.communicate()[0])
    return {"writes": writes, "failed writes": failed, **read}


def concurrent_reads_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--work", type=Path, default=Path("/tmp/concurrent-reads"))
    parser.add_argument("--against", type=Path, help="another semsearch's src directory, run after this one")


def concurrent_reads(config: argparse.Namespace) -> Rows:
    """Readers beside a writer: what a search, an open or a check meets while another process writes (concurrent-reads.md)."""
    require(DATA / "stsb" / "sts-dev.csv", "STS-B dev")
    from semsearch.evaluation.longdoc_sets import sts_retrieval

    config.work.mkdir(parents=True, exist_ok=True)
    beir = sts_retrieval([DATA / "stsb" / "sts-dev.csv"], config.work / "converted")
    corpus = [json.loads(line) for line in (beir / "corpus.jsonl").open()]
    first = config.work / "first"
    if not (first / "manifest.json").is_file():
        shutil.rmtree(first, ignore_errors=True)
        done = semsearch(REPO / "src", "ingest", str(beir / "corpus.jsonl"), "--index", str(first), "-q")
        assert done.returncode == 0, done.stderr
    rows = {"this tree": readers_beside_writer(REPO / "src", first, corpus, config.work, config.seconds)}
    if config.against is not None:
        rows["--against"] = readers_beside_writer(
            config.against.resolve(), first, corpus, config.work, config.seconds
        )
    lines = results_header(
        "Readers beside a writer", f"{len(corpus):,} documents, {config.seconds:g} s a run", __doc__
    )
    lines += ["", "| semsearch | writes | opens and searches | long-lived searches | checks | errors |"]
    lines += ["|---|---|---|---|---|---|"]
    for name, row in rows.items():
        counted = row["counts"]
        lines.append(
            f"| {name} | {row['writes']} ({len(row['failed writes'])} failed) | "
            f"{counted['opens and searches']} | {counted['long-lived searches']} | {counted['checks']} | "
            f"{len(row['errors'])} |"
        )
    for name, row in rows.items():
        shown = row["errors"][:10] + row["failed writes"][:10]
        if shown:
            lines += ["", f"{name}, the first errors:", "", *[f"- `{error}`" for error in shown]]
    print("\n".join(lines))
    (OUT / "concurrent-reads.md").write_text("\n".join(lines) + "\n")
    return rows


PARTS = {
    "sync": (sync_arguments, sync),
    "concurrent-reads": (concurrent_reads_arguments, concurrent_reads),
}
