import numpy as np
import pytest

from semsearch.threads import _threaded_openblas, one_blas_thread


def test_one_blas_thread_runs_numpys_openblas_on_one_thread_and_gives_its_threads_back():
    """A calibration's products run on one BLAS thread (its workers would spin between them: writes.py), and
    the process's own count comes back after, nested or not, and after an error."""
    np.ones((64, 64)) @ np.ones((64, 64))  # numpy's BLAS loaded
    libraries = _threaded_openblas()
    if not libraries:
        pytest.skip("numpy's BLAS here is not OpenBLAS on threads of its own: nothing to limit")
    before = [get() for get, _ in libraries]
    with one_blas_thread():
        assert [get() for get, _ in libraries] == [1] * len(libraries)
        with one_blas_thread():
            assert [get() for get, _ in libraries] == [1] * len(libraries)
        assert [get() for get, _ in libraries] == [1] * len(libraries)
        product = np.arange(12.0).reshape(3, 4) @ np.arange(8.0).reshape(4, 2)
    assert [get() for get, _ in libraries] == before
    np.testing.assert_array_equal(product, np.arange(12.0).reshape(3, 4) @ np.arange(8.0).reshape(4, 2))
    with pytest.raises(KeyError), one_blas_thread():
        raise KeyError("out")
    assert [get() for get, _ in libraries] == before
