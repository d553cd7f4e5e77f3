"""Op accuracy by target: every conformance target's float32 operations against the float64 oracle, in ulps, on the
op records' sample inputs, beside impl's bound for each output.

    accuracy(target, label) -> {"target": label, "rows": [one row per op output], "errors": [...]}

For each op record whose `conformance` names operations of the Target protocol (bendtorch.targets.base), the op's
cases (records.ops.cases: the quick profile, the first shape and seed, by default) are drawn once by records.ops.sample
(the generator every suite uses), the target's operation is called on the float32 inputs, and the oracle's float64
result on the same inputs comes from reference.compare (make_inputs, run_lib: the layer's fwd and bwd in
bendtorch.oracle). Per output, pooled over the cases as reference.compare.run_op pools them: max, p99 and median
ulps element-wise, the worst normwise error of any case, the number of values, where the largest error is, impl's
bound for the output (records.ops: normwise `bound`, element-wise `bound_elem`) and whether the figure is beyond it.

Forward outputs come from the forward operations (linear, rms_norm, ...), backward ones from the protocol's gradient
operations (attention_grad: the record's dx, dQ then dK then dV as the layer holds them). Two operations need more than
the oracle's layer: cross-entropy's per-row terms (ce_rows) are averaged here, in float64 and rounded once to float32
(half an ulp at most), to compare with the record's mean loss; dropout's mask is each library's own draw, so its exact
value is x / (1 - p) where that library kept the entry and 0 where it dropped it (what is measured is the scaling).
An operation that raises NotApplicable or NotRun gives a row saying "not applicable: reason" or "not run: reason",
never a figure; any other exception gives an "error" row.

impl's bounds are its pass criterion (a row of impl beyond its bound is a failure); for every other library the
figures are measurements, facts of the machine that made them (`document` carries records.machine's record), and a
row beyond impl's bound says where that library is less accurate than impl is required to be.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from bendtorch.oracle.ulp import normwise, ulp_error, ulp_stats
from bendtorch.records.ops import OPS, Dims, OpRecord, Sample, cases, sample
from bendtorch.records.targets import PLAIN, RECORDS, SpecError, Variant
from bendtorch.targets import NotApplicable, NotRun, Resolved, Target, resolve

F32 = np.float32
F64 = np.float64
Arr = npt.NDArray[Any]
EPS = 1e-5  # the norms' eps: the records build RMSNorm and LayerNorm with their default, 1e-5

SCHEMA_VERSION = 1  # accuracy.json's layout (records/schemas/accuracy.schema.json)
ALL = "all"         # --target all: every built-in target that can be made here, each variant on the CPU
DEFAULT = ("impl", "torch")


# ---- the operations: a record's sample -> the target's outputs ---------------------------------------------------

def _heads(a: Arr, b: int, t: int, hd: int) -> Arr:
    """impl's rows (b*t, heads*hd) -> the protocol's (b, heads, t, hd)."""
    h = a.shape[1] // hd
    return np.ascontiguousarray(np.transpose(a.reshape(b, t, h, hd), (0, 2, 1, 3)), dtype=F32)


def _rows(a: Any) -> Arr:
    """The protocol's (b, heads, t, hd) -> impl's rows (b*t, heads*hd), as the oracle's layer holds them."""
    x = np.asarray(a, dtype=F32)
    b, h, t, hd = x.shape
    return np.ascontiguousarray(np.transpose(x, (0, 2, 1, 3)).reshape(b * t, h * hd))


def _linear(tg: Target, s: Sample) -> dict[str, Any]:
    w, *b = s.params
    return {"y": tg.linear(s.x, w, b[0].reshape(-1) if b else None)}


def _rms_norm(tg: Target, s: Sample) -> dict[str, Any]:
    return {"y": tg.rms_norm(s.x, s.params[0].reshape(-1), EPS)}


def _layer_norm(tg: Target, s: Sample) -> dict[str, Any]:
    return {"y": tg.layer_norm(s.x, s.params[0].reshape(-1), s.params[1].reshape(-1), EPS)}


def _ce_rows(tg: Target, s: Sample) -> dict[str, Any]:
    rows = np.asarray(tg.ce_rows(s.x, s.t), dtype=F64).reshape(-1)
    return {"loss": F32(math.fsum(rows.tolist()) / rows.size)}


