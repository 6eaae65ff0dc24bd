import numpy as np
import pytest

from semsearch.transforms.stats import RunningStats


def anisotropic(rng, n=500, d=24):
    """Vectors in a narrow cone with a few dominant directions, like raw sentence vectors."""
    scales = np.geomspace(3.0, 1e-3, d)
    return (rng.normal(size=(n, d)) * scales + 5.0).astype(np.float32)


@pytest.mark.parametrize("batch_size", [1, 7, 64, 500])
def test_streaming_equals_two_pass(batch_size):
    rng = np.random.default_rng(0)
    x = anisotropic(rng)
    order = rng.permutation(len(x))
    stats = RunningStats(x.shape[1])
    for start in range(0, len(x), batch_size):
        stats.update(x[order[start : start + batch_size]])
    assert stats.count == len(x)
    np.testing.assert_allclose(stats.mean, x.astype(np.float64).mean(axis=0), rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        stats.covariance(), np.cov(x.astype(np.float64), rowvar=False), rtol=0, atol=1e-10
    )


def test_merge_is_exact():
    rng = np.random.default_rng(1)
    x = anisotropic(rng)
    left, right = RunningStats.of(x[:123]), RunningStats.of(x[123:])
    left.merge(right)
    whole = RunningStats.of(x)
    assert left.count == whole.count
    np.testing.assert_allclose(left.mean, whole.mean, atol=1e-12)
    np.testing.assert_allclose(left.comoment, whole.comoment, atol=1e-9)


def test_remove_downdates_to_the_remaining_vectors():
    rng = np.random.default_rng(2)
    x = anisotropic(rng)
    stats = RunningStats.of(x)
    stats.remove(x[100:160])
    rest = np.concatenate([x[:100], x[160:]]).astype(np.float64)
    assert stats.count == len(rest)
    np.testing.assert_allclose(stats.mean, rest.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(stats.covariance(), np.cov(rest, rowvar=False), atol=1e-9)


def test_save_and_load_round_trip(tmp_path):
    """Exactly, updated, merged and downdated; the comoment kept as its upper triangle (half the bytes of the
    whole matrix, which files written before hold and still load)."""
    from safetensors.numpy import save_file

    x = anisotropic(np.random.default_rng(3))
    stats = RunningStats.of(x[:200])
    stats.update(x[200:350])
    stats.merge(RunningStats.of(x[350:]))
    stats.remove(x[:40])
    stats.save(tmp_path / "stats.safetensors")
    loaded = RunningStats.load(tmp_path / "stats.safetensors")
    assert loaded.count == stats.count
    np.testing.assert_array_equal(loaded.mean, stats.mean)
    np.testing.assert_array_equal(loaded.comoment, stats.comoment)
    d = x.shape[1]
    assert (tmp_path / "stats.safetensors").stat().st_size < 8 * (d * (d + 1) // 2 + d + 1) + 512
    whole = {"count": np.array([stats.count]), "mean": stats.mean, "comoment": stats.comoment}
    save_file(whole, str(tmp_path / "before.safetensors"))  # as releases before wrote it
    np.testing.assert_array_equal(RunningStats.load(tmp_path / "before.safetensors").comoment, stats.comoment)


def test_wrong_width_is_refused():
    stats = RunningStats(4)
    with pytest.raises(Exception, match="shape"):
        stats.update(np.zeros((3, 5)))
