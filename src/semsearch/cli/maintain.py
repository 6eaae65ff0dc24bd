"""`semsearch refit`, `delete` and `check`: change or verify an index in place."""

from __future__ import annotations

import json
import sys

import click

from ..settings import (
    TransformKind,
)
from .options import (
    calibration_line,
    choice_option,
    dims_option,
    flow_options,
    index_option,
    index_type_option,
    recall_target_option,
    wait_option,
)


@click.command()
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
    default=None,
    help="Choose hybrid search's keyword/vector weight (and whether to fuse) again, from pseudo-queries drawn "
    "from the documents as they are now (an index of 800 passages or more; the default with a refit); "
    "--no-calibrate keeps the recorded one. --calibrate with no other option only calibrates: the transform "
    "and vector index stay, nothing is re-encoded or rebuilt (seconds; what `info` advises when the "
    "calibration is stale).",
)
@wait_option
def refit(
    index_path, transform, dims, power, rerank, flow_epochs, seed, index_type, recall_target, calibrate, wait
):
    """Fit a new transform from the stored statistics and rebuild the vector index from the kept raw vectors,
    without encoding anything again; or, with --calibrate alone, only calibrate the fusion weight again.

    \b
    Example:
        semsearch refit --index indexes/papers --transform pca --dims 128
        semsearch refit --index indexes/papers --calibrate
    """
    from ..index import Index

    refitting = (transform, dims, power, rerank, flow_epochs, seed, index_type, recall_target)
    if calibrate and all(option is None for option in refitting):
        with Index.open(index_path, wait) as index:
            seconds = index.recalibrate()
            calibrated = index.state.calibration  # not info(): its whole description, 0.01 CPU-s of a renewal
        click.echo(
            f"calibrated {index_path} again in {seconds:.2f} s (transform and vector index kept): "
            f"{calibration_line(calibrated)}",
            err=True,
        )
        return
    calibrate = calibrate is not False
    with Index.open(index_path, wait) as index:
        seconds = index.refit(
            transform,
            dims_option(dims),
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
        click.echo(f"calibration: {calibration_line(details['calibration'])}", err=True)


@click.command()
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
    from ..index import Index

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


@click.command()
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
    from ..operations.check import check_index

    report = check_index(index_path, repair=repair, drop_missing=drop_missing, wait=wait)
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else "\n".join(report.lines()))
    if not report.healthy:
        raise click.ClickException(report.summary())
