"""The retrieval stage: a query's way from vectors and words to ranked documents.

Owns the query options resolved once (query), dense candidates, rerank, best passage, fusion and the join
(search), the keyword side (keywords), exact filtered search (strategy; the --where language and its SQL are
storage's: storage/filters.py), the
FAISS index and its tuning (vectorindex, tuning), and the fusion weight each corpus calibrates with real
searches of its own pseudo-queries (calibration, which cuts them with the cut ingest hands it; how their figures
choose: choice)."""
