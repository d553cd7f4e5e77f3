"""The JSON Schemas of the documents the commands write, shipped in the package (records/schemas/NAME.schema.json):
report (report.json), accuracy (accuracy.json, the op-accuracy matrix), laws (`bendtorch laws --json`), sweep (a function's sweep_*.json), bench, findings (a study's
result), summary (a training run's summary.json). Every such document carries `schema_version`; `validate` checks
one against its schema (the tests do, for every document the commands write)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

NAMES = ("report", "laws", "sweep", "bench", "findings", "summary", "machine", "accuracy")


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema named `name` (one of NAMES)."""
    if name not in NAMES:
        raise KeyError(f"no schema named {name!r}; the schemas are {', '.join(NAMES)}")
    doc = json.loads(resources.files(__package__ or "bendtorch.records").joinpath(
        "schemas", f"{name}.schema.json").read_text())
    assert isinstance(doc, dict)
    return doc


def validate(doc: Any, name: str) -> None:
    """jsonschema.ValidationError unless doc (as its JSON reads back) fits schema `name`; the machine record's
    schema is referenced by the others as "machine.schema.json"."""
    import jsonschema
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry().with_resources(
        (schema(n)["$id"], Resource.from_contents(schema(n))) for n in NAMES)
    jsonschema.Draft202012Validator(schema(name), registry=registry).validate(doc)
