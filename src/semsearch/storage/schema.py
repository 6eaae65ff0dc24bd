"""The document store's SQLite schema, as numbered migrations (store.py runs them on open)."""

from __future__ import annotations

# Numbered schema migrations: migration n brings a store from user_version n - 1 to n, its statements and the
# new version number in one transaction. A store made before numbering (user_version 0, its tables present) takes
# migration 1 as a no-op (IF NOT EXISTS). Each migration ends by setting its own number.
# The typed metadata rows (table `meta`, schema 2) of the documents `{rows}` selects, as SQLite's json_each
# reads them, so filters keep the meaning they had over the JSON (filters.py): a row per non-null value reachable
# through objects (the path is the dotted field name) and one per scalar member of a list, at the list's path.
# A key holding a dot cannot be named by a --where path and is left out (its path would read as a nested one).
# Porter stemming over Unicode words, accents folded: what standard BM25 setups (Anserini, Elasticsearch's
# english analyzer) index, less their stopword list, which keywords.py applies to queries instead.
KEYWORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
# `{numbered}`: each row's `seq` among its document's (schema 8), or nothing (schema 2's table had none).
META_ROWS_OF = """INSERT INTO meta (pk, {numbered}path, kind, num, str)
    WITH RECURSIVE walk(pk, path, kind, value) AS (
        SELECT d.pk, e.key, e.type, e.value FROM documents AS d, json_each(d.metadata) AS e
        WHERE {rows} AND instr(e.key, '.') = 0
        UNION ALL
        SELECT w.pk, w.path || '.' || e.key, e.type, e.value FROM walk AS w, json_each(w.value) AS e
        WHERE w.kind = 'object' AND instr(e.key, '.') = 0
    ), found(pk, path, kind, value) AS (
        SELECT pk, path, kind, value FROM walk WHERE kind != 'null'
        UNION ALL
        SELECT w.pk, w.path, e.type, e.value FROM walk AS w, json_each(w.value) AS e
        WHERE w.kind = 'array' AND e.type IN ('text', 'integer', 'real', 'true', 'false')
    )
    SELECT pk, {numbering}path, kind, CASE WHEN kind IN ('integer', 'real') THEN value END,
        CASE WHEN kind = 'text' THEN value END
    FROM found"""
