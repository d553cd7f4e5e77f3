"""Studies that state the seed's numerical findings as distributions over seeds (Adam's c2 is
bendtorch.reference.adam_c2, beside the training loop it shares): the seed's summation and angle orders at large
sizes (orders), the two truths a float32 constant allows (two_truths), and batch and thread invariance (invariance). Each module has a function returning a JSON-able dict, a function that plots it,
and a `python -m bendtorch.reference.findings.<module>` entry that writes both under reports/results/findings/."""

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


def command_line() -> str:
    """The command that is running, as a user would type it (for the JSON's `command` field)."""
    mod = sys.modules["__main__"].__spec__
    head = f"python -m {mod.name}" if mod is not None else f"python {sys.argv[0]}"
    return " ".join([head, *sys.argv[1:]])


RESULTS = pathlib.Path(__file__).resolve().parent.parent.parent / "reports" / "results" / "findings"
