import numpy as np
import pytest
from threadpoolctl import threadpool_info

from semsearch.threads import one_blas_thread


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_runs_numpys_blas_on_one_thread_and_gives_its_threads_back():
    """A calibration's products run on one BLAS thread (its workers would spin between them: writes.py), and
    the process's own count comes back after, nested or not, and after an error."""
    np.ones((64, 64)) @ np.ones((64, 64))  # numpy's BLAS loaded
    before = blas_threads()
    if not before:
        pytest.skip("no BLAS that threadpoolctl knows is loaded here: nothing to limit")
    with one_blas_thread():
        assert blas_threads() == [1] * len(before)
        with one_blas_thread():
            assert blas_threads() == [1] * len(before)
        assert blas_threads() == [1] * len(before)
        product = np.arange(12.0).reshape(3, 4) @ np.arange(8.0).reshape(4, 2)
    assert blas_threads() == before
    np.testing.assert_array_equal(product, np.arange(12.0).reshape(3, 4) @ np.arange(8.0).reshape(4, 2))
    with pytest.raises(KeyError), one_blas_thread():
        raise KeyError("out")
    assert blas_threads() == before
