"""Vectors made elsewhere: a JSON list in a document's line, an .npy file whose row i is the i-th document,
a query vector given on the command line. Read as float32, finite, never unpickled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..storage import tuningqueries
from .given import parse_vector


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
        return parse_vector(array.tolist(), path=path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise DataError(f"expected an .npy file or a JSON list of numbers ({error})", path=path) from None
    return parse_vector(value, path=path)


def _rows(path: Path, array: np.ndarray, block: int = 4096, start: int = 0) -> Iterator[np.ndarray]:
    """The rows of an .npy file in order from row `start`, read a block at a time: a memory map read to the
    end would hold the whole file in this process's RSS (1.5 GB for a million 384-dim vectors)."""
    if not array.flags.c_contiguous or not isinstance(array, np.memmap):
        yield from array[start:]  # Fortran order: rows are not contiguous on disk; read through the map
        return
    width = array.shape[1]
    with open(path, "rb") as handle:
        handle.seek(array.offset + start * width * array.dtype.itemsize)
        for begin in range(start, len(array), block):
            count = min(block, len(array) - begin)
            yield from np.fromfile(handle, dtype=array.dtype, count=count * width).reshape(count, width)


def keep_tuning_queries(index_path: str | Path, path: str | Path, dim: int) -> int:
    """Sample queries for tuning (`ingest --tuning-queries`): an .npy file of raw query vectors of the index's
    width `dim`, a row each, held out of the corpus; kept in the index (storage/tuningqueries.py) for every
    build of its vector index to tune on. How many were kept."""
    array = read_vector_file(path)
    if array.shape[1] != dim:
        raise DataError(f"tuning queries of width {array.shape[1]}, expected {dim}", path=path)
    return tuningqueries.keep(index_path, array, path)
