"""Builds tests/data/legacy-v1: an index written by semsearch at 8ce07c7 (the release before the redesign),
with the results it gave, so later releases can be checked against them."""
import json, os, shutil, sqlite3, sys
from pathlib import Path
from semsearch import Index

out = Path(sys.argv[1])
shutil.rmtree(out, ignore_errors=True)
docs = [json.loads(l) for l in open("examples/sample.jsonl")]
first, second = docs[:40], docs[40:60]
index = Index.create(out / "index")
index.add(first)
index.add(second)
index.delete(["argparse"])
queries = ["parse a date from a string", "read a file line by line", "sort a list"]
record = {
    "commit": "8ce07c70ba3c4b869a1ed8263ff1e25a1f8450a7",
    "queries": {q: [[h.id, h.score] for h in index.search(q, k=5)] for q in queries},
    "filtered": {q: [[h.id, h.score] for h in index.search(q, k=5, where=["kind=function"])] for q in queries},
    "count": len(index),
}
index.close()
con = sqlite3.connect(out / "index" / "documents.db"); con.execute("PRAGMA wal_checkpoint(TRUNCATE)"); con.close()
for p in (out / "index").glob("documents.db-*"): p.unlink()
(out / "index" / "writer.lock").unlink(missing_ok=True)
(out / "results.json").write_text(json.dumps(record, indent=1) + "\n")
print(record["count"], record["queries"]["parse a date from a string"][:2])
