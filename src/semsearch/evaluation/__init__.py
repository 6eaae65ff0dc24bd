"""Evaluation: the benchmark sweep (bench.py) and its outputs (report.py), peer systems measured on the
same data (peers.py), the data loaders (datasets.py) and the measures (metrics.py).

Nothing is imported here: `semsearch.evaluation.datasets` stays free of numpy, and the benchmark's heavy
imports (the index, matplotlib, pytrec_eval) load only when a module that needs them is used."""
