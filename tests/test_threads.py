import numpy as np
import pytest
from threadpoolctl import threadpool_info

from semsearch.threads import one_blas_thread


def blas_threads() -> list[int]:
    """The thread counts of the BLAS libraries not built on OpenMP (NumPy's)."""
    return [
        pool["num_threads"]
        for pool in threadpool_info()
        if pool["user_api"] == "blas" and pool.get("threading_layer") != "openmp"
    ]


def openmp_threads() -> list[int]:
    """The thread counts of OpenMP and the BLAS built on it (FAISS's)."""
    return [
        pool["num_threads"]
        for pool in threadpool_info()
        if pool["user_api"] == "openmp" or pool.get("threading_layer") == "openmp"
    ]


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


def test_one_blas_thread_leaves_faiss_searches_their_threads():
    """FAISS's own OpenBLAS is built on OpenMP, whose count its searches share: limiting that BLAS put a
    calibration's searches on one thread. Inside the block FAISS keeps every thread it had."""
    import faiss

    faiss.omp_set_num_threads(2)
    before = openmp_threads()
    with one_blas_thread():
        assert faiss.omp_get_max_threads() == 2
        assert openmp_threads() == before
    assert faiss.omp_get_max_threads() == 2


def test_one_faiss_thread_limits_faiss_inside_the_block_and_gives_its_threads_back():
    """A calibration runs its dense and keyword sides at once, a core each: FAISS's searches take one thread
    inside the block, the same answers, and every thread it had after, an error or not."""
    import faiss

    from semsearch.retrieval.vectorindex import one_faiss_thread

    rows = np.random.default_rng(3).standard_normal((2000, 16)).astype(np.float32)
    index = faiss.IndexFlatIP(16)
    index.add(rows)
    faiss.omp_set_num_threads(2)
    expected = index.search(rows[:64], 5)
    with one_faiss_thread():
        assert faiss.omp_get_max_threads() == 1
        found = index.search(rows[:64], 5)
    assert faiss.omp_get_max_threads() == 2
    np.testing.assert_array_equal(found[1], expected[1])
    with pytest.raises(KeyError), one_faiss_thread():
        raise KeyError("out")
    assert faiss.omp_get_max_threads() == 2
