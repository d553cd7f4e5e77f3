"""Two truths: the decimal a user meant, and the function the float32 program computes with its rounded constants.

The oracle reads a float32 constant as the decimal the user wrote (oracle/hyper.py; an attention scale 1/sqrt(24)
as "0.20412415", an eps of 1e-5 as "1e-05"), while impl and PyTorch compute with the float32 they were given
(0.2041241526603699..., 9.99999974737875e-06). Where the two differ, an error against the oracle mixes the program's
rounding errors with the constant's own rounding. Both are honest figures of different things:

  "decimal": the error against the function the user meant (what the report's tables use);
  "program": the error against the exact function of the float32 constants the program holds, its rounding
             errors alone.

`program_constants()` switches the oracle's constant readers to the program's constants, read exactly (each the
float32 the layer holds, or the float32 it computes from it: Dropout's 1 / (1 - p) by impl.kernels.dropout.scale_of),
and records each constant's gap |decimal - program| in ulps of the float32. `both_errors(op)` runs an op of
reference/ops.py both ways (reference.compare.run_op); `attention_both(hd)` does it for Attention against PyTorch's
scaled_dot_product_attention. `survey()` lists every op of the table whose constants differ by more than
GAP_ULPS and gives both errors for each, with Attention at head dims 24 and 64 beside them (`bendtorch study
two_truths`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator, Sequence

import numpy as np

F32 = np.float32
U = 2.0 ** -24
GAP_ULPS = 0.01  # a constant whose decimal and float32 differ by less than this cannot move an error figure


def _program_readers() -> list[tuple[Any, str, Callable[[Any], float]]]:
    """(module, name, program's constant) for each place the oracle reads a float32 constant as a decimal: the
    attention scale, the norms' eps, Dropout's 1 / (1 - p). RoPE's base is read inline; the bases in use (1e4, 1e5,
    5e5) are whole numbers, exact in float32, so the two truths agree there."""
    import bendtorch.oracle.attention as OA
    import bendtorch.oracle.layers as OL
    from bendtorch.impl.kernels.dropout import scale_of
    return [(OA, "_decimal", lambda x: float(F32(x))),
            (OL, "dec", lambda x: float(F32(x))),
            (OL, "recip_one_minus", lambda p: float(scale_of(F32(p))))]


def gap_ulps(decimal: float, program: float) -> float:
    """|decimal - program| in ulps of the float32 program constant."""
    return abs(decimal - program) / float(np.spacing(np.abs(F32(program))))


@contextlib.contextmanager
def program_constants(log: list[dict[str, Any]] | None = None, switch: bool = True) -> Iterator[None]:
    """Within the block, the oracle reads each constant as the program's float32 (switch=True) or as before
    (switch=False, to record the gaps only); every read is appended to `log` with both values and the gap."""
    saved = []
    for mod, name, prog in _program_readers():
        orig = getattr(mod, name)
        saved.append((mod, name, orig))

        def reader(x: Any, _o: Callable[[Any], float] = orig, _p: Callable[[Any], float] = prog,
                   _n: str = f"{mod.__name__}.{name}") -> float:
            d, p = float(_o(x)), float(_p(x))
            if log is not None:
                log.append({"reader": _n, "given": float(F32(x)), "decimal": d, "program": p,
                            "gap_ulps": gap_ulps(d, p)})
            return p if switch else d
        setattr(mod, name, reader)
    try:
        yield
    finally:
        for mod, name, orig in saved:
            setattr(mod, name, orig)


def constant_gaps(op: Any) -> list[dict[str, Any]]:
    """The constants an op of reference/ops.py reads in the oracle, over all its shapes, with their gaps."""
    import bendtorch.oracle as ORACLE
    log: list[dict[str, Any]] = []
    with program_constants(log, switch=False):
        for d in op.shapes:
            op.build(ORACLE, d)
    uniq = {(g["reader"], g["given"]): g for g in log}
    return list(uniq.values())


def _figures(r: dict[str, Any]) -> dict[str, float]:
    return {"norm": float(r["norm"]), "p99": float(r["p99"]), "median": float(r["median"])}


def both_errors(op: Any, quick: bool = False) -> dict[str, Any]:
    """impl's and PyTorch's errors for each output of an op, against the oracle as the report runs it ("decimal")
    and with the program's constants ("program"): normwise (ulps of the largest exact value), p99 and median ulps
    (reference.compare.run_op pooled over the op's cases)."""
    from bendtorch.reference.compare import run_op
    dec = run_op(op, quick)
    with program_constants():
        prog = run_op(op, quick)
    out: dict[str, Any] = {"op": op.name, "gaps": constant_gaps(op), "table_uses": "decimal", "outputs": {}}
    for k in op.outputs:
        out["outputs"][k] = {lib: {"decimal": _figures(dec[k][lib]), "program": _figures(prog[k][lib])}
                             for lib in ("impl", "torch")}
    return out


def attention_both(hd: int = 24, b: int = 2, t: int = 16, kv: int = 2, g: int = 2,
                   seeds: Sequence[int] = tuple(range(8))) -> dict[str, Any]:
    """Attention (sc = 1/sqrt(hd) in float32) in impl and in PyTorch's scaled_dot_product_attention (grouped-query
    heads by repeat_interleave, scale given), forward output and the three input gradients, normwise error in u
    against the oracle with the decimal scale and with the float32 scale; per seed, and the medians."""
    import bendtorch.impl as IMPL
    import bendtorch.oracle as ORACLE
    from bendtorch.reference.torch_ref import torch_mod
    torch = torch_mod()
    n, w, kvw = b * t, kv * g * hd, kv * hd
    sc = F32(1.0 / np.sqrt(hd))
    log: list[dict[str, Any]] = []
    names = ("y", "dq", "dk", "dv")
    per: dict[str, dict[str, dict[str, list[float]]]] = {
        lib: {truth: {k: [] for k in names} for truth in ("decimal", "program")} for lib in ("impl", "torch")}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        q, dy = (rng.standard_normal((n, w), dtype=F32) for _ in range(2))
        k, v = (rng.standard_normal((n, kvw), dtype=F32) for _ in range(2))
        li = IMPL.Attention(n, w, kvw, b, t, kv, g, hd, sc)
        fi = li.fwd(None, (q, (k, v)))
        bi = li.bwd(None, fi.s, dy, None)
        impl_out = (fi.y, bi.dx[0], bi.dx[1][0], bi.dx[1][1])
        h = kv * g
        Q = torch.tensor(q).reshape(b, t, h, hd).transpose(1, 2).contiguous().requires_grad_()
        K = torch.tensor(k).reshape(b, t, kv, hd).transpose(1, 2).contiguous().requires_grad_()
        V = torch.tensor(v).reshape(b, t, kv, hd).transpose(1, 2).contiguous().requires_grad_()
        O = torch.nn.functional.scaled_dot_product_attention(Q, K.repeat_interleave(g, 1), V.repeat_interleave(g, 1),
                                                             is_causal=True, scale=float(sc))
        O.backward(torch.tensor(dy).reshape(b, t, h, hd).transpose(1, 2))

        def back(X: Any, c: int) -> Any:
            return X.detach().transpose(1, 2).reshape(n, c).numpy()
        torch_out = (back(O, w), back(Q.grad, w), back(K.grad, kvw), back(V.grad, kvw))
        for truth in ("decimal", "program"):
            with program_constants(log if seed == seeds[0] else None, switch=truth == "program"):
                lo = ORACLE.Attention(n, w, kvw, b, t, kv, g, hd, sc)
            d64 = [a.astype(np.float64) for a in (q, k, v, dy)]
            fo = lo.fwd(None, (d64[0], (d64[1], d64[2])))
            bo = lo.bwd(None, fo.s, d64[3], None)
            exact = (fo.y, bo.dx[0], bo.dx[1][0], bo.dx[1][1])
            for lib, outs in (("impl", impl_out), ("torch", torch_out)):
                for name, a, e in zip(names, outs, exact):
                    per[lib][truth][name].append(float(np.max(np.abs(a.astype(np.float64) - e)) /
                                                       np.max(np.abs(e)) / U))
    med = {lib: {truth: {k: float(np.median(v)) for k, v in d.items()} for truth, d in td.items()}
           for lib, td in per.items()}
    return {"op": f"Attention(hd={hd}, b={b}, t={t}, kv={kv}, g={g}, sc=1/sqrt({hd}) in float32)",
            "gaps": [log[0]] if log else [], "seeds": list(seeds), "table_uses": "decimal",
            "figure": "normwise error (u), median over seeds", "median": med, "per_seed": per}


def survey(full: bool = False, attention_hds: Sequence[int] = (24, 64)) -> dict[str, Any]:
    """Every op of reference/ops.py (layers, losses, compositions) whose constants differ by more than GAP_ULPS
    between the decimal and the float32, with both errors (on the op's first shape and seed, or every one when
    full); then Attention at each head dim."""
    from bendtorch.reference.ops import OPS
    t0 = time.perf_counter()
    quick = not full
    rows, clean = [], []
    for op in OPS:
        if op.kind == "optimizer":
            continue
        gaps = [g for g in constant_gaps(op) if g["gap_ulps"] > GAP_ULPS]
        if gaps:
            rows.append(both_errors(op, quick))
        else:
            clean.append(op.name)
    att = [attention_both(hd) for hd in attention_hds]
    return {"study": "two_truths", "gap_threshold_ulps": GAP_ULPS, "quick": quick, "rows": rows,
            "attention": att, "ops_without_gaps": clean, "seconds": time.perf_counter() - t0}
