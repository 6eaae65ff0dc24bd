"""Builds examples/sample.jsonl: 300 documents made from the Python standard library's own docstrings
(modules, classes, functions, and a few methods picked by name), so the demo has a real, freely licensed corpus to search.

    .venv/bin/python examples/make_sample.py      (standard library only)

The output is deterministic: a fixed list of modules, members taken in sorted order, modules served in turn
until 300 documents are chosen, lines sorted by id. It depends only on the Python version (and, for os.path,
on the platform: posixpath here).
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from pathlib import Path

MODULES = [
    "argparse",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "copy",
    "csv",
    "datetime",
    "decimal",
    "difflib",
    "email.utils",
    "fnmatch",
    "fractions",
    "functools",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "html",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "math",
    "os.path",
    "pathlib",
    "pprint",
    "queue",
    "random",
    "re",
    "secrets",
    "shutil",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "urllib.parse",
    "uuid",
    "zipfile",
    "zlib",
]
# Chosen first in their module, whatever the alphabet says: the demo's query ("parse a date from a string")
# and a few other everyday questions have an obviously right answer in the corpus.
FIRST = [
    "datetime.datetime.strptime",
    "time.strptime",
    "datetime.date.fromisoformat",
    "time.strftime",
    "json.loads",
    "json.dumps",
    "collections.Counter.most_common",
    "re.sub",
    "shutil.copyfile",
    "random.shuffle",
    "urllib.parse.urlparse",
]
MIN_CHARS, MAX_CHARS, TOTAL = 40, 1000, 300


def clean(doc: str | None) -> str:
    """The docstring through inspect.cleandoc, cut to about MAX_CHARS at a paragraph or word boundary."""
    text = inspect.cleandoc(doc or "").strip()
    if len(text) <= MAX_CHARS:
        return text
    cut = text[:MAX_CHARS]
    paragraph = cut.rfind("\n\n")
    end = paragraph if paragraph >= MAX_CHARS // 2 else cut.rfind(" ")
    return cut[: end if end > 0 else MAX_CHARS].rstrip()


def belongs(module, name: str, member) -> bool:
    """A public class or function of this module (not something it imported from elsewhere)."""
    if name.startswith("_") or not (inspect.isclass(member) or inspect.isroutine(member)):
        return False
    exported = getattr(module, "__all__", None)
    if exported is not None:
        return name in exported
    home = getattr(member, "__module__", None)
    return home in (None, module.__name__, "_" + module.__name__.split(".")[-1])


def candidates(module_name: str):
    """(dotted name, kind, raw docstring) of one module, best first: the module itself, its FIRST picks
    (methods among them count as functions), then its classes and functions in sorted order."""
    module = importlib.import_module(module_name)
    yield module_name, "module", module.__doc__
    for dotted in FIRST:
        owner, _, name = dotted.rpartition(".")
        if owner == module_name or owner.rsplit(".", 1)[0] == module_name:
            target = module if owner == module_name else getattr(module, owner.rsplit(".", 1)[1])
            member = getattr(target, name)
            yield dotted, "class" if inspect.isclass(member) else "function", member.__doc__
    members = [(n, m) for n, m in sorted(vars(module).items()) if belongs(module, n, m)]
    for name, member in members:
        yield f"{module_name}.{name}", "class" if inspect.isclass(member) else "function", member.__doc__


def documents() -> list[dict[str, str]]:
    """Modules take turns, each giving its next usable candidate, until TOTAL documents are chosen. A
    docstring shorter than MIN_CHARS, or already taken under another name (an alias), is passed over."""
    queues = {name: candidates(name) for name in MODULES}
    chosen: dict[str, dict[str, str]] = {}
    texts: set[str] = set()
    while queues and len(chosen) < TOTAL:
        for module_name in list(queues):
            if len(chosen) >= TOTAL:
                break
            for dotted, kind, doc in queues[module_name]:
                text = clean(doc)
                if dotted in chosen or text in texts or len(text) < MIN_CHARS:
                    continue
                texts.add(text)
                top = module_name.split(".")[0]
                chosen[dotted] = {"id": dotted, "title": dotted, "text": text, "module": top, "kind": kind}
                break
            else:
                del queues[module_name]  # exhausted
    return [chosen[key] for key in sorted(chosen)]


def main() -> None:
    docs = documents()
    missing = [name for name in FIRST if not any(d["id"] == name for d in docs)]
    if missing:
        sys.exit(f"make_sample.py: these must be in the sample but have no usable docstring: {missing}")
    path = Path(__file__).with_name("sample.jsonl")
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for doc in docs:
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    print(f"wrote {len(docs)} documents to {path} (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
