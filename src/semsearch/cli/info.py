"""`semsearch info` and `inspect`: describe an index in words and in figures."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .options import (
    age_line,
    calibration_line,
    human,
    index_option,
)


@click.command()
@index_option
@click.option("--json", "as_json", is_flag=True, help="The same as one JSON object.")
def info(index_path, as_json):
    """Describe an index: documents, model, pooling, transform, dims, sizes, dates."""
    from ..index import Index

    with Index.open(index_path) as index:
        details = index.info()
    if as_json:
        click.echo(json.dumps(details, indent=2))
        return
    for key, value in details.items():
        if key == "bytes":
            value = ", ".join(f"{name} {human(size)}" for name, size in value.items())
        elif key == "calibration":
            value = calibration_line(value)
        elif key == "calibration_age":
            value = age_line(value, index_path)
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


@click.command()
@index_option
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Where the figures go."
)
def inspect(index_path, out):
    """Draw what the transform does to the index's vectors: spectrum.png, cosines.png, word-frequency.png,
    and isotropy.md / isotropy.json with their numbers (an index without a transform: against full whitening)."""
    from ..evaluation.inspect import draw, from_index
    from ..index import Index

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
