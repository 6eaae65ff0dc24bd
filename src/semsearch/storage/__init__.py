"""The storage stage: what an index keeps on disk and how it changes safely. Knows no model.

Owns the SQLite document store with its passages, typed metadata and FTS5 keyword table (store, schema), the
reads other stages ask of it by name (reads: no SQL runs outside this stage), query words as the keyword index's
tokenizer makes them terms (keywordterms) and the text analysis the keyword index and queries share (analysis),
the `--where` language and the SQL of its conditions (filters), the append-only raw vector segments (rawvectors; written through a spool: rawspool; compacted: rawcompaction;
what an interrupted ingest encoded: resumecache) and which rows are
whose passages (passages), the manifest (manifest), generations and the writer lock (generations), atomic file
writes (files), what a damaged file is (damage) and the named fault points where the crash tests stop a process
(faults) and the files a folder's ingest read (synced)."""
