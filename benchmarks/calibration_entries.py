"""The calibration of entries (retrieval/calibration_entries.py) on the long-document sets (defaults.py's build):
per set, the share of the calibration's sentences whose rarest term recurs in their document, whether the short
band was chosen by known items, and the real queries' nDCG@10 of dense alone, keyword alone and the default as
calibrated (each query at its length's band) against the default the cloze's short band alone gives (the bands
the record's ranks choose without the entries: the calibration before it asked them). Written to the
"Calibration of entries" section of benchmarks/results/defaults.md and to calibration-entries.json.

    python -m benchmarks calibration_entries [--sets NAME,...] [--work DIR] [--recalibrate]

Each set is ingested once with every default (64-token passages overlapping by 16) and kept in --work/indexes;
--recalibrate calibrates a kept index again (nothing re-encoded). Searched as overlap.py searches: k 100, a
document once (per_document 1)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from benchmarks.defaults import build
from benchmarks.suite import OUT, REPO, command_line, markdown_table

SETS = "wordnet-glossary,scifact-catalogue,scifact-mixed,scifact-mixed-b,cranfield-mixed,cranfield-single"
SECTION = "## Calibration of entries"
FIXED_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
CLAIM = "The calibration of entries: a glossary's or catalogue's short band chosen by known items, nDCG@10 on the long-document sets"


def measure(name: str, work: Path, recalibrate: bool) -> dict:
    from semsearch import Index
    from semsearch.evaluation.datasets import load_beir
    from semsearch.evaluation.metrics import evaluate_run
    from semsearch.ingest.creation import make_chunker
    from semsearch.ingest.pipeline import split
    from semsearch.retrieval import calibration as calibrating
    from semsearch.retrieval.bands import chosen_bands
    from semsearch.retrieval.calibration_entries import entry_terms
    from semsearch.retrieval.calibration_places import PlaceTargets
    from semsearch.retrieval.lengths import band_of

    data = load_beir(build(name, work / "sets")[0])
    path = work / "indexes" / name
    fresh = not (path / "manifest.json").is_file()
    with Index.create(path, chunk_tokens=64, chunk_overlap=16) if fresh else Index.open(path) as index:
        if fresh:
            index.ingest(data.corpus_path)
        elif recalibrate:
            index.recalibrate()
        ids = list(data.queries)
        texts = [data.queries[q] for q in ids]
        vectors = index.encoder.encode(texts)

        def ndcg(results) -> float:
            run = {q: {h.id: h.score for h in hits} for q, hits in zip(ids, results)}
            return round(evaluate_run(data.qrels, run, ["ndcg@10"])["ndcg@10"], 5)

        def searched(**how):
            return index.search_vectors(vectors, k=100, texts=texts, crop=0, per_document=1, **how)

        row = {"set": name, "documents": len(index), "passages": index.state.rows}
        row.update({side: ndcg(searched(mode=side)) for side in ("dense", "keyword")})
        record = calibrating.Calibration.from_json(index.state.calibration)
        by_band = {band_of(text) for text in texts}
        cloze = chosen_bands(
            {band: chosen["ranks"] for band, chosen in record.bands.items()},
            (record.mode, record.alpha),
            calibrating.MIN_QUERIES,
            record.ranks,
        )
        before = [None] * len(ids)
        for band in by_band:  # each query at its band's choice without the entries
            at = [i for i, text in enumerate(texts) if band_of(text) == band]
            found = index.search_vectors(
                vectors[at],
                k=100,
                texts=[texts[i] for i in at],
                crop=0,
                per_document=1,
                mode=cloze[band]["mode"],
                alpha=cloze[band]["alpha"],
            )
            for i, hits in zip(at, found):
                before[i] = hits
        row["default without entries"] = ndcg(before)
        row["default"] = ndcg(searched(mode=None))
        # the real queries' best fixed weight: how far the calibration's choice lies from it
        fixed = {alpha: ndcg(searched(mode="hybrid", alpha=alpha)) for alpha in FIXED_WEIGHTS}
        best = max(fixed, key=lambda alpha: (fixed[alpha], -abs(alpha - 0.5)))
        row["best fixed weight"] = f"{best:g}: {fixed[best]}"
        row["default - best fixed"] = round(row["default"] - fixed[best], 4)
        directory = index.directory
        cut = partial(split, chunker=make_chunker(directory.settings, lambda: directory.encoder))
        asking = calibrating.draw(directory.store, directory.loaded_vectors().count, cut)
        places = isinstance(asking.targets, PlaceTargets)
        sampled = asking.sampled
        documents = calibrating.documents_of(sampled, places, directory.store)
        row["recurrence"] = round(entry_terms(sampled, directory.store, documents)[1], 3)
        row["targets"] = record.targets
        short = record.bands["short"]
        row["short band"] = (
            f"{short['mode']} {short['alpha']:g}" if short["mode"] == "hybrid" else short["mode"]
        )
        row["short band without entries"] = (
            f"{cloze['short']['mode']} {cloze['short']['alpha']:g}"
            if cloze["short"]["mode"] == "hybrid"
            else cloze["short"]["mode"]
        )
        row["queries by band"] = " / ".join(
            f"{b} {sum(band_of(t) == b for t in texts)}" for b in sorted(by_band)
        )
        row["calibration s"] = record.seconds  # its own, as recorded
    return row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sets", default=SETS)
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "calibration-entries")
    parser.add_argument("--recalibrate", action="store_true")


def run(args: argparse.Namespace) -> None:
    rows = []
    for name in args.sets.split(","):
        print(f"{name} ...", file=sys.stderr, flush=True)
        rows.append(measure(name, args.work, args.recalibrate))
        print(rows[-1], file=sys.stderr, flush=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (OUT / "calibration-entries.json").write_text(
        json.dumps({"command": command_line(), "at": stamp, "rows": rows}, indent=1)
    )
    write(rows, command_line(), stamp)


def write(rows: list[dict], command: str, stamp: str) -> None:
    """The section in defaults.md, replacing the one there, else at the end."""
    path = OUT / "defaults.md"
    text = path.read_text()
    section = "\n".join(
        [
            SECTION,
            "",
            f"Command: `{command}` ({stamp}). The real queries' nDCG@10 (k 100, a document once); the default as "
            "calibrated (each query at its length's band) and as the record's ranks choose without the entries "
            "(the cloze's short band); recurrence: the share of the calibration's sampled sentences whose rarest "
            "term recurs in their document (under 0.15: a corpus of entries, whose short band known items choose); "
            "best fixed weight: the hybrid weight (0.1-0.9) at which every real query does best together.",
            "",
            *markdown_table(rows),
            "",
        ]
    )
    pattern = re.compile(rf"{re.escape(SECTION)}\n.*?(?=\n## |\Z)", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n"), text)
    else:  # after the passage overlap's section, which defaults.py keeps with what follows it
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)
