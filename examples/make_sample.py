"""Builds examples/sample.jsonl: about 300 documents from the Python standard library's own docstrings
(module, class and function docs), so the demo has a real, freely licensed corpus to search.

    python examples/make_sample.py          (deterministic for a given Python version)
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from pathlib import Path

MODULES = [
    "datetime",
    "time",
    "calendar",
    "json",
    "csv",
    "re",
    "string",
    "textwrap",
    "difflib",
    "os.path",
    "pathlib",
    "shutil",
    "glob",
    "fnmatch",
    "tempfile",
    "collections",
    "itertools",
    "functools",
    "heapq",
    "bisect",
    "math",
    "statistics",
    "random",
    "decimal",
    "fractions",
    "hashlib",
    "base64",
    "zlib",
    "gzip",
    "zipfile",
    "tarfile",
    "urllib.parse",
    "html",
    "uuid",
    "logging",
    "argparse",
    "subprocess",
    "threading",
    "queue",
    "sqlite3",
    "struct",
    "copy",
    "pprint",
    "secrets",
    "ipaddress",
    "email.utils",
]
MIN_CHARS, MAX_CHARS, PER_MODULE, TOTAL = 60, 1000, 8, 300


def public_members(module):
    for name, member in sorted(vars(module).items()):
        if name.startswith("_") or getattr(member, "__module__", module.__name__) not in (
            module.__name__,
            "_" + module.__name__,
            module.__name__.replace(".", "_"),
            None,
        ):
            continue
        if inspect.isclass(member) or inspect.isroutine(member):
            yield name, member


def documents():
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        top = module_name.split(".")[0]
        doc = inspect.cleandoc(module.__doc__ or "")
        if len(doc) >= MIN_CHARS:
            yield {
                "id": module_name,
                "title": module_name,
                "text": doc[:MAX_CHARS],
                "module": top,
                "kind": "module",
            }
        count = 0
        for name, member in public_members(module):
            doc = inspect.cleandoc(inspect.getdoc(member) or "")
            if len(doc) < MIN_CHARS or count >= PER_MODULE:
                continue
            kind = "class" if inspect.isclass(member) else "function"
            dotted = f"{module_name}.{name}"
            yield {"id": dotted, "title": dotted, "text": doc[:MAX_CHARS], "module": top, "kind": kind}
            count += 1
            if inspect.isclass(member):
                for method_name in ("strptime", "strftime", "fromisoformat", "loads", "dumps", "most_common"):
                    method = getattr(member, method_name, None)
                    method_doc = inspect.cleandoc(inspect.getdoc(method) or "") if method else ""
                    if len(method_doc) >= 20 and method_name in vars(member):
                        yield {
                            "id": f"{dotted}.{method_name}",
                            "title": f"{dotted}.{method_name}",
                            "text": method_doc[:MAX_CHARS],
                            "module": top,
                            "kind": "method",
                        }


def main() -> None:
    seen, out = set(), []
    for doc in documents():
        if doc["id"] not in seen and len(out) < TOTAL:
            seen.add(doc["id"])
            out.append(doc)
    path = Path(__file__).with_name("sample.jsonl")
    path.write_text("".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in out))
    print(f"wrote {len(out)} documents to {path} (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
