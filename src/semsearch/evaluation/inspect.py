"""`semsearch inspect`: the figures of what the transform does to a corpus's vectors, drawn with matplotlib.

- spectrum.png: the covariance eigenvalues (shares of their sum, log scale), raw against transformed;
- cosines.png: the cosines of random pairs of rows, raw against transformed, and of relevant pairs where the
  data has them (qrels, STS pairs scored 4 or more: `bench`);
- word-frequency.png: for the corpus's own tokens, frequency rank against the distance of the token's input
  embedding (the model's word_embeddings matrix) to the frequency-weighted mean of those embeddings, raw and
  after the transform (Li et al. 2020, section 2: frequent words near the origin, rare ones far);
- isotropy.md and isotropy.json: the figures' numbers (transforms/isotropy.py, and the pair cosines and the
  rank correlation of the word figure).

The transformed side is the index's transform; for an index without one (`none`), full whitening (P=1, every
dimension) fitted on its statistics, as what a refit would give."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..settings import NO_MODEL, TransformKind, TransformSpec
from ..storage.files import atomic_write_text
from ..transforms import RANK_TOLERANCE, Transform, fit_transform
from ..transforms.isotropy import SAMPLE_SEED, figures, sample_rows, spectrum, unit_covariance
from ..transforms.stats import RunningStats

if TYPE_CHECKING:
    from ..index import Index

RANDOM_PAIRS = 20_000
TOKEN_TEXTS = 5_000  # documents whose tokens are counted (a fixed sample of larger corpora)
MIN_TOKEN_COUNT = 2  # tokens seen once have no frequency to rank


@dataclass
class Material:
    """What the figures are drawn from: statistics of all raw rows, a sample of them, the transform, texts whose
    tokens are counted, the model directory (its input embeddings), and raw vectors of relevant pairs."""

    stats: RunningStats
    transform: Transform
    sample: np.ndarray
    texts: list[str]
    model_path: Path | None
    max_length: int = 512
    relevant: tuple[np.ndarray, np.ndarray] | None = None


def whitening_if_none(transform: Transform, stats: RunningStats) -> Transform:
    if transform.kind is not TransformKind.NONE or stats.count < 2:
        return transform
    return fit_transform(TransformSpec(TransformKind.WHITEN, None, 1.0), stats)


def from_index(index: Index) -> Material:
    live = index.store.vector_pks()
    stats = index.stats()
    rng = np.random.default_rng(SAMPLE_SEED)
    documents = index.store.all_pks()
    chosen = documents if len(documents) <= TOKEN_TEXTS else rng.choice(documents, TOKEN_TEXTS, replace=False)
    stored = index.store.get(chosen.tolist())
    texts = [" ".join(filter(None, (d["title"], d["text"]))) for d in stored.values()]
    model = None if index.settings.model == NO_MODEL else index.encoder.path
    return Material(
        stats,
        whitening_if_none(index.transform, stats),
        index.raw.read(sample_rows(live)),
        texts,
        model,
        index.settings.max_length,
    )


def for_beir(
    index: Index, qrels: dict[str, dict[str, int]], query_ids: list[str], queries: np.ndarray
) -> Material:
    """`bench`'s material for a BEIR set: its encoded index, and each judged relevant (query, document) pair,
    the document by its first passage."""
    material = from_index(index)
    position = {q: i for i, q in enumerate(query_ids)}
    judged = [(q, d) for q, docs in qrels.items() if q in position for d, grade in docs.items() if grade > 0]
    found = index.store.existing_ids(sorted({d for _, d in judged}))
    pairs = [(position[q], found[d][0]) for q, d in judged if d in found]
    if pairs:
        rows, pks = (np.array(side) for side in zip(*pairs))
        material.relevant = (queries[rows], index.raw.read(pks))
    return material


def for_pairs(
    encoder: Any, sentences: list[str], vectors: np.ndarray, related: tuple[np.ndarray, np.ndarray]
) -> Material:
    """`bench`'s material for an STS set: its sentences' raw vectors and the pairs `related` (row indices) as
    the relevant ones."""
    stats = RunningStats.of(vectors)
    transform = whitening_if_none(fit_transform(TransformSpec(TransformKind.NONE), stats), stats)
    sample = vectors[sample_rows(np.arange(len(vectors)))]
    relevant = (vectors[related[0]], vectors[related[1]]) if len(related[0]) else None
    return Material(stats, transform, sample, sentences, encoder.path, encoder.max_length, relevant)


def draw(material: Material, out: Path) -> dict[str, Any]:
    """Write the PNGs and the table into `out`; returns the table's numbers."""
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = figures(material.stats, material.transform, material.sample)
    transformed_label = _label(material.transform)
    table["transform"] = transformed_label
    _spectrum(material, out / "spectrum.png", transformed_label)
    table["pairs"] = _cosines(material, out / "cosines.png", transformed_label)
    table["word_frequency"] = _word_frequency(material, out / "word-frequency.png", transformed_label)
    atomic_write_text(out / "isotropy.json", json.dumps(table, indent=1) + "\n")
    atomic_write_text(out / "isotropy.md", markdown(table))
    return table


