"""Issue 2's benchmark: full SciFact (or any BEIR directory) with none, whiten and pca at K = 64, 128, 256
and 384, through `semsearch bench`: nDCG@10, Recall@10, Recall@100, ingest docs/s and query ms, written to
benchmarks/results/<dataset>/ with the command that made them. Add --peers for sentence-transformers' encode +
exact cosine (and txtai) on the same corpus.

    .venv/bin/python benchmarks/scifact_dims.py [BEIR_DIR] [--peers] [more `semsearch bench` options]
"""

import sys
from pathlib import Path

from semsearch.cli import main

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "data" / "scifact"

if __name__ == "__main__":
    arguments = sys.argv[1:]
    directory = arguments.pop(0) if arguments and not arguments[0].startswith("-") else str(DEFAULT)
    if not Path(directory).is_dir():
        sys.exit(f"no BEIR directory at {directory}: give one as the first argument")
    main(
        ["bench", "--beir", directory, "--dims", "64,128,256,384", "--transforms", "none,pca,whiten"]
        + ["--powers", "1", *arguments],
        prog_name="semsearch",
    )
