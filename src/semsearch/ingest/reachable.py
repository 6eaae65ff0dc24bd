"""Ids and metadata keys a user can always name again: refused at ingest, with the line, when no command line
or `--where` could reach them afterwards.

- An id holding a control character (NUL, a newline, ...) cannot be typed as an argument (a NUL cannot be
  passed at all), so it could never be fetched, replaced or deleted by id.
- A metadata key is a `--where` FIELD: a dot there means "a field of a nested object" (`address.city`), and
  the typed metadata table stores nested values under the dotted path, so a key `a.b` would be the same path
  as `{"a": {"b": ...}}` and never matched by `--where a.b=...` (filters.check_fields looks for a field `a`).
  The grammar's operators (= ! < >) and double quotes cannot appear in a FIELD either, nor surrounding spaces
  (stripped), nor an empty name."""

from __future__ import annotations

import unicodedata
from typing import Any

from ..errors import DataError

UNREACHABLE_IN_KEYS = '.=!<>"'


def check_id(doc_id: str, field: str, **where: Any) -> None:
    if doc_id.isprintable():  # no character of Unicode's Other or Separator class (but space): no Cc
        return
    for position, char in enumerate(doc_id, start=1):
        if unicodedata.category(char) == "Cc":
            raise DataError(
                f"the id holds a control character (U+{ord(char):04X}) at character {position}: no command "
                "line could name it again; remove it",
                field=field,
                **where,
            )


def check_key(key: str, field: str, **where: Any) -> None:
    """A metadata key (at any depth: `field` is its dotted path so far) that `--where` can name."""
    bad = next((char for char in key if char in UNREACHABLE_IN_KEYS), None)
    if bad == ".":
        nested = '{"' + '": {"'.join(key.split(".")) + '": ...' + "}" * (key.count(".") + 1)
        reason = f"a dot in a key means a nested field to --where: write it nested, {nested}, or rename it"
    elif bad is not None:
        reason = f"{bad!r} in a key cannot be written in --where FIELD=VALUE: rename it"
    elif (
        not key.strip()
        or key != key.strip()
        or (not key.isprintable() and any(unicodedata.category(c) == "Cc" for c in key))
    ):
        reason = (
            "an empty key, or one with surrounding spaces or control characters, cannot be named: rename it"
        )
    else:
        return
    raise DataError(f"the metadata key {key!r}: {reason}", field=field, **where)
