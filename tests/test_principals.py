"""The server's keys (server/principals.py): a keys file read and checked with one-line errors naming the entry
and field, keys held as digests and resolved to principals with scopes, the legacy --api-key/--search-key kept."""

from __future__ import annotations

import json

import pytest

from semsearch.errors import DataError
from semsearch.server.principals import ANONYMOUS, KeyRing

ACME = "acme-reader-key-0123456789"
GLOBEX = "globex-writer-key-0123456789"
ADMIN = "admin-key-0123456789abcdef"


def keys_file(tmp_path, entries) -> str:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": entries}))
    return str(path)


def test_each_key_resolves_to_its_scope_and_an_unknown_key_to_nobody(tmp_path):
    path = keys_file(
        tmp_path,
        [
            {"key": ACME, "name": "acme", "indexes": ["notes"], "where": ["tenant=acme"]},
            {
                "key": GLOBEX,
                "indexes": ["notes", "mail"],
                "write": True,
                "where": ["tenant=globex", "year>=2020"],
            },
            {"key": ADMIN, "write": True},
        ],
    )
    ring = KeyRing.of(keys_file=path, indexes=["notes", "mail"])
    acme, globex, admin = ring.resolve(ACME), ring.resolve(GLOBEX), ring.resolve(ADMIN)
    assert acme.name == "acme" and globex.name == "key 1"
    assert acme.reaches("notes") and not acme.reaches("mail") and not acme.write and not acme.admin
    assert (
        globex.write
        and not globex.admin
        and globex.within(["kind=memo"])
        == [
            "tenant=globex",
            "year>=2020",
            "kind=memo",
        ]
    )
    assert admin.admin and admin.reaches("anything")
    assert ring.resolve(ACME + "x") is None and ring.resolve(ACME[:-1]) is None
    assert ring.resolve(None) is None  # with a keys file every request needs a key
    assert ring.writes
    # the ring holds digests only: no key appears in what it keeps
    assert ACME not in repr(ring) and ADMIN not in repr(ring)


def test_the_legacy_keys_are_an_unscoped_writer_and_reader():
    open_ring = KeyRing.of()
    assert open_ring.resolve(None) is ANONYMOUS and not open_ring.writes
    ring = KeyRing.of(api_key=ADMIN)
    assert ring.resolve(None) is ANONYMOUS and ring.resolve(ADMIN).admin  # reads stay open
    ring = KeyRing.of(api_key=ADMIN, search_key=ACME)
    assert ring.resolve(None) is None
    reader = ring.resolve(ACME)
    assert reader.indexes is None and not reader.write and not reader.where


@pytest.mark.parametrize(
    ("entries", "field", "reason"),
    [
        ([{"key": "short"}], "keys[0].key", "at least 16 characters"),
        ([{"key": ACME}, {"key": GLOBEX, "wirte": True}], "keys[1].wirte", "not a field of a key"),
        ([{"key": ACME, "indexes": ["notes", "nope"]}], "keys[0].indexes", "'nope' is not served"),
        ([{"key": ACME, "write": "yes"}], "keys[0].write", "true or false"),
        ([{"key": ACME, "where": "tenant=acme"}], "keys[0].where", "a list of conditions"),
        ([{"key": ACME, "where": ["tenant==acme"]}], "keys[0].where", "an operator twice"),
        ([{"key": ACME, "where": ["year>=soon"]}], "keys[0].where", "compares numbers or dates"),
        (["just-a-key-string-000"], "keys[0]", "expected an object"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_file_entry_and_field(tmp_path, entries, field, reason):
    path = keys_file(tmp_path, entries)
    with pytest.raises(DataError) as caught:
        KeyRing.of(keys_file=path, indexes=["notes"])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(path) and f"field {field!r}" in message
    assert reason in message, message


def test_a_file_that_is_not_a_keys_file_is_refused_whole(tmp_path):
    for text, reason in (("{", "not JSON"), ('{"key": "x"}', 'expected {"keys"'), ("[]", 'expected {"keys"')):
        (tmp_path / "keys.json").write_text(text)
        with pytest.raises(DataError, match=reason):
            KeyRing.of(keys_file=tmp_path / "keys.json")
    with pytest.raises(DataError, match="cannot read"):
        KeyRing.of(keys_file=tmp_path / "absent.json")
    with pytest.raises(DataError, match="the same key is given twice"):
        KeyRing.of(api_key=ACME, keys_file=keys_file(tmp_path, [{"key": ACME}]))


def test_the_first_and_last_of_many_entries_resolve(tmp_path):
    entries = [{"key": f"tenant-{n:05d}-key-abcdefgh", "where": [f"tenant=t{n}"]} for n in range(2000)]
    ring = KeyRing.of(keys_file=keys_file(tmp_path, entries))
    assert ring.resolve(entries[0]["key"]).where == ("tenant=t0",)
    assert ring.resolve(entries[-1]["key"]).where == ("tenant=t1999",)
    assert ring.resolve("tenant-02000-key-abcdefgh") is None
