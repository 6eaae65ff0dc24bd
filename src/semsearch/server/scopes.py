"""Where a request's principal (principals.py) is asked: once per request its key is resolved (`Keys.principal`,
kept in the request's state) and checked for the index and the right a job needs (`Keys.allowed`: 401 without a
known key, 403 without the right); the job then runs on the index as the principal sees it (`within`: a `Scoped`
view where the key has a `where`).

`Scoped` is the one place a scope is applied: every method the handlers and the MCP tools call on an Index is
answered with the key's conditions ANDed in (searches in every mode, their facets and pages, similar, facet
ranges, deletes by filter), an id outside them is an id not stored (get, similar's examples, delete by id: 404),
an added document must satisfy them (403, nothing stored), and what would count or show other documents (the
index's sizes, its fields' examples and counts, the files ingested) is left out or refused. A request can narrow
the scope, never widen it: its conditions are ANDed after the key's, each one condition (no OR to inject)."""

from __future__ import annotations

import contextlib
import logging
import operator
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from ..errors import SemsearchError
from ..ingest.sources.fields import parse_document
from ..retrieval.search import Where, conditions
from ..settings import DEFAULT_K
from ..storage.filters import COLUMN_FIELDS, NUMERIC_OPERATORS, Condition, number
from .principals import ANONYMOUS, KeyRing, Principal
from .protocol import ApiError, ServerSettings, bearer

if TYPE_CHECKING:
    from ..documents import Document
    from ..index import Index

log = logging.getLogger(__name__)
STATE_KEY = "semsearch.principal"
WRITES_DISABLED = (
    "writes are disabled: start the server with --api-key (or SEMSEARCH_API_KEY), or a --keys file with a key "
    "that may write, and send it as 'Authorization: Bearer KEY'"
)
# What /info shows a scoped key: what the index is, never how much it holds beyond the key's own documents.
SCOPED_INFO = (
    "generation",
    "fields",
    "keyword_index",
    "default_mode",
    "default_alpha",
    "model",
    "model_name",
    "max_length",
    "chunk_tokens",
    "chunk_overlap",
    "read_only",
)


# ---- who asks ----------------------------------------------------------------------------------------------


class Keys:
    """The server's KeyRing, read again from its keys file by `reload` (SIGHUP); a bad file keeps the keys
    held and logs one line."""

    def __init__(self, settings: ServerSettings, indexes: Sequence[str]):
        self.settings, self.indexes = settings, list(indexes)
        self.ring = self.read()

    def read(self) -> KeyRing:
        s = self.settings
        return KeyRing.of(s.api_key, s.search_key, s.keys_file, self.indexes)

    @property
    def legacy(self) -> bool:
        """Only --api-key and --search-key: their answers stay what they always were (a wrong key 403)."""
        return self.settings.keys_file is None

    def reload(self) -> None:
        try:
            self.ring = self.read()
        except SemsearchError as error:
            log.warning("keys not reloaded, the keys held are kept: %s", error)
            return
        log.warning("keys reloaded from %s: %d keys", self.settings.keys_file, len(self.ring.entries))

    @contextlib.contextmanager
    def reloaded_on_hangup(self) -> Any:
        """SIGHUP re-reads the keys file while the app runs (where this thread can take signals: the main one)."""
        import asyncio

        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self.reload)
            added = True
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            added = False
        try:
            yield
        finally:
            if added:
                loop.remove_signal_handler(signal.SIGHUP)

    def principal(self, request: Request) -> Principal:
        """The request's principal, resolved once (kept in its state): 401 without a key where one is needed
        or with an unknown key. Where only --api-key/--search-key are set their answers stay as they always
        were: an unknown key is a 403, and where reads are open it reads as no key does."""
        state = request.scope.setdefault("state", {})
        if STATE_KEY not in state:
            token = bearer(request)
            state[STATE_KEY] = (token, self.ring.resolve(token))
        token, found = state[STATE_KEY]
        if found is not None:
            return found
        if token is None:
            raise ApiError(
                401,
                "key_required",
                f"send {'the search key' if self.legacy else 'a key'} as 'Authorization: Bearer KEY'",
                {"WWW-Authenticate": "Bearer"},
            )
        if self.legacy and self.ring.open_reads:
            return ANONYMOUS
        if self.legacy:
            raise ApiError(403, "wrong_key", "the key sent is not a search key")
        raise ApiError(
            401, "unknown_key", "the key sent is not one of this server's", {"WWW-Authenticate": "Bearer"}
        )

    def allowed(
        self, request: Request, index: str | None, write: bool = False, whole: bool = False
    ) -> Principal:
        """The request's principal where it may do the job: reach `index` (None: any), `write`, and with
        `whole`, see the index whole (a backup: never a key with a where)."""
        if write and not self.ring.writes:
            raise ApiError(403, "writes_disabled", WRITES_DISABLED)
        if write and bearer(request) is None:
            raise ApiError(
                401,
                "key_required",
                "send the api key as 'Authorization: Bearer KEY'",
                {"WWW-Authenticate": "Bearer"},
            )
        principal = self.principal(request)
        if write and not principal.write:
            if self.legacy:
                raise ApiError(403, "wrong_key", "the key sent is not the api key")
            raise ApiError(403, "forbidden", f"the key {principal.name!r} may not write")
        if index is not None and not principal.reaches(index):
            raise ApiError(403, "forbidden", f"the key {principal.name!r} does not reach the index {index!r}")
        if whole and principal.scoped:
            raise ApiError(403, "forbidden", f"the key {principal.name!r} sees only some documents: not this")
        return principal


