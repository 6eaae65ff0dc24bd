"""Vectors made elsewhere: a JSON list in a document's line, an .npy file whose row i is the i-th document,
a query vector given on the command line. Read as float32, finite, never unpickled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError


def _vector(value: Any, **where: Any) -> np.ndarray:
    """A JSON list of finite numbers as a float32 vector."""
    if not isinstance(value, list) or not value:
        raise DataError("the vector must be a non-empty list of numbers", **where)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise DataError("the vector must hold only numbers", **where)
    vector = np.asarray(value, dtype=np.float32)
    if not np.isfinite(vector).all():
        raise DataError(
            f"the vector has a value that is not finite at position {_first_bad(vector)}", **where
        )
    return vector


def _first_bad(vector: np.ndarray) -> int:
    return int(np.flatnonzero(~np.isfinite(vector))[0])


def read_vector_file(path: str | Path) -> np.ndarray:
    """An .npy file of vectors, one row per document, memory-mapped (never unpickled)."""
    path = Path(path)
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except (OSError, ValueError) as error:
        raise DataError(f"not a readable .npy array of numbers ({error})", path=path) from None
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise DataError(f"expected a 2-D array with one row per document, got shape {array.shape}", path=path)
    if array.dtype.kind not in "fiu":
        raise DataError(f"expected numbers, got dtype {array.dtype}", path=path)
    return array


def read_query_vector(path: str | Path) -> np.ndarray:
    """One query vector from an .npy file (1-D, or 2-D with one row) or a file holding a JSON list."""
    path = Path(path)
    if path.suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise DataError("no such file", path=path) from None
        except (OSError, ValueError) as error:
            raise DataError(f"not a readable .npy array of numbers ({error})", path=path) from None
        if array.ndim == 2 and len(array) == 1:
            array = array[0]
        if array.ndim != 1 or array.dtype.kind not in "fiu":
            raise DataError(
                f"expected one vector of numbers, got shape {array.shape}, {array.dtype}", path=path
            )
        return _vector(array.tolist(), path=path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise DataError(f"expected an .npy file or a JSON list of numbers ({error})", path=path) from None
    return _vector(value, path=path)


def _rows(path: Path, array: np.ndarray, block: int = 4096) -> Iterator[np.ndarray]:
    """The rows of an .npy file in order, read a block at a time: a memory map read to the end would hold
    the whole file in this process's RSS (1.5 GB for a million 384-dim vectors)."""
    if not array.flags.c_contiguous or not isinstance(array, np.memmap):
        yield from array  # Fortran order: rows are not contiguous on disk; read through the map
        return
    width = array.shape[1]
    with open(path, "rb") as handle:
        handle.seek(array.offset)
        for begin in range(0, len(array), block):
            count = min(block, len(array) - begin)
            yield from np.fromfile(handle, dtype=array.dtype, count=count * width).reshape(count, width)
