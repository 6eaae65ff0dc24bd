"""Does the isotropy diagnostic predict whether whitening helps?

For every data set here and encoder (the bundled model with mean and cls pooling, a small random-initialised
BERT), the corpus is encoded once (the engine's Encoder, onnx int8 as an index's default; documents cut at the
model's max_length, not chunked), the isotropy figures computed as an index computes them (transforms/isotropy.py:
the raw side from RunningStats, the transformed side from the projected rows) and the quality measured with
the raw vectors and whitened ones (full whitening P=1 with every dimension, and the index default P=0.5 with
128), fitted on the corpus's own vectors as an index fits them. Retrieval is exact cosine (numpy); STS is the
Spearman correlation of the pairs' cosines with the gold scores. The advice rule (transforms/advice.py) is then
scored against the measured gain: hits and misses.

    python -m benchmarks isotropy [--work indexes/isotropy]

Writes benchmarks/results/isotropy.md and .json, and the inspect figures of SciFact and STS-B to
benchmarks/results/isotropy/. Encodings are cached in the work directory (delete it to encode again).
SICK is not in ../shared/data: it is not measured."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, OUT, REPO, Rows, command_line, made_by, require
from semsearch.encoding import Encoder, resolve_model_path
from semsearch.evaluation.datasets import cranfield_to_beir, load_beir, load_sts
from semsearch.evaluation.metrics import evaluate_run, spearman
from semsearch.settings import TransformKind, TransformSpec
from semsearch.storage.files import atomic_write_text
from semsearch.transforms import fit_transform
from semsearch.transforms.advice import ANISOTROPY_THRESHOLD, RULE, advise
from semsearch.transforms.isotropy import figures, sample_rows
from semsearch.transforms.stats import RunningStats

CLAIM = "No isotropy figure predicts the gain of whitening in both directions: the advice `info` gives"
RESULTS = OUT
FIGURED = ("sts-dev", "scifact")  # the sets whose inspect figures are drawn, with mean and cls pooling
FIGURE_SETS = [f"{name}-{pooling}" for name in FIGURED for pooling in ("mean", "cls")]
WORDNET_SAMPLE = 6000  # synsets (seed 0) of WordNet's 117,791; their first lemmas are the queries
WORDNET_QUERIES = 600


def whitening_specs(dim: int) -> dict[str, TransformSpec]:
    return {
        "whiten P=1 all": TransformSpec(TransformKind.WHITEN, None, 1.0),
        "whiten P=0.5 128": TransformSpec(TransformKind.WHITEN, min(128, dim), 0.5),
    }


# ---- data sets: (corpus texts, queries, judge(projected corpus, projected queries) -> score) -----------------


def sts_set():
    pairs = load_sts(DATA / "stsb" / "sts-dev.csv")
    sentences = list(dict.fromkeys([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]))
    position = {s: i for i, s in enumerate(sentences)}
    left = np.array([position[p.sentence1] for p in pairs])
    right = np.array([position[p.sentence2] for p in pairs])
    gold = np.array([p.score for p in pairs])

    def judge(corpus: np.ndarray, _queries) -> float:
        return 100 * spearman(np.sum(corpus[left] * corpus[right], axis=1), gold)

    relevant = (left[gold >= 4], right[gold >= 4])  # pairs scored 4-5: "mostly" to "completely equivalent"
    return sentences, [], judge, "spearman", relevant


def beir_set(directory: Path):
    data = load_beir(directory)
    records = [json.loads(line) for line in data.corpus_path.read_text().splitlines() if line.strip()]
    ids = [str(r.get("_id", r.get("id"))) for r in records]
    texts = [f"{r['title']} {r['text']}" if r.get("title") else r["text"] for r in records]
    query_ids = list(data.queries)
    return (
        texts,
        [data.queries[q] for q in query_ids],
        _retrieval_judge(ids, query_ids, data.qrels),
        "ndcg@10",
        (_relevant_pairs(ids, query_ids, data.qrels)),
    )


def wordnet_set():
    lines = (DATA / "wordnet" / "corpus.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in random.Random(0).sample(lines, WORDNET_SAMPLE)]
    ids = [r["id"] for r in records]
    lemmas = [[w.strip() for w in r["title"].split(",")] for r in records]
    holders: dict[str, dict[str, int]] = {}
    for doc_id, words in zip(ids, lemmas):
        for word in words:
            holders.setdefault(word, {})[doc_id] = 1
    # A reverse dictionary: the query is a synset's first lemma, the relevant glosses every sampled synset of it.
    chosen = random.Random(1).sample(range(len(records)), WORDNET_QUERIES)
    queries = {f"q{i}": lemmas[i][0] for i in chosen}
    qrels = {q: holders[word] for q, word in queries.items()}
    query_ids = list(queries)
    return (
        [r["text"] for r in records],
        [queries[q] for q in query_ids],
        _retrieval_judge(ids, query_ids, qrels),
        "ndcg@10",
        _relevant_pairs(ids, query_ids, qrels),
    )


def _retrieval_judge(ids, query_ids, qrels):
    def judge(corpus: np.ndarray, queries: np.ndarray) -> float:
        scores = queries @ corpus.T
        top = np.argsort(-scores, axis=1)[:, :100]
        run = {q: {ids[d]: float(scores[i, d]) for d in top[i]} for i, q in enumerate(query_ids)}
        return evaluate_run(qrels, run, ["ndcg@10"])["ndcg@10"]

    return judge


def _relevant_pairs(ids, query_ids, qrels):
    """(query row, document row) of every judged relevant pair: the query side indexes the queries."""
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    pairs = [(i, row[d]) for i, q in enumerate(query_ids) for d, r in qrels[q].items() if r > 0 and d in row]
    return tuple(np.array(side) for side in zip(*pairs)) if pairs else None


def random_bert(work: Path) -> Path:
    """The tests' small random BERT (tests/conftest.py tiny_bert): the bundled vocabulary, 32 dims, seed 0."""
    directory = work / "random-bert"
    if (directory / "config.json").is_file():
        return directory
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(resolve_model_path(None)), local_files_only=True
    )
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return directory


