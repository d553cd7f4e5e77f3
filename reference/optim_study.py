"""Why impl's optimizer steps differ from PyTorch's, element by element.

impl (main.bend lines 238-295, impl/kernels/optim.py) follows `torch.optim.adam._single_tensor_adam`'s order of
operations, but
  (S) computes its scalars in float32: Adam's step size lr / q1 and bc2 = sqrt(q2) from q1, q2 advanced in F32 as
      q <- q + c (1 - q) (main.bend line 925), and AdamW's decay 1 - lr*wd in F32 (line 269); PyTorch computes
      lr / (1 - b1^t), (1 - b2^t)^0.5 and 1 - lr*wd as float64 Python floats and rounds each to float32 once, where
      the kernel reads it;
  (F) rounds every operation once; PyTorch's CPU kernels fuse the last multiply-add of `add(a, b, alpha=s)`
      (ATen's ufunc add: `vec::fmadd(other, alpha, self)`, aten/src/ATen/native/ufunc/add.h, and the scalar tail of
      the loop is contracted to an FMA as well: measured on every position, not only the vector body), of `lerp`
      (weight < 0.5: fma(w, end - self, self)) and of `addcmul` (fma(value*t1, t2, self));
  (Q) takes a correctly rounded sqrt; torch.sqrt on float32 goes through MKL's VML vsSqrt (high-accuracy mode,
      faithful: some results are 1 ulp off the correctly rounded root; docs/optimizers.md gives the share).

`emulate` below is PyTorch's order in numpy float32 with each cause switched on or off: all three on reproduces
torch.optim bit for bit, all three off reproduces impl bit for bit, so every element where impl and PyTorch differ
is explained, and `study` counts which cause accounts for how many. The one operation numpy cannot do (MKL's
sqrt) is borrowed from torch.sqrt itself; everything else is numpy float32 with one rounding per operation, plus an
exact float32 fused multiply-add (`fma32`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from bendtorch.oracle.ulp import normwise, ulp_error
from bendtorch.records.optimizers import COMPARED

F32 = np.float32
F64 = np.float64
A32 = npt.NDArray[np.float32]

# The hyperparameters of the study, as a user writes them (Python floats); impl reads them as np.float32.
HP: dict[str, dict[str, float]] = {
    "SGD": {"lr": 0.01},
    "Momentum": {"lr": 0.01, "mu": 0.9},
    "Adam": {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01},
    "AdamW": {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01},
}
KINDS = COMPARED  # the optimizers PyTorch has (records.optimizers): "SGD", "Momentum", "Adam", "AdamW"
SHAPES = ((7, 13), (48, 64))  # 91 elements (vector blocks and a scalar tail) and 3072


def fma32(a: Any, b: Any, c: Any) -> A32:
    """a*b + c for float32 arrays, rounded once to float32 (an exact FMA): a*b is exact in float64 (24 + 24 bits),
    the sum is split exactly into s + e (TwoSum), and s's float32 rounding is corrected where s + e rounds
    elsewhere (only possible when s sits on a float32 rounding boundary)."""
    a64 = np.asarray(a, F32).astype(F64)
    b64 = np.asarray(b, F32).astype(F64)
    c64 = np.asarray(c, F32).astype(F64)
    p = a64 * b64
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    r = s.astype(F32)
    r64 = r.astype(F64)
    out = r.copy()
    best = np.abs((s - r64) + e)
    for cand in (np.nextafter(r, F32(-np.inf)), np.nextafter(r, F32(np.inf))):
        d = np.abs((s - cand.astype(F64)) + e)
        better = d < best
        out = np.where(better, cand, out)
        best = np.where(better, d, best)
    return np.asarray(out, F32)


def mkl_sqrt(v: A32) -> A32:
    """torch.sqrt on float32 (MKL VML vsSqrt, faithful), the one operation borrowed from torch."""
    from bendtorch.reference.torch_ref import to_np, to_t
    return np.asarray(to_np(to_t(np.ascontiguousarray(v, F32)).sqrt()), F32)


@dataclass
class Causes:
    """Which of PyTorch's three differences the emulation applies (True: PyTorch's way)."""

    fma: bool
    scal64: bool
    mkl_sqrt: bool


TORCH = Causes(True, True, True)
IMPL = Causes(False, False, False)


@dataclass
class EState:
    """An emulation's state: weights, moments and impl's F32 powers q1 = 1 - b1^t, q2 = 1 - b2^t."""

    w: A32
    m: A32
    v: A32
    q1: np.float32 = F32(0.0)
    q2: np.float32 = F32(0.0)
    t: int = 0


def _madd(c: Causes, a: Any, b: Any, acc: Any) -> A32:
    """a*b + acc: fused when c.fma, else rounded twice."""
    if c.fma:
        return fma32(a, b, acc)
    return np.asarray(acc + np.asarray(a, F32) * np.asarray(b, F32), F32)


def emulate(kind: str, c: Causes, st: EState, g: A32, hp: dict[str, float] | None = None) -> None:
    """One step of `kind` in _single_tensor_sgd / _single_tensor_adam's order, in place on st."""
    hp = hp or HP[kind]
    st.t += 1
    t = st.t
    if kind == "SGD":
        st.w = _madd(c, g, -F32(hp["lr"]), st.w)  # p.add_(g, alpha=-lr)
        return
    if kind == "Momentum":
        if t == 1 and c.scal64:
            st.m = g.copy()  # torch: buf = grad.clone() on the first step; impl: 0*mu + g, the same number
        else:
            st.m = np.asarray(st.m * F32(hp["mu"]) + g, F32)  # buf.mul_(mu).add_(g) (alpha 1: exact product)
        st.w = _madd(c, st.m, -F32(hp["lr"]), st.w)  # p.add_(buf, alpha=-lr)
        return
    lr, b1, b2, eps, wd = (hp[k] for k in ("lr", "b1", "b2", "eps", "wd"))
    c1, c2 = F32(1.0 - b1), F32(1.0 - b2)  # torch's weights 1 - beta (float64, then float32): 0.1f, 0.001f
    st.q1 = F32(st.q1 + F32(c1 * F32(F32(1.0) - st.q1)))  # impl/train.py, main.bend line 925
    st.q2 = F32(st.q2 + F32(c2 * F32(F32(1.0) - st.q2)))
    w = st.w
    if kind == "AdamW":
        decay = F32(1.0 - lr * wd) if c.scal64 else F32(F32(1.0) - F32(F32(lr) * F32(wd)))
        w = np.asarray(w * decay, F32)  # param.mul_(1 - lr*wd)
        gg = g
    else:
        gg = _madd(c, w, F32(wd), g)  # grad.add(param, alpha=wd)
    st.m = _madd(c, c1, np.asarray(gg - st.m, F32), st.m)  # exp_avg.lerp_(grad, 1 - b1)
    st.v = _madd(c, np.asarray(c2 * gg, F32), gg, np.asarray(st.v * F32(b2), F32))  # mul_(b2).addcmul_
    if c.scal64:
        step = F32(lr / (1.0 - b1 ** t))
        bc2 = F32((1.0 - b2 ** t) ** 0.5)
    else:
        step = F32(F32(lr) / st.q1)  # impl.optim.opt_at
        bc2 = F32(np.sqrt(st.q2))
    root = mkl_sqrt(st.v) if c.mkl_sqrt else np.sqrt(st.v)
    denom = np.asarray(root / bc2 + F32(eps), F32)
    st.w = np.asarray(w + ((-step) * st.m) / denom, F32)  # param.addcdiv_(m, denom, value=-step)