def markdown(table: dict[str, Any]) -> str:
    names = ("mean_cosine", "sd_cosine", "mean_norm", "effective_rank", "top1_variance")
    sides = [side for side in ("raw", "transformed") if side in table]
    lines = [
        f"# Isotropy over {table['rows']} {table['over']} (transformed: {table['transform']})",
        "",
        "| figure | " + " | ".join(sides) + " |",
        "|---|" + "---|" * len(sides),
    ]
    lines += [f"| {name} | " + " | ".join(_cell(table[s][name]) for s in sides) + " |" for name in names]
    for kind, values in table.get("pairs", {}).items():
        lines.append(
            f"| {kind} pairs: mean cosine | " + " | ".join(_cell(values.get(s)) for s in sides) + " |"
        )
    words = table.get("word_frequency") or {}
    if "raw" in words:
        lines.append(
            "| words: Spearman(frequency rank, distance to mean) | "
            + " | ".join(_cell(words.get(s)) for s in sides)
            + " |"
        )
    lines += ["", *(f"- {side}: {table[side]['method']}" for side in sides)]
    if words.get("note"):
        lines.append(f"- words: {words['note']}")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    return "" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _label(transform: Transform) -> str:
    spec = transform.spec
    if spec.kind is TransformKind.WHITEN:
        return f"whiten P={spec.effective_power:g}, {transform.out_dim} dims"
    return f"{spec.kind.value}, {transform.out_dim} dims"


def _spectrum(material: Material, path: Path, label: str) -> None:
    import matplotlib.pyplot as plt

    raw = spectrum(material.stats.covariance())
    projected = material.transform.project(material.sample).astype(np.float64)
    transformed = spectrum(unit_covariance(projected)) if len(projected) > 1 else np.zeros(0)
    figure, axes = plt.subplots(figsize=(6, 4))
    for shares, name in ((raw, "raw"), (transformed, f"transformed ({label})")):
        positive = shares[shares > RANK_TOLERANCE * shares.max()] if len(shares) else shares  # spanned only
        axes.plot(np.arange(1, len(positive) + 1), positive, label=name)
    axes.set_yscale("log")
    axes.set_xlabel("principal direction")
    axes.set_ylabel("share of the variance")
    axes.set_title("Eigenvalue spectrum")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _cosines(material: Material, path: Path, label: str) -> dict[str, dict[str, float]]:
    import matplotlib.pyplot as plt

    sides = {"raw": _unit(material.sample), "transformed": material.transform.project(material.sample)}
    rng = np.random.default_rng(SAMPLE_SEED)
    left, right = rng.integers(0, len(material.sample), (2, RANDOM_PAIRS))
    distinct = left != right
    left, right = left[distinct], right[distinct]
    found: dict[str, dict[str, np.ndarray]] = {"random": {}}
    for side, rows in sides.items():
        found["random"][side] = np.sum(rows[left] * rows[right], axis=1)
    if material.relevant is not None:
        a, b = material.relevant
        found["relevant"] = {
            "raw": np.sum(_unit(a) * _unit(b), axis=1),
            "transformed": np.sum(material.transform.project(a) * material.transform.project(b), axis=1),
        }
    figure, panels = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axes, side in zip(panels, ("raw", "transformed")):
        for kind, values in found.items():
            axes.hist(values[side], bins=60, range=(-1, 1), density=True, alpha=0.55, label=f"{kind} pairs")
        axes.set_title("raw" if side == "raw" else f"transformed ({label})")
        axes.set_xlabel("cosine")
        axes.legend()
    panels[0].set_ylabel("density")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return {
        kind: {side: round(float(v.mean()), 4) for side, v in values.items()}
        for kind, values in found.items()
    }


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def token_embeddings(model_path: Path | None) -> np.ndarray | None:
    """The model's input word embeddings from its safetensors weights (never a pickle), or None."""
    if model_path is None or not (Path(model_path) / "model.safetensors").is_file():
        return None
    from safetensors import safe_open

    with safe_open(str(Path(model_path) / "model.safetensors"), "np") as weights:
        name = next((k for k in weights.keys() if k.endswith("word_embeddings.weight")), None)  # noqa: SIM118
        return None if name is None else weights.get_tensor(name).astype(np.float64)


def _word_frequency(material: Material, path: Path, label: str) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    from ..encoding import load_tokenizer
    from .metrics import spearman

    embeddings = token_embeddings(material.model_path)
    if embeddings is None or not material.texts:
        return {"note": "no figure: the model has no word_embeddings in a model.safetensors, or no texts"}
    tokenizer = load_tokenizer(str(material.model_path), material.max_length)
    counts = Counter(token for ids in tokenizer(material.texts) for token in ids)
    frequent = [(t, c) for t, c in counts.most_common() if c >= MIN_TOKEN_COUNT and t < len(embeddings)]
    tokens = np.array([t for t, _ in frequent])
    weights = np.array([c for _, c in frequent], dtype=np.float64)
    ranks = np.arange(1, len(tokens) + 1)
    sides = {"raw": embeddings[tokens]}
    if embeddings.shape[1] == material.transform.in_dim:
        sides["transformed"] = material.transform.apply(embeddings[tokens]).astype(np.float64)
    distances = {}
    for side, vectors in sides.items():
        centre = np.average(vectors, axis=0, weights=weights)
        distances[side] = np.linalg.norm(vectors - centre, axis=1)
    figure, panels = plt.subplots(1, len(sides), figsize=(5 * len(sides), 4), squeeze=False)
    for axes, (side, values) in zip(panels[0], distances.items()):
        axes.scatter(ranks, values, s=3, alpha=0.4)
        axes.set_xscale("log")
        axes.set_xlabel("frequency rank in the corpus")
        axes.set_ylabel("distance to the mean token embedding")
        axes.set_title("raw" if side == "raw" else f"transformed ({label})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    result: dict[str, Any] = {"tokens": len(tokens)}
    result.update({side: round(spearman(ranks, values), 4) for side, values in distances.items()})
    if "transformed" not in sides:
        result["note"] = "the transform takes vectors of another width than the input embeddings: raw only"
    return result
