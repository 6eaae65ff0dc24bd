"""Builds tests/data/legacy-v1: an index written by semsearch at 8ce07c7 (the release before the redesign), with
the results it gave, so that later releases are checked against them. Run with that release installed:
    python tests/data/legacy-v1/make.py /tmp/legacy-v1   (then copy index/ and results.json here)"""

import json
import shutil
import sqlite3
import sys
from pathlib import Path

from semsearch import Index

out = Path(sys.argv[1])
shutil.rmtree(out, ignore_errors=True)
docs = [json.loads(line) for line in Path("examples/sample.jsonl").read_text().splitlines()]
index = Index.create(out / "index")
index.add(docs[:40])
index.add(docs[40:60])
index.delete(["argparse"])
queries = ["parse a date from a string", "read a file line by line", "sort a list"]
record = {
    "commit": "8ce07c70ba3c4b869a1ed8263ff1e25a1f8450a7",
    "queries": {q: [[h.id, h.score] for h in index.search(q, k=5)] for q in queries},
    "filtered": {
        q: [[h.id, h.score] for h in index.search(q, k=5, where=["kind=function"])] for q in queries
    },
    "count": len(index),
}
index.close()
connection = sqlite3.connect(out / "index" / "documents.db")
connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
connection.close()
for leftover in [*(out / "index").glob("documents.db-*"), out / "index" / "writer.lock"]:
    leftover.unlink(missing_ok=True)
(out / "results.json").write_text(json.dumps(record, indent=1) + "\n")
