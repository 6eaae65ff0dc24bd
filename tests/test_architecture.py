"""The package's shape, checked from its source: the claims docs/architecture.md makes. Imports run one way
(no cycle, lazy and type-only imports included; each stage imports only the stages below it), the CLI, server
and integrations reach an index through the facade alone, user-settable defaults live in settings.py, no module
grows past ~400 lines without saying why, no block of code stands twice in src/, formats register themselves,
and the docs describe the system as it is, every link reaching its file."""

import ast
import json
import re
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


def imports_of(path: Path, known: set[str], type_only: bool = False) -> set[str]:
    """The semsearch modules a file imports, at any depth (function-level imports count: a cycle through a
    lazy import is still a cycle); imports under `if TYPE_CHECKING:` only with `type_only`."""
    tree = ast.parse(path.read_text())
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    skipped = (
        set()
        if type_only
        else {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for node in ast.walk(block)
        }
    )
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


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(path, set(found), type_only) for name, path in found.items()}


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


def test_no_cycle_even_through_type_only_imports():
    """A circle of annotations is still two modules that each need the other to be read."""
    graph = import_graph(type_only=True)
    assert graph["semsearch.server.mcp_http"], "the type-only imports were not read"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


# The stages from the bottom up, each a subpackage or a module of src/semsearch/ ("": the package's own
# __init__, its lazy names). A module imports only its own stage and the stages of the layers below its own.
LAYERS: tuple[set[str], ...] = (
    {"errors", "documents", "cjk", "threads", "memory", "placeurl"},
    {"settings"},
    {"storage"},
    {"encoding", "transforms"},
    {"retrieval"},
    {"ingest"},
    {"operations"},
    {"index"},
    {"sharded"},  # the facade of a sharded index, over the one index's searches
    {"server", "evaluation", "integrations"},
    {"cli"},
    {"__main__", ""},
)