META_ROWS = META_ROWS_OF.format(
    numbered="seq, ", numbering="row_number() OVER (PARTITION BY pk), ", rows="{rows}"
)
ANALYZED = "semsearch_analyze({row}.title), semsearch_analyze({row}.text)"  # analysis.SQL_FUNCTION
HANGUL_ROWS = "semsearch_has_hangul(title) OR semsearch_has_hangul(text)"
NEW_ROWS = "d.pk IN (SELECT value FROM json_each(?))"

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS documents (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            title TEXT,
            text TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            hash TEXT NOT NULL
        )""",
        "CREATE TABLE IF NOT EXISTS fields (name TEXT PRIMARY KEY, documents INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "PRAGMA user_version = 1",
    ),
    (  # typed, indexed metadata, so a filter reads the index entries of its values, not every document's JSON
        """CREATE TABLE IF NOT EXISTS meta (
            pk INTEGER NOT NULL,
            path TEXT NOT NULL,
            kind TEXT NOT NULL,
            num NUMERIC,
            str TEXT
        )""",
        "CREATE INDEX IF NOT EXISTS meta_kind ON meta (path, kind, pk)",
        "CREATE INDEX IF NOT EXISTS meta_num ON meta (path, num, pk) WHERE num IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS meta_str ON meta (path, str, pk) WHERE str IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS meta_pk ON meta (pk)",
        "DELETE FROM meta",
        META_ROWS_OF.format(numbered="", numbering="", rows="1"),  # the documents already stored
        "PRAGMA user_version = 2",
    ),
    (  # passages (chunking.py) and the keyword index
        # A document of n passages owns the vector rows pk .. pk + n - 1; their character spans are in `passages`
        # (documents of one passage, every document before this, have no rows there: the whole text).
        "ALTER TABLE documents ADD COLUMN passages INTEGER NOT NULL DEFAULT 1",
        "CREATE INDEX IF NOT EXISTS documents_long ON documents (pk, passages) WHERE passages > 1",
        "CREATE TABLE IF NOT EXISTS passages (pk INTEGER PRIMARY KEY, start INTEGER NOT NULL, end INTEGER NOT NULL)",
        # FTS5 over the documents' title and text (external content: the text is stored once), kept in step by
        # triggers, so the keyword index commits in the documents' own transaction.
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS keywords USING fts5(
            title, text, content='documents', content_rowid='pk', tokenize='{KEYWORD_TOKENIZER}')""",
        """CREATE TRIGGER IF NOT EXISTS keywords_insert AFTER INSERT ON documents BEGIN
            INSERT INTO keywords (rowid, title, text) VALUES (new.pk, new.title, new.text);
        END""",
        """CREATE TRIGGER IF NOT EXISTS keywords_delete AFTER DELETE ON documents BEGIN
            INSERT INTO keywords (keywords, rowid, title, text) VALUES ('delete', old.pk, old.title, old.text);
        END""",
        """CREATE TRIGGER IF NOT EXISTS keywords_update AFTER UPDATE OF title, text ON documents BEGIN
            INSERT INTO keywords (keywords, rowid, title, text) VALUES ('delete', old.pk, old.title, old.text);
            INSERT INTO keywords (rowid, title, text) VALUES (new.pk, new.title, new.text);
        END""",
        "INSERT INTO keywords (keywords) VALUES ('rebuild')",  # the documents already stored
        "PRAGMA user_version = 3",
    ),
    (  # the documents' title and text pass through the one analysis queries pass through (storage/analysis.py)
        "DROP TRIGGER IF EXISTS keywords_insert",
        "DROP TRIGGER IF EXISTS keywords_delete",
        "DROP TRIGGER IF EXISTS keywords_update",
        f"""CREATE TRIGGER keywords_insert AFTER INSERT ON documents BEGIN
            INSERT INTO keywords (rowid, title, text) VALUES (new.pk, {ANALYZED.format(row="new")});
        END""",
        f"""CREATE TRIGGER keywords_delete AFTER DELETE ON documents BEGIN
            INSERT INTO keywords (keywords, rowid, title, text) VALUES ('delete', old.pk, {ANALYZED.format(row="old")});
        END""",
        f"""CREATE TRIGGER keywords_update AFTER UPDATE OF title, text ON documents BEGIN
            INSERT INTO keywords (keywords, rowid, title, text) VALUES ('delete', old.pk, {ANALYZED.format(row="old")});
            INSERT INTO keywords (rowid, title, text) VALUES (new.pk, {ANALYZED.format(row="new")});
        END""",
        "PRAGMA user_version = 4",
    ),
    (  # the files a folder's ingest read (ingest/sync.py): what each held when read, and its documents
        # `root` is the folder's absolute path, `path` the file's relative to it (POSIX); `documents` a JSON
        # object of the ids its documents got, each with the content hash stored with it.
        """CREATE TABLE IF NOT EXISTS files (
            root TEXT NOT NULL,
            path TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            hash TEXT NOT NULL,
            documents TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (root, path)
        )""",
        "PRAGMA user_version = 5",
    ),
    (  # where passages are in their files (documents.py's Section and Location, read from files)
        # A document's sections as JSON, [[start, end, location], ...] (NULL: none): what an export carries.
        "ALTER TABLE documents ADD COLUMN sections TEXT",
        # Each vector row's location in its file (Location.to_json()), for the rows of documents with sections.
        "CREATE TABLE IF NOT EXISTS locations (pk INTEGER PRIMARY KEY, location TEXT NOT NULL)",
        "PRAGMA user_version = 6",
    ),
    (  # Hangul runs analysed into bigrams (cjk.py): the documents holding Hangul re-analysed, their
        # old tokens taken out by the analysis they went in with (analysis.py registers both)
        f"""INSERT INTO keywords (keywords, rowid, title, text)
            SELECT 'delete', pk, semsearch_analyze_v4(title), semsearch_analyze_v4(text) FROM documents
            WHERE {HANGUL_ROWS}""",
        f"""INSERT INTO keywords (rowid, title, text)
            SELECT pk, semsearch_analyze(title), semsearch_analyze(text) FROM documents WHERE {HANGUL_ROWS}""",
        "PRAGMA user_version = 7",
    ),
    (  # the typed metadata kept in its documents' order (WITHOUT ROWID, keyed by pk and each value's place), so
        # a write's delete of a document's rows reads them there and no index by pk is kept: 136 bytes a
        # WordNet gloss's two fields where the rowid table and its four indexes took 188 (bytes.md)
        """CREATE TABLE meta_by_document (
            pk INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            path TEXT NOT NULL,
            kind TEXT NOT NULL,
            num NUMERIC,
            str TEXT,
            PRIMARY KEY (pk, seq)
        ) WITHOUT ROWID""",
        """INSERT INTO meta_by_document (pk, seq, path, kind, num, str)
            SELECT pk, row_number() OVER (PARTITION BY pk ORDER BY rowid), path, kind, num, str FROM meta""",
        "DROP TABLE meta",
        "ALTER TABLE meta_by_document RENAME TO meta",
        "CREATE INDEX meta_kind ON meta (path, kind, pk)",
        "CREATE INDEX meta_num ON meta (path, num, pk) WHERE num IS NOT NULL",
        "CREATE INDEX meta_str ON meta (path, str, pk) WHERE str IS NOT NULL",
        "PRAGMA user_version = 8",
    ),
    (  # how each file's text was extracted (ingest/ocr: OCR mode, engine, languages): another reads it again
        "ALTER TABLE files ADD COLUMN extraction TEXT NOT NULL DEFAULT ''",
        "PRAGMA user_version = 9",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
