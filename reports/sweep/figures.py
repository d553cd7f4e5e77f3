"""A sweep's figures and its JSON (records/schemas/sweep.schema.json): each library's column of figures from its
merged accumulators, with the machine record it was measured on and the key of its chunks; how a later run's columns
join an earlier run's (a library's column is replaced by one from the same machine, kept beside one from another:
impl's own functions give the same bits everywhere, so their column is simply replaced); the upgrade of a JSON of
the earlier layout (one machine for the whole file, no keys); and whether a committed column can be compared with a
measurement here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bendtorch.records.functions import SweepFunction
from bendtorch.records.libraries import LIBRARIES, SweepLibrary, rank
from bendtorch.records.machine import compare_note
from bendtorch.reports.sweep.kernels import C_CR, C_FAITH, C_N, C_W1, HALF_X_RULE, REL_MARGIN, SP_INF, SP_SUB, SP_ZERO
from bendtorch.reports.sweep.keys import CPU_FIELDS, canonical_digest

SCHEMA_VERSION = 2   # a sweep JSON's layout: 2 = a machine record and a key per column
REFERENCE = ("float64 formula (glibc) rounded to float32, every input within 2^-46 of its scale from a float32 "
             "rounding boundary decided by mpmath")


def _f32(bits: int) -> float:
    return float(np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0])


def figures(tot: dict[str, Any], piece: int | None = None) -> dict[str, Any]:
    """One library's figures (over every piece, or one)."""
    cnt = tot["cnt"] if piece is None else tot["cnt"][:, piece:piece + 1]
    maxu = tot["maxu"] if piece is None else tot["maxu"][:, piece:piece + 1]
    c = cnt.sum(axis=(0, 1))
    k = np.unravel_index(int(np.argmax(maxu)), maxu.shape)
    argb = (tot["argb"] if piece is None else tot["argb"][:, piece:piece + 1])[k]
    n = int(c[C_N])
    out: dict[str, Any] = {
        "finite_inputs": n,
        "max_ulp": float(maxu[k]) if n else 0.0,
        "max_ulp_at": _f32(int(argb)) if n else None,
        "max_ulp_at_bits": f"0x{int(argb) & 0xFFFFFFFF:08x}" if n else None,
        "correctly_rounded": int(c[C_CR]),
        "correctly_rounded_fraction": c[C_CR] / n if n else 1.0,
        "within_one_ulp": int(c[C_W1]),
        "within_one_ulp_fraction": c[C_W1] / n if n else 1.0,
        "faithful_fraction": c[C_FAITH] / n if n else 1.0,
    }
    if piece is not None:
        return out
    spn, spbad = tot["spn"], tot["spbad"]
    out.update({
        "inputs": 2 * int(tot["n_patterns"][0]),
        "nan_inputs": int(tot["nanst"][0] + tot["nanst"][1]),
        "nan_in_nan_out": bool(tot["nanst"][1] == 0),
        "nan_inputs_giving_a_number": int(tot["nanst"][1]),
        "numbers_giving_nan": int(tot["nanst"][2]),
        "infinities": {"inputs": int(spn[SP_INF]), "wrong": int(spbad[SP_INF])},
        "zeros": {"inputs": int(spn[SP_ZERO]), "wrong": int(spbad[SP_ZERO])},
        "subnormals": {"inputs": int(spn[SP_SUB]), "not_correctly_rounded": int(spbad[SP_SUB]),
                       "max_ulp": float(tot["submax"][0]) if spn[SP_SUB] else None},
        "max_abs_error_where_not_correctly_rounded": float(tot["maxabs"][0]),
        "per_sign": {s: {"correctly_rounded_fraction": float(cnt[i].sum(axis=0)[C_CR] /
                                                             max(1, cnt[i].sum(axis=0)[C_N])),
                         "max_ulp": float(maxu[i].max())} for i, s in enumerate(("positive", "negative"))},
        "steps_from_correctly_rounded": {"0": int(c[C_CR]), "1": int(c[C_W1] - c[C_CR]), "more": int(n - c[C_W1])},
        "chunk_seconds_total": float(tot["seconds"][0]),
    })
    out["specials_right"] = bool(out["nan_in_nan_out"] and spbad[SP_INF] == 0 and spbad[SP_ZERO] == 0)
    return out


def check_claims(claims: dict[str, Any], f: dict[str, Any]) -> dict[str, Any]:
    """Each claim against the measured figures: {claim, measured, holds}."""
    out: dict[str, Any] = {"source": claims.get("source")}
    for k, v in claims.items():
        if k == "source":
            continue
        if k == "max_ulp_at_most":
            out[k] = {"claim": v, "measured": f["max_ulp"], "holds": f["max_ulp"] <= v}
        elif isinstance(v, tuple):
            out[k] = {"claim": v[0], "tolerance": v[1], "measured": f[k], "holds": abs(f[k] - v[0]) <= v[1]}
        else:
            out[k] = {"claim": v, "measured": f[k], "holds": f[k] == v}
    return out


