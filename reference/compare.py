"""One comparison: an op of reference/ops.py run in impl (float32), in PyTorch (float32) and in the oracle (float64)
on the same inputs, and per output the ulp statistics (oracle/ulp.py) of impl and of PyTorch against the oracle.

    compare(op, dims, seed) -> {output: {"impl": stats, "torch": stats, "bit_equal": bool, "n_differ": int,
                                         "impl_errs": array, "torch_errs": array}}

Inputs are drawn once in float32 by the op's record (bendtorch.records.ops.sample, the generator every suite uses:
numpy's Generator at the seed); the oracle gets the same numbers widened to
float64, so the three see identical inputs. Parameters are loaded through the layer's own `load` (dump order), so
impl and oracle hold the same numbers; PyTorch gets them as the list of matrices `op.pshapes` names, in that order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.oracle.ulp import normwise, ulp_error, ulp_stats
import bendtorch.impl as IMPL
import bendtorch.oracle as ORACLE
from bendtorch.records.ops import Dims, cases, load_params, sample, widen
from bendtorch.reference.ops import Op, judge, torch_fn

F32 = np.float32
F64 = np.float64
Arr = npt.NDArray[Any]

def flat(v: Any) -> Arr:
    """Every float of v (an array, a tuple or list of arrays, a scalar) in one float64 vector, in order."""
    if isinstance(v, (tuple, list)):
        parts = [flat(a) for a in v]
        return np.concatenate(parts) if parts else np.zeros(0)
    a = np.asarray(v)
    if not np.issubdtype(a.dtype, np.floating):
        return np.zeros(0)
    return a.astype(F64).reshape(-1)


def flat32(v: Any) -> Arr:
    if isinstance(v, (tuple, list)):
        parts = [flat32(a) for a in v]
        return np.concatenate(parts) if parts else np.zeros(0, F32)
    a = np.asarray(v)
    if not np.issubdtype(a.dtype, np.floating):
        return np.zeros(0, F32)
    return a.astype(F32).reshape(-1)


def make_inputs(op: Op, d: Dims, seed: int) -> dict[str, Any]:
    """The case's float32 inputs (records.ops.sample, dy shaped as impl's output): x (or the loss's y), the parameter
    matrices, and dy (a layer) or t (a loss's targets)."""
    s = sample(op, IMPL, d, seed)
    if op.kind == "loss":
        return {"x": s.x, "params": s.params, "t": s.t}
    return {"x": s.x, "params": s.params, "dy": s.dy}


def run_lib(op: Op, lib: Any, d: Dims, inp: dict[str, Any]) -> dict[str, Any]:
    """The op in one library (impl or oracle): a layer's y, dx and dump(g); a loss's loss and dy."""
    dt = lib.DTYPE
    obj = op.build(lib, d)
    if op.kind == "loss":
        r = obj(widen(inp["x"], dt), widen(inp["t"], dt))
        return {"loss": np.asarray(r.loss, dtype=dt), "dy": r.dy}
    p = load_params(obj, inp["params"], dt)
    f = obj.fwd(p, widen(inp["x"], dt))
    b = obj.bwd(f.p, f.s, widen(inp["dy"], dt), obj.zeros())
    dp = obj.dump(b.g) if inp["params"] else np.zeros(0, dt)
    return {"y": f.y, "dx": b.dx, "dp": dp}


def run_torch(op: Op, d: Dims, inp: dict[str, Any]) -> dict[str, Any]:
    from bendtorch.reference.torch_ref import run_layer, run_loss
    if op.kind == "loss":
        return run_loss(torch_fn(op)(d), inp["x"], inp["t"])
    r = run_layer(torch_fn(op)(d), inp["x"], inp["params"], inp["dy"])
    r["dp"] = np.concatenate([g.reshape(-1) for g in r["dp"]]) if r["dp"] else np.zeros(0, F32)
    return r


def _optimizer_outputs(op: Op, d: Dims, seed: int) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    from bendtorch.reference.optim_study import HP, impl_run, inputs, oracle_run
    from bendtorch.reference.torch_ref import run_optimizer
    w0, grads = inputs((d["r"], d["c"]), seed, 10)
    wi = impl_run(op.name, w0, grads)
    wt = run_optimizer(op.name, HP[op.name], w0, grads)
    wo = oracle_run(op.name, w0, grads)
    return ({"w1": wi[0], "w10": wi[9]}, {"w1": wt[0], "w10": wt[9]}, {"w1": wo[0], "w10": wo[9]})


def compare(op: Op, d: Dims, seed: int) -> dict[str, dict[str, Any]]:
    """impl and PyTorch against the oracle on one case: per output, ulp statistics and bit equality."""
    if op.kind == "optimizer":
        ri, rt, ro = _optimizer_outputs(op, d, seed)
    else:
        inp = make_inputs(op, d, seed)
        ri = run_lib(op, IMPL, d, inp)
        ro = run_lib(op, ORACLE, d, inp)
        rt = run_torch(op, d, inp)
    out: dict[str, dict[str, Any]] = {}
    for k in op.outputs:
        vi, vt, vo = flat32(ri[k]), flat32(rt[k]), flat(ro[k])
        if not (vi.size == vt.size == vo.size):
            raise ValueError(f"{op.name}.{k}: sizes differ: impl {vi.size}, torch {vt.size}, oracle {vo.size}")
        ei = ulp_error(vi, vo)
        et = ulp_error(vt, vo)
        nd = int(np.sum(vi.view(np.uint32) != vt.view(np.uint32)))
        si, st = ulp_stats(ei), ulp_stats(et)
        si["norm"], st["norm"] = normwise(vi, vo), normwise(vt, vo)
        out[k] = {"impl": si, "torch": st, "bit_equal": nd == 0, "n_differ": nd,
                  "impl_errs": ei, "torch_errs": et}
    return out


def run_op(op: Op, quick: bool = False) -> dict[str, dict[str, Any]]:
    """Every case of an op (`cases`), pooled per output: the element-wise ulp statistics over all cases' elements,
    the worst normwise error of any case, bit equality in every case. This is what `judge`, the tests and the
    report read."""
    pooled: dict[str, dict[str, Any]] = {}
    for d, s in cases(op, quick):
        r = compare(op, d, s)
        for k, v in r.items():
            a = pooled.setdefault(k, {"ie": [], "te": [], "inorm": 0.0, "tnorm": 0.0, "n_differ": 0, "cases": 0})
            a["ie"].append(v["impl_errs"])
            a["te"].append(v["torch_errs"])
            a["inorm"] = max(a["inorm"], v["impl"]["norm"])
            a["tnorm"] = max(a["tnorm"], v["torch"]["norm"])
            a["n_differ"] += v["n_differ"]
            a["cases"] += 1
    out: dict[str, dict[str, Any]] = {}
    for k, a in pooled.items():
        ie, te = np.concatenate(a["ie"]), np.concatenate(a["te"])
        si, st = ulp_stats(ie), ulp_stats(te)
        si["norm"], st["norm"] = a["inorm"], a["tnorm"]
        out[k] = {"impl": si, "torch": st, "bit_equal": a["n_differ"] == 0, "n_differ": a["n_differ"],
                  "cases": a["cases"], "impl_errs": ie, "torch_errs": te}
    return out


def check_op(op: Op, quick: bool = False) -> dict[str, dict[str, Any]]:
    """run_op then judge every output; raises AssertionError naming the op, the output, the figures and the bound's
    reason when one fails. The tests call this; the report calls run_op and judge itself."""
    res = run_op(op, quick)
    bad = []
    for k in op.outputs:
        ok, why = judge(op, k, res[k])
        if not ok:
            bad.append(f"{op.name}.{k}: " + "; ".join(why))
    if bad:
        raise AssertionError("\n".join(bad) + f"\n(bounds: {op.bound}, element-wise: {op.bound_elem}; why: {op.why})")
    return res
