"""Attention, float64, from the definitions (the twin of impl.layers.attention; main.bend lines 2199-2742).

Rows are b sequences of t positions; Q is n x (kv*g*hd), K and V n x (kv*hd); query head hi reads key/value head
hi // g. For one sequence and one head, with the causal mask M (j <= i):

    S = (Q Kᵀ) sc,  P = softmax over the visible positions (P[i, j] = 0 for j > i),  O = P V
    dP = dO Vᵀ,  G = P ∘ (dP - rowsum(dP ∘ P)) sc,  dQ = G K,  dK = Gᵀ Q,  dV = Pᵀ dO

and a key/value head's dK and dV are the sums over the g query heads that read it. The scale is the float32
hyperparameter read as its shortest round-tripping decimal (docs/DESIGN.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, param_free
from bendtorch.impl.specs import MatSpec, PairSpec, ShapeError

D = npt.NDArray[np.float64]
AttnX = tuple[D, tuple[D, D]]
AttnS = tuple[D, D, D]


def _decimal(x: Any) -> float:
    return float(str(np.float32(x)))


def _probs(qh: D, kh: D, sc: float) -> D:
    t = qh.shape[0]
    s = (qh @ kh.T) * sc
    mask = np.tril(np.ones((t, t), dtype=bool))
    s = np.where(mask, s, -np.inf)
    m = np.max(s, axis=1, keepdims=True)
    e = np.where(mask, np.exp(s - m), 0.0)
    p: D = e / np.sum(e, axis=1, keepdims=True)
    return p


def attention_fwd(q: D, k: D, v: D, b: int, t: int, kv: int, g: int, hd: int, sc: float) -> D:
    """O = softmax(mask(Q Kᵀ sc)) V per sequence and head, in float64."""
    o = np.zeros(q.shape, dtype=np.float64)
    for bi in range(b):
        rs = slice(bi * t, bi * t + t)
        for hi in range(kv * g):
            qc, kc = slice(hi * hd, hi * hd + hd), slice((hi // g) * hd, (hi // g) * hd + hd)
            p = _probs(q[rs, qc], k[rs, kc], sc)
            o[rs, qc] = p @ v[rs, kc]
    return o


def attention_bwd(q: D, k: D, v: D, dy: D, b: int, t: int, kv: int, g: int, hd: int,
                  sc: float) -> tuple[D, D, D]:
    """(dQ, dK, dV) of the forward pass above, in float64."""
    dq = np.zeros(q.shape, dtype=np.float64)
    dk = np.zeros(k.shape, dtype=np.float64)
    dv = np.zeros(v.shape, dtype=np.float64)
    for bi in range(b):
        rs = slice(bi * t, bi * t + t)
        for hi in range(kv * g):
            qc, kc = slice(hi * hd, hi * hd + hd), slice((hi // g) * hd, (hi // g) * hd + hd)
            qh, kh, vh, dh = q[rs, qc], k[rs, kc], v[rs, kc], dy[rs, qc]
            p = _probs(qh, kh, sc)
            dp = dh @ vh.T
            gm = p * (dp - np.sum(dp * p, axis=1, keepdims=True)) * sc
            dq[rs, qc] = gm @ kh
            dk[rs, kc] += gm.T @ qh
            dv[rs, kc] += p.T @ dh
    return dq, dk, dv


def Attention(n: int, w: int, kvw: int, b: int, t: int, kv: int, g: int, hd: int, sc: float | np.floating[Any],
              par: bool | None = None) -> Layer[None, AttnX, D, AttnS]:
    """The float64 twin of impl's Attention (same arguments; `par` is accepted and ignored)."""
    check_dims("Attention", n=n, w=w, kvw=kvw, b=b, t=t, kv=kv, g=g, hd=hd)
    if n != b * t or w != kv * g * hd or kvw != kv * hd or min(b, t, kv, g, hd) < 1:
        raise ShapeError(f"Attention: needs n = b*t, w = kv*g*hd, kvw = kv*hd (all >= 1), got n={n} w={w} "
                         f"kvw={kvw} b={b} t={t} kv={kv} g={g} hd={hd}")
    scale = _decimal(sc)

    def fwd(p: None, x: AttnX) -> Fwd[None, D, AttnS]:
        q, (k, v) = x
        return Fwd(None, attention_fwd(q, k, v, b, t, kv, g, hd, scale), (q, k, v))

    def bwd(p: None, s: AttnS, dy: D, gr: None) -> Bwd[None, AttnX]:
        q, k, v = s
        dq, dk, dv = attention_bwd(q, k, v, dy, b, t, kv, g, hd, scale)
        return Bwd(None, (dq, (dk, dv)), None)

    xs = PairSpec(MatSpec(n, w), PairSpec(MatSpec(n, kvw), MatSpec(n, kvw)))
    return param_free(layer_name("Attention", n, w, kvw, b, t, kv, g, hd, np.float32(sc)), xs, MatSpec(n, w),
                      np.float64, fwd, bwd)
