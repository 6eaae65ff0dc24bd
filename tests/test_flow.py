"""The flow transform: invertibility, exact log-determinants, likelihood training, isotropy, rank-deficient
input, determinism and persistence (the same outputs from a flow reloaded in another process)."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from semsearch.errors import IndexStateError, SettingsError
from semsearch.settings import TransformKind, TransformSpec
from semsearch.transforms import fit_transform, load_transform
from semsearch.transforms.flow import FlowTransform
from semsearch.transforms.flow_layers import AdditiveCoupling, Flow
from semsearch.transforms.stats import RunningStats


def anisotropic(n: int, d: int = 16, rank: int | None = None, seed: int = 0) -> np.ndarray:
    """Non-Gaussian vectors in a narrow cone: skewed coordinates, a large common offset, a spectrum of
    standard deviations from 3 to 0.003 (variances 10 to 1e-5); with `rank`, confined to a subspace."""
    rng = np.random.default_rng(seed)
    rank = rank or d
    basis = np.linalg.qr(rng.normal(size=(d, rank)))[0]
    latent = rng.normal(size=(n, rank))
    latent = latent + 0.5 * latent**2 - 0.5  # skewed: something for the flow to learn beyond whitening
    x = (latent * np.geomspace(3.0, 0.003, rank)) @ basis.T + 5.0
    return x.astype(np.float32)


def batches(x: np.ndarray, size: int = 100):
    return lambda: (x[i : i + size] for i in range(0, len(x), size))


def stats_of(x: np.ndarray) -> RunningStats:
    stats = RunningStats(x.shape[1])
    for batch in batches(x, 250)():
        stats.update(batch)
    return stats


def fitted(x: np.ndarray, progress=None, **spec) -> FlowTransform:
    transform = fit_transform(TransformSpec(TransformKind.FLOW, **spec), stats_of(x), batches(x), progress)
    assert isinstance(transform, FlowTransform)
    return transform


def eigenvalue_ratio(v: np.ndarray) -> float:
    values = np.linalg.eigvalsh(np.cov(v.astype(np.float64), rowvar=False))
    return float(values[-1] / values[0])


def randomised(flow: Flow) -> Flow:
    """Non-trivial parameters everywhere: the coupling networks start at zero, i.e. as the identity."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for step in flow.steps:
            if isinstance(step, AdditiveCoupling):
                for p in step.net.parameters():
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
        flow(torch.randn(64, flow.dim, generator=generator) * 2 + 1)  # actnorm initialisation
    return flow


@pytest.mark.parametrize("dim", [6, 7])
def test_inverse_undoes_forward(dim):
    flow = randomised(Flow(dim, levels=2, depth=2))
    x = torch.randn(50, dim) * 3
    with torch.no_grad():
        z, _ = flow(x)
        assert (z - x).abs().max() > 0.1
        torch.testing.assert_close(flow.inverse(z), x, atol=1e-4, rtol=0)


@pytest.mark.parametrize("dim", [6, 5])
def test_log_determinant_equals_autograd_jacobian(dim):
    flow = randomised(Flow(dim, levels=1, depth=2)).double()
    for row in torch.randn(3, dim, dtype=torch.float64):
        jacobian = torch.autograd.functional.jacobian(lambda v: flow(v[None])[0][0], row)
        with torch.no_grad():
            _, logdet = flow(row[None])
        sign, logabsdet = torch.linalg.slogdet(jacobian)
        assert sign != 0
        assert float(logdet[0]) == pytest.approx(float(logabsdet), abs=1e-8)


