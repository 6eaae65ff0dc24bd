"""What several commands share: the options defined once (--index, --wait, --quiet, the index type and
recall target, the flow's; -k, --where, --rerank, a page's --offset and --generation, --json for query and
similar), the rule that turns a library setting into its flag, and the small printers of progress, sizes, a
calibration and what an import kept of its export."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from ..errors import SettingsError
from ..retrieval.calibration_age import RENEW, Age
from ..settings import DEFAULT_K, DEFAULT_WAIT, MAX_OFFSET, Choice, IndexType, check_k

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..ingest.pipeline import AddReport
    from ..operations.ingestoptions import Ingested

Command = TypeVar("Command", bound=Callable[..., Any])  # a click command's function, as a decorator gets it
DEFAULT_INDEX = Path("indexes") / "default"
INDEX_PATH = click.Path(file_okay=False, path_type=Path)


def index_option(func: Command) -> Command:
    """--index, defaulting to indexes/default (or $SEMSEARCH_INDEX)."""
    return click.option(
        "--index",
        "index_path",
        type=INDEX_PATH,
        envvar="SEMSEARCH_INDEX",
        default=DEFAULT_INDEX,
        show_default="indexes/default, or $SEMSEARCH_INDEX",
        help="The index directory.",
    )(func)


def required_index_option(func: Command) -> Command:
    """--index with no default (or $SEMSEARCH_INDEX): for commands that replace or copy a whole index."""
    return click.option(
        "--index",
        "index_path",
        type=INDEX_PATH,
        envvar="SEMSEARCH_INDEX",
        required=True,
        help="The index directory.",
    )(func)


def wait_option(func: Command) -> Command:
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=DEFAULT_WAIT,
        show_default=True,
        help="Seconds to wait for another process writing to the same index before giving up.",
    )(func)


def quiet_option(func: Command) -> Command:
    return click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")(func)


FLAGS = {"k": "-k", "dim": "--vectors"}


def flag_for(setting: str) -> str:
    """The CLI flag of a library setting: `batch_size` -> `--batch-size`."""
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


def checked(rule: Callable[[Any], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback applying a library rule (settings.py) to an option, as a usage error."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            return rule(value) if value is not None else value
        except SettingsError as error:
            raise click.BadParameter(error.detail, param_hint=param.opts[0]) from None

    return callback


def choice_option(
    flag: str, choices: type[Choice], help: str, **options: Any
) -> Callable[[Command], Command]:
    """An option whose values are a closed set from settings.py."""
    return click.option(flag, type=click.Choice(choices.names()), help=help, **options)


def index_type_option(func: Command) -> Command:
    return choice_option(
        "--index-type",
        IndexType,
        help="The FAISS index: flat (exact), flat-sq8 (exact over 8-bit codes: a quarter of the bytes), hnsw "
        "(graph), hnsw-sq8 (a graph over 8-bit codes: a third of the bytes), ivf (inverted lists), pq (compressed "
        "codes, candidates re-scored from the raw vectors), auto (flat-sq8 from 1,024 up to 50,000 documents at "
        "128 dims, fewer when wider, hnsw-sq8 above, flat below). "
        "Default: auto for a new index; refit: as now.",
    )(func)


def recall_target_option(func: Command) -> Command:
    return click.option(
        "--recall-target",
        type=click.FloatRange(min=0, max=1, min_open=True),
        help="recall@10 against exact search that hnsw(-sq8) / ivf / pq tune their efSearch / nprobe for at build, "
        "measured on a sample of the corpus's own vectors (default 0.95; refit: as now).",
    )(func)


def flow_options(func: Command) -> Command:
    func = click.option(
        "--seed", type=int, help="Seed of the flow's initialisation and data order (default 0)."
    )(func)
    return click.option(
        "--flow-epochs",
        type=click.IntRange(min=1),
        help="Passes over the corpus to train the flow (default 1).",
    )(func)


def dims_option(text: str | None) -> int | Literal["all"] | None:
    if text is None:
        return None
    if text == "all":
        return "all"
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"{text!r} is not a positive integer or 'all'", param_hint="'--dims'")
    return int(text)


def calibration_line(calibration: dict | None) -> str:
    if not calibration or "skipped" in calibration:
        why = calibration["skipped"] if calibration else "none recorded"
        return f"none, the default weight ({why}; `{RENEW}` tries again)"
    sides = ", ".join(f"{side} {value:.3f}" for side, value in calibration["sides"].items())
    return (
        f"{calibration['mode']}, alpha {calibration['alpha']:g}, chosen by {calibration['queries']} "
        f"pseudo-queries (seed {calibration['seed']}; {calibration['metric']} {sides}) over "
        f"{calibration['documents']:,} documents"
        + (f" ({calibration['passages']:,} passages)" if calibration.get("passages") else "")
        + f" in {calibration['seconds']:.1f} s"
        + (f"; {calibration['rule']}" if calibration.get("rule", "best") != "best" else "")
        + (f"; by query length: {bands_words(calibration['bands'])}" if calibration.get("bands") else "")
    )


def kept_line(kept: tuple[str, ...], index: Ingested) -> str:
    """What an import kept of its export, and how to make it again instead."""
    parts, searched = [], index.state.search_params
    if "calibration" in kept:
        line = calibration_line(index.state.calibration)
        parts.append(f"calibration: {line} (--recalibrate calibrates again)")
    if "transform" in kept:
        settings, power = index.settings, index.settings.spec.effective_power
        fitted = settings.transform + (f" P={power:g}" if settings.transform == "whiten" else "")
        parts.append(
            f"transform: {fitted} to {index.state.dims} dims as its source fitted it, drift "
            f"{index.state.drift or 0:.3f} from these documents (--refit always fits again)"
        )
    if "graph" in kept and index.state.graph_blocks:
        adds = sum(times for _, times in index.state.graph_blocks)
        parts.append(f"graph: its {adds} adds made again, searched with {searched}")
    if "lists" in kept:  # an ivf or pq index's cells (and pq's codebooks)
        structure = (index.state.index_structure or "").split(" ")[0]
        trained = "cells and codebooks" if "PQ" in structure else "cells"
        parts.append(f"lists: its {structure} {trained} as its source trained them, searched with {searched}")
    return "kept the export's " + " and its ".join(parts)


def bands_words(bands: dict) -> str:
    """Each band's length in keyword tokens, its choice and how many pseudo-queries made it (bands.py)."""
    shown, least = [], 1
    for name, band in bands.items():
        most = band["most"]
        length = f"{least}-{most}" if most is not None else f"{least}+"
        choice = band["mode"] if band["mode"] != "hybrid" else f"hybrid {band['alpha']:g}"
        shown.append(f"{name} ({length} words) {choice} ({band['queries']})")
        least = (most or 0) + 1
    return ", ".join(shown)


