"""The package's shape, checked from its source: imports run one way (no cycle, lazy imports included), the
stages sit below the facade and the CLI, no module grows past ~400 lines without saying why, and no block of
code stands twice in src/."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "semsearch"
LINE_LIMIT = 400
SIZE_REASON = "Size:"  # a module over the limit says why in a docstring line starting with this


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in SOURCE.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The semsearch modules a file imports, at any depth (function-level imports count: a cycle through a
    lazy import is still a cycle), leaving out imports under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text())
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in known and name != module_name(path)}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(path, set(found)) for name, path in found.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 20 and graph["semsearch.index"], "the graph was not read"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def is_top(name: str) -> bool:
    """The facade and the layers over it (the CLI package, the integrations, the package's own lazy names)."""
    return name in {"semsearch.index", "semsearch", "semsearch.__main__"} or name.split(".")[:2] in (
        ["semsearch", "cli"],
        ["semsearch", "integrations"],
    )


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_imports_run_one_way():
    """Stages never import the facade, the CLI or the evaluation; settings and errors import no stage."""
    graph = import_graph()
    for name, targets in graph.items():
        if is_top(name) or name.startswith("semsearch.evaluation"):
            continue
        above = sorted(filter(is_top, targets))
        assert not above, f"{name} imports {above}"
        assert not {t for t in targets if t.startswith("semsearch.evaluation")}, name
    assert graph["semsearch.settings"] <= {"semsearch.errors"}
    assert graph["semsearch.errors"] == set()


def test_modules_stay_small_or_say_why():
    for name, path in modules().items():
        text = path.read_text()
        lines = text.count("\n")
        if lines > LINE_LIMIT:
            docstring = ast.get_docstring(ast.parse(text)) or ""
            assert SIZE_REASON in docstring, (
                f"{name} has {lines} lines and no '{SIZE_REASON}' reason at its top"
            )


@pytest.mark.skipif(
    shutil.which("duplicates") is None, reason="the `duplicates` command is not on this machine"
)
def test_no_block_of_code_repeats_in_src():
    result = subprocess.run(
        ["duplicates", "--repo", str(SOURCE), "--seconds", "60", "--most", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip(), result.stderr
    # Repeated code is a run of the same lines. Rows marked `shape` are alike only in form (two click options,
    # two keyword-argument tables): left to the reviewer's judgement (`duplicates --change` before a commit).
    pairs = [row for row in result.stdout.splitlines() if row.startswith("D") and " shape" not in row]
    assert not pairs, result.stdout


def test_the_package_shows_its_stages():
    """At most 12 modules stand directly in src/semsearch/ (the rest live in their stage's subpackage, each
    saying what it owns), and the facade stays small."""
    top = [path.name for path in SOURCE.glob("*.py")]
    assert len(top) <= 12, sorted(top)
    for package in (path.parent for path in SOURCE.glob("*/__init__.py")):
        assert ast.get_docstring(ast.parse((package / "__init__.py").read_text())), package.name
    assert (SOURCE / "index.py").read_text().count("\n") < 450


def test_no_stage_works_through_the_facade():
    """The operations take an IndexDirectory, not the Index: nothing below index.py imports it, not even for
    annotations (the import graph above leaves TYPE_CHECKING imports out; this reads them too)."""
    for name, path in modules().items():
        if is_top(name):
            continue
        if name.startswith(("semsearch.server", "semsearch.evaluation")):
            continue
        text = path.read_text()
        assert "from ..index import" not in text and "from .index import" not in text, name


def test_the_readme_is_a_guide():
    readme = (SOURCE.parents[1] / "README.md").read_text().splitlines()
    assert len(readme) <= 250
    head = "\n".join(readme[:30])
    assert "make demo" in head and "make test" in head


# What reaches SQLite: a connection's statements, the store's connection (`store.db`, `.conn`), a new connection.
SQL_CALLS = {"execute", "executemany", "executescript", "cursor", "total_changes", "in_transaction"}
SQL_HANDLES = {"db", "conn"}


def sql_uses(path: Path) -> list[str]:
    """Where a module reaches SQLite itself, read from its source: `line: code` of each `.db`/`.conn` attribute,
    `.execute(...)`-like call, `sqlite3.connect` or sqlite_utils import."""
    text = path.read_text()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute) and (
            node.attr in SQL_HANDLES
            or node.attr in SQL_CALLS
            or (node.attr == "connect" and ast.unparse(node.value) == "sqlite3")
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"{node.lineno}: import {name}" for name in names if name.startswith("sqlite_utils")]
    return sorted(found, key=lambda use: int(use.split(":")[0]))


def test_no_sql_outside_the_storage_stage():
    """Only storage/ runs SQL or touches the store's connection (issue 24): other stages ask the DocumentStore by
    name (storage/reads.py). `sqlite3` may still be named elsewhere for its error classes (operations/backup.py)
    and the connection type the store hands analysis.register to install its SQL function."""
    outside = {
        name: uses
        for name, path in modules().items()
        if not name.startswith("semsearch.storage") and (uses := sql_uses(path))
    }
    assert not outside, outside


def test_the_sql_check_sees_sql():
    storage = SOURCE / "storage"
    assert any(".db.conn" in use for use in sql_uses(storage / "reads.py"))
    assert any("sqlite3.connect" in use for use in sql_uses(storage / "keywordterms.py"))
    assert any("import sqlite_utils" in use for use in sql_uses(storage / "sqlitelib.py"))


def test_formats_register_themselves_and_import_no_parser_at_startup():
    """A format is one module in ingest/sources/formats/ declaring FORMATS: the registry finds every one by
    itself, and neither `import semsearch.cli`, a JSONL file's kind nor the registry imports a parser library
    (each is imported inside its format's parse)."""
    script = """
import sys
import semsearch.cli
assert not [m for m in sys.modules if ".formats." in m], "the CLI imported a format module"
from semsearch.ingest.sources import _given_kind
from pathlib import Path
assert _given_kind(Path(sys.argv[1])) == "jsonl"
assert not [m for m in sys.modules if ".formats." in m], "a JSONL file's kind imported a format module"
from semsearch.ingest.sources.formats import LIBRARIES, registered
kinds = registered()
libraries = {name.split(".")[0] for names in LIBRARIES.values() for name in names}
import json
print(json.dumps({"kinds": sorted(kinds), "loaded": sorted(libraries & set(sys.modules))}))
"""
    sample = SOURCE.parents[1] / "examples" / "sample.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", script, str(sample)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert {"code", "docx", "html", "image", "markdown", "pdf", "rst", "text"} <= set(found["kinds"])
    assert found["loaded"] == [], "parser libraries imported with the registry"
