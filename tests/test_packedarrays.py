"""storage/packedarrays.py: arrays packed without loss (bytes grouped by place, deflated), read back bit for bit;
files written before (plain tensors) read as they were; a packed tensor that does not inflate to what the
metadata says is an error, not an array of another shape."""

import json

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from semsearch.storage.packedarrays import PACKED, read_arrays, write_arrays
from semsearch.transforms.stats import RunningStats


def test_every_value_comes_back_bit_for_bit(tmp_path):
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, np.finfo(np.float64).max])
    arrays = {
        "float64": np.concatenate([rng.normal(size=1000), special]),
        "float32 fortran": np.asfortranarray(rng.normal(size=(40, 7)).astype(np.float32)),
        "int64": np.arange(-5, 300, dtype=np.int64),
        "int8": rng.integers(-127, 128, size=(9, 16), dtype=np.int8),
        "empty": np.zeros((0, 4), np.float32),
        "plain": np.array([7], np.int64),
    }
    write_arrays(tmp_path / "a.safetensors", arrays, {"note": "kept"}, plain=("plain",))
    read, metadata = read_arrays(tmp_path / "a.safetensors")
    assert metadata == {"note": "kept"} and set(read) == set(arrays)
    for name, array in arrays.items():
        assert read[name].dtype == array.dtype and read[name].shape == array.shape, name
        assert read[name].tobytes() == np.ascontiguousarray(array).tobytes(), name  # NaN's and -0's bits too
    with safe_open(
        str(tmp_path / "a.safetensors"), "numpy"
    ) as opened:  # `plain` as a release before reads it
        assert opened.get_tensor("plain").tolist() == [7]
        assert opened.get_tensor("float64").dtype == np.uint8
    # statistics' float64 values do not repeat; their sign and exponent bytes do
    stats = RunningStats.of(rng.normal(size=(500, 64)) * np.geomspace(1, 1e-3, 64))
    stats.save(tmp_path / "stats.safetensors")
    triangle = 8 * 64 * 65 // 2
    assert (tmp_path / "stats.safetensors").stat().st_size < triangle  # and the mean, the count, the header
    assert RunningStats.load(tmp_path / "stats.safetensors").comoment.tobytes() == stats.comoment.tobytes()


def test_files_written_before_read_as_they_were_and_a_bad_packed_tensor_is_an_error(tmp_path):
    before = {"mean": np.arange(3.0), "matrix": np.eye(3, dtype=np.float32)}
    save_file(before, str(tmp_path / "before.safetensors"))
    read, metadata = read_arrays(tmp_path / "before.safetensors")
    assert metadata == {} and all(np.array_equal(read[name], before[name]) for name in before)
    write_arrays(tmp_path / "packed.safetensors", {"values": np.arange(100.0)})
    with safe_open(str(tmp_path / "packed.safetensors"), "numpy") as opened:
        data = opened.get_tensor("values")
    for shape, dtype in (([101], "<f8"), ([100], "<f4"), ([100], "|O")):
        save_file(
            {"values": data},
            str(tmp_path / "bad.safetensors"),
            {PACKED: json.dumps({"values": [dtype, shape]})},
        )
        with pytest.raises(ValueError):
            read_arrays(tmp_path / "bad.safetensors")