# ---- the measurement -------------------------------------------------------------------------------------


def encoded(work: Path, key: str, encoder: Encoder, texts: list[str]) -> np.ndarray:
    path = work / f"{key}.npy"
    if path.is_file():
        return np.load(path)
    started = time.perf_counter()
    vectors = encoder.encode(texts)
    print(f"  encoded {key}: {len(texts)} texts in {time.perf_counter() - started:.0f} s", flush=True)
    np.save(path, vectors)
    return vectors


def measure(name: str, data, model: str, model_path, pooling: str, work: Path) -> dict:
    texts, queries, judge, metric, _relevant = data
    encoder = Encoder(model_path, pooling=pooling, quantize="int8", backend="onnx")
    key = f"{name}-{model}-{pooling}"
    corpus = encoded(work, key, encoder, texts)
    query_vectors = encoded(work, f"{key}-queries", encoder, queries) if queries else None
    stats = RunningStats.of(corpus)
    none = fit_transform(TransformSpec(TransformKind.NONE), stats)
    row = {"dataset": name, "model": model, "pooling": pooling, "rows": len(corpus), "dim": corpus.shape[1]}
    row[f"{metric} none"] = round(judge(none.project(corpus), _project(none, query_vectors)), 4)
    isotropy = None
    for label, spec in whitening_specs(corpus.shape[1]).items():
        transform = fit_transform(spec, stats)
        row[f"{metric} {label}"] = round(
            judge(transform.project(corpus), _project(transform, query_vectors)), 4
        )
        if label == "whiten P=1 all":
            isotropy = figures(stats, transform, corpus[sample_rows(np.arange(len(corpus)))])
    row["metric"] = metric
    row["isotropy"] = isotropy
    print(f"  {key}: {json.dumps({k: v for k, v in row.items() if k != 'isotropy'})}", flush=True)
    return row