def age_line(recorded: dict | None, index_path: Path) -> str:
    """How much changed since the calibration (`info`'s calibration_age), and whether it is stale."""
    if recorded is None:
        return "not counted (no calibration, or one recorded before changes were counted)"
    words = stale_words(Age(**recorded))
    if not recorded["stale"]:
        return f"{words}: current"
    return f"{words}: the calibration is stale, run `{RENEW} --index {index_path}`"


def stale_words(age: Age) -> str:
    return (
        f"{age.changed:,} documents added, replaced or deleted since it was made on {age.documents:,} "
        f"({age.share:.1%}; stale above {age.limit:.0%})"
    )


def calibrated_again(before: dict | None, after: dict | None) -> bool:
    """Whether a write recorded a new calibration (not only its age counted on)."""

    def made(record: dict | None) -> dict | None:
        return {k: v for k, v in record.items() if k != "changed"} if record else record

    return after is not None and made(before) != made(after)


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def bar_of(quiet: bool, label: str, unit: str = "B", total: int | None = None) -> tqdm[Any]:
    from tqdm import tqdm

    scaled = unit == "B"
    return tqdm(
        total=total,
        desc=label,
        unit=unit,
        unit_scale=scaled,
        unit_divisor=1024 if scaled else 1000,
        disable=quiet,
        file=sys.stderr,
        dynamic_ncols=True,
    )


def advance_of(bar: tqdm[Any]) -> Callable[[int], None]:
    """The bar moved on by each count: a Progress (tqdm's own `update` answers whether it redrew)."""

    def advance(done: int) -> None:
        bar.update(done)

    return advance


def total_of(bar: tqdm[Any]) -> Callable[[int], None]:
    def total(size: int) -> None:
        bar.total = size
        bar.refresh()

    return total


def ingest_summary(
    report: AddReport, refused: int, documents: int, index_path: Path, ignored: int = 0
) -> str:
    """The last line of an ingest: read = added (replaced among them) + unchanged + moved + refused, whatever
    the source; files of no known type are counted apart."""
    read = report.added + report.unchanged + report.moved + refused
    passages = f"; {report.passages} passages" if report.passages > report.added else ""
    passed = f" ({ignored} files of unknown type ignored)" if ignored else ""
    moved = f", {report.moved} moved (place or metadata only, not encoded)" if report.moved else ""
    return (
        f"read {read} documents, {refused} refused{passed}: {report.added} documents added ({report.replaced} "
        f"replaced, {report.unchanged} unchanged{moved}{passages}) to {index_path} in {report.seconds:.1f} s "
        f"({rate(report)}); {documents} in the index"
    )


def rate(report: AddReport) -> str:
    """The summary's rate: in passages a second where the documents are few and long (a manual's passages are
    the work), else in documents a second."""
    from .encodingbar import counts_passages

    if report.passages > report.added and counts_passages(report.added) and report.seconds > 0:
        return f"{report.passages / report.seconds:.1f} passages/s"
    return f"{report.docs_per_second:.1f} docs/s"


def page_options(func: Command) -> Command:
    """--offset and --generation: where a page starts, and the generation the pages before it read."""
    func = click.option(
        "--generation",
        type=click.IntRange(min=0),
        help="Refuse to answer if the index was written since this generation (the one the first page read; "
        "`info` shows it): later pages then cannot repeat or skip a hit.",
    )(func)
    return click.option(
        "--offset",
        type=click.IntRange(0, MAX_OFFSET),
        default=0,
        show_default=True,
        help="Skip this many hits: page n of size k is --offset (n - 1) * k; each page continues the one before.",
    )(func)


def json_option(func: Command) -> Command:
    return click.option("--json", "as_json", is_flag=True, help="One JSON object per result and line.")(func)


def search_options(func: Command) -> Command:
    """-k, --where and --rerank, as query and similar take them."""
    for option in reversed(
        (
            click.option(
                "-k",
                "k",
                type=int,
                default=DEFAULT_K,
                show_default=True,
                callback=checked(check_k),
                help="How many results.",
            ),
            click.option(
                "--where",
                multiple=True,
                metavar="FIELD=VALUE",
                help="Filter on metadata before the search (repeatable, all must hold); also !=, <, <=, >, >=.",
            ),
            click.option(
                "--rerank",
                type=click.IntRange(min=0),
                help="Re-score the top N candidates by cosine of the kept raw encoder vectors (0: off; default: "
                "the index's own setting, see `info`).",
            ),
        )
    ):
        func = option(func)
    return func
