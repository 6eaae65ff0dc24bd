"""sqlite_utils, imported without pandas: sqlite_utils imports pandas at import time where it is installed, only
to map pandas.Timestamp to TEXT in inserts the store never makes, and that cost every command 1-3 s to start."""

from __future__ import annotations

import sys

_hide = "pandas" not in sys.modules
if _hide:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # its import raises ImportError
try:
    import sqlite_utils
finally:
    if _hide:
        del sys.modules["pandas"]

__all__ = ["sqlite_utils"]