def draw_figures(name: str, data, model_path, pooling: str, work: Path) -> None:
    """inspect's figures of a set (raw against full whitening, relevant pairs as judged) to results/isotropy/."""
    from semsearch.evaluation.inspect import Material, draw, whitening_if_none

    texts, queries, _judge, _metric, relevant = data
    encoder = Encoder(model_path, pooling=pooling, quantize="int8", backend="onnx")
    key = f"{name}-MiniLM-{pooling}"
    corpus = encoded(work, key, encoder, texts)
    stats = RunningStats.of(corpus)
    transform = whitening_if_none(fit_transform(TransformSpec(TransformKind.NONE), stats), stats)
    left = encoded(work, f"{key}-queries", encoder, queries) if queries else corpus
    pairs = None if relevant is None else (left[relevant[0]], corpus[relevant[1]])
    sample = corpus[sample_rows(np.arange(len(corpus)))]
    material = Material(stats, transform, sample, texts, encoder.path, encoder.max_length, pairs)
    draw(material, RESULTS / "isotropy" / f"{name}-{pooling}")


def _project(transform, vectors):
    return None if vectors is None else transform.project(vectors)


# ---- the rules: each diagnostic against the gain of full whitening ------------------------------------------

DIAGNOSTICS = {  # name: (value of a row's raw figures, whether a larger value predicts a gain)
    "raw mean_cosine": (lambda row: row["isotropy"]["raw"]["mean_cosine"], True),
    "raw mean_norm": (lambda row: row["isotropy"]["raw"]["mean_norm"], True),
    "raw top1_variance": (lambda row: row["isotropy"]["raw"]["top1_variance"], True),
    "raw effective_rank / dim": (lambda row: row["isotropy"]["raw"]["effective_rank"] / row["dim"], False),
}


def gain(row: dict, label: str = "whiten P=1 all") -> float:
    return row[f"{row['metric']} {label}"] - row[f"{row['metric']} none"]


def threshold_rule(rows: list[dict], value, larger: bool) -> tuple[float, int]:
    """The threshold (midway between two rows' values) predicting "whitening helps" for the most rows."""
    values = sorted({value(row) for row in rows})
    candidates = [values[0] - 1] + [(a + b) / 2 for a, b in zip(values, values[1:])] + [values[-1] + 1]
    best = max(candidates, key=lambda t: sum(_predicts(value(r), t, larger) == (gain(r) > 0) for r in rows))
    return best, sum(_predicts(value(r), best, larger) == (gain(r) > 0) for r in rows)


def _predicts(value: float, threshold: float, larger: bool) -> bool:
    return value > threshold if larger else value < threshold


def leave_one_out(rows: list[dict], value, larger: bool) -> int:
    """Rows predicted right by the threshold chosen on the other rows: how the rule would do on a new set."""
    right = 0
    for held in range(len(rows)):
        threshold, _ = threshold_rule(rows[:held] + rows[held + 1 :], value, larger)
        right += _predicts(value(rows[held]), threshold, larger) == (gain(rows[held]) > 0)
    return right


def reading(rows: list[dict]) -> list[str]:
    """What the table says, counted from it."""
    below = [r for r in rows if r["isotropy"]["raw"]["mean_cosine"] <= ANISOTROPY_THRESHOLD]
    above = [r for r in rows if r["isotropy"]["raw"]["mean_cosine"] > ANISOTROPY_THRESHOLD]
    trained = [r for r in above if r["model"] != "random-BERT"]
    return [
        f"- At or below the threshold: whitening lowered the score on {sum(gain(r) < 0 for r in below)} of"
        f" {len(below)} encodings. Above it: raised it on {sum(gain(r) > 0 for r in above)} of {len(above)};"
        f" of those from a trained model (not the random BERT), on {sum(gain(r) > 0 for r in trained)} of"
        f" {len(trained)}.",
        "- Whitening makes every encoding isotropic (whitened mean cosine 0, effective rank near the dimension):",
        "  the transformed side does not predict the gain; only the raw side can.",
        "- No figure predicts reliably in both directions: the best threshold of each, chosen on all rows, is",
        "  right on at most the count in the table below, and fewer when chosen without the row it predicts.",
        "  A low mean cosine reliably says whitening will not help; a high one says only that it may.",
    ]


