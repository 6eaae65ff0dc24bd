"""The ingest's progress bar. Many documents: it counts documents. Few (at most FEW_DOCUMENTS, a corpus of
manuals, books, long reports): it counts passages, the unit the encoder works through, its total growing as each
partition is cut (all at once for so few: they are one partition), with the documents done beside them, so a
manual of 300 pages moves from its first batch instead of standing at 0/1 doc until it is done. Beside either,
the pages recognized so far (ingest/ocr/progress.py): a scan is read for minutes before its first passage."""

from __future__ import annotations

import sys
from contextlib import ExitStack

from ..ingest.ocr.progress import counted_pages

FEW_DOCUMENTS = 256  # at most this many documents: the bar counts passages (the first partition of a folder)


def counts_passages(documents: int | None) -> bool:
    """Whether an ingest of this many documents (None: not known before it is read, a folder's tables) reports
    passages (the bar, the summary's rate)."""
    return documents is not None and 0 < documents <= FEW_DOCUMENTS


class EncodingBar:
    """A progress callable (documents done) that also takes `passages(found=, done=)` (pipeline.py)."""

    def __init__(self, documents: int | None, quiet: bool, label: str = "encoding"):
        from tqdm import tqdm

        self.documents, self.done, self.recognized = documents, 0, 0
        self.listening = ExitStack()
        self.by_passages = counts_passages(documents)
        self.bar = tqdm(
            total=None if self.by_passages else documents,
            desc=label,
            unit="passage" if self.by_passages else "doc",
            disable=quiet,
            file=sys.stderr,
            dynamic_ncols=True,
        )

    def __call__(self, documents: int) -> None:
        if not self.by_passages:
            self.bar.update(documents)
            return
        self.done += documents
        self._show_counts()

    def pages_recognized(self, pages: int) -> None:
        self.recognized += pages
        self._show_counts()

    def _show_counts(self) -> None:
        counts = [f"{int(self.done)}/{self.documents} docs"] if self.by_passages else []
        if self.recognized:
            counts.append(f"{self.recognized} page{'s' if self.recognized > 1 else ''} recognized")
        self.bar.set_postfix_str(", ".join(counts), refresh=True)

    def passages(self, found: int = 0, done: int = 0) -> None:
        if not self.by_passages:
            return
        if found:
            self.bar.total = (self.bar.total or 0) + found
            self.bar.refresh()
        if done:
            self.bar.update(done)

    def __enter__(self) -> EncodingBar:
        self.listening.enter_context(counted_pages(self.pages_recognized))
        return self

    def __exit__(self, *exc: object) -> None:
        self.listening.close()
        self.bar.close()