# ---- the three libraries over a fixed sequence of gradients ---------------------------------------------------

def cfg_of(kind: str, hp: dict[str, float] | None = None) -> Any:
    """impl's configuration (impl.optim) for the study's hyperparameters; the oracle reads the same one."""
    from bendtorch.impl import optim as O
    hp = hp or HP[kind]
    if kind == "SGD":
        return O.CSGD(F32(hp["lr"]))
    if kind == "Momentum":
        return O.CMomentum(F32(hp["lr"]), F32(hp["mu"]))
    if kind == "Adam":
        return O.adam(lr=hp["lr"], b1=hp["b1"], b2=hp["b2"], eps=hp["eps"], wd=hp["wd"])
    return O.adamw(lr=hp["lr"], b1=hp["b1"], b2=hp["b2"], eps=hp["eps"], wd=hp["wd"])


def impl_run(kind: str, w0: A32, grads: list[A32], hp: dict[str, float] | None = None) -> list[A32]:
    """impl's weights after each step: impl.optim.opt_mat with opt_at(cfg, q1, q2), q advanced as Train.step does
    (impl/train.py, main.bend line 925)."""
    from bendtorch.impl import optim as O
    cfg = cfg_of(kind, hp)
    w = w0.copy()
    st: Any = O.state_new(cfg, lambda: np.zeros_like(w0))
    q1 = q2 = F32(0.0)
    out = []
    for g in grads:
        q1 = F32(q1 + F32(O.cfg_c1(cfg) * F32(F32(1.0) - q1)))
        q2 = F32(q2 + F32(O.cfg_c2(cfg) * F32(F32(1.0) - q2)))
        r = O.opt_mat(O.opt_at(cfg, q1, q2), w, g.copy(), st)
        w, st = r.p, r.st
        out.append(w.copy())
    return out


