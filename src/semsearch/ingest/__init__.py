"""The ingest stage: from a source of documents (a JSONL file, a folder, a document file, a table) to the vectors
and statistics of their passages.

Owns the sources (sources/: each yields documents or errors with their place, behind one open_source), the corpus
that checks and streams any of them (documents, idcheck), the cut of long documents into passages (chunking), the
pipeline that encodes a partition at a time and counts the statistics (pipeline), where partitions are encoded
(distributed, worker: this process or a Dask cluster), a new index's settings (creation) and the fit of the
transform and build of the vector index from raw vectors (build)."""