def _qkv(s: Sample) -> tuple[Arr, Arr, Arr, int, int, int, float]:
    d = s.dims
    q, (k, v) = s.x
    b, t, hd = d["b"], d["t"], d["hd"]
    return _heads(q, b, t, hd), _heads(k, b, t, hd), _heads(v, b, t, hd), b, t, hd, float(d["sc"])


def _attention(tg: Target, s: Sample) -> dict[str, Any]:
    q, k, v, b, t, hd, sc = _qkv(s)
    return {"y": _rows(tg.attention(q, k, v, sc))}


def _attention_grad(tg: Target, s: Sample) -> dict[str, Any]:
    q, k, v, b, t, hd, sc = _qkv(s)
    dq, dk, dv = tg.attention_grad(q, k, v, _heads(s.dy, b, t, hd), sc)
    return {"dx": (_rows(dq), (_rows(dk), _rows(dv)))}


def _dropout(tg: Target, s: Sample) -> dict[str, Any]:
    return {"y": tg.dropout(s.x, float(s.dims["p"]))}


# the Target protocol's operations that the op records name in `conformance`: sample -> {output: float32 value}
CALLS: dict[str, Callable[[Target, Sample], dict[str, Any]]] = {
    "linear": _linear, "rms_norm": _rms_norm, "layer_norm": _layer_norm,
    "softmax": lambda tg, s: {"y": tg.softmax(s.x)}, "log_softmax": lambda tg, s: {"y": tg.log_softmax(s.x)},
    "ce_rows": _ce_rows, "attention": _attention, "attention_grad": _attention_grad, "dropout": _dropout,
}


def measured_ops() -> list[OpRecord]:
    """The records the matrix measures: those naming conformance operations, with sample inputs."""
    return [o for o in OPS if o.conformance and o.shapes and all(m in CALLS for m in o.conformance)]


def _oracle(op: OpRecord, d: Dims, seed: int) -> tuple[Sample, dict[str, Any]]:
    """The case's float32 sample (records.ops.sample, as reference.compare draws it) and the oracle's float64
    outputs on the same inputs (reference.compare.run_lib on bendtorch.oracle)."""
    import bendtorch.impl as IMPL
    import bendtorch.oracle as ORACLE
    from bendtorch.reference.compare import make_inputs, run_lib

    s = sample(op, IMPL, d, seed)
    return s, run_lib(op, ORACLE, d, make_inputs(op, d, seed))


def _dropout_exact(got: Any, s: Sample) -> Arr:
    """Dropout's exact output given the library's own mask: x / (1 - p) where it kept the entry (a nonzero output),
    0 where it dropped it."""
    x = np.asarray(s.x, dtype=F64)
    return np.where(np.asarray(got) != 0, x / (1.0 - float(s.dims["p"])), 0.0)


# ---- one target ---------------------------------------------------------------------------------------------------

def _bound_text(op: OpRecord, k: str) -> str:
    parts = []
    if k in op.bound:
        parts.append(f"norm <= {op.bound[k]:g}")
    if k in op.bound_elem:
        parts.append(f"elem <= {op.bound_elem[k]:g}")
    return ", ".join(parts) or "none"


def _beyond(op: OpRecord, k: str, norm: float, mx: float) -> bool:
    """Whether a figure is beyond impl's bound for the output (its normwise bound, and its element-wise one where
    the record has it); an output without a bound is never beyond it."""
    return bool(norm > op.bound.get(k, math.inf) or mx > op.bound_elem.get(k, math.inf))


def _skip_row(op: OpRecord, k: str, method: str, status: str, reason: str) -> dict[str, Any]:
    return {"op": op.name, "output": k, "method": method, "status": status, "reason": reason,
            "bound_norm": op.bound.get(k), "bound_elem": op.bound_elem.get(k), "bound": _bound_text(op, k)}


def _flat32(v: Any) -> Arr:
    from bendtorch.reference.compare import flat32
    return flat32(v)


def _flat64(v: Any) -> Arr:
    from bendtorch.reference.compare import flat
    return flat(v)


