"""RoPE, float64, from the definition (the twin of impl.layers.rope; main.bend lines 2120-2197).

Row r is position pos = r mod t; in each of the h heads the pair (x[c], x[c + half]) turns by the angle
pos * base^(-2c / (2 half)): forward (a, b) -> (a cos - b sin, b cos + a sin), backward by the opposite angle.
base is the float32 hyperparameter read as its shortest round-tripping decimal (docs/DESIGN.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, param_free
from bendtorch.impl.specs import MatSpec, ShapeError

D = npt.NDArray[np.float64]


def rope_angles(t: int, half: int, base: float) -> D:
    """t x half angles pos * base^(-2c / (2 half)) in float64."""
    c = np.arange(half, dtype=np.float64)
    inv = 1.0 / np.power(base, (2.0 * c) / (2.0 * half))
    ang: D = np.arange(t, dtype=np.float64)[:, None] * inv[None, :]
    return ang


def rope_rotate(x: D, t: int, h: int, half: int, base: float, sign: float) -> D:
    """x rotated by sign * angle (sign +1 forward, -1 backward)."""
    n = x.shape[0]
    ang = rope_angles(t, half, base)[np.arange(n) % t][:, None, :] * sign
    co, sn = np.cos(ang), np.sin(ang)
    xr = x.reshape(n, h, 2, half)
    a, b = xr[:, :, 0, :], xr[:, :, 1, :]
    y = np.empty_like(xr)
    y[:, :, 0, :] = a * co - b * sn
    y[:, :, 1, :] = b * co + a * sn
    out: D = y.reshape(n, h * 2 * half)
    return out


def RoPE(n: int, w: int, t: int, h: int, half: int, base: float | np.floating[Any]) -> Layer[None, D, D, None]:
    """The float64 twin of impl's RoPE (same arguments)."""
    check_dims("RoPE", n=n, w=w, t=t, h=h, half=half)
    if w != h * (half + half) or min(n, t, h, half) < 1:
        raise ShapeError(f"RoPE: needs w = h*2*half (all >= 1), got n={n} w={w} t={t} h={h} half={half}")
    bs = float(str(np.float32(base)))

    def fwd(p: None, x: D) -> Fwd[None, D, None]:
        return Fwd(None, rope_rotate(x, t, h, half, bs, 1.0), None)

    def bwd(p: None, s: None, dy: D, g: None) -> Bwd[None, D]:
        return Bwd(None, rope_rotate(dy, t, h, half, bs, -1.0), None)

    return param_free(layer_name("RoPE", n, w, t, h, half, base=np.float32(base)), MatSpec(n, w), MatSpec(n, w),
                      np.float64, fwd, bwd)
