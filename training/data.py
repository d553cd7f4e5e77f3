"""The training data of a run and the record a checkpoint binds it by. tiny reads a text file as bytes (one byte,
one token; the shipped corpus, bendtorch.data, by default); smol trains on random tokens drawn from the seed. A file
named by --data is read as a regular file (records.files: not a directory, a fifo or a device; its size checked
against MAX_DATA_BYTES and the memory estimate before a byte is read, then read in bounded pieces)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from bendtorch.records import files
from bendtorch.training.options import TrainError

MAX_DATA_BYTES = 2_000_000_000  # the most the seed's read_all reads (main.bend line 2970)
SHIPPED = "the shipped corpus (bendtorch.data, corpus.txt)"


def random_tokens(seed: int, vocab: int, batch: int, t: int) -> npt.NDArray[np.int64]:
    """smol's tokens: drawn from seed + 1, enough for four batches and at least 100,000."""
    return np.random.default_rng(seed + 1).integers(0, vocab, size=random_count(batch, t), dtype=np.int64)


def random_count(batch: int, t: int) -> int:
    return max(100_000, 4 * batch * (t + 1))


def data_record(tokens: npt.NDArray[np.int64] | None, raw: bytes | bytearray | None, path: str) -> dict[str, Any]:
    """The record a manifest keeps (impl.checkpoint_folder.data_record): the SHA-256 and size of the file's bytes
    (raw), or of the tokens as little-endian int64 where there is no file."""
    from bendtorch.impl.checkpoint_folder import data_record as record

    blob = raw if raw is not None else np.ascontiguousarray(tokens, dtype="<i8").tobytes()
    return record(hashlib.sha256(blob).hexdigest(), len(blob), path)


def read_corpus(path: Path | None, before_read: Callable[[int], None]) -> tuple[npt.NDArray[np.int64], dict[str, Any]]:
    """(tokens, record) of tiny's data: the file at path (None: the shipped corpus). before_read(size) is called
    with the file's size once it is known to be a regular file within MAX_DATA_BYTES, before a byte is read (the
    memory check)."""
    if path is None:
        from bendtorch.data import corpus_bytes

        raw: bytes | bytearray = corpus_bytes()
        before_read(len(raw))
        shown = SHIPPED
    else:
        with files.open_regular(path, label="--data ", error=TrainError) as f:
            f.bound(MAX_DATA_BYTES, "a training corpus (the seed reads at most 2,000,000,000 bytes)")
            before_read(f.size)
            raw = f.read_all()
        shown = files.shown(path.resolve())  # for messages: bytes that are not UTF-8 escaped, so JSON holds it
    tokens = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
    return tokens, data_record(None, raw, shown)


def describe(path: Path | None) -> str:
    """The data as a message names it."""
    return "the shipped corpus" if path is None else f"--data {files.shown(path)}"