def accuracy(target: Target, label: str | None = None, quick: bool = True,
             ops: list[OpRecord] | None = None) -> dict[str, Any]:
    """The target's rows: for each measured op record (default measured_ops()) and each output its conformance
    operations give, the ulp figures against the oracle pooled over the op's cases (quick: the first case), with
    impl's bound and `beyond_impl_bound`; a row "not applicable" or "not run" (with the reason) where the operation
    raised NotApplicable or NotRun, "error" where it raised anything else (also in "errors")."""
    name = label or target.name
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    for op in (ops if ops is not None else measured_ops()):
        drawn = [_oracle(op, d, seed) for d, seed in cases(op, quick)]
        for method in op.conformance:
            got: list[dict[str, Any]] = []
            status, reason = "ok", ""
            for s, _ in drawn:
                try:
                    got.append(CALLS[method](target, s))
                except NotApplicable as e:
                    status, reason = "not applicable", str(e)
                except NotRun as e:
                    status, reason = "not run", str(e)
                except Exception as e:  # noqa: BLE001 - an operation that fails is an error row, not a crash
                    status, reason = "error", " ".join(f"{type(e).__name__}: {e}".split())
                    errors.append(f"{name} {op.name} {method}: {reason}")
                if status != "ok":
                    break
            outs = [k for k in op.outputs if k in (got[0] if got else CALLS_OUTPUTS[method])]
            for k in outs:
                if status != "ok":
                    rows.append(_skip_row(op, k, method, status, reason))
                    continue
                try:
                    rows.append(_pooled(op, k, method, drawn, [g[k] for g in got]))
                except Exception as e:  # noqa: BLE001 - an output that cannot be compared is an error row
                    why = " ".join(f"{type(e).__name__}: {e}".split())
                    errors.append(f"{name} {op.name}.{k} {method}: {why}")
                    rows.append(_skip_row(op, k, method, "error", why))
    return {"target": name, "rows": rows, "errors": errors, "seconds": time.perf_counter() - t0}


# the outputs each operation gives (for the rows of an operation that did not run)
CALLS_OUTPUTS: dict[str, tuple[str, ...]] = {
    "linear": ("y",), "rms_norm": ("y",), "layer_norm": ("y",), "softmax": ("y",), "log_softmax": ("y",),
    "ce_rows": ("loss",), "attention": ("y",), "attention_grad": ("dx",), "dropout": ("y",),
}


def _pooled(op: OpRecord, k: str, method: str, drawn: list[tuple[Sample, dict[str, Any]]],
            values: list[Any]) -> dict[str, Any]:
    """One output's figures over every case, pooled as reference.compare.run_op pools them: element-wise statistics
    over all values, the worst normwise error of any case; and where the largest element-wise error is."""
    errs: list[Arr] = []
    norm = 0.0
    worst: dict[str, Any] = {}
    top = -1.0
    for (s, ro), v in zip(drawn, values):
        got = _flat32(v)
        exact = _flat64(_dropout_exact(v, s) if method == "dropout" else ro[k])
        if got.size != exact.size:
            raise ValueError(f"{op.name}.{k} ({method}): {got.size} values, the oracle has {exact.size}")
        e = ulp_error(got, exact)
        errs.append(e)
        norm = max(norm, normwise(got, exact))
        if e.size:
            i = int(np.argmax(np.where(np.isnan(e), -1.0, e)))
            if float(e[i]) > top:
                top = float(e[i])
                # the value's place in the output's shape (a pair of outputs, dQ dK dV: in their flat order)
                ref = s.x if method == "dropout" else ro[k]
                shape = np.shape(ref) if isinstance(ref, np.ndarray) else (got.size,)
                at = [int(j) for j in np.unravel_index(i, shape)]
                worst = {"dims": dict(s.dims), "seed": s.seed, "index": i, "at": at, "got": float(got[i]),
                         "exact": float(exact[i]), "ulps": float(e[i])}
    st = ulp_stats(np.concatenate(errs) if errs else np.zeros(0))
    return {"op": op.name, "output": k, "method": method, "status": "ok", "cases": len(drawn), "values": st["n"],
            "max": st["max"], "p99": st["p99"], "median": st["median"], "norm": norm, "worst": worst,
            "bound_norm": op.bound.get(k), "bound_elem": op.bound_elem.get(k), "bound": _bound_text(op, k),
            "beyond_impl_bound": _beyond(op, k, norm, st["max"])}


