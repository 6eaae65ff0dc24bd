"""Named arrays in a safetensors file, each kept compressed without loss: its values' bytes grouped by place
(the first byte of every value, then the second, ...: the sign and exponent bytes of a float repeat from value to
value, the low bytes of its mantissa do not) and deflated (zlib). Read back, every value is the one written, bit
for bit. The statistics' float64 comoment 591 -> 525 KB and the transform's float32 matrix 197 -> 168 KB on a
set of 6,419 passages (about 15 of its 873 bytes a passage; benchmarks/results/bytes.md#long-documents).

A packed array is a uint8 tensor under its own name; the file's metadata `packed` (JSON) gives each one's dtype
and shape. A file written before (no `packed`) holds its arrays as they are and is read as it was; `plain` names
arrays written as they are, for readers of releases before (the calibration cache's)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Collection, Mapping
from pathlib import Path

import numpy as np

from .files import atomic_path

PACKED = "packed"  # the metadata's key: {name: [dtype, shape]} of the packed arrays
LEVEL = 6  # zlib's: 9 packs a 384-dim comoment 0.2% smaller in 6x the time (125 ms against 21, each write)


def pack(array: np.ndarray) -> np.ndarray:
    """The array's bytes grouped by place within a value, deflated, as uint8."""
    values = np.ascontiguousarray(array)
    grouped = values.reshape(-1).view(np.uint8).reshape(-1, values.dtype.itemsize).T
    return np.frombuffer(zlib.compress(np.ascontiguousarray(grouped).tobytes(), LEVEL), np.uint8)


def unpack(data: np.ndarray, dtype: str, shape: list[int]) -> np.ndarray:
    """The array `pack` made of these bytes (a stream that does not inflate to it raises ValueError)."""
    dtype_ = np.dtype(dtype)
    if dtype_.kind not in "biuf":
        raise ValueError(f"a packed array of {dtype}, not numbers")
    size = int(np.prod(shape, dtype=np.int64)) * dtype_.itemsize
    inflated = zlib.decompressobj()
    grouped = inflated.decompress(data.tobytes(), max(size, 1))  # 0 would be no limit
    if len(grouped) != size or inflated.unconsumed_tail or not inflated.eof:
        raise ValueError(f"a packed array that does not inflate to {dtype} {shape}")
    values = np.empty((size // dtype_.itemsize, dtype_.itemsize), np.uint8)  # writable, as a tensor read is
    values[:] = np.frombuffer(grouped, np.uint8).reshape(dtype_.itemsize, -1).T
    return values.view(dtype_).reshape(shape)


def write_arrays(
    path: Path,
    arrays: Mapping[str, np.ndarray],
    metadata: Mapping[str, str] | None = None,
    plain: Collection[str] = (),
) -> None:
    """Write the arrays packed (those named in `plain` as they are), atomically."""
    from safetensors.numpy import save_file

    kept, packed = {}, {}
    for name, array in arrays.items():
        # safetensors writes the raw buffer: a Fortran-ordered array (eigh returns those) would transpose.
        array = np.ascontiguousarray(array)
        if name in plain:
            kept[name] = array
        else:
            kept[name], packed[name] = pack(array), [array.dtype.str, list(array.shape)]
    with atomic_path(path) as tmp:
        save_file(kept, str(tmp), metadata={**(metadata or {}), PACKED: json.dumps(packed)})


def read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The arrays of a file `write_arrays` wrote (or written before, as they are) and its metadata."""
    from safetensors import safe_open

    with safe_open(str(path), "numpy") as opened:
        metadata = dict(opened.metadata() or {})
        names = opened.keys()  # a safetensors file is not a mapping
        arrays = {name: opened.get_tensor(name) for name in names}
    for name, (dtype, shape) in json.loads(metadata.pop(PACKED, "{}")).items():
        arrays[name] = unpack(arrays[name], dtype, shape)
    return arrays, metadata