def column(fn: SweepFunction, lib: SweepLibrary, tot: dict[str, Any], machine: dict[str, Any],
           key: dict[str, Any] | None) -> dict[str, Any]:
    """One library's column: its figures, and what they hold on (the machine record, the chunks' key)."""
    f = figures(tot)
    if fn.symmetry != "none":
        f[f"{fn.symmetry}_symmetric"] = bool(tot["symv"][0] == 0)
        f["symmetry_violations"] = int(tot["symv"][0])
    if len(fn.pieces) > 1:
        f["per_piece"] = {f"{p} {fn.pieces[p]}": figures(tot, p) for p in range(len(fn.pieces))}
    if lib.name in fn.twins:
        twin = fn.twins[lib.name]
        f["twin"] = {"of": twin, "note": LIBRARIES[twin].note if twin in LIBRARIES else "",
                     "bit_differences": int(tot["twin_diff"][0])}
    f["library"] = lib.note
    listed = np.sort(tot["miss"].astype(np.int64) & 0xFFFFFFFF)
    f["misrounded_inputs"] = {"count": int(tot["miss_n"][0]), "listed": int(listed.size),
                              "complete": bool(listed.size == tot["miss_n"][0]),
                              "first": [f"0x{int(b):08x}" for b in listed[:10]]}
    if lib.name in fn.claims:
        f["claims"] = check_claims(dict(fn.claims[lib.name]), f)
    f["library_name"] = lib.name
    f["same_everywhere"] = lib.everywhere
    f["machine"] = machine
    f["key"] = key
    return f


def build_report(fn: SweepFunction, libs: list[SweepLibrary], tots: dict[str, dict[str, Any]], mode: str,
                 command: str, machine: dict[str, Any], keys: dict[str, dict[str, Any]] | None = None
                 ) -> dict[str, Any]:
    """The sweep JSON of one run (before it joins an earlier run's columns)."""
    first = next(iter(tots.values()))
    hb, fl = first["hard_bits"], first["hard_flip"]
    per = "patterns (x >= 0; -x mirrors)" if fn.symmetry != "none" else "inputs"
    cols = {lib.name: column(fn, lib, tots[lib.name], machine, (keys or {}).get(lib.name)) for lib in libs}
    return {
        "schema_version": SCHEMA_VERSION,
        "function": fn.name,
        "title": fn.title,
        "mode": mode,
        "command": command,
        "machine": machine,
        "reference": REFERENCE,
        "symmetry": None if fn.symmetry == "none" else fn.symmetry,
        "fractions_are_of": "finite inputs (NaN and +-inf are checked separately)",
        "hard_cases": {
            "count": int(hb.size), "counted_over": per, "margin_relative": REL_MARGIN,
            "float64_rounding_was_wrong": int(fl.sum()),
            "largest_float64_error_in_units_of_2^-52_scale": float(first["hard_f64_err"][0]),
            "first": [{"x": _f32(int(b)), "bits": f"0x{int(b) & 0xFFFFFFFF:08x}", "float64_rounding_wrong": bool(f)}
                      for b, f in list(zip(hb, fl))[:20]],
            **({"decided_by_rule": {"rule": HALF_X_RULE, "count": int(first["half_x_ties"][0]),
                                    "float64_rounding_was_wrong": int(first["half_x_ties"][1])}}
               if "half_x_ties" in first else {}),
        },
        "libraries": sort_columns(cols),
    }


# ---- columns from several runs and machines ------------------------------------------------------------------

def library_of(cid: str, col: dict[str, Any]) -> str:
    """The library a column measures (its id is the library's name, or NAME@MACHINE beside another machine's)."""
    return str(col.get("library_name") or cid.partition("@")[0])


def distribution_of(name: str) -> str | None:
    lib = LIBRARIES.get(name)
    return lib.distribution if lib is not None else None


def machine_id(col: dict[str, Any]) -> str:
    """Eight hex digits naming the machine facts a column holds on (its CPU, its library's version and dispatch)."""
    m: dict[str, Any] = col.get("machine") or {}
    cpu: dict[str, Any] = m["cpu"] if isinstance(m.get("cpu"), dict) else {"model": str(m.get("cpu"))}
    dist = distribution_of(library_of("", col))
    facts = (m.get("libraries") or {}).get(dist) if dist else None
    return canonical_digest({"cpu": {k: cpu.get(k) for k in CPU_FIELDS}, "library": facts})[:8]


def same_facts(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a new column replaces an old one of the same library: always for a library whose bits are the same
    everywhere, else when both hold on the same machine facts."""
    if new.get("same_everywhere"):
        return True
    return compare_note(old.get("machine"), new.get("machine") or {}, distribution_of(library_of("", new))) is None


def sort_columns(cols: dict[str, Any]) -> dict[str, Any]:
    """Columns in the atlas's order of libraries, a library's columns by id."""
    return {k: cols[k] for k in sorted(cols, key=lambda c: (rank(library_of(c, cols[c])), c))}


def join_columns(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """An earlier run's columns with a later run's: each new column replaces the old ones of its library that hold
    on the same facts and goes beside the others (under NAME@MACHINE where NAME is taken)."""
    out = dict(old)
    for cid, col in new.items():
        lib = library_of(cid, col)
        for oid in [o for o, oc in out.items() if library_of(o, oc) == lib and same_facts(oc, col)]:
            del out[oid]
        out[lib if lib not in out else f"{lib}@{machine_id(col)}"] = col
    return sort_columns(out)


def comparable(col: dict[str, Any], here: dict[str, Any]) -> str | None:
    """None when a committed column can be compared with a measurement on the machine `here` (impl's own functions
    everywhere; another library on the same CPU with the same version, build and dispatch), else why not: "not
    compared: committed on <cpu>, this is <cpu>"."""
    if col.get("same_everywhere"):
        return None
    return compare_note(col.get("machine"), here, distribution_of(library_of("", col)))


def latest_columns(rep: dict[str, Any]) -> dict[str, Any]:
    """The columns the report's latest run measured (by their ids), among those joined from earlier runs."""
    names = rep["runs"][-1]["libraries"] if rep.get("runs") else [library_of(c, f) for c, f in rep["libraries"].items()]
    return {cid: col for cid, col in rep["libraries"].items()
            if library_of(cid, col) in names and comparable(col, rep["machine"]) is None}