def oracle_run(kind: str, w0: A32, grads: list[A32],
               hp: dict[str, float] | None = None) -> list[npt.NDArray[np.float64]]:
    """The oracle's weights (float64) after each step, from the same float32 gradients: oracle.optim.opt_mat with
    oracle.optim.opt_at_step (1 - b^t exact), on impl's configuration read as decimals."""
    from bendtorch.oracle import optim as OO
    cfg = cfg_of(kind, hp)
    w = w0.astype(F64)
    st: Any = OO.state_new(cfg, lambda: np.zeros_like(w))
    out = []
    for t, g in enumerate(grads, 1):
        r = OO.opt_mat(OO.opt_at_step(cfg, t), w, g.astype(F64), st)
        w, st = r.p, r.st
        out.append(w.copy())
    return out


def inputs(shape: tuple[int, int], seed: int, steps: int) -> tuple[A32, list[A32]]:
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal(shape).astype(F32)
    grads = [(rng.standard_normal(shape) * 0.5).astype(F32) for _ in range(steps)]
    return w0, grads


@dataclass
class StudyResult:
    kind: str
    shape: tuple[int, int]
    steps: int
    n: int
    # per step: elements where impl != torch, and the largest ulp distance between them
    differ: list[int] = field(default_factory=list)
    impl_torch_max: list[float] = field(default_factory=list)
    impl_oracle_max: list[float] = field(default_factory=list)
    torch_oracle_max: list[float] = field(default_factory=list)
    impl_oracle_med: list[float] = field(default_factory=list)
    torch_oracle_med: list[float] = field(default_factory=list)
    impl_oracle_norm: list[float] = field(default_factory=list)   # normwise: max |x - exact| / ulp32(max |exact|)
    torch_oracle_norm: list[float] = field(default_factory=list)
    emul_torch_equal: bool = True   # the emulation with all causes on == torch, every step, every element
    emul_impl_equal: bool = True    # all causes off == impl
    # (step, element) pairs over the whole run where the emulation differs from torch when one cause is left out
    # (that cause done impl's way): each cause is needed where its count is > 0
    without: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"kind": self.kind, "shape": list(self.shape), "steps": self.steps,
                "differ_first": self.differ[0], "differ_last": self.differ[-1],
                "differ_mean_frac": float(np.mean(self.differ)) / self.n,
                "impl_torch_max_ulp": max(self.impl_torch_max),
                "impl_oracle_max_ulp": max(self.impl_oracle_max),
                "torch_oracle_max_ulp": max(self.torch_oracle_max),
                "impl_oracle_median_last": self.impl_oracle_med[-1],
                "torch_oracle_median_last": self.torch_oracle_med[-1],
                "impl_oracle_norm_max": max(self.impl_oracle_norm),
                "torch_oracle_norm_max": max(self.torch_oracle_norm),
                "emul_torch_equal": self.emul_torch_equal, "emul_impl_equal": self.emul_impl_equal,
                "without": self.without}


