"""The benchmarks' runner: `python -m benchmarks` lists them, one line each (the claim it backs);
`python -m benchmarks NAME [options]` runs one (`--help` after NAME: its options); `make bench NAME=... ARGS=...`
is the same. Each benchmark is a module here with CLAIM, add_arguments(parser) and run(config)
(benchmarks/suite.py); a benchmark whose data set or peer is missing says so and is skipped (exit 0)."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOT_BENCHMARKS = {"__init__", "__main__", "suite"}


def benchmarks() -> dict[str, str]:
    """Each benchmark's name and claim, read from its module's source (listing imports none of them)."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        if path.stem in NOT_BENCHMARKS:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["CLAIM"]:
                found[path.stem] = ast.literal_eval(node.value)
    return found


def listing() -> str:
    known = benchmarks()
    width = max(map(len, known))
    lines = [f"{name:<{width}}  {claim}" for name, claim in known.items()]
    return "\n".join([*lines, "", "python -m benchmarks NAME --help: a benchmark's options"])


def main(argv: list[str]) -> int:
    known = benchmarks()
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(listing())
        return 0
    name = argv[0].replace("-", "_")
    if name not in known:
        print(f"no benchmark {argv[0]!r}; the benchmarks:\n{listing()}", file=sys.stderr)
        return 2
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    module = importlib.import_module(f"benchmarks.{name}")
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {name}",
        description=module.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(parser)
    config = parser.parse_args(argv[1:])
    from benchmarks.suite import MissingData

    try:
        module.run(config)
    except MissingData as skipped:
        print(f"{name}: {skipped}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
