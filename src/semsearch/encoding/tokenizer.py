"""Texts to token ids, and token ids to the padded arrays every backend takes."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ModelError
from .model import _read_json

if TYPE_CHECKING:
    import tokenizers
    from transformers import PreTrainedTokenizerBase


class Tokenizer:
    """Texts to token ids, truncated to max_length, with the model's special tokens. The `tokenizers`
    library straight from tokenizer.json where the directory has one (the same ids as transformers'
    tokenizer, without importing torch: a query process starts in a second); transformers' otherwise."""

    def __init__(self, path: Path, max_length: int):
        self.path = path
        self.max_length = max_length
        self._slow: PreTrainedTokenizerBase | None = None
        self._unclaimed: tokenizers.Tokenizer | None = None
        self._claiming = threading.Lock()  # two threads asking for both copies at once get one each
        if (path / "tokenizer.json").is_file():  # read now: a broken file fails before anything is written
            self._unclaimed = self._read_fast()
        else:
            import transformers

            transformers.logging.set_verbosity_error()
            self._slow = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)

    # Two copies of the fast tokenizer: the one read first goes to whichever is asked first, the other is read
    # again from the file when asked (a third cheaper than a copy through JSON). A query asks only for ids, a
    # renewal of the calibration only cuts passages: each reads the file once (20 ms), an ingest twice.
    @functools.cached_property
    def _fast(self) -> tokenizers.Tokenizer | None:
        """The fast tokenizer truncating at max_length; None without tokenizer.json."""
        fast = self._claim()
        if fast is not None:
            fast.enable_truncation(self.max_length)
        return fast

    @functools.cached_property
    def _whole(self) -> tokenizers.Tokenizer | None:
        """The fast tokenizer without truncation (where a text can be cut); None without tokenizer.json."""
        return self._claim()

    def _claim(self) -> tokenizers.Tokenizer | None:
        if self._slow is not None:
            return None
        with self._claiming:
            claimed, self._unclaimed = self._unclaimed, None
        return claimed or self._read_fast()

    @property
    def _transformers(self) -> PreTrainedTokenizerBase:
        """transformers' tokenizer: the one there is wherever the fast one is not (no tokenizer.json)."""
        if self._slow is None:
            raise ModelError(f"{self.path}: no tokenizer loaded")
        return self._slow

    def _read_fast(self) -> tokenizers.Tokenizer:
        import tokenizers

        try:
            fast = tokenizers.Tokenizer.from_file(str(self.path / "tokenizer.json"))
        except Exception as error:
            raise unreadable(self.path, error) from None
        fast.no_padding()
        fast.no_truncation()
        return fast

    @functools.cached_property
    def pad_id(self) -> int:
        if self._fast is None:
            return self._transformers.pad_token_id or 0
        config = self.path / "tokenizer_config.json"
        pad_token = _read_json(config).get("pad_token") if config.is_file() else None
        found = self._fast.token_to_id(pad_token) if isinstance(pad_token, str) else None
        return 0 if found is None else found

    def spans(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Each text's word pieces as character (start, end) offsets, untruncated and without special tokens:
        where a text can be cut into passages (chunking.py)."""
        if self._whole is not None:
            return [
                encoding.offsets for encoding in self._whole.encode_batch(texts, add_special_tokens=False)
            ]
        if not getattr(self._slow, "is_fast", False):
            raise ModelError("cutting documents into passages needs a fast tokenizer (tokenizer.json)")
        found = self._transformers(
            texts, add_special_tokens=False, return_offsets_mapping=True, truncation=False
        )
        return [list(map(tuple, offsets)) for offsets in found["offset_mapping"]]

    @functools.cached_property
    def special_tokens(self) -> int:
        """How many special tokens the model adds to a text ([CLS] and [SEP] for BERT)."""
        if self._whole is not None:  # asked where texts are cut (the copy a renewal reads)
            return len(self._whole.encode("", add_special_tokens=True).ids)
        return len(self._transformers("", add_special_tokens=True)["input_ids"])

    def __call__(self, texts: list[str]) -> list[list[int]]:
        if self._fast is not None:
            return [encoding.ids for encoding in self._fast.encode_batch(texts)]
        return self._transformers(texts, truncation=True, max_length=self.max_length)["input_ids"]


@functools.lru_cache(maxsize=8)
def load_tokenizer(path: str, max_length: int) -> Tokenizer:
    """The tokenizer of a model directory, loaded once per process, directory and length."""
    try:
        return Tokenizer(Path(path), max_length)
    except ModelError:
        raise
    except Exception as error:
        raise unreadable(path, error) from None


def unreadable(path: str | Path, error: Exception) -> ModelError:
    """An unreadable tokenizer file is the model's error."""
    return ModelError(f"{path}: cannot load the tokenizer ({type(error).__name__}: {error})")


def padded(token_ids: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded to the longest, and the attention mask (int64, as the models take them)."""
    width = max(len(ids) for ids in token_ids)
    ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask
