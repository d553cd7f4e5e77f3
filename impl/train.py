"""Training: one step of any layer under any loss (main.bend lines 890-964).

`Train` holds the parameters, the gradient (zero between steps), the optimizer's buffers, Adam's q1 = 1 - b1^t and
q2 = 1 - b2^t, and the last loss. q1 and q2 are carried in F32 and advanced as the seed does, q <- q + c (1 - q)
(line 925), so they are 1 - b^t without a power; a configuration that `cfg_ok` rejects starts them at NaN, so every
loss after the first is NaN (`q_start`, line 906).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from bendtorch.impl.optim import OptCfg, cfg_c1, cfg_c2, cfg_ok, opt_at, state_new
from bendtorch.impl.optstate import OptState
from bendtorch.impl.protocol import Layer, Loss
from bendtorch.impl.specs import ShapeError, structure_diff

P = TypeVar("P")
X = TypeVar("X")
Y = TypeVar("Y")
S = TypeVar("S")
T = TypeVar("T")
F32 = np.float32


@dataclass
class Train(Generic[P]):
    """A training state (main.bend line 895)."""

    p: P
    g: P
    st: OptState[P]
    p1: np.float32
    p2: np.float32
    loss: np.float32


def q_start(ok: bool) -> np.float32:
    """1 - b^t starts at 0; a configuration cfg_ok rejects starts at NaN (main.bend line 906)."""
    return F32(0.0) if ok else F32(np.nan)


def train_new(m: Layer[P, Any, Any, Any], cfg: OptCfg, p: P) -> Train[P]:
    """Train.new (line 913): the gradient and the optimizer's buffers from the model's zeros."""
    g = m.zeros()
    e = structure_diff(p, g)
    if e is not None:
        raise ShapeError(f"Train.new: the parameters do not fit {m.label}: {e}")
    q = q_start(cfg_ok(cfg))
    return Train(p, g, state_new(cfg, m.zeros), q, q, F32(0.0))


def train_step(m: Layer[P, X, Y, S], loss: Loss[Y, T], cfg: OptCfg, tr: Train[P], x: X, t: T) -> Train[P]:
    """Forward, loss, backward and one optimizer step: the same code for every model (Train.step, line 940).
    The state is consumed: its arrays are updated in place and handed back in the new state."""
    f = m.fwd(tr.p, x)
    lo = loss(f.y, t)
    b = m.bwd(f.p, f.s, lo.dy, tr.g)
    q1 = F32(tr.p1 + F32(cfg_c1(cfg) * F32(F32(1.0) - tr.p1)))
    q2 = F32(tr.p2 + F32(cfg_c2(cfg) * F32(F32(1.0) - tr.p2)))
    r = m.step(opt_at(cfg, q1, q2), b.p, b.g, tr.st)
    return Train(r.p, r.g, r.st, q1, q2, F32(lo.loss))

