"""The benchmarks' runner: `python -m benchmarks` lists them, one line each (the claim it backs);
`python -m benchmarks NAME [options]` runs one (`--help` after NAME: its options); `make bench NAME=... ARGS=...`
is the same. Each benchmark is a module here with CLAIM, and add_arguments(parser) with run(config), or PARTS
(benchmarks/suite.py); a benchmark whose data set or peer is missing says so and is skipped (exit 0)."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOT_BENCHMARKS = {"__init__", "__main__", "suite"}


def benchmarks() -> dict[str, tuple[str, list[str]]]:
    """Each benchmark's name, claim and parts, read from its module's source (listing imports none of them)."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        if path.stem in NOT_BENCHMARKS:
            continue
        claim, parts = None, []
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = [getattr(target, "id", "") for target in getattr(node, "targets", [])]
            if names == ["CLAIM"]:
                claim = ast.literal_eval(node.value)
            elif names == ["PARTS"] and isinstance(node.value, ast.Dict):
                parts = [key.value for key in node.value.keys if isinstance(key, ast.Constant)]
        if claim is not None:
            found[path.stem] = (claim, parts)
    return found


def listing() -> str:
    known = benchmarks()
    width = max(len(name) for name in known)
    lines = []
    for name, (claim, parts) in known.items():
        lines.append(f"{name:<{width}}  {claim}")
        if parts:
            lines.append(f"{'':<{width}}    parts: {', '.join(parts)}")
    usage = "python -m benchmarks NAME [PART] --help: a benchmark's options (make bench NAME=... ARGS=...)"
    return "\n".join([*lines, "", usage])


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
    from benchmarks.suite import MissingData, add_parts, head_new_results, run_part

    parts = getattr(module, "PARTS", None)
    if parts:
        add_parts(parser, parts)
    else:
        module.add_arguments(parser)
    config = parser.parse_args(argv[1:])
    started = time.time()
    try:
        (run_part if parts else module.run)(config)
    except MissingData as skipped:
        print(f"{name}: {skipped}", file=sys.stderr)
    head_new_results(started)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
