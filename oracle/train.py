"""Training in float64: one step of any oracle model under any oracle loss (main.bend lines 890-964).

`Train` holds what the seed's does (parameters, gradient, optimizer buffers, q1 = 1 - b1^t, q2 = 1 - b2^t, the last
loss) and the step count t, from which q1 and q2 are computed exactly each step (oracle.optim.q_at) instead of the
seed's F32 recurrence q <- q + c (1 - q) (line 925). A configuration the seed's beta_ok rejects starts with q1 = q2 =
NaN and stays so (q_start, line 906): every step's update is NaN, so every loss after the first is NaN, as in the seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from bendtorch.impl.optstate import OptState
from bendtorch.impl.protocol import Layer, Loss
from bendtorch.impl.specs import ShapeError, structure_diff
from bendtorch.oracle.optim import OptCfg, cfg_ok, opt_at, q_at, state_new

P = TypeVar("P")
X = TypeVar("X")
Y = TypeVar("Y")
S = TypeVar("S")
T = TypeVar("T")


@dataclass
class Train(Generic[P]):
    """A training state (main.bend line 895) in float64, with its step count t (0 before the first step)."""

    p: P
    g: P
    st: OptState[P]
    p1: np.float64
    p2: np.float64
    loss: np.float64
    t: int = 0


def train_new(m: Layer[P, Any, Any, Any], cfg: OptCfg, p: P) -> Train[P]:
    """Train.new (line 913): the gradient and the optimizer's buffers from the model's zeros; q1 = q2 = 0, or NaN
    for a configuration cfg_ok rejects."""
    e = structure_diff(p, m.zeros())
    if e is not None:
        raise ShapeError(f"Train.new: the parameters do not fit {m.label}: {e}")
    q = np.float64(0.0) if cfg_ok(cfg) else np.float64(np.nan)
    return Train(p, m.zeros(), state_new(cfg, m.zeros), q, q, np.float64(0.0), 0)


def train_step(m: Layer[P, X, Y, S], loss: Loss[Y, T], cfg: OptCfg, tr: Train[P], x: X, t: T) -> Train[P]:
    """Forward, loss, backward, one optimizer step at step count tr.t + 1 (Train.step, line 940). The state is
    consumed: its arrays are updated in place and handed back in the new state."""
    f = m.fwd(tr.p, x)
    lo = loss(f.y, t)
    b = m.bwd(f.p, f.s, lo.dy, tr.g)
    k = tr.t + 1
    q1, q2 = q_at(cfg, k)
    r = m.step(opt_at(cfg, q1, q2), b.p, b.g, tr.st)
    return Train(r.p, r.g, r.st, q1, q2, np.float64(lo.loss), k)
