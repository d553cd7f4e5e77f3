"""Sweep JSONs of the earlier layout (no schema_version, or 1: one machine for the whole file, a platform string and
no CPU model, no keys) in the current one, without running anything again: every column gets the file's machine as
a machine record and no key (its chunks were not keyed). The atlas reads such a file through `upgrade`; the command
line (bendtorch.reports.sweep.migrate) rewrites the files.

The earlier records say only "Linux-...-x86_64" and "x86_64". Where the CPU is known from elsewhere (the notes kept
with the results), it is written into the records, marked as recorded after the run from that source, the original
fields kept beside it; without it the CPU stays unrecorded (a figure on it is then never compared with this
machine's).
"""

from __future__ import annotations

from typing import Any

from bendtorch.records.libraries import LIBRARIES
from bendtorch.reports.sweep.figures import SCHEMA_VERSION, sort_columns

_LIBS = ("numpy", "torch", "numba")   # the versions the earlier records kept


def machine_from_old(old: dict[str, Any], cpu: dict[str, Any] | None = None, source: str | None = None
                     ) -> dict[str, Any]:
    """A machine record (records/schemas/machine.schema.json) from an earlier layout's machine fields (platform,
    processor, cpus, workers, python, c_library and versions), with the CPU given (model, vendor, flags), else
    unrecorded; the original fields kept under "original"."""
    arch = str(old.get("processor") or "unknown")
    c: dict[str, Any] = {"model": f"an unrecorded CPU ({arch})", "vendor": "unknown", "family": None,
                         "model_number": None, "stepping": None, "flags": [], "arch": arch, "cores": old.get("cpus"),
                         "usable_cores": old.get("cpus")}
    c.update(cpu or {})
    m: dict[str, Any] = {
        "schema": 1, "cpu": c, "os": str(old.get("platform") or "unrecorded"),
        "python": str(old.get("python") or "unrecorded"), "c_library": str(old.get("c_library") or "unrecorded"),
        "libraries": {n: {"version": old[n]} for n in _LIBS if n in old}, "thread_pools": [], "threads": {},
        "impl_digest": "unrecorded", "workers": old.get("workers"), "original": old}
    if cpu:
        m["recorded_after_the_run"] = (f"CPU {c['model']} from {source or 'notes kept with the results'}; the run "
                                       "recorded only the fields under \"original\"")
    return m


def is_old(doc: dict[str, Any]) -> bool:
    return doc.get("schema_version") in (None, 1)


def upgrade(doc: dict[str, Any], cpu: dict[str, Any] | None = None, source: str | None = None) -> dict[str, Any]:
    """doc in the current layout (unchanged if it is already)."""
    if not is_old(doc):
        return doc
    old_m: dict[str, Any] = doc["machine"] if isinstance(doc.get("machine"), dict) else {}
    m = machine_from_old(old_m, cpu, source) if "platform" in old_m or "cpu" not in old_m else old_m
    cols = {}
    for cid, col in (doc.get("libraries") or {}).items():
        lib = LIBRARIES.get(cid)
        cols[cid] = {**col, "library_name": cid, "same_everywhere": bool(lib and lib.everywhere), "machine": m,
                     "key": None}
    out = {"schema_version": SCHEMA_VERSION, **{k: v for k, v in doc.items() if k != "schema_version"}}
    out["machine"] = m
    out["libraries"] = sort_columns(cols)
    return out
