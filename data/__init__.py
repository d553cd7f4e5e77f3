"""The data the commands read at run time, shipped inside the package: the tiny Llama's corpus."""

from __future__ import annotations

from importlib import resources

import numpy as np
import numpy.typing as npt


def corpus_bytes() -> bytes:
    """data/corpus.txt, the tiny Llama's training text (its bytes are the tokens)."""
    return resources.files(__name__).joinpath("corpus.txt").read_bytes()


def corpus_tokens() -> npt.NDArray[np.int64]:
    """The corpus as token ids: one byte, one token (vocabulary 256)."""
    return np.frombuffer(corpus_bytes(), dtype=np.uint8).astype(np.int64)
