"""Optimizers (main.bend lines 225-296, 419-542): the user's configuration (`OptCfg`), the step's scalars (`Opt.at`),
the check of Adam's constants (`beta_ok`), and one step on one matrix (`opt_mat`), all in float32.

Every element is updated with the seed's float32 operations in its order (PyTorch's `_single_tensor_adam` order for
the Adam family), each rounded once: no fused multiply-add. The loops themselves are in `impl.kernels.optim`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Union

import numpy as np

from bendtorch.impl.kernels import optim as K
from bendtorch.impl.optstate import Adam, ConfigError, Momentum, NoMom, OneMom, Opt, OptState, Packed, PNew, SGD, TwoMom
from bendtorch.impl.packed import adamh_mat
from bendtorch.impl.protocol import Step
from bendtorch.impl.specs import Mat

F32 = np.float32


def _f32(name: str, cfg: str, v: object) -> np.float32:
    try:
        return F32(v)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{cfg}: field {name} must be a number, got {v!r}") from e


@dataclass(frozen=True)
class CSGD:
    """SGD: w <- w + (-lr) g (main.bend line 451)."""

    lr: np.float32

    def __post_init__(self) -> None:
        object.__setattr__(self, "lr", _f32("lr", "CSGD", self.lr))


@dataclass(frozen=True)
class CMomentum:
    """SGD with momentum, PyTorch's (no dampening, not Nesterov) (line 452)."""

    lr: np.float32
    mu: np.float32

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _f32(f.name, "CMomentum", getattr(self, f.name)))


@dataclass(frozen=True)
class _AdamCfg:
    lr: np.float32
    b1: np.float32
    b2: np.float32
    eps: np.float32
    wd: np.float32
    c1: np.float32
    c2: np.float32

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "v16":
                object.__setattr__(self, f.name, _f32(f.name, type(self).__name__, getattr(self, f.name)))


@dataclass(frozen=True)
class CAdam(_AdamCfg):
    """Adam, L2 weight decay added to the gradient (line 453). c1 = 1 - b1 and c2 = 1 - b2 are their own constants."""


@dataclass(frozen=True)
class CAdamW(_AdamCfg):
    """AdamW, decoupled weight decay w *= 1 - lr*wd (line 454)."""


@dataclass(frozen=True)
class CAdamWBF16(_AdamCfg):
    """AdamW with its first moment (and its second, when v16) stored as packed BF16 (line 455)."""

    v16: bool = False


OptCfg = Union[CSGD, CMomentum, CAdam, CAdamW, CAdamWBF16]


def adamw(lr: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, wd: float = 0.01,
          c1: float = 0.1, c2: float = 0.001) -> CAdamW:
    """PyTorch's AdamW defaults, with c1 and c2 written as their own constants (main.bend lines 273-275)."""
    return CAdamW(F32(lr), F32(b1), F32(b2), F32(eps), F32(wd), F32(c1), F32(c2))


def adam(lr: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, wd: float = 0.0,
         c1: float = 0.1, c2: float = 0.001) -> CAdam:
    """PyTorch's Adam defaults, c1 and c2 as their own constants."""
    return CAdam(F32(lr), F32(b1), F32(b2), F32(eps), F32(wd), F32(c1), F32(c2))


# c = 1 - b up to F32's rounding (main.bend lines 514-519): (1 - b) - c, squared, at most 2^-46
BETA_TOL = F32(0.0000000000000142108547152020037174224853515625)


def beta_ok(b: np.float32, c: np.float32) -> bool:
    """True when 0 < c <= 1 and c is within 2^-23 of 1 - b taken in F32 (main.bend line 517). A NaN fails every
    comparison, so it is rejected."""
    b, c = F32(b), F32(c)
    d = F32(F32(F32(1.0) - b) - c)
    return bool((c > F32(0.0)) and (c <= F32(1.0)) and (F32(d * d) <= BETA_TOL))


