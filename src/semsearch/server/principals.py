"""Who asks: a request's key resolved once to a principal, whose scope every job then asks (as datasette's actors
and permission checks; the scope's filter as Meilisearch's tenant tokens and Typesense's scoped keys carry one,
applied by the server and never overridden by the request).

Keys come from `serve --keys FILE`, a JSON file:

    {"keys": [{"key": "...", "name": "acme-app", "indexes": ["notes"], "write": false, "where": ["tenant=acme"]}]}

Each entry: `key` (required, at least MIN_KEY_CHARACTERS characters, unique); `name` (shown in logs and metrics
instead of the key; default "key N"); `indexes` (the served indexes it reaches, by name; absent: all); `write`
(may add and delete; absent: false); `where` (conditions of the --where language, ANDed into everything the key
does; absent: none). A key of every index, without `where`, that may write is an admin. `--api-key` and
`--search-key` stay what they were: an unscoped writer and an unscoped reader. With neither a search key nor a
keys file, reads are open (an anonymous reader of every index); with a keys file, every request needs a key.

Keys are held as SHA-256 digests, never as given: a presented key is hashed and compared with every entry's
digest by hmac.compare_digest, all of them, so the time taken says nothing of which entry matched."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError, SemsearchError
from ..storage.filters import Condition

MIN_KEY_CHARACTERS = 16  # a key shorter than this is a password a fuzzer guesses
ENTRY_FIELDS = frozenset({"key", "name", "indexes", "write", "where"})


@dataclass(frozen=True)
class Principal:
    """What a request may do: the indexes it reaches (None: every one), whether it may write, and the conditions
    ANDed into all it does (`where`, the --where language)."""

    name: str
    indexes: frozenset[str] | None
    write: bool
    where: tuple[str, ...] = ()

    @property
    def admin(self) -> bool:
        return self.indexes is None and self.write and not self.where

    @property
    def scoped(self) -> bool:
        return bool(self.where)

    def reaches(self, index: str) -> bool:
        return self.indexes is None or index in self.indexes

    def within(self, where: Sequence[str] = ()) -> list[str]:
        """A request's conditions with the principal's ANDed in front (the request can narrow, never widen)."""
        return [*self.where, *where]


ANONYMOUS = Principal("anonymous", None, write=False)


@dataclass(frozen=True)
class KeyRing:
    """The server's keys as digests with their principals, and whether a request without a key may read."""

    entries: tuple[tuple[bytes, Principal], ...] = ()
    open_reads: bool = True

    @classmethod
    def of(
        cls,
        api_key: str | None = None,
        search_key: str | None = None,
        keys_file: str | Path | None = None,
        indexes: Sequence[str] = (),
    ) -> KeyRing:
        """The keys of a server: `--api-key` (an unscoped writer), `--search-key` (an unscoped reader), and the
        entries of `--keys FILE` (checked against the served `indexes`' names)."""
        entries = []
        if api_key:
            entries.append((digest(api_key), Principal("api-key", None, write=True)))
        if search_key:
            entries.append((digest(search_key), Principal("search-key", None, write=False)))
        if keys_file is not None:
            entries += read_keys(Path(keys_file), indexes)
        seen: set[bytes] = set()
        for key, principal in entries:
            if key in seen:
                raise DataError(f"{principal.name}: the same key is given twice", path=keys_file, field="key")
            seen.add(key)
        return cls(tuple(entries), open_reads=search_key is None and keys_file is None)

    @property
    def writes(self) -> bool:
        """Whether any key may write (else writes are disabled)."""
        return any(principal.write for _, principal in self.entries)

    def resolve(self, token: str | None) -> Principal | None:
        """The principal of a request's key (None as token: no key sent); None where the key is unknown, or where
        no key was sent and reads need one."""
        if token is None:
            return ANONYMOUS if self.open_reads else None
        presented = digest(token)
        found = None
        for key, principal in self.entries:  # every entry compared: the time says nothing of which matched
            if hmac.compare_digest(presented, key) and found is None:
                found = principal
        return found


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def read_keys(path: Path, indexes: Sequence[str]) -> list[tuple[bytes, Principal]]:
    """The entries of a keys file, each checked (one-line errors naming the file, the entry and the field)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DataError(f"cannot read: {error.strerror or error}", path=path) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"not JSON ({error})", path=path) from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise DataError('expected {"keys": [{"key": ...}, ...]}', path=path)
    principals = [principal(path, n, entry, indexes) for n, entry in enumerate(document["keys"])]
    return [(digest(entry["key"]), found) for entry, found in zip(document["keys"], principals)]


def principal(path: Path, n: int, entry: Any, served: Sequence[str]) -> Principal:
    """Entry n of a keys file as a principal (its key checked too)."""

    def refused(field: str, reason: str) -> DataError:
        return DataError(reason, path=path, field=f"keys[{n}].{field}" if field else f"keys[{n}]")

    if not isinstance(entry, dict):
        raise refused("", "expected an object with a key")
    unknown = sorted(set(entry) - ENTRY_FIELDS)
    if unknown:
        raise refused(unknown[0], f"not a field of a key (the fields: {', '.join(sorted(ENTRY_FIELDS))})")
    key = entry.get("key")
    if not isinstance(key, str) or len(key) < MIN_KEY_CHARACTERS:
        raise refused("key", f"must be a string of at least {MIN_KEY_CHARACTERS} characters")
    name = entry.get("name", f"key {n}")
    if not isinstance(name, str) or not name.strip():
        raise refused("name", "must be a non-empty string")
    indexes = entry.get("indexes")
    if indexes is not None:
        if not isinstance(indexes, list) or not all(isinstance(index, str) for index in indexes):
            raise refused("indexes", "must be a list of index names")
        missing = [index for index in indexes if index not in served]
        if missing:
            raise refused("indexes", f"{missing[0]!r} is not served (served: {', '.join(served) or 'none'})")
    write = entry.get("write", False)
    if not isinstance(write, bool):
        raise refused("write", "must be true or false")
    where = entry.get("where", [])
    if not isinstance(where, list) or not all(isinstance(condition, str) for condition in where):
        raise refused("where", "must be a list of conditions (FIELD=VALUE, as --where takes them)")
    for condition in where:
        try:
            Condition.parse(condition)
        except SemsearchError as error:
            raise refused("where", getattr(error, "detail", str(error))) from None
    return Principal(name, None if indexes is None else frozenset(indexes), write, tuple(where))
