"""Attention: causal grouped-query attention, the core after the projections and RoPE (main.bend lines 2199-2742).

X is the pair (Q, (K, V)): Q n x w, K and V n x kvw, with n = b*t (b sequences of t positions), w = kv*g*hd
(h = kv*g query heads of hd numbers), kvw = kv*hd. Query head hi reads key/value head hi // g.

    forward:  S = (Q·Kᵀ) * sc over each sequence's positions 0..i (causal), P = softmax(S), O = P·V
    backward: P again from the saved Q, K, V; dP = dO·Vᵀ, G = (P * (dP - rowsum(dP * P))) * sc,
              dQ = G·K, dK = Gᵀ·Q and dV = Pᵀ·dO summed over the g query heads of each key/value head

No parameters; saves (Q, K, V) (AttnS, line 2211). The loops, their order and the parallel law are in
impl.kernels.attention.
"""

from __future__ import annotations

import numpy as np

from bendtorch.impl.kernels import attention as K
from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, param_free
from bendtorch.impl.specs import Mat, MatSpec, PairSpec, ShapeError

F32 = np.float32

AttnX = tuple[Mat, tuple[Mat, Mat]]
AttnS = tuple[Mat, Mat, Mat]


def Attention(n: int, w: int, kvw: int, b: int, t: int, kv: int, g: int, hd: int, sc: float | np.float32,
              par: bool | None = None) -> Layer[None, AttnX, Mat, AttnS]:
    """The seed's Attention(n, w, kvw, b, t, kv, g, hd, sc) (line 2741); the shape facts n = b*t, w = kv*g*hd and
    kvw = kv*hd are checked here (ShapeError). sc is rounded to float32. `par`: None lets
    `impl.kernels.attention.attn_parallel` decide whether the independent units run on threads, True / False force
    it (the bits are the same either way)."""
    check_dims("Attention", n=n, w=w, kvw=kvw, b=b, t=t, kv=kv, g=g, hd=hd)
    if n != b * t or w != kv * g * hd or kvw != kv * hd or min(b, t, kv, g, hd) < 1:
        raise ShapeError(f"Attention: needs n = b*t, w = kv*g*hd, kvw = kv*hd (all >= 1), got n={n} w={w} "
                         f"kvw={kvw} b={b} t={t} kv={kv} g={g} hd={hd}")
    scale = F32(sc)

    def fwd(p: None, x: AttnX) -> Fwd[None, Mat, AttnS]:
        q, (k, v) = x
        o = K.attn_fwd(q, k, v, b, t, kv, g, hd, scale, par)
        return Fwd(None, o, (q, k, v))

    def bwd(p: None, s: AttnS, dy: Mat, gr: None) -> Bwd[None, AttnX]:
        q, k, v = s
        dq, dk, dv = K.attn_bwd(q, k, v, dy, b, t, kv, g, hd, scale, par)
        return Bwd(None, (dq, (dk, dv)), None)

    xs = PairSpec(MatSpec(n, w), PairSpec(MatSpec(n, kvw), MatSpec(n, kvw)))
    return param_free(layer_name("Attention", n, w, kvw, b, t, kv, g, hd, np.float32(sc)), xs, MatSpec(n, w),
                      np.float32, fwd, bwd)