# ---- what it sees --------------------------------------------------------------------------------------------


def within(index: Index, where: tuple[str, ...], fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(index, *args)` on the index as a principal with `where` sees it (a job for a reader thread or the
    writer process: module-level, picklable)."""
    return fn(Scoped(index, where) if where else index, *args)


def passed_on(name: str) -> property:
    """An attribute of the opened index, the same for every key."""
    return property(operator.attrgetter(f"opened.{name}"))


@dataclass(frozen=True)
class ScopedState:
    """The part of an IndexState a scoped key may read: its documents' count and the generation (pages)."""

    count: int
    generation: int
    rows: None = None  # passages of other documents are not the key's to count


class Scoped:
    """An open Index seen through a principal's conditions (the module's text says what each method does)."""

    def __init__(self, opened: Index, where: Sequence[str]):
        self.opened = opened
        self.scope = [Condition.parse(condition) for condition in where]

    def narrowed(self, where: Where) -> list[Condition]:
        return [*self.scope, *conditions(where)]

    # ---- what the index is: as it is for every key

    path = passed_on("path")
    settings = passed_on("settings")
    read_only = passed_on("read_only")
    default_mode = passed_on("default_mode")
    text_modes = passed_on("text_modes")
    query_defaults = passed_on("query_defaults")

    def refresh(self) -> bool:
        return self.opened.refresh()

    # ---- what it holds: the key's documents only

    def __len__(self) -> int:
        return self.opened.preview_delete((), self.scope).count

    @property
    def state(self) -> ScopedState:
        return ScopedState(len(self), self.opened.state.generation)

    def missing(self, ids: Sequence[str]) -> list[str]:
        """Those of `ids` that name no document of the key's (stored or not: the key cannot tell)."""
        return [
            doc_id
            for doc_id in ids
            if not self.opened.preview_delete((), [*self.scope, Condition("id", "=", doc_id)]).count
        ]

    def get(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        outside = set(self.missing(ids))
        return self.opened.get([doc_id for doc_id in ids if doc_id not in outside])

    def search(self, text: str, k: int = DEFAULT_K, where: Where = None, *rest: Any, **options: Any) -> Any:
        return self.opened.search(text, k, self.narrowed(where), *rest, **options)

    def search_many(
        self, texts: Sequence[str], k: int = DEFAULT_K, where: Where = None, *rest: Any, **options: Any
    ) -> Any:
        return self.opened.search_many(texts, k, self.narrowed(where), *rest, **options)

    def similar(
        self,
        ids: Sequence[str],
        k: int = DEFAULT_K,
        where: Where = None,
        *rest: Any,
        negative: Sequence[str] = (),
        **options: Any,
    ) -> Any:
        self.only_mine([*ids, *negative])
        return self.opened.similar(ids, k, self.narrowed(where), *rest, negative=negative, **options)

    def facet_ranges(
        self, fields: Sequence[str], q: str | None, where: Where, mode: str | None, buckets: int
    ):
        return self.opened.facet_ranges(fields, q, self.narrowed(where), mode, buckets)

    def field_examples(self) -> dict[str, dict[str, Any]]:
        return {}  # their values and counts are of every document

    def info(self) -> dict[str, Any]:
        details = self.opened.info()
        return {"documents": len(self), "scoped": True, **{name: details[name] for name in SCOPED_INFO}}

    def served_files(self, parts: Sequence[str]) -> list[tuple[str, str]]:
        raise ApiError(
            403, "forbidden", "the ingested files are not served to a key that sees only some documents"
        )

    # ---- writes: inside the scope only

    def preview_delete(self, ids: Sequence[str] = (), where: Where = None) -> Any:
        self.only_mine(ids)
        return self.opened.preview_delete(ids, self.narrowed(where) if where else None)

    def delete(self, ids: Sequence[str] = (), where: Where = None, expect: int | None = None) -> int:
        self.only_mine(ids)
        return self.opened.delete(ids, self.narrowed(where) if where else None, expect)

    def only_mine(self, ids: Sequence[str]) -> None:
        if outside := self.missing(ids):
            raise ApiError(404, "not_found", f"no document with id {', '.join(map(repr, outside[:5]))}")

    def add(self, documents: Iterable[Any], *args: Any, **options: Any) -> Any:
        """Adds the documents if every one satisfies the scope and takes no id of a document outside it
        (else 403, nothing stored)."""
        docs = [parse_document(record, line=n) for n, record in enumerate(documents, 1)]
        outside = self.missing([doc.id for doc in docs])
        taken = set(outside) - set(self.opened.missing(outside))
        for n, doc in enumerate(docs, 1):
            failed = next((c for c in self.scope if not satisfies(doc, c)), None)
            if failed is not None or doc.id in taken:
                why = (
                    f"does not satisfy {failed.field}{failed.operator}{failed.value}"
                    if failed
                    else "its id is not free"
                )
                raise ApiError(
                    403, "outside_scope", f"document {n} (id {doc.id!r}) is not this key's to write: {why}"
                )
        return self.opened.add(docs, *args, **options)


# ---- a document against a condition, as the store's SQL reads it (storage/filters.py's rules) -------------------


def values_at(doc: Document, field: str) -> list[Any] | None:
    """The values a condition on `field` reads: a scalar, a list's scalar members; None: absent or null."""
    if field in COLUMN_FIELDS:
        value = doc.id if field == "id" else doc.title
        return None if value is None else [value]
    value: Any = doc.metadata
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if value is None:
        return None
    members = value if isinstance(value, list) else [value]
    return [member for member in members if member is not None and not isinstance(member, dict | list)]


def satisfies(doc: Document, condition: Condition) -> bool:
    found = values_at(doc, condition.field)
    operator, value = condition.operator, condition.value
    parsed = number(value)
    if operator in NUMERIC_OPERATORS:
        compare = {
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }[operator]
        if parsed is None:  # a date: ISO 8601 text, ordered as text
            wanted = value.replace(" ", "T")
            return any(isinstance(v, str) and compare(v, wanted) for v in found or [])
        return any(is_number(v) and compare(v, parsed) for v in found or [])
    if condition.field in COLUMN_FIELDS:
        equal = found is not None and str(found[0]) == value
    elif value == "null":
        equal = found is None
    elif value in ("true", "false"):
        equal = any((isinstance(v, bool) and str(v).lower() == value) or v == value for v in found or [])
    else:
        equal = any(
            (isinstance(v, str) and v == value) or (is_number(v) and parsed is not None and v == parsed)
            for v in found or []
        )
    return equal if operator == "=" else not equal


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