def report(rows: list[dict], command: str) -> str:

    figures = ", ".join(f"[{name}](isotropy/{name}/isotropy.md)" for name in FIGURE_SETS)
    lines = ["# Isotropy against the gain of whitening", "", made_by(), ""]
    lines += [f"The figures `semsearch inspect` draws, per set and pooling: {figures}.", ""]
    lines += [
        "Each set encoded once (onnx, int8; documents cut at the model's max_length). Gain: the metric with",
        "whitening fitted on the set's own vectors minus the metric with the raw vectors (spearman x100 for",
        "STS-B dev, nDCG@10 for retrieval). Figures over the corpus rows (transforms/isotropy.py). SICK is not in",
        "../shared/data: not measured. WordNet: a reverse dictionary on a sample of "
        f"{WORDNET_SAMPLE} synsets ({WORDNET_QUERIES} lemmas as queries).",
        "",
        "| set | model | pooling | dim | raw mean cos | raw mean norm | raw eff. rank | raw top1 | whitened mean cos"
        " | whitened eff. rank | none | whiten P=1 all | gain | whiten P=0.5 128 | gain | advice (info) | hit |",
        "|" + "---|" * 17,
    ]
    hits = 0
    for row in rows:
        raw, white = row["isotropy"]["raw"], row["isotropy"]["transformed"]
        advice = advise(row["isotropy"])["whitening"]
        hit = (advice == "may help") == (gain(row) > 0)
        hits += hit
        lines.append(
            f"| {row['dataset']} | {row['model']} | {row['pooling']} | {row['dim']} | {raw['mean_cosine']:.3f}"
            f" | {raw['mean_norm']:.3f} | {raw['effective_rank']:.1f} | {raw['top1_variance']:.3f}"
            f" | {white['mean_cosine']:.3f} | {white['effective_rank']:.1f}"
            f" | {row[row['metric'] + ' none']:.4g} | {row[row['metric'] + ' whiten P=1 all']:.4g}"
            f" | {gain(row):+.4g} | {row[row['metric'] + ' whiten P=0.5 128']:.4g}"
            f" | {gain(row, 'whiten P=0.5 128'):+.4g} | {advice} | {'hit' if hit else 'MISS'} |"
        )
    lines += ["", f"The rule `info` applies ({RULE}): {hits} hits, {len(rows) - hits} misses of {len(rows)}."]
    lines += ["", *reading(rows), ""]
    lines += [
        "## Each diagnostic as a threshold rule (full whitening helps when the value is past the threshold)",
        "",
        "| diagnostic | best threshold (all rows) | right with it | right leave-one-out |",
        "|---|---|---|---|",
    ]
    for name, (value, larger) in DIAGNOSTICS.items():
        threshold, right = threshold_rule(rows, value, larger)
        values = [value(row) for row in rows]
        always = not min(values) <= threshold <= max(values)  # past every row: predicts the same for all
        lines.append(
            f"| {name} {'>' if larger else '<'} | {threshold:.3f}{' (every row alike)' * always} | {right}/{len(rows)}"
            f" | {leave_one_out(rows, value, larger)}/{len(rows)} |"
        )
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "isotropy")


def run(config: argparse.Namespace) -> Rows:
    work = config.work
    require(DATA / "scifact", "SciFact")
    work.mkdir(parents=True, exist_ok=True)
    sets = {"sts-dev": sts_set, "scifact": lambda: beir_set(DATA / "scifact")}
    sets["cranfield"] = lambda: beir_set(cranfield_to_beir(DATA / "cranfield", work / "cranfield-beir"))
    sets["wordnet"] = wordnet_set
    bundled, random_model = resolve_model_path(None), random_bert(work)
    encoders = [("MiniLM", bundled, "mean"), ("MiniLM", bundled, "cls")]
    encoders += [("random-BERT", random_model, "mean"), ("random-BERT", random_model, "cls")]
    rows = []
    for name, make in sets.items():
        data = make()
        for model, path, pooling in encoders:
            rows.append(measure(name, data, model, path, pooling, work))
        if name in FIGURED:
            for pooling in ("mean", "cls"):
                draw_figures(name, data, bundled, pooling, work)
    atomic_write_text(RESULTS / "isotropy.json", json.dumps(rows, indent=1) + "\n")
    atomic_write_text(RESULTS / "isotropy.md", report(rows, command_line()))
    print((RESULTS / "isotropy.md").read_text())
    return rows
