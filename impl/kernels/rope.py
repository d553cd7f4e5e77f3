"""RoPE's table and rotation (main.bend lines 2120-2197), float32.

Rows are positions (row r is position r mod t); a row holds h heads of 2*half numbers, and the pair
(x[c], x[c + half]) of a head turns by the angle of table entry (r mod t, c).

Table (rope_ang, line 2133; rope_tab, line 2137), entry e = pos*half + c, every operation in float32:
    ang = (1 / powf(base, float32(c + c) / float32(half + half))) * float32(pos),   cos = cosf(ang), sin = sinf(ang)
with impl.kernels.libm's powf, cosf, sinf (impl's portable functions unless BENDTORCH_LIBM=clib).

Rotation (rope_p3, line 2151), each pair on its own, in PyTorch's order of operations:
    forward:  x[c] = a*cos + (-b)*sin,   x[c+half] = b*cos + a*sin
    backward: x[c] = a*cos + b*sin,      x[c+half] = b*cos + (-(a*sin))
with a = x[c], b = x[c + half]. The kernel writes a new array (fwd and bwd never write into their input).
The plain version is the same expressions in numpy float32 (one rounding each).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import sized

from bendtorch.impl.kernels import libm

F = npt.NDArray[np.float32]
F32 = np.float32


def rope_table(t: int, half: int, base: np.float32) -> tuple[F, F]:
    """(cos, sin), each t x half, entry (pos, c) from rope_ang's operations in its order (line 2133)."""
    base = F32(base)
    cs = np.zeros((t, half), dtype=np.float32)
    sn = np.zeros((t, half), dtype=np.float32)
    for e in range(t * half):
        pos, c = divmod(e, half)
        ex = F32(F32(c + c) / F32(half + half))
        ang = F32(F32(F32(1.0) / libm.powf(base, ex)) * F32(pos))
        cs[pos, c] = libm.cosf(ang)
        sn[pos, c] = libm.sinf(ang)
    return cs, sn


@sized
@numba.njit(cache=True, parallel=True)
def rope_apply(x: F, cs: F, sn: F, t: int, h: int, half: int, fwd: bool) -> F:
    """The rotated copy of x (n x w, w = h*2*half): forward or backward (rope_p3, line 2151). Rows are independent
    (prange over rows, each element's value one fixed expression)."""
    n = x.shape[0]
    y = np.empty_like(x)
    for r in numba.prange(n):
        pos = r % t
        for hh in range(h):
            c0 = hh * (half + half)
            for c in range(half):
                a = x[r, c0 + c]
                b = x[r, c0 + c + half]
                co = cs[pos, c]
                z = sn[pos, c]
                if fwd:
                    y[r, c0 + c] = a * co + (-b) * z
                    y[r, c0 + c + half] = b * co + a * z
                else:
                    y[r, c0 + c] = a * co + b * z
                    y[r, c0 + c + half] = b * co + (-(a * z))
    return y


def rope_apply_plain(x: F, cs: F, sn: F, t: int, h: int, half: int, fwd: bool) -> F:
    n = x.shape[0]
    xr = x.reshape(n, h, 2, half)
    a = xr[:, :, 0, :]
    b = xr[:, :, 1, :]
    pos = np.arange(n) % t
    co = cs[pos][:, None, :]
    z = sn[pos][:, None, :]
    y = np.empty_like(xr)
    if fwd:
        y[:, :, 0, :] = a * co + (-b) * z
        y[:, :, 1, :] = b * co + a * z
    else:
        y[:, :, 0, :] = a * co + b * z
        y[:, :, 1, :] = b * co + (-(a * z))
    return y.reshape(n, h * 2 * half)