def cfg_ok(cfg: OptCfg) -> bool:
    """OptCfg.ok (line 523): False when an Adam configuration's c1, c2 disagree with its b1, b2."""
    if isinstance(cfg, _AdamCfg):
        return beta_ok(cfg.b1, cfg.c1) and beta_ok(cfg.b2, cfg.c2)
    return True


def cfg_check(cfg: OptCfg) -> None:
    """OptCfg.check (line 541): raise, naming the fields, where the seed's program stops with a message."""
    if not isinstance(cfg, _AdamCfg):
        return
    bad = []
    if not beta_ok(cfg.b1, cfg.c1):
        bad.append(f"c1 = {float(cfg.c1)!r} is not 1 - b1 (b1 = {float(cfg.b1)!r})")
    if not beta_ok(cfg.b2, cfg.c2):
        bad.append(f"c2 = {float(cfg.c2)!r} is not 1 - b2 (b2 = {float(cfg.b2)!r})")
    if bad:
        raise ConfigError(f"{type(cfg).__name__}: " + "; ".join(bad) +
                          " (c1 = 1 - b1, c2 = 1 - b2, e.g. 0.9, 0.999 with 0.1, 0.001)")


def cfg_c1(cfg: OptCfg) -> np.float32:
    """OptCfg.c1 (line 492): Adam's c1, 0 for SGD and momentum (so their 1 - b1^t stays 0)."""
    return cfg.c1 if isinstance(cfg, _AdamCfg) else F32(0.0)


def cfg_c2(cfg: OptCfg) -> np.float32:
    return cfg.c2 if isinstance(cfg, _AdamCfg) else F32(0.0)


def opt_at(cfg: OptCfg, q1: np.float32, q2: np.float32) -> Opt:
    """Opt.at (main.bend line 457): the step's optimizer from q1 = 1 - b1^t and q2 = 1 - b2^t, in F32:
    step = lr / q1, bc2 = sqrt(q2)."""
    if isinstance(cfg, CSGD):
        return SGD(cfg.lr)
    if isinstance(cfg, CMomentum):
        return Momentum(cfg.lr, cfg.mu)
    step = F32(cfg.lr / F32(q1))
    bc2 = F32(np.sqrt(F32(q2)))
    dec = not isinstance(cfg, CAdam)
    return Adam(cfg.lr, cfg.b1, cfg.b2, cfg.eps, cfg.wd, dec, step, bc2, cfg.c1, cfg.c2)


def state_new(cfg: OptCfg, zeros: Any) -> OptState[Any]:
    """OptState.new (main.bend line 898): the buffers this optimizer reads, from the layer's `zeros`."""
    if isinstance(cfg, CSGD):
        return NoMom()
    if isinstance(cfg, CMomentum):
        return OneMom(zeros())
    if isinstance(cfg, CAdamWBF16):
        return Packed(PNew(cfg.v16))
    return TwoMom(zeros(), zeros())


def opt_mat(op: Opt, w: Mat, g: Mat, st: OptState[Mat]) -> Step[Mat]:
    """One optimizer step on one matrix (Opt.mat, main.bend line 434), in place: the new weights, the gradient
    zeroed, the new state. A state that does not match the optimizer leaves every value untouched (line 432)."""
    if isinstance(op, SGD):
        K.sgd(w.reshape(-1), g.reshape(-1), F32(op.lr))
        return Step(w, g, NoMom())
    if isinstance(op, Momentum) and isinstance(st, OneMom):
        K.momentum(w.reshape(-1), g.reshape(-1), st.m.reshape(-1), F32(op.lr), F32(op.mu))
        return Step(w, g, st)
    if isinstance(op, Adam) and isinstance(st, TwoMom):
        K.adam(w.reshape(-1), g.reshape(-1), st.m.reshape(-1), st.v.reshape(-1), F32(op.lr), F32(op.c1),
               F32(op.b2), F32(op.c2), F32(op.eps), F32(op.wd), bool(op.dec), F32(op.step), F32(op.bc2))
        return Step(w, g, st)
    if isinstance(op, Adam) and isinstance(st, Packed):
        return adamh_mat(op, w, g, st)
    return Step(w, g, st)
