"""The command line: a thin layer over semsearch.Index. Heavy imports (torch, faiss) wait until a command
needs them, so `--help` and argument errors answer at once."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from .errors import SemsearchError

DEFAULT_INDEX = Path("indexes") / "default"
DRIFT_LIMIT_TEXT = "0.25"  # transforms.DRIFT_LIMIT, without importing numpy for --help


def index_option(func):
    return click.option(
        "--index",
        "index_path",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="SEMSEARCH_INDEX",
        default=DEFAULT_INDEX,
        show_default="indexes/default, or $SEMSEARCH_INDEX",
        help="The index directory.",
    )(func)


def wait_option(func):
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=10.0,
        show_default=True,
        help="Seconds to wait for another process writing to the same index before giving up.",
    )(func)


def index_type_option(func):
    return click.option(
        "--index-type",
        type=click.Choice(["flat", "hnsw", "ivf", "pq", "auto"]),
        help="The FAISS index: flat (exact), hnsw (graph), ivf (inverted lists), pq (compressed), auto (flat "
        "up to 50,000 documents at 128 dims, fewer when wider, hnsw above: exact where that is fast, a 1 ms "
        "search at 117k). Default: auto for a new index; refit: as now.",
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
            raise click.ClickException(str(error)) from None
        except KeyboardInterrupt:
            raise click.ClickException("interrupted; the index is as it was before this command") from None


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="semsearch")
def main() -> None:
    """semsearch: semantic search over your documents, with whitening fitted on your own corpus."""


@main.command()
@click.argument("corpus", type=click.Path(dir_okay=False, path_type=Path))
@index_option
@click.option(
    "--model",
    type=click.Path(path_type=Path),
    help="A local Hugging Face model directory (default: the bundled all-MiniLM-L6-v2).",
)
@click.option(
    "--pooling",
    type=click.Choice(["mean", "cls", "first-last-avg"]),
    help="How token vectors become one sentence vector (default: the model's own, else mean).",
)
@click.option(
    "--transform",
    type=click.Choice(["none", "pca", "whiten", "flow"]),
    help="Map applied to the encoder's vectors before indexing. Default: whiten with --power 0.5 and "
    "--dims 128 (chosen by the benchmark); --transform whiten alone is full whitening (power 1, all dims).",
)
@click.option("--dims", type=int, help="Keep the first K transformed dimensions (pca, whiten, flow).")
@click.option("--power", type=float, help="Whitening power P in [0, 1]: 1 full whitening, 0 a rotation.")
@click.option(
    "--rerank",
    type=click.IntRange(min=0),
    help="Queries re-score the top N candidates with the raw vectors unless they say otherwise "
    "(default: 100 for a sentence-embedding model with reduced dims, else 0).",
)
@flow_options
@index_type_option
@click.option(
    "--quantize",
    type=click.Choice(["none", "int8"]),
    help="The encoder's weights: int8 (default: 2x faster on CPU, nDCG@10 -0.002 on SciFact; README) or none "
    "(fp32, the model exactly).",
)
@click.option(
    "--backend",
    type=click.Choice(["onnx", "torch"]),
    help="What runs the encoder: onnx (default; ONNX Runtime on the model exported once into a cache, "
    "faster) or torch (for a model that cannot be exported; chosen by itself if export fails).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    help="Texts encoded at once (default: as many as fit 2,048 padded tokens, at most 512).",
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
    type=click.Choice(["never", "auto", "always"]),
    default="never",
    show_default=True,
    help="Refit the transform after adding: auto refits when the corpus has drifted from the fitted one.",
)
@wait_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
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
    quantize,
    backend,
    batch_size,
    id_field,
    text_field,
    title_field,
    vectors,
    vector_field,
    refit,
    wait,
    quiet,
):
    """Add the documents of a JSONL file to an index, creating it if needed.

    Each line is a JSON object with an id (`id` or `_id`), a `text` and optionally a `title`; every other
    field, and those of a nested `metadata` object, is kept as metadata for --where.

    \b
    Example:
        semsearch ingest corpus.jsonl --index indexes/papers --transform whiten --dims 256
    """
    from .documents import FieldNames, read_corpus, read_vector_file, validate_documents
    from .index import Index

    fields = FieldNames(id=id_field, text=text_field, title=title_field, vector=vector_field)
    if dims is not None and dims < 1:
        raise click.BadParameter(f"must be at least 1, got {dims}", param_hint="--dims")
    # Validate the whole file before an index is created or touched.
    width = read_vector_file(vectors).shape[1] if vectors is not None else None
    total = validate_documents(
        read_corpus(corpus, fields, vectors), path=corpus, vector_field=vector_field or "vector"
    )
    if vector_field is not None and width is None:
        width = len(next(read_corpus(corpus, fields)).vector)
    settings = dict(
        model="none" if width is not None and model is None else model,
        pooling=pooling,
        transform=transform,
        dims=dims,
        power=power,
        rerank=rerank,
        flow_epochs=flow_epochs,
        seed=seed,
        batch_size=batch_size,
        index_type=index_type,
        quantize=quantize,
        backend=backend,
        dim=width,
    )
    with (
        Index.open_or_create(index_path, wait=wait, **settings) as index,
        _progress(total, quiet, "encoding") as bar,
    ):
        report = index.ingest(corpus, fields, progress=bar.update, refit=refit, vectors=vectors)
    if report.resumed:
        click.echo(f"resumed: {report.resumed} vectors from an interrupted ingest were reused", err=True)
    if not quiet:
        click.echo(
            f"{report.added} documents added ({report.replaced} replaced, {report.unchanged} unchanged) to "
            f"{index_path} in "
            f"{report.seconds:.1f} s ({report.docs_per_second:.1f} docs/s); {len(index)} in the index",
            err=True,
        )
    if report.refitted:
        click.echo(f"refitted the transform (drift was {report.drift:.3f})", err=True)
    elif report.refit_advised:
        click.echo(
            f"the corpus has drifted from the fitted transform (drift {report.drift:.3f} > "
            f"{DRIFT_LIMIT_TEXT}): run `semsearch refit --index {index_path}`, or ingest with --refit auto",
            err=True,
        )


@main.command()
@click.argument("text", required=False)
@index_option
@click.option(
    "--vector",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Query with a vector made elsewhere instead of TEXT: an .npy file of one vector, or a JSON list.",
)
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many results.")
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
@click.option("--json", "as_json", is_flag=True, help="One JSON object per result and line.")
def query(text, index_path, vector, k, where, rerank, as_json):
    """Search an index for the documents closest in meaning to TEXT (or to a --vector).

    \b
    Example:
        semsearch query "how do vaccines work" -k 5 --where year>=2015
    """
    if k < 1:
        raise click.BadParameter(f"must be at least 1, got {k}", param_hint="-k")
    if (text is None) == (vector is None):
        raise click.UsageError("give the query TEXT or a --vector FILE (one of them)")
    from .index import Index

    with Index.open(index_path) as index:
        if vector is None:
            hits = index.search(text, k=k, where=list(where), rerank=rerank)
        else:
            from .documents import read_query_vector

            query_vector = read_query_vector(vector)[None]
            hits = index.search_vectors(query_vector, k=k, where=list(where), rerank=rerank)[0]
    for rank, hit in enumerate(hits, start=1):
        if as_json:
            click.echo(json.dumps(hit.to_json(), ensure_ascii=False))
        else:
            title = f"{hit.title}: " if hit.title else ""
            click.echo(f"{rank:>3}. [{hit.score:.3f}] {hit.id}  {_shorten(title + hit.text, 100)}")
            if hit.metadata:
                click.echo("      " + _shorten(", ".join(f"{k}={v}" for k, v in hit.metadata.items()), 100))
    if not hits and not as_json:
        click.echo("no results", err=True)


@main.command()
@index_option
@click.option(
    "--transform",
    type=click.Choice(["none", "pca", "whiten", "flow"]),
    help="The new transform (default: the same).",
)
@click.option("--dims", help="Keep the first K dimensions ('all': every one; default: as now).")
@click.option("--power", type=float, help="Whitening power P in [0, 1].")
@flow_options
@index_type_option
@wait_option
def refit(index_path, transform, dims, power, flow_epochs, seed, index_type, wait):
    """Fit a new transform from the stored statistics and rebuild the vector index from the kept raw vectors,
    without encoding anything again.

    \b
    Example:
        semsearch refit --index indexes/papers --transform pca --dims 128
    """
    from .index import Index

    with Index.open(index_path, wait) as index:
        seconds = index.refit(
            transform, _dims_option(dims), power, flow_epochs=flow_epochs, seed=seed, index_type=index_type
        )
        details = index.info()
    power = f", power {details['power']}" if details["transform"] == "whiten" else ""
    click.echo(
        f"refitted {index_path}: {details['transform']}, {details['dims']} dims{power}, "
        f"{details['documents']} documents in {seconds:.2f} s",
        err=True,
    )


@main.command()
@click.argument("ids", nargs=-1)
@index_option
@click.option("--where", multiple=True, metavar="FIELD=VALUE", help="Delete the documents that match (AND).")
@wait_option
def delete(ids, index_path, where, wait):
    """Delete documents by id (and/or --where); their vectors leave the statistics and the index.

    \b
    Example:
        semsearch delete doc-17 doc-42 --index indexes/papers
    """
    if not ids and not where:
        raise click.UsageError("name at least one ID or a --where filter")
    from .index import Index

    with Index.open(index_path, wait) as index:
        deleted = index.delete(list(ids), list(where))
        click.echo(f"deleted {deleted} documents; {len(index)} left in {index_path}", err=True)


@main.command()
@click.option(
    "--beir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A BEIR-format directory (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), or Cranfield's SMART files.",
)
@click.option(
    "--sts",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An STS Benchmark or SICK file: Spearman of cosine against the gold scores.",
)
@click.option("--split", default="test", show_default=True, help="The BEIR qrels split.")
@click.option(
    "--dims",
    "dims_text",
    default="16,32,64,128,256,all",
    show_default=True,
    help="Dimensions kept, comma separated; 'all' keeps every dimension.",
)
@click.option(
    "--transforms", default="none,pca,whiten", show_default=True, help="Transforms, comma separated."
)
@click.option("--powers", default="1,0.5,0", show_default=True, help="Whitening powers, comma separated.")
@click.option("--pooling", default="mean", show_default=True, help="Poolings, comma separated.")
@click.option(
    "--quantize", default="none", show_default=True, help="Encoder weights, comma separated: none, int8."
)
@click.option(
    "--backend",
    "backends",
    default="onnx",
    show_default=True,
    help="What runs the encoder, comma separated: onnx, torch.",
)
@click.option("--model", type=click.Path(path_type=Path), help="A local model directory (default: bundled).")
@click.option(
    "--rerank",
    default="0",
    show_default=True,
    help="Candidates re-scored with the raw vectors, comma separated (0: none).",
)
@click.option("--peers", is_flag=True, help="Also measure sentence-transformers and txtai on the same data.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where results go (default: benchmarks/results/DATASET/).",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("indexes") / "bench",
    show_default=True,
    help="Where encoded corpora are kept for reuse.",
)
def bench(
    beir,
    sts,
    split,
    dims_text,
    transforms,
    powers,
    pooling,
    quantize,
    backends,
    model,
    rerank,
    peers,
    out,
    work,
):
    """Measure quality against dimensions kept, for each transform and power, through the engine itself.

    \b
    Examples:
        semsearch bench --beir ../shared/data/scifact --dims 64,128,256,all --rerank 0,100
        semsearch bench --sts ../shared/data/stsb/sts-dev.csv --pooling mean,cls
    """
    from . import bench as benchmark

    if bool(beir) == bool(sts):
        raise click.UsageError("give exactly one of --beir DIR or --sts FILE")
    config = benchmark.BenchConfig(
        transforms=_split(transforms),
        dims=benchmark.parse_dims(dims_text),
        powers=[float(p) for p in _split(powers)],
        poolings=_split(pooling),
        quantize=_split(quantize),
        backends=_split(backends),
        model=str(model) if model else None,
        rerank=[int(r) for r in _split(rerank)],
        split=split,
        work=work,
        peers=peers,
        progress=lambda message: click.echo(message, err=True),
    )
    if beir:
        from .datasets import ensure_beir

        directory = ensure_beir(beir, work / "converted")
        rows = benchmark.run_beir(directory, config)
        name = beir.name
    else:
        rows = benchmark.run_sts(sts, config)
        name = sts.stem
    if peers:
        from . import peers as peer_systems

        rows += peer_systems.run(beir=directory if beir else None, sts=sts, config=config)
    command = _command_line(click.get_current_context())
    paths = benchmark.write_outputs(rows, out or Path("benchmarks") / "results" / name, command)
    click.echo(benchmark.markdown_table(rows, command))
    click.echo("wrote " + ", ".join(str(p) for p in paths), err=True)


def _command_line(ctx: click.Context) -> str:
    """The command as it would be typed to reproduce this run, every option spelled out."""
    import shlex

    parts = ["semsearch", ctx.info_name or ctx.command.name]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value is False or not isinstance(param, click.Option):
            continue
        parts.append(param.opts[0])
        if not param.is_flag:
            parts.append(shlex.quote(str(value)))
    return " ".join(parts)


def _dims_option(text: str | None) -> int | str | None:
    if text is None or text == "all":
        return text
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"{text!r} is not a positive integer or 'all'", param_hint="'--dims'")
    return int(text)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


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
        click.echo(f"{key:>15}: {value}")


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


if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
