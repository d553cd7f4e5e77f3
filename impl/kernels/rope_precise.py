"""RoPE's cos/sin table with a precise angle, computed in float32 arithmetic only: an option beside the seed's table.

The seed's table (impl.kernels.rope.rope_table, rope_ang at main.bend line 2133) rounds inv[c] = base^(-2c/(2 half))
to float32 and then rounds ang = inv[c] * pos: both relative errors (about 2^-24 each) are multiplied by the angle, so
the absolute angle error, and with it the error of cos and sin, grows linearly with the position (thousands of units
of 2^-24 at position 8192). Hugging Face's rotary code does the same in float32.

Here every quantity is carried as an unevaluated pair hi + lo of float32 numbers (|lo| <= ulp(hi) / 2, about 48
significant bits), with the error-free transformations of Knuth (two_sum) and Dekker-Veltkamp (two_prod: each factor
split into 12-bit halves by 4097 = 2^12 + 1, so every partial product is exact in float32):

    L   = ln(base)              logf(base), then one Newton step L += (base - exp(L)) / exp(L) on the pair
    e   = 2c / (2 half)         the pair quotient
    inv = exp(-e L)             range reduction by k ln 2 (ln 2 as a pair), Taylor series to degree 11 on the pair
                                (|r| <= ln(2)/2: the first term left out is below 2^-47), times 2^k (exact)
    ang = inv * pos             the pair product (pos is exact in float32 below 2^24)
    cos = cosf(a) (1 - l^2/2) - sinf(a) l,  sin = sinf(a) (1 - l^2/2) + cosf(a) l      with ang = a + l

The angle is then correct to about 2^-44 relative, so cos and sin are within about one unit of 2^-24 of the exact
values at any position, as cosf and sinf are on a float32 argument (they reduce a large argument exactly). Every operation is a float32 operation, rounded
once (no fused multiply-add: the pair arithmetic depends on it), in the order written.

The pair arithmetic is written once, as functions that work on numpy float32 scalars and arrays alike
(numba's register_jitable): the kernel compiles them; the plain twin runs them on whole numpy float32 arrays. logf,
cosf and sinf are impl.kernels.libm's (log32, cos32, sin32 in the kernel; logf, cosf, sinf per number in the twin:
the same functions, whichever BENDTORCH_LIBM chooses), so the two give the same bits.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from numba.extending import register_jitable

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.elementwise import lib_map

F = npt.NDArray[np.float32]
F32 = np.float32

_ZERO = F32(0.0)
_ONE = F32(1.0)
_HALF = F32(0.5)
_TWO = F32(2.0)
_SPLIT = F32(4097.0)  # 2^12 + 1: Veltkamp's splitter for a 24-bit significand
_LN2_HI = F32(0.693147182464599609375)  # ln 2 rounded to float32
_LN2_LO = F32(-0.0000000019046542121259335544891655445098876953125)  # ln 2 - _LN2_HI, rounded to float32
_INV_LN2 = F32(1.44269504088896340735992468100189214)  # 1 / ln 2 rounded (only picks k, any nearby value works)
_TAYLOR_DEGREE = 11


# ---- the pair arithmetic (float32 scalars or arrays) ----------------------------------------------------------

@register_jitable
def two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """s + e = a + b exactly, s = fl(a + b) (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@register_jitable
def quick_two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """s + e = a + b exactly when |a| >= |b| (or a = 0)."""
    s = a + b
    e = b - (s - a)
    return s, e


@register_jitable
def split(a: Any) -> tuple[Any, Any]:
    """a = hi + lo exactly, each with at most 12 significant bits (Veltkamp)."""
    t = _SPLIT * a
    hi = t - (t - a)
    lo = a - hi
    return hi, lo


@register_jitable
def two_prod(a: Any, b: Any) -> tuple[Any, Any]:
    """p + e = a * b exactly, p = fl(a * b) (Dekker), without a fused multiply-add."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


@register_jitable
def pair_add(ah: Any, al: Any, bh: Any, bl: Any) -> tuple[Any, Any]:
    s, e = two_sum(ah, bh)
    e = e + (al + bl)
    return quick_two_sum(s, e)


@register_jitable
def pair_mul(ah: Any, al: Any, bh: Any, bl: Any) -> tuple[Any, Any]:
    p, e = two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return quick_two_sum(p, e)


@register_jitable
def pair_mul_f(ah: Any, al: Any, b: Any) -> tuple[Any, Any]:
    """(ah + al) * b for a float32 b."""
    p, e = two_prod(ah, b)
    e = e + al * b
    return quick_two_sum(p, e)


@register_jitable
def pair_div_f(ah: Any, al: Any, b: Any) -> tuple[Any, Any]:
    """(ah + al) / b for a float32 b: the float32 quotient, then the remainder's quotient as the low part."""
    q1 = ah / b
    p, e = two_prod(q1, b)
    s, f = two_sum(ah, -p)
    f = (f - e) + al
    q2 = (s + f) / b
    return quick_two_sum(q1, q2)


@register_jitable
def exp_reduced(rh: Any, rl: Any) -> tuple[Any, Any]:
    """exp(r) for |r| <= ln(2)/2 as a pair: 1 + r (1 + r/2 (1 + r/3 (... (1 + r/11)))) (Horner)."""
    ph, pl = _ONE + _ZERO * rh, _ZERO * rh
    for i in range(_TAYLOR_DEGREE, 0, -1):
        ph, pl = pair_mul(ph, pl, rh, rl)
        ph, pl = pair_div_f(ph, pl, F32(i))
        ph, pl = pair_add(_ONE, _ZERO, ph, pl)
    return ph, pl


@register_jitable
def reduce_ln2(xh: Any, xl: Any, k: Any) -> tuple[Any, Any]:
    """x - k ln 2 as a pair (k a whole float32)."""
    ph, pl = pair_mul_f(_LN2_HI, _LN2_LO, k)
    return pair_add(xh, xl, -ph, -pl)


# ---- the kernel ------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _pow2(k: int) -> np.float32:
    """2^k, by exact float32 doublings or halvings."""
    s = _ONE
    f = _TWO if k > 0 else _HALF
    for _ in range(abs(k)):
        s = s * f
    return s


@numba.njit(cache=True)
def _exp_pair(xh: np.float32, xl: np.float32) -> tuple[np.float32, np.float32]:
    k = math.floor(xh * _INV_LN2 + _HALF)
    rh, rl = reduce_ln2(xh, xl, np.float32(k))
    eh, el = exp_reduced(rh, rl)
    s = _pow2(k)
    return eh * s, el * s


@numba.njit(cache=True)
def _ln_pair(a: np.float32) -> tuple[np.float32, np.float32]:
    y0 = np.float32(libm.log32(a))
    eh, el = _exp_pair(y0, _ZERO)
    dh, dl = pair_add(a, _ZERO, -eh, -el)
    return quick_two_sum(y0, dh / eh)


@numba.njit(cache=True)
def _rope_table_precise(t: int, half: int, base: np.float32) -> tuple[F, F]:
    cs = np.zeros((t, half), dtype=np.float32)
    sn = np.zeros((t, half), dtype=np.float32)
    lh, ll = _ln_pair(base)
    for c in range(half):
        qh, ql = pair_div_f(np.float32(c + c), _ZERO, np.float32(half + half))
        xh, xl = pair_mul(qh, ql, lh, ll)
        ih, il = _exp_pair(-xh, -xl)
        for pos in range(t):
            ah, al = pair_mul_f(ih, il, np.float32(pos))
            co = libm.cos32(ah)
            si = libm.sin32(ah)
            h2 = (al * al) * _HALF
            cs[pos, c] = co - (si * al + co * h2)
            sn[pos, c] = si + (co * al - si * h2)
    return cs, sn


def rope_table_precise(t: int, half: int, base: np.float32) -> tuple[F, F]:
    """(cos, sin), each t x half, of the angle pos * base^(-2c / (2 half)) carried as a float32 pair (module
    docstring); the same shapes as impl.kernels.rope.rope_table."""
    if t >= 1 << 24:
        raise ValueError(f"rope_table_precise: positions up to {t - 1} are not exact in float32 (t < 2^24)")
    out: tuple[F, F] = _rope_table_precise(int(t), int(half), F32(base))
    return out


# ---- the plain twin --------------------------------------------------------------------------------------------

def _exp_pair_plain(xh: F, xl: F) -> tuple[F, F]:
    k = np.floor(xh * _INV_LN2 + _HALF).astype(F32)
    rh, rl = reduce_ln2(xh, xl, k)
    eh, el = exp_reduced(rh, rl)
    ki = k.astype(np.int32)
    return np.ldexp(eh, ki).astype(F32), np.ldexp(el, ki).astype(F32)


def rope_table_precise_plain(t: int, half: int, base: np.float32) -> tuple[F, F]:
    """The same table with numpy float32 arrays (one column per c, all positions at once) and the C library's
    logf, cosf, sinf."""
    base = F32(base)
    y0 = np.array([libm.logf(base)], dtype=F32)
    eh, el = _exp_pair_plain(y0, np.zeros(1, F32))
    dh, _ = pair_add(np.array([base], F32), np.zeros(1, F32), -eh, -el)
    lh, ll = quick_two_sum(y0, dh / eh)
    cc = np.arange(half, dtype=F32)
    qh, ql = pair_div_f(cc + cc, np.zeros(half, F32), np.full(half, F32(half + half)))
    xh, xl = pair_mul(qh, ql, lh, ll)
    ih, il = _exp_pair_plain(-xh, -xl)
    pos = np.arange(t, dtype=F32)[:, None]
    ah, al = pair_mul_f(ih[None, :], il[None, :], pos)
    co = lib_map(libm.cosf, ah)
    si = lib_map(libm.sinf, ah)
    h2 = (al * al) * _HALF
    return (co - (si * al + co * h2)).astype(F32), (si + (co * al - si * h2)).astype(F32)