# ---- the targets of a matrix --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """One column of the matrix: a resolved target with one of its variants on a device (the CPU unless named)."""

    res: Resolved
    variant: Variant
    device: str = "cpu"

    @property
    def label(self) -> str:
        return self.res.record.label(self.device, self.variant)


def columns(specs: list[str], device: str = "cpu") -> list[Column]:
    """The columns the specs name (each a target spec, or several separated by commas; "all": every built-in
    target that runs on the device), each variant of a target on the device, in order, each once. SpecError (one
    line) for a spec that names nothing, or a target the device is not one of: resolved before any work."""
    names: list[str] = []
    for spec in specs:
        for part in spec.split(","):
            part = part.strip()
            if not part:
                raise SpecError(f"{spec!r}: an empty target name")
            names += [n for n, r in RECORDS.items() if r.devices is None or device in r.devices] \
                if part == ALL else [part]
    out: list[Column] = []
    for n in dict.fromkeys(names):
        res = resolve(n)
        vs = res.record.check(device) if res.record.devices is not None else (PLAIN,)
        out += [Column(res, v, device) for v in vs]
    return out


def measure(cols: list[Column], quick: bool = True, ops: list[OpRecord] | None = None,
            skip_not_run: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Each column's `accuracy` (with "variant" and the library versions), and the columns that could not be made
    here ({"target", "not_run"}); with skip_not_run those are left out of the first list, else each is a column of
    "not run" rows."""
    done: list[dict[str, Any]] = []
    not_run: list[dict[str, str]] = []
    for c in cols:
        try:
            tg = c.res.make(c.device, c.variant)
        except NotRun as e:
            not_run.append({"target": c.label, "not_run": str(e)})
            if not skip_not_run:
                rows = [_skip_row(op, k, m, "not run", str(e)) for op in (ops or measured_ops())
                        for m in op.conformance for k in CALLS_OUTPUTS[m] if k in op.outputs]
                done.append({"target": c.label, "variant": c.variant.name, "rows": rows, "errors": [],
                             "seconds": 0.0, "libraries": c.res.libraries(), "versions": {}})
            continue
        col = accuracy(tg, c.label, quick, ops)
        done.append({**col, "variant": c.variant.name, "libraries": c.res.libraries(tg), "versions": tg.versions()})
    return done, not_run


def impl_failures(cols: list[dict[str, Any]]) -> list[str]:
    """impl's rows beyond impl's bound: impl's bounds are its pass criterion."""
    return [f"impl {r['op']}.{r['output']}: normwise {r['norm']:.3g}, max {r['max']:.3g} ulps beyond impl's bound "
            f"({r['bound']})" for c in cols if c["target"] == "impl" for r in c["rows"]
            if r["status"] == "ok" and r["beyond_impl_bound"]]


def document(cols: list[dict[str, Any]], not_run: list[dict[str, str]], quick: bool, command: str,
             seconds: float, mach: dict[str, Any] | None = None) -> dict[str, Any]:
    """The matrix as accuracy.json holds it: the columns, the targets not run here, the machine that measured the
    other libraries' figures (records.machine), the command and its time."""
    from bendtorch.records.machine import machine

    libs = [lib for c in cols for lib in c.get("libraries", []) if lib not in ("numpy", "numba")]
    return {"schema_version": SCHEMA_VERSION, "command": command, "profile": "quick" if quick else "full",
            "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "seconds": seconds,
            "machine": mach if mach is not None else machine(list(dict.fromkeys(libs))),
            "columns": cols, "not_run": not_run, "impl_failures": impl_failures(cols),
            "errors": [e for c in cols for e in c["errors"]]}


# ---- Markdown -----------------------------------------------------------------------------------------------------

def _fmt(x: float) -> str:
    if x != x:
        return "nan"
    if math.isinf(x):
        return "inf"
    if x == 0:
        return "0"
    return f"{x:.3g}" if x < 10 or x >= 1000 else f"{x:.1f}"


def cell(r: dict[str, Any]) -> str:
    """One cell: "max / normwise (bound B: holds|beyond)", or the status and its reason."""
    if r["status"] != "ok":
        return f"{r['status']}: {r['reason']}".replace("|", "/")
    verdict = "beyond" if r["beyond_impl_bound"] else "holds"
    return f"{_fmt(r['max'])} / {_fmt(r['norm'])} ({r['bound']}: {verdict})"


def _where(r: dict[str, Any]) -> str:
    w = r.get("worst") or {}
    if not w:
        return ""
    at = w["at"] if r["method"] != "attention_grad" else f"value {w['index']} of (dQ, dK, dV)"
    return (f" at {at} of the case {w['dims']} seed {w['seed']} (got {w['got']:.9g}, exact {w['exact']:.9g})")


def worst_line(c: dict[str, Any]) -> str:
    """A column's worst rows: the one closest to (or furthest beyond) impl's bound, the normwise error over the
    bound, and the one with the largest element-wise error, where it is; the rows beyond impl's bound named."""
    ok = [r for r in c["rows"] if r["status"] == "ok"]
    if not ok:
        return f"- {c['target']}: nothing measured"
    w = max(ok, key=lambda r: (r["beyond_impl_bound"], r["norm"] / (r["bound_norm"] or 1.0), r["max"]))
    m = max(ok, key=lambda r: r["max"])
    beyond = [f"{r['op']}.{r['output']}" for r in ok if r["beyond_impl_bound"]]
    return (f"- {c['target']}: closest to impl's bound {w['op']}.{w['output']} (normwise {_fmt(w['norm'])}, bound "
            f"{w['bound']}); largest element-wise error {m['op']}.{m['output']}, {_fmt(m['max'])} ulps{_where(m)}; "
            f"beyond impl's bound: {', '.join(beyond) if beyond else 'none'}")


def matrix_markdown(doc: dict[str, Any], heading: str = "##") -> str:
    """The "Op accuracy by target" section: rows op / output, a column per target (and variant)."""
    from bendtorch.records.machine import describe

    cols = doc["columns"]
    libs = list(dict.fromkeys(lib for c in cols for lib in c.get("libraries", [])))
    L = [f"{heading} Op accuracy by target\n",
         f"`{doc['command']}` ({doc['profile']} profile, {doc['seconds']:.1f} s). Each cell: the element-wise max "
         "ulp error / the normwise error (max |x - exact| / ulp32(max |exact|)) against the float64 oracle, on the "
         "op records' sample inputs, then impl's bound for the output (records/ops.py, with its reason) and whether "
         "the figure holds it. impl's bounds are impl's pass criterion; for every other library the figures are "
         f"measurements, facts of the machine that made them: {describe(doc['machine'], libs)}. impl's figures are "
         "the same on every machine.\n"]
    keys: list[tuple[str, str, str]] = []
    for c in cols:
        for r in c["rows"]:
            key = (r["op"], r["output"], r["method"])
            if key not in keys:
                keys.append(key)
    L.append("| op | out | " + " | ".join(c["target"] for c in cols) + " |")
    L.append("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
    for op, out, method in keys:
        cells = []
        for c in cols:
            r = next((r for r in c["rows"] if (r["op"], r["output"], r["method"]) == (op, out, method)), None)
            cells.append(cell(r) if r is not None else "-")
        L.append(f"| {op} | {out} ({method}) | " + " | ".join(cells) + " |")
    L.append("\nThe worst cases of each target (a large element-wise error is an exact value near zero, where any "
             "float32 order loses its relative accuracy: the bounds are normwise there). Dropout's mask is each "
             "library's own draw, random in some, so its row may move from run to run.\n")
    L += [worst_line(c) for c in cols]
    if doc["not_run"]:
        L.append("\nNot run here: " + "; ".join(f"{n['target']} ({n['not_run']})" for n in doc["not_run"]) + ".")
    if doc["impl_failures"]:
        L.append("\n**impl beyond its own bounds:** " + "; ".join(doc["impl_failures"]) + ".")
    if doc["errors"]:
        L.append("\nErrors: " + "; ".join(doc["errors"]) + ".")
    return "\n".join(L) + "\n"


OUTPUTS = ("ACCURACY.md", "accuracy.json")  # what `bendtorch report --accuracy-only` writes in its folder