def stage_of(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def back_imports(graph: dict[str, set[str]], layers: tuple[set[str], ...] = LAYERS) -> list[str]:
    """Each import of a module by one in a layer not above its own (other than within one stage), as
    `importer -> imported`; a module of a stage no layer names is reported too."""
    rank = {stage: n for n, layer in enumerate(layers) for stage in layer}
    found = []
    for name, targets in sorted(graph.items()):
        if stage_of(name) not in rank:
            found.append(f"{name}: its stage {stage_of(name)!r} is in no layer")
            continue
        for target in sorted(targets):
            here, there = stage_of(name), stage_of(target)
            if here != there and rank.get(there, len(layers)) >= rank[here]:
                found.append(f"{name} -> {target}")
    return found


def test_stages_import_only_the_stages_below_them():
    """The order the data flows in: storage under the encoder and the transforms, retrieval over them, the
    ingest over retrieval (calibration), the operations over the ingest, the facade over all, the server,
    evaluation and integrations over the facade, the CLI over them. Type-only imports count."""
    graph = import_graph(type_only=True)
    assert not back_imports(graph), "\n".join(back_imports(graph))


def test_the_layer_check_finds_a_back_import():
    graph = {"semsearch.storage.store": {"semsearch.retrieval.search"}, "semsearch.retrieval.search": set()}
    assert back_imports(graph) == ["semsearch.storage.store -> semsearch.retrieval.search"]
    assert back_imports({"semsearch.encoding.x": {"semsearch.transforms.y"}}) == [
        "semsearch.encoding.x -> semsearch.transforms.y"  # one layer: neither stage imports the other
    ]
    assert back_imports({"semsearch.newstage.x": set()}) == [
        "semsearch.newstage.x: its stage 'newstage' is in no layer"
    ]
    assert not back_imports({"semsearch.index": {"semsearch.storage.store", "semsearch.settings"}})


def is_top(name: str) -> bool:
    """The facade and the layers over it (the CLI package, the integrations, the package's own lazy names)."""
    return name in {"semsearch.index", "semsearch.sharded", "semsearch", "semsearch.__main__"} or name.split(
        "."
    )[:2] in (
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
import re
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


# The layers over the facade hold an Index and call its public methods; they never reach its parts (the store,
# the open directory) nor set attributes on it. evaluation/ measures the parts themselves and may.
FACADE_USERS = ("semsearch.cli", "semsearch.server", "semsearch.integrations")
INDEX_PARTS = {"store", "directory"}


def side_doors(path: Path) -> list[str]:
    """`line: code` where a module reaches an index's parts (`x.store`, `x.directory` of anything but self) or
    sets or reads back an attribute of its own on an index (`index.x = ...`, `getattr(index, ...)`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in INDEX_PARTS
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and "index" in ast.unparse(target.value).lower():
                found.append(f"{node.lineno}: {ast.unparse(target)} = ...")
        called = isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and node.args
        if called and "index" in ast.unparse(node.args[0]).lower():
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_layers_over_the_facade_use_only_its_public_methods():
    doors = {
        name: found
        for name, path in modules().items()
        if name.startswith(FACADE_USERS) and (found := side_doors(path))
    }
    assert not doors, doors


def test_the_side_door_check_sees_one():
    evaluation = SOURCE / "evaluation"
    assert any("index.store" in door for door in side_doors(evaluation / "inspect.py"))
    assert any("index.directory" in door for door in side_doors(evaluation / "calibrated.py"))


# settings.py holds every default a user can change by an option of the commands over an index (ingest, refit,
# query, similar, ...) or by a keyword of the facade: no such default is a number written in place (0, none, is
# an origin, not a choice). serve's and mcp's process options (address, port, threads, workers, a write's wait)
# are the server's own and keep their defaults at the option.
PROCESS_OPTIONS = {"serve.py", "mcp.py"}


def numbers_in_place(path: Path) -> list[str]:
    """`line: name=value` of each click option default or public function keyword default that is a number
    other than 0."""
    found = []

    def number(node: ast.expr | None) -> bool:
        return (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
            and node.value != 0
        )

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("option"):
            for keyword in node.keywords:
                if keyword.arg == "default" and number(keyword.value):
                    found.append(f"{node.lineno}: {ast.unparse(node.args[0])}={ast.unparse(keyword.value)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            arguments = node.args
            positional = arguments.args[len(arguments.args) - len(arguments.defaults) :]
            pairs = [*zip(positional, arguments.defaults), *zip(arguments.kwonlyargs, arguments.kw_defaults)]
            found += [f"{node.lineno}: {node.name}({a.arg}={ast.unparse(d)})" for a, d in pairs if number(d)]
    return found


def test_the_commands_defaults_are_named_in_settings():
    cli = SOURCE / "cli"
    found = {
        path.name: n
        for path in sorted(cli.glob("*.py"))
        if path.name not in PROCESS_OPTIONS and (n := numbers_in_place(path))
    }
    assert not found, found
    assert numbers_in_place(cli / "serve.py"), "the check sees no number default where there are some"


def test_the_facades_defaults_are_named_in_settings():
    assert not numbers_in_place(SOURCE / "index.py")


# The documents that describe the system: what is, why, the limits, today's figures with their commands.
REPOSITORY = SOURCE.parents[1]
DOCUMENTS = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/*.md")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A round of work named as such: how a figure was reached belongs in a commit message.
ROUND = re.compile(
    r"\b(?:sessions?|issues?)\s+\d+|\b(?:last|this|previous|next) (?:round|session)\b|\brounds? of work\b|"
    r"\bsession before\b|\bround before\b|\bbefore issue\b|-s\d{1,2}(?:-\w+)?\b|\b\d{1,2}[a-z]-(?:start|end)\b",
    re.IGNORECASE,
)


def documents() -> list[Path]:
    found = [path for pattern in DOCUMENTS for path in sorted(REPOSITORY.glob(pattern))]
    assert len(found) >= 9, found
    return found


def slug(heading: str) -> str:
    """A Markdown heading's anchor as GitHub makes it."""
    words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return words.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def broken_links(path: Path) -> list[str]:
    """Each relative link of a document whose file (or heading, after `#`) is not there."""
    found = []
    for target in LINK.findall(path.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        file, _, anchor = target.partition("#")
        reached = (path.parent / file).resolve() if file else path
        if not reached.exists():
            found.append(f"{path.name}: {target}")
        elif anchor and reached.suffix == ".md" and anchor not in anchors(reached):
            found.append(f"{path.name}: {target} (no such heading)")
    return found


def rounds_named(path: Path, in_links: bool = False) -> list[str]:
    """`file:line: words` where a document's prose (or, with `in_links`, a link's target) names a round of work."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        texts = LINK.findall(line) if in_links else [LINK.sub("]()", line)]
        found += [f"{path.name}:{number}: {match.group()}" for text in texts if (match := ROUND.search(text))]
    return found


def test_every_link_in_the_docs_reaches_its_file():
    found = [link for path in documents() for link in broken_links(path)]
    assert not found, "\n".join(found)


def test_the_docs_describe_the_system_not_its_history():
    found = [line for path in documents() for line in rounds_named(path)]
    assert not found, "\n".join(found)


def test_no_linked_file_is_named_after_a_round():
    found = [line for path in documents() for line in rounds_named(path, in_links=True)]
    assert not found, "\n".join(found)


def test_the_docs_checks_see_what_they_look_for(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading, here\n")
    (tmp_path / "r-s12.md").write_text("a result file\n")
    page.write_text(
        "See [it](there.md#a-heading-here), [gone](missing.md), [no heading](there.md#nowhere).\n"
        "In session 8 the figure moved; issue 37 made it; [results](r-s12.md).\n"
    )
    assert broken_links(page) == ["page.md: missing.md", "page.md: there.md#nowhere (no such heading)"]
    assert rounds_named(page) == ["page.md:2: session 8"]
    assert rounds_named(page, in_links=True) == ["page.md:2: -s12"]
