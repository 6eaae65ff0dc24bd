import numpy as np
import pytest

from semsearch.errors import SettingsError
from semsearch.settings import TransformKind, TransformSpec
from semsearch.transforms import fit_transform, load_transform
from semsearch.transforms.stats import RunningStats

D = 32


def cone(rng, n, d=D, rank=None):
    """Anisotropic vectors; with `rank`, confined to a rank-dimensional subspace (rank deficient)."""
    rank = rank or d
    basis = np.linalg.qr(rng.normal(size=(d, rank)))[0]
    coefficients = rng.normal(size=(n, rank)) * np.geomspace(2.0, 0.01, rank)
    return (coefficients @ basis.T + 3.0).astype(np.float32)


def whitened_covariance(spec, x):
    transform = fit_transform(spec, RunningStats.of(x))
    y = transform.apply(x).astype(np.float64)
    return transform, y.mean(axis=0), np.cov(y, rowvar=False)


def test_whitened_vectors_have_mean_zero_and_identity_covariance():
    x = cone(np.random.default_rng(0), 2000)
    transform, mean, cov = whitened_covariance(TransformSpec(TransformKind.WHITEN), x)
    assert transform.out_dim == D
    np.testing.assert_allclose(mean, 0, atol=1e-6)
    np.testing.assert_allclose(cov, np.eye(D), atol=1e-6)


def test_rank_deficient_corpus_keeps_only_spanned_directions():
    # 20 directions spanned out of 32: the 12 null eigenvalues must be dropped, not divided by.
    x = cone(np.random.default_rng(1), 1000, rank=20)
    transform, mean, cov = whitened_covariance(TransformSpec(TransformKind.WHITEN), x)
    assert transform.out_dim == 20
    np.testing.assert_allclose(cov, np.eye(20), atol=1e-6)


def test_corpus_smaller_than_the_dimension():
    x = cone(np.random.default_rng(2), 10)  # 10 vectors span at most 9 centred directions
    transform, mean, cov = whitened_covariance(TransformSpec(TransformKind.WHITEN, dims=16), x)
    assert transform.out_dim == 9
    np.testing.assert_allclose(mean, 0, atol=1e-6)
    np.testing.assert_allclose(cov, np.eye(9), atol=1e-3)  # the matrix at float16's values (linear.rounded)
    assert np.all(np.isfinite(transform.project(x)))


def test_first_k_columns_and_power():
    x = cone(np.random.default_rng(3), 1000)
    stats = RunningStats.of(x)
    pca = fit_transform(TransformSpec(TransformKind.PCA, dims=8), stats)
    half = fit_transform(TransformSpec(TransformKind.WHITEN, dims=8, power=0.5), stats)
    full = fit_transform(TransformSpec(TransformKind.WHITEN, dims=8), stats)
    variances = [np.var(t.apply(x).astype(np.float64), axis=0, ddof=1) for t in (pca, half, full)]
    # pca keeps the eigenvalues (descending), full whitening flattens them to 1, P=0.5 takes their square root.
    assert np.all(np.diff(variances[0]) < 0)
    # to float16's rounding of the matrix (a relative 2.4e-4, linear.rounded) where pca's is float32's
    np.testing.assert_allclose(variances[1], np.sqrt(variances[0]), rtol=1e-3)
    np.testing.assert_allclose(variances[2], 1, rtol=1e-3)


def test_pca_with_all_dims_is_a_rotation_of_the_centred_vectors():
    x = cone(np.random.default_rng(4), 500)
    y = fit_transform(TransformSpec(TransformKind.PCA), RunningStats.of(x)).apply(x)
    centred = x - x.astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), np.linalg.norm(centred, axis=1), rtol=1e-4)


def test_project_normalises_and_none_keeps_vectors():
    x = cone(np.random.default_rng(5), 100)
    identity = fit_transform(TransformSpec(TransformKind.NONE), RunningStats.of(x))
    projected = identity.project(x)
    np.testing.assert_allclose(np.linalg.norm(projected, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(projected, x / np.linalg.norm(x, axis=1, keepdims=True), atol=1e-6)


def test_save_and_load(tmp_path):
    x = cone(np.random.default_rng(6), 300)
    spec = TransformSpec(TransformKind.WHITEN, dims=12, power=0.5)
    transform = fit_transform(spec, RunningStats.of(x))
    transform.save(tmp_path)
    loaded = load_transform(tmp_path, transform.spec, D)
    np.testing.assert_array_equal(loaded.project(x), transform.project(x))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "whiten", "dims": 0}, "^dims must be at least 1"),
        ({"kind": "whiten", "power": 1.5}, "^power must be between 0 and 1"),
        ({"kind": "none", "dims": 8}, "^dims needs a transform that reduces dimensions"),
        ({"kind": "pca", "power": 0.5}, "power 0"),
    ],
)
def test_bad_specs(kwargs, message):
    with pytest.raises(SettingsError, match=message):
        TransformSpec(**kwargs)


def test_dims_larger_than_the_model():
    with pytest.raises(SettingsError, match="^dims 400 is larger than the model"):
        TransformSpec(TransformKind.WHITEN, dims=400).check_against(384)


@pytest.mark.parametrize("power", [1.0, 0.5, 0.0])
def test_drift_is_zero_on_the_fitted_corpus_and_grows_with_a_shift(power):
    rng = np.random.default_rng(5)
    x = cone(rng, 4000)
    stats = RunningStats.of(x[:2000])
    transform = fit_transform(TransformSpec(TransformKind.WHITEN, power=power), stats)
    assert transform.drift(stats) == pytest.approx(0, abs=1e-9)
    same_kind = RunningStats.of(x)  # twice as many documents from the same distribution
    assert transform.drift(same_kind) < 0.1
    shifted = RunningStats.of(x)
    shifted.update(cone(np.random.default_rng(6), 1000) + 0.5)  # another topic: other directions, other mean
    assert transform.drift(shifted) > 2 * transform.drift(same_kind)
    assert transform.drift(shifted) > 0.25


def test_identity_has_no_drift_measure():
    x = cone(np.random.default_rng(0), 100)
    assert (
        fit_transform(TransformSpec(TransformKind.NONE), RunningStats.of(x)).drift(RunningStats.of(x)) is None
    )


def test_cli_drift_limit_matches_the_library():
    """One definition (settings.py, light enough for the CLI to import for --help), the same everywhere."""
    from semsearch import cli, settings, transforms

    assert cli.DRIFT_LIMIT is transforms.DRIFT_LIMIT is settings.DRIFT_LIMIT == 0.25


def test_kinds_load_lazily_and_only_flow_imports_torch():
    """The registry imports a kind's module on first use: fitting whiten never loads torch; flow does."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import numpy as np\n"
        "from semsearch.settings import TransformSpec\n"
        "from semsearch.transforms.stats import RunningStats\n"
        "from semsearch.transforms import fit_transform, implementation\n"
        "x = np.random.default_rng(0).normal(size=(50, 4))\n"
        "fit_transform(TransformSpec('whiten'), RunningStats.of(x))\n"
        "assert 'torch' not in sys.modules\n"
        "assert implementation('flow').__name__ == 'FlowTransform'\n"
        "assert 'torch' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registry_maps_every_kind():
    from semsearch.transforms import IdentityTransform, LinearTransform, implementation

    assert implementation(TransformKind.NONE) is IdentityTransform
    assert implementation("pca") is implementation("whiten") is LinearTransform
    with pytest.raises(SettingsError, match="^transform must be one of none, pca, whiten, flow"):
        implementation("zca")
