"""Optimizers in float64 (main.bend lines 225-296, 419-542): the exact update rules, not the seed's float32 order.

The configuration is impl.optim's (`CSGD`, `CMomentum`, `CAdam`, `CAdamW`; `CAdamWBF16` is read as `CAdamW`, since
its packed BF16 moments are a float32 approximation whose exact value is AdamW's). Each float32 field is read as the
decimal the user wrote (oracle.hyper.dec), and Adam's c1, c2 are 1 - b1, 1 - b2 taken exactly (the seed's own c1, c2
fields are only used, through the seed's float32 `beta_ok`, to decide whether the configuration is poisoned).

One step on one matrix, w, g, the moments m (and v) updated in place, g zeroed:
    SGD:       w <- w - lr g                                     (line 238, PyTorch's p.add_(g, alpha=-lr))
    Momentum:  m <- mu m + g;  w <- w - lr m                     (line 246, no dampening, not Nesterov)
    Adam:      g' = g + wd w;                  m <- b1 m + (1 - b1) g';  v <- b2 v + (1 - b2) g'^2;
               w <- w - step m / (sqrt(v) / bc2 + eps)
    AdamW:     g' = g;  w' = w (1 - lr wd);   the same moments;  w <- w' - step m / (sqrt(v) / bc2 + eps)
with step = lr / q1, bc2 = sqrt(q2), q1 = 1 - b1^t, q2 = 1 - b2^t at step t (t = 1 on the first step), 1 - b^t
taken exactly (oracle.hyper.one_minus_pow) and rounded once. step m / (sqrt(v) / bc2 + eps) is PyTorch's
lr m_hat / (sqrt(v_hat) + eps) with m_hat = m / q1, v_hat = v / q2 (lines 256-258).
"""

from __future__ import annotations

from typing import Any, Callable, Union

import numpy as np
import numpy.typing as npt

from bendtorch.impl.optim import CAdam, CAdamW, CAdamWBF16, CMomentum, CSGD
from bendtorch.impl.optstate import Adam, Momentum, NoMom, OneMom, Opt, OptState, SGD, TwoMom
from bendtorch.impl.protocol import Step
from bendtorch.oracle.hyper import beta_ok32, dec, one_minus, one_minus_pow

F64 = npt.NDArray[np.float64]
f64 = np.float64

OptCfg = Union[CSGD, CMomentum, CAdam, CAdamW, CAdamWBF16]


def is_adam(cfg: OptCfg) -> bool:
    return isinstance(cfg, (CAdam, CAdamW, CAdamWBF16))


def cfg_ok(cfg: OptCfg) -> bool:
    """OptCfg.ok (main.bend line 523) with the seed's float32 beta_ok: False when an Adam configuration's c1, c2
    disagree with its b1, b2. Such a configuration poisons training (q1 = q2 = NaN, line 906), here as in the seed."""
    if isinstance(cfg, (CAdam, CAdamW, CAdamWBF16)):
        return beta_ok32(cfg.b1, cfg.c1) and beta_ok32(cfg.b2, cfg.c2)
    if isinstance(cfg, (CSGD, CMomentum)):
        return True
    raise TypeError(f"oracle.optim: not an optimizer configuration: {type(cfg).__name__}")


def q_at(cfg: OptCfg, t: int) -> tuple[np.float64, np.float64]:
    """(1 - b1^t, 1 - b2^t) at step t, exact then rounded to float64; (0, 0) for SGD and momentum (their c is 0, so
    the seed's q <- q + c (1 - q) stays 0, line 925); (NaN, NaN) for a configuration cfg_ok rejects (line 906)."""
    if not is_adam(cfg):
        return f64(0.0), f64(0.0)
    if not cfg_ok(cfg):
        return f64(np.nan), f64(np.nan)
    assert isinstance(cfg, (CAdam, CAdamW, CAdamWBF16))
    return f64(one_minus_pow(cfg.b1, t)), f64(one_minus_pow(cfg.b2, t))


def opt_at(cfg: OptCfg, q1: Any, q2: Any) -> Opt:
    """Opt.at (main.bend line 457) in float64: the decimal hyperparameters, step = lr / q1, bc2 = sqrt(q2),
    c1 = 1 - b1, c2 = 1 - b2 (exact decimal differences)."""
    if isinstance(cfg, CSGD):
        return SGD(f64(dec(cfg.lr)))
    if isinstance(cfg, CMomentum):
        return Momentum(f64(dec(cfg.lr)), f64(dec(cfg.mu)))
    if isinstance(cfg, (CAdam, CAdamW, CAdamWBF16)):
        lr = f64(dec(cfg.lr))
        with np.errstate(all="ignore"):
            step = f64(lr / f64(q1))
            bc2 = f64(np.sqrt(f64(q2)))
        return Adam(lr, f64(dec(cfg.b1)), f64(dec(cfg.b2)), f64(dec(cfg.eps)), f64(dec(cfg.wd)),
                    not isinstance(cfg, CAdam), step, bc2, f64(one_minus(cfg.b1)), f64(one_minus(cfg.b2)))
    raise TypeError(f"oracle.optim: not an optimizer configuration: {type(cfg).__name__}")


def opt_at_step(cfg: OptCfg, t: int) -> Opt:
    """The optimizer of step t (t >= 1): opt_at with q_at(cfg, t)."""
    q1, q2 = q_at(cfg, t)
    return opt_at(cfg, q1, q2)


def state_new(cfg: OptCfg, zeros: Callable[[], Any]) -> OptState[Any]:
    """OptState.new (main.bend line 898): none, one or two float64 buffers (CAdamWBF16: two, in float64)."""
    if isinstance(cfg, CSGD):
        return NoMom()
    if isinstance(cfg, CMomentum):
        return OneMom(zeros())
    return TwoMom(zeros(), zeros())


def opt_mat(op: Opt, w: F64, g: F64, st: OptState[F64]) -> Step[F64]:
    """One step on one float64 matrix (Opt.mat, main.bend line 434), in place: the new weights, the gradient
    zeroed, the new state. A state that does not match the optimizer leaves every value untouched (line 444)."""
    with np.errstate(all="ignore"):
        if isinstance(op, SGD):
            w -= f64(op.lr) * g
            g[...] = 0.0
            return Step(w, g, NoMom())
        if isinstance(op, Momentum) and isinstance(st, OneMom):
            m: F64 = st.m
            m *= f64(op.mu)
            m += g
            w -= f64(op.lr) * m
            g[...] = 0.0
            return Step(w, g, st)
        if isinstance(op, Adam) and isinstance(st, TwoMom):
            m2: F64 = st.m
            v: F64 = st.v
            lr, wd = f64(op.lr), f64(op.wd)
            gg = g if op.dec else g + wd * w
            m2 *= f64(op.b1)
            m2 += f64(op.c1) * gg
            v *= f64(op.b2)
            v += f64(op.c2) * (gg * gg)
            if op.dec:
                w *= f64(1.0) - lr * wd
            w -= f64(op.step) * m2 / (np.sqrt(v) / f64(op.bc2) + f64(op.eps))
            g[...] = 0.0
            return Step(w, g, st)
    return Step(w, g, st)
