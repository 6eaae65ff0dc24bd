"""Benchmarks, one module each; run them with `python -m benchmarks NAME` (benchmarks/__main__.py)."""