def test_training_lowers_held_out_nll(capfd):
    x = anisotropic(3000)
    rows: list[int] = []
    report = fitted(x, progress=rows.append, epochs=3).training_report
    # progress counts rows: every pass counts the whole corpus, held-out rows included, in many calls
    assert sum(rows) == 3 * 3000 and len(rows) > report["steps"]
    assert capfd.readouterr().err == ""  # the library draws no progress bar; the CLI does
    assert not report["held_out_is_training_data"]
    assert 250 <= report["held_out_rows"] <= 512
    assert report["steps"] == 3 * (2700 // 64) + 3  # the held-out tenth is not trained on
    # Standardised input is already Gaussian to second order (NLL ~1.42 per dim); the flow learns the skew.
    assert report["held_out_nll_after"] < report["held_out_nll_before"] - 0.05
    assert np.isfinite(report["final_train_nll"]) and report["train_seconds"] > 0


def test_outputs_are_closer_to_isotropic_than_inputs():
    rng = np.random.default_rng(2)
    # Variances 10 .. 1e-3 on 15 directions, one direction without any (rank deficient), a large offset.
    basis = np.linalg.qr(rng.normal(size=(16, 16)))[0]
    latent = rng.normal(size=(2000, 15)) * np.sqrt(np.geomspace(10, 1e-3, 15))
    x = (np.abs(latent) ** 1.5 * np.sign(latent) @ basis[:, :15].T + 20.0).astype(np.float32)
    transform = fitted(x)
    assert transform.out_dim == 15
    y = transform.apply(x)
    assert np.abs(y.mean(0)).max() < 0.25  # the raw mean is 20; the outputs' spread ~1
    assert eigenvalue_ratio(x[:, :15]) > 1e3  # the raw vectors' (over 15 of the 16 coordinates)
    assert eigenvalue_ratio(y) < 3


def test_rank_deficient_input_trains_on_the_spanned_directions():
    x = anisotropic(1500, d=24, rank=10)
    transform = fitted(x)
    assert transform.out_dim == transform.rank == 10
    assert np.isfinite(transform.apply(x)).all()
    report = transform.training_report
    assert all(
        np.isfinite(report[k]) for k in ("held_out_nll_before", "held_out_nll_after", "final_train_nll")
    )


def test_deterministic_for_a_seed_and_leaves_the_global_generator_alone():
    x = anisotropic(800)
    state = torch.random.get_rng_state()
    a, b, other = fitted(x, seed=3), fitted(x, seed=3), fitted(x, seed=4)
    assert torch.equal(torch.random.get_rng_state(), state)
    np.testing.assert_array_equal(a.apply(x), b.apply(x))
    assert not np.allclose(a.apply(x), other.apply(x))


def test_dims_keep_the_flow_outputs_principal_directions():
    x = anisotropic(800)
    full, reduced = fitted(x, seed=3), fitted(x, seed=3, dims=5)
    assert full.out_dim == 16 and full.pca is None
    y = reduced.apply(x)
    assert reduced.out_dim == 5 and y.shape == (800, 5) and reduced.spec.dims == 5
    # A rotation of the full flow's outputs onto their top 5 principal directions: same variance there.
    top = np.linalg.eigvalsh(np.cov(full.apply(x).astype(np.float64), rowvar=False))[::-1][:5]
    np.testing.assert_allclose(np.var(y.astype(np.float64), axis=0, ddof=1), top, rtol=1e-4)
    assert fitted(x, dims=40).out_dim == 16  # more than the rank: all of it, no PCA


def test_errors_are_settings_errors():
    x = anisotropic(100)
    spec = TransformSpec(TransformKind.FLOW)
    with pytest.raises(SettingsError, match="raw vectors"):
        fit_transform(spec, stats_of(x), None)
    with pytest.raises(SettingsError, match="at least 2 documents"):
        fit_transform(spec, stats_of(x[:1]), batches(x[:1]))
    line = np.outer(np.arange(10.0), np.ones(4)).astype(np.float32)  # rank 1
    with pytest.raises(SettingsError, match="at least 2 dimensions"):
        fit_transform(spec, stats_of(line), batches(line))


def test_saved_and_loaded_gives_identical_outputs_here_and_in_a_new_process(tmp_path):
    x = anisotropic(600)
    transform = fitted(x, dims=6)
    transform.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flow.json", "flow.safetensors"]
    config = json.loads((tmp_path / "flow.json").read_text())
    assert (config["levels"], config["depth"], config["hidden"]) == (3, 3, 32)
    assert (config["in_dim"], config["rank"], config["out_dim"]) == (16, 16, 6)
    assert config["training"] == transform.training_report
    assert config["training"]["epochs"] == 1 and "final_train_nll" in config["training"]

    expected = transform.apply(x)
    spec = TransformSpec(TransformKind.FLOW, dims=6)
    np.testing.assert_array_equal(load_transform(tmp_path, spec, 16).apply(x), expected)

    np.save(tmp_path / "x.npy", x)
    code = f"""
import numpy as np
from pathlib import Path
from semsearch.transforms import TransformKind, TransformSpec, load_transform
d = Path({str(tmp_path)!r})
t = load_transform(d, TransformSpec(TransformKind.FLOW, dims=6), 16)
np.save(d / "got.npy", t.apply(np.load(d / "x.npy", allow_pickle=False)))
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "got.npy", allow_pickle=False), expected)

    config["format_version"] = 99
    (tmp_path / "flow.json").write_text(json.dumps(config))
    with pytest.raises(IndexStateError, match="format 99"):
        load_transform(tmp_path, spec, 16)


@pytest.mark.slow
def test_a_flow_index_retrieves_on_a_scifact_subset(scifact_encoded, scifact_subset, tmp_path):
    """Refit to flow from the kept raw vectors (no encoding): it retrieves about as well as whitening, and
    the index reopened in another process answers identically."""
    from conftest import copy_index

    from semsearch import Index
    from semsearch.evaluation.metrics import evaluate_run

    _, queries, qrels = scifact_subset

    def ndcg(index: Index) -> float:
        results = index.search_many(list(queries.values()), k=10)
        run = {qid: {h.id: h.score for h in hits} for qid, hits in zip(queries, results)}
        return evaluate_run(qrels, run, ["ndcg@10"])["ndcg@10"]

    with Index.open(copy_index(scifact_encoded, tmp_path / "index")) as index:
        index.refit("whiten", "all", 1.0)
        whitened = ndcg(index)
        index.refit("flow", "all", seed=1)
        assert index.settings.transform == "flow"
        assert (index.generation_dir / "flow.safetensors").is_file()
        flow = ndcg(index)
        report = index.transform.training_report
        hits = index.search("stem cells differentiate into neurons", k=5)
    assert report["held_out_nll_after"] < report["held_out_nll_before"]
    # 300 documents in 384 dims: whitening (P=1) already loses much (0.62 here, raw 0.87); flow is near it.
    assert flow > 0.5 and flow > whitened - 0.1, (flow, whitened)
    script = (
        "import json, sys; from semsearch import Index\n"
        "hits = Index.open(sys.argv[1]).search('stem cells differentiate into neurons', k=5)\n"
        "print(json.dumps([[h.id, h.score] for h in hits]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "index")], capture_output=True, text=True, check=True
    )
    other = json.loads(out.stdout)
    assert [h.id for h in hits] == [i for i, _ in other]
    np.testing.assert_allclose([h.score for h in hits], [s for _, s in other], atol=1e-6)
