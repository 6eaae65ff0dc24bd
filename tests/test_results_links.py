"""Every benchmark result is cited and every local link of the docs leads somewhere: the results in
benchmarks/results are each linked from README.md, docs/ or a linked result (its data beside it, or the run a
`semsearch bench` folder holds, counted with it), and each link in README.md and docs/*.md to a file of the
repository names one that exists. Pure file reading."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = (REPO / "benchmarks" / "results").resolve()
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a folder that `semsearch bench` writes: one run's table, its data and its plots, cited as one result
RUN_TABLES = ("results.md", "isotropy.md")


def local_links(markdown: Path) -> list[tuple[str, Path]]:
    """Each link of a markdown file to a local path: as written, and resolved from the file's folder."""
    found = []
    for target in LINK.findall(markdown.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if path and "://" not in path and not path.startswith("mailto:"):
            found.append((target, (markdown.parent / path).resolve()))
    return found


def cited_results() -> set[Path]:
    """The result files the docs cite, directly or through a cited result's own links."""
    cited: set[Path] = set()
    pending = list(DOCS)
    read: set[Path] = set()
    while pending:
        markdown = pending.pop()
        if markdown in read:
            continue
        read.add(markdown)
        for _, path in local_links(markdown):
            cited.add(path)
            if path.suffix == ".md" and path.is_file() and RESULTS in path.parents:
                pending.append(path)
    return cited


def accounted_for(path: Path, cited: set[Path]) -> bool:
    if path in cited or path.with_suffix(".md") in cited:  # x.json: the data of a cited x.md
        return True
    folder = path.parent
    run = any((folder / name).is_file() for name in RUN_TABLES) and folder != RESULTS
    return run and any(other.parent == folder for other in cited)


def test_every_result_file_is_cited():
    cited = cited_results()
    files = sorted(p.resolve() for p in RESULTS.rglob("*") if p.is_file())
    assert files, "no results found"
    orphans = [str(p.relative_to(RESULTS)) for p in files if not accounted_for(p, cited)]
    assert not orphans, f"results no doc or cited result links: {orphans}"


def test_every_local_link_of_the_docs_exists():
    broken = [
        f"{markdown.relative_to(REPO)}: {target}"
        for markdown in DOCS
        for target, path in local_links(markdown)
        if not path.exists()
    ]
    assert not broken, f"links to missing files: {broken}"


def test_no_result_is_named_after_a_round_or_draft():
    rounds = re.compile(r"-s\d+\b|-\d+[a-z]\b|\bsession|-draft|-before\b|-after\b|-start\b")
    named = [str(p.relative_to(RESULTS)) for p in RESULTS.rglob("*") if rounds.search(p.stem)]
    assert not named, f"results named after a round of work: {named}"
