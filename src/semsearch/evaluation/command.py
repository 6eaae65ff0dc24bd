"""`semsearch bench`: the command line of the benchmark (bench.py, report.py), registered by cli/. Heavy
imports wait until it runs."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

Command = TypeVar("Command", bound=Callable[..., Any])


def listed(flag: str, default: str, help: str, name: str | None = None) -> Callable[[Command], Command]:
    """An option taking a comma-separated list, its default shown."""
    names = [flag] if name is None else [flag, name]
    return click.option(*names, default=default, show_default=True, help=help)


@click.command()
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
@click.option(
    "--pairs",
    multiple=True,
    help="Sentence-pair files (text1<TAB>text2<TAB>label, senteval_cn: ATEC, BQ, LCQMC, PAWSX, STS-B), "
    "repeatable or comma separated: Su's whitening protocol for each model (--model, default: the bundled "
    "and multilingual where installed), beside his figures; to zh-pairs.md.",
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
@listed("--backend", "onnx", "What runs the encoder, comma separated: onnx, torch.", name="backends")
@click.option("--model", type=click.Path(path_type=Path), help="A local model directory (default: bundled).")
@listed("--rerank", "0", "Candidates re-scored with the raw vectors, comma separated (0: none).")
@listed("--modes", "dense", "Search modes, comma separated: dense, keyword, hybrid.")
@listed(
    "--alphas", "0.5", "hybrid: dense weights to sweep, comma separated (0: keyword only, 1: dense only)."
)
@listed("--fusions", "convex", "hybrid: fusions, comma separated: convex, rrf.")
@click.option(
    "--calibrate/--no-calibrate",
    default=True,
    show_default=True,
    help="With hybrid among --modes: also the weight the corpus calibrates for itself (pseudo-queries), "
    "measured on the real queries beside the sweep and its best weight.",
)
@listed(
    "--chunk-tokens",
    "default",
    "Passage lengths to encode the corpus with, comma separated ('default': semsearch's default passage length; 0: a "
    "vector per document).",
    name="chunk_tokens_text",
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
    beir: Path | None,
    sts: Path | None,
    pairs: tuple[str, ...],
    split: str,
    dims_text: str,
    transforms: str,
    powers: str,
    pooling: str,
    quantize: str,
    backends: str,
    model: Path | None,
    rerank: str,
    modes: str,
    alphas: str,
    fusions: str,
    calibrate: bool,
    chunk_tokens_text: str,
    peers: bool,
    out: Path | None,
    work: Path,
) -> None:
    """Measure quality against dimensions kept, for each transform and power, through the engine itself.

    \b
    Examples:
        semsearch bench --beir ../shared/data/scifact --dims 64,128,256,all --rerank 0,100
        semsearch bench --sts ../shared/data/stsb/sts-dev.csv --pooling mean,cls
        semsearch bench --beir ../shared/data/scifact --modes dense,keyword,hybrid --alphas 0.3,0.5,0.7
        semsearch bench --pairs ../shared/data/zh/ATEC/ATEC.test.data,../shared/data/zh/BQ/BQ.valid.data
    """
    from . import bench as benchmark
    from . import report

    if sum(map(bool, (beir, sts, pairs))) != 1:
        raise click.UsageError("give exactly one of --beir DIR, --sts FILE or --pairs FILE")
    if pairs:
        _bench_pairs(pairs, model, quantize, out)
        return
    source = beir or sts
    assert source is not None  # one of them, checked above
    config = benchmark.BenchConfig(
        transforms=_split(transforms),
        dims=benchmark.parse_dims(dims_text),
        powers=[float(p) for p in _split(powers)],
        poolings=_split(pooling),
        quantize=_split(quantize),
        backends=_split(backends),
        model=str(model) if model else None,
        rerank=[int(r) for r in _split(rerank)],
        modes=_split(modes),
        alphas=[float(a) for a in _split(alphas)],
        fusions=_split(fusions),
        calibrate=calibrate,
        chunk_tokens=[None if c == "default" else int(c) for c in _split(chunk_tokens_text)],
        split=split,
        work=work,
        peers=peers,
        figures=(out or Path("benchmarks") / "results" / source.stem) / "isotropy",
        progress=lambda message: click.echo(message, err=True),
    )
    if beir:
        from .datasets import ensure_beir

        directory = ensure_beir(beir, work / "converted")
        rows = benchmark.run_beir(directory, config)
        name = beir.name
    else:
        rows = benchmark.run_sts(source, config)
        name = source.stem
    if peers:
        from . import peers as peer_systems

        rows += peer_systems.run(beir=directory if beir else None, sts=sts, config=config)
    command = _command_line(click.get_current_context())
    paths = report.write_outputs(rows, out or Path("benchmarks") / "results" / name, command)
    click.echo(report.markdown_table(rows, command))
    click.echo("wrote " + ", ".join(str(p) for p in paths), err=True)


def _bench_pairs(pairs: tuple[str, ...], model: Path | None, quantize: str, out: Path | None) -> None:
    from ..storage.files import atomic_write_text
    from .pairs import available_models, pairs_markdown, run_pairs

    files = [Path(part) for value in pairs for part in _split(value)]
    missing = [str(file) for file in files if not file.is_file()]
    if missing:
        raise click.BadParameter(f"no such file: {', '.join(missing)}", param_hint="--pairs")
    models = [str(model)] if model else available_models()
    rows = run_pairs(files, models, quantize=_split(quantize)[0], progress=lambda m: click.echo(m, err=True))
    command = _command_line(click.get_current_context(), only={"pairs", "model", "quantize", "out"})
    target = (out or Path("benchmarks") / "results") / "zh-pairs.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    text = pairs_markdown(rows, command)
    atomic_write_text(target, text)
    click.echo(text)
    click.echo(f"wrote {target}", err=True)


def _command_line(ctx: click.Context, only: set[str] | None = None) -> str:
    """The command as it would be typed to reproduce this run, every option (or those `only` names) spelled
    out."""
    parts = ["semsearch", ctx.info_name or ctx.command.name or "bench"]
    for param in ctx.command.params:
        if only is not None and param.name not in only:
            continue
        value = ctx.params.get(param.name)
        if value is None or value is False or value == () or not isinstance(param, click.Option):
            continue
        if isinstance(value, tuple):  # a repeatable option, as given
            parts += [part for item in value for part in (param.opts[0], shlex.quote(str(item)))]
            continue
        parts.append(param.opts[0])
        if not param.is_flag:
            parts.append(shlex.quote(str(value)))
    return " ".join(parts)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
