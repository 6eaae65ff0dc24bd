"""The ingest stage: from a JSONL line to the vectors and statistics of its passages.

Owns the one reader of corpus files (documents, idcheck), the cut of long documents into passages (chunking), the
pipeline that encodes a partition at a time and counts the statistics (pipeline), where
partitions are encoded (distributed, worker: this process or a Dask cluster), a new index's settings
(creation) and the fit of the transform and build of the vector index from raw vectors (build)."""
