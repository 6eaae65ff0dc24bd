"""Markdown with markdown-it-py: YAML front matter (Obsidian, Hugo, Jekyll) becomes metadata, the headings cut
the text into sections, each with its line range and heading path; the title is the front matter's, else the
first heading."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from ..fields import json_value
from . import Format, Parsed, Unreadable, decoded
from .lines import Lines, heading_sections

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

FORMATS = (
    Format(
        "markdown", (".md", ".markdown"), libraries=("markdown_it", "mdit_py_plugins.front_matter", "yaml")
    ),
)


@cache
def _markdown() -> MarkdownIt:
    """The parser, made once a process (its rules compiled: a millisecond a file when made for each)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    return MarkdownIt("commonmark").use(front_matter_plugin)


def parse(data: bytes, kind: str = "markdown") -> Parsed:
    import yaml

    source = decoded(data)
    tokens = _markdown().parse(source)
    metadata: dict[str, Any] = {}
    skip = 0  # lines of front matter before the text
    if tokens and tokens[0].type == "front_matter":
        try:
            # libyaml's loader where PyYAML was built with it: the same values, 10x faster than the Python one
            loaded = yaml.load(tokens[0].content, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 2}" if mark is not None else ""
            raise Unreadable(f"front matter that is not valid YAML{where}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise Unreadable("front matter that is not a mapping of fields")
        metadata = {str(key): json_value(value) for key, value in (loaded or {}).items()}
        assert tokens[0].map is not None  # the front matter plugin gives its token its lines
        skip = tokens[0].map[1]
    lines = Lines("\n".join(source.split("\n")[skip:]), first=skip + 1)
    headings: list[tuple[int, int, str]] = []  # (text line, level, heading)
    for token, inline in zip(tokens, tokens[1:]):
        if token.type == "heading_open" and token.map:
            headings.append((token.map[0] - skip, int(token.tag[1]), inline.content.strip()))
    sections = heading_sections(lines, headings)
    title = metadata.pop("title", None)
    if not isinstance(title, str) or not title.strip():
        title = next((heading for _, level, heading in headings if level == 1), None) or (
            headings[0][2] if headings else None
        )
    return Parsed(lines.text, title or None, sections, metadata)
