"""Texts to token ids, and token ids to the padded arrays every backend takes."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .model import _read_json


class Tokenizer:
    """Texts to token ids, truncated to max_length, with the model's special tokens. The `tokenizers`
    library straight from tokenizer.json where the directory has one (the same ids as transformers'
    tokenizer, without importing torch: a query process starts in a second); transformers' otherwise."""

    def __init__(self, path: Path, max_length: int):
        self.path = path
        self.max_length = max_length
        self.pad_id = 0
        self._fast = None
        self._slow = None
        self._whole = None  # the fast tokenizer without truncation, made when first needed
        if (path / "tokenizer.json").is_file():
            import tokenizers

            self._fast = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
            self._fast.no_padding()
            self._fast.enable_truncation(max_length)
            pad_token = (
                _read_json(path / "tokenizer_config.json").get("pad_token")
                if (path / "tokenizer_config.json").is_file()
                else None
            )
            if isinstance(pad_token, str) and self._fast.token_to_id(pad_token) is not None:
                self.pad_id = self._fast.token_to_id(pad_token)
        else:
            import transformers

            transformers.logging.set_verbosity_error()
            self._slow = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.pad_id = self._slow.pad_token_id or 0

    def spans(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Each text's word pieces as character (start, end) offsets, untruncated and without special tokens:
        where a text can be cut into passages (chunking.py)."""
        if self._fast is not None:
            if self._whole is None:  # read again from its file: a third cheaper than a copy through JSON
                self._whole = type(self._fast).from_file(str(self.path / "tokenizer.json"))
                self._whole.no_truncation()
                self._whole.no_padding()
            return [
                encoding.offsets for encoding in self._whole.encode_batch(texts, add_special_tokens=False)
            ]
        if not getattr(self._slow, "is_fast", False):
            raise ModelError("cutting documents into passages needs a fast tokenizer (tokenizer.json)")
        found = self._slow(texts, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
        return [list(map(tuple, offsets)) for offsets in found["offset_mapping"]]

    @functools.cached_property
    def special_tokens(self) -> int:
        """How many special tokens the model adds to a text ([CLS] and [SEP] for BERT)."""
        if self._fast is not None:
            return len(self._fast.encode("", add_special_tokens=True).ids)
        return len(self._slow("", add_special_tokens=True)["input_ids"])

    def __call__(self, texts: list[str]) -> list[list[int]]:
        if self._fast is not None:
            return [encoding.ids for encoding in self._fast.encode_batch(texts)]
        return self._slow(texts, truncation=True, max_length=self.max_length)["input_ids"]


@functools.lru_cache(maxsize=8)
def load_tokenizer(path: str, max_length: int) -> Tokenizer:
    """The tokenizer of a model directory, loaded once per process, directory and length."""
    try:
        return Tokenizer(Path(path), max_length)
    except ModelError:
        raise
    except Exception as error:  # unreadable tokenizer files are the model's
        raise ModelError(f"{path}: cannot load the tokenizer ({type(error).__name__}: {error})") from None


def padded(token_ids: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded to the longest, and the attention mask (int64, as the models take them)."""
    width = max(len(ids) for ids in token_ids)
    ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask
