"""Studies that state the seed's numerical findings as distributions over seeds: the seed's summation and angle orders
at large sizes (orders), the two truths a float32 constant allows (two_truths), and batch and thread invariance
(invariance); the drift studies (llama_drift, adam_c2, bf16_drift) sit beside the training loop they share
(reference/trio.py). Each has a function returning a JSON-able dict and one that plots it; bendtorch.records.studies
lists every study, and `bendtorch study NAME` writes its result through `write_json` below."""

from __future__ import annotations

import pathlib
import sys
from typing import Any


SCHEMA_VERSION = 1  # a study's JSON layout (records/schemas/findings.schema.json)


def write_json(obj: dict[str, Any], path: pathlib.Path) -> None:
    """A study's result as indented JSON at path, atomically, with its schema version and the machine record
    (PyTorch's facts included where the study imported it)."""
    from bendtorch.records.durable import write_json as write
    from bendtorch.records.machine import machine

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": SCHEMA_VERSION, **obj}
    doc.setdefault("machine", machine(["torch"] if "torch" in sys.modules else []))
    write(path, doc)
