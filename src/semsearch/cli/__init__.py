"""The command line: a thin layer over semsearch.Index, one module per command (or a few that belong
together). Each command parses its options, makes one library call and prints; library errors become one line
naming the flag at fault (the Group below). Heavy imports (torch, faiss) wait until a command needs them, so
`--help` and argument errors answer at once."""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import threading
from typing import Any

import click

from ..errors import SemsearchError, disk_full, os_error_message
from ..memory import release_large_blocks
from ..settings import DRIFT_LIMIT  # noqa: F401 (one definition, read by the tests through the CLI)
from .options import flag_for

YOUNG_OBJECTS = 10_000  # allocations between collections of the youngest generation (Python's default: 700)


class Group(click.Group):
    """Turns the library's own errors into one clear line and a non-zero exit, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SemsearchError as error:
            message = error.naming(flag_for(error.setting)) if error.setting else str(error)
            raise click.ClickException(message) from None
        except KeyboardInterrupt:
            raise click.ClickException("interrupted; the index is as it was before this command") from None
        except BrokenPipeError:
            # the output's reader left (`| head`): stop without a word, as SIGPIPE ends a tool
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush writes nowhere
            raise SystemExit(128 + signal.SIGPIPE) from None
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
    # The application's choices, made before transformers, tokenizers or NumPy load: never reach a model hub
    # (models are local directories), no tokenizer threads that a later fork would warn about, Arrow's buffers (a
    # table's row groups) from the C allocator, which gives them back: Arrow's own (mimalloc) keeps 20-30 MiB of
    # a Parquet file's reading resident for the rest of the ingest; and NumPy's OpenBLAS workers asleep as soon
    # as they have nothing to do (the least it takes, 2^4 cycles), not spinning 2^28 cycles on a free core after
    # each product and once NumPy loads: 0.03 CPU-s of every process, 0.9 of 20 small products apart (threads.py).
    for name, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("ARROW_DEFAULT_MEMORY_POOL", "system"),
        ("OPENBLAS_THREAD_TIMEOUT", "4"),
    ):
        os.environ.setdefault(name, value)
    release_large_blocks()  # freed blocks of vectors leave the RSS: an ingest's memory follows its index


def run() -> None:
    """The `semsearch` program: `main`, then the process ends without taking the interpreter apart. Freeing
    every module and object (the model's session, FAISS, NumPy) cost a query's process 0.3 of its 1.5 CPU
    seconds; what must happen at exit still does: other threads joined, exit handlers run, output flushed.
    The collector of reference cycles runs after YOUNG_OBJECTS allocations, not Python's 700: a command's
    imports and its calibration's small objects made 146 collections, 0.04-0.05 of a renewal's 1.3 CPU-s."""
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
    try:
        main(prog_name="semsearch")
        code: int | str | None = 0
    except SystemExit as exit:
        code = exit.code
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    if isinstance(code, str):  # as Python's own exit prints it
        print(code, file=sys.stderr)
    status = 0 if code is None else code if isinstance(code, int) else 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader gone (a closed pipe): as Python's own exit reports it
        status = status or 120
    os._exit(status)


# The commands' modules are light (their heavy imports wait until they run).
from ..evaluation.command import bench  # noqa: E402
from .copies import backup, export, restore  # noqa: E402
from .info import info, inspect  # noqa: E402
from .ingest import ingest  # noqa: E402
from .maintain import check, delete, refit  # noqa: E402
from .mcp import mcp  # noqa: E402
from .query import query  # noqa: E402
from .serve import serve  # noqa: E402
from .shard import shard  # noqa: E402
from .similar import similar  # noqa: E402

for command in (
    ingest,
    query,
    similar,
    refit,
    delete,
    info,
    inspect,
    check,
    export,
    serve,
    mcp,
    bench,
    backup,
    restore,
    shard,
):
    main.add_command(command)


if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