def _ulp_between(a: A32, b: A32) -> float:
    """How many float32 ulps apart two float32 arrays are at most (the number of float32 values between)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return float(np.max(np.abs(ia - ib))) if a.size else 0.0


def study(kind: str, shape: tuple[int, int] = (7, 13), seed: int = 0, steps: int = 100,
          emulate_steps: bool = True, hp: dict[str, float] | None = None) -> StudyResult:
    """impl, torch.optim and the oracle over `steps` steps from the same w0 and gradients, with the emulations."""
    from bendtorch.reference.torch_ref import run_optimizer
    w0, grads = inputs(shape, seed, steps)
    hp = hp or HP[kind]
    wi = impl_run(kind, w0, grads, hp)
    wt = run_optimizer(kind, hp, w0, grads)
    wo = oracle_run(kind, w0, grads, hp)
    res = StudyResult(kind, shape, steps, int(np.prod(shape)))
    for k in range(steps):
        res.differ.append(int(np.sum(wi[k] != wt[k])))
        res.impl_torch_max.append(_ulp_between(wi[k], wt[k]))
        ei = ulp_error(wi[k], wo[k])
        et = ulp_error(wt[k], wo[k])
        res.impl_oracle_max.append(float(ei.max()))
        res.torch_oracle_max.append(float(et.max()))
        res.impl_oracle_med.append(float(np.median(ei)))
        res.torch_oracle_med.append(float(np.median(et)))
        res.impl_oracle_norm.append(normwise(wi[k], wo[k]))
        res.torch_oracle_norm.append(normwise(wt[k], wo[k]))
    if emulate_steps:
        et_ = EState(w0.copy(), np.zeros_like(w0), np.zeros_like(w0))
        ei_ = EState(w0.copy(), np.zeros_like(w0), np.zeros_like(w0))
        for k, g in enumerate(grads):
            emulate(kind, TORCH, et_, g, hp)
            emulate(kind, IMPL, ei_, g, hp)
            res.emul_torch_equal &= bool(np.array_equal(et_.w, wt[k]))
            res.emul_impl_equal &= bool(np.array_equal(ei_.w, wi[k]))
        for name in ("fma", "scal64", "mkl_sqrt"):
            wo_c = Causes(**{k: k != name for k in ("fma", "scal64", "mkl_sqrt")})
            s1 = EState(w0.copy(), np.zeros_like(w0), np.zeros_like(w0))
            n1 = 0
            for k, g in enumerate(grads):
                emulate(kind, wo_c, s1, g, hp)
                n1 += int(np.sum(s1.w != wt[k]))
            res.without[name] = n1
    return res


def table(results: Sequence[StudyResult | dict[str, Any]]) -> str:
    """A Markdown table of the study (its results, or their summaries)."""
    rows = ["| optimizer | shape | elements != torch: step 1 / step 100 (mean share) | max ulps impl-torch "
            "| impl / torch vs oracle: max ulp | normwise ulp | median ulp at step 100 "
            "| emulation == torch / == impl | (step, element) pairs != torch without FMA / f64 scalars / MKL sqrt |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        s = r.summary() if isinstance(r, StudyResult) else r
        w = s["without"]
        rows.append(f"| {s['kind']} | {s['shape'][0]}x{s['shape'][1]} | {s['differ_first']} / {s['differ_last']} "
                    f"({100 * s['differ_mean_frac']:.0f}%) | {s['impl_torch_max_ulp']:.0f} | "
                    f"{s['impl_oracle_max_ulp']:.1f} / {s['torch_oracle_max_ulp']:.1f} | "
                    f"{s['impl_oracle_norm_max']:.2f} / {s['torch_oracle_norm_max']:.2f} | "
                    f"{s['impl_oracle_median_last']:.2f} / {s['torch_oracle_median_last']:.2f} | "
                    f"{s['emul_torch_equal']} / {s['emul_impl_equal']} | "
                    f"{w.get('fma', 0)} / {w.get('scal64', 0)} / {w.get('mkl_sqrt', 0)} |")
    return "\n".join(rows)


def run() -> dict[str, Any]:
    """`study` of every optimizer on each of SHAPES (seed: the optimizer's place in KINDS), as summaries."""
    return {"shapes": [list(sh) for sh in SHAPES],
            "results": [study(k, sh, seed=i).summary() for i, k in enumerate(KINDS) for sh in SHAPES]}


def text(r: dict[str, Any]) -> str:
    """The table of run's result."""
    return table(r["results"])
