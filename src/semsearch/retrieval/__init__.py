"""The retrieval stage: a query's way from vectors and words to ranked documents.

Owns the query options resolved once (query), dense candidates, rerank, best passage, fusion and the join
(search), the keyword side (keywords), the --where language (filters), exact filtered search (strategy), the
FAISS index and its tuning (vectorindex, tuning), and the fusion weight each corpus calibrates with real
searches of its own pseudo-queries (calibration; how their figures choose: choice; how old it is:
calibration_age)."""
