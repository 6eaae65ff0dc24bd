"""sqlite_utils, imported without pandas: sqlite_utils imports pandas at import time where it is installed, only
to map pandas.Timestamp to TEXT in inserts the store never makes, and that cost every command 1-3 s to start.
Its recipes' date parser (dateutil.parser, for its own CLI's conversions, which the store never runs) is loaded
when first used, not at import: its patterns and time zones cost every command 0.02-0.03 CPU-s."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys

_hide = "pandas" not in sys.modules
if _hide:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # its import raises ImportError
found = None if "dateutil.parser" in sys.modules else importlib.util.find_spec("dateutil.parser")
if found is not None and found.loader is not None:
    found.loader = lazy = importlib.util.LazyLoader(found.loader)
    sys.modules["dateutil.parser"] = later = importlib.util.module_from_spec(found)
    lazy.exec_module(later)  # its code runs at the first use of one of its names
    vars(sys.modules["dateutil"])["parser"] = later  # `from dateutil import parser` takes it as it is
try:
    import sqlite_utils
finally:
    if _hide:
        del sys.modules["pandas"]

__all__ = ["database", "sqlite_utils"]


def database(connection: sqlite3.Connection) -> sqlite_utils.Database:
    """sqlite_utils' Database on the connection, without its plugins: their search of every installed
    package's metadata for entry points cost each process 0.02 CPU-s, and the store runs none."""
    return sqlite_utils.Database(connection, execute_plugins=False)
