"""impl's portable exp: x = (64 e + j) ln2/64 + r, |r| <= ln2/128 (ln2/64 in three parts, the first two exact in
products); exp(x) = 2^e 2^(j/64) (1 + r + r^2/2 + r^3/6 + r^4/24), the product with the table pair exact; results
below 2^-126 rounded once on the subnormal grid. exp_array is the same arithmetic over a whole row, vectorised.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.cr_table import EXP_DISP, EXP_KEYS, EXP_VALS, cr_fix
from bendtorch.impl.kernels.portable.eft import (F32, HALF, INF, ONE, R24, SHIFTER, SIXTH, U32, ZERO, f2u,
                                                 fast_two_sum, pow2, two_prod, two_sum, u2f)
from bendtorch.impl.kernels.portable.tables import EXP_L1, EXP_L2, EXP_L3, EXP_TH, EXP_TL

EXP_INV_L = F32(92.33248)            # 64 / ln 2, rounded (it only picks k: any nearby value works)
EXP_HI = F32(88.8)                   # exp(x) > 2^128 beyond: +inf (and the scaling overflows exactly below it)
EXP_LO = F32(-104.0)                 # exp(x) < 2^-150 beyond: +0
EXP_TINY = F32(2.9802322e-08)        # 2^-25: exp(x) rounds to 1 below this |x|
_TWO = F32(2.0)


@numba.njit(cache=True, inline="always")
def exp_core(xh: np.float32, xl: np.float32) -> Any:
    """exp(xh + xl) = (u + w) 2^e with u + w in about [0.99, 2.02] accurate to a few 2^-37, |w| <= ulp(u);
    for |xh| <= 104."""
    t = xh * EXP_INV_L
    kf = (t + SHIFTER) - SHIFTER
    k = np.int64(kf)
    t1 = xh - kf * EXP_L1                      # exact (Sterbenz; kf EXP_L1 is exact)
    rh, rl = two_sum(t1, -(kf * EXP_L2))       # kf EXP_L2 exact
    rl = rl + (xl - kf * EXP_L3)
    rh, rl = fast_two_sum(rh, rl)
    r2 = rh * rh
    q = rl + rh * rl + r2 * (HALF + rh * (SIXTH + rh * R24))
    j = k & 63
    e = k >> 6
    th = EXP_TH[j]
    tl = EXP_TL[j]
    p, pe = two_prod(th, rh)
    small = pe + (th * q + (tl + tl * rh))
    u, v = fast_two_sum(th, p)
    return u, v + small, e


@numba.njit(cache=True, inline="always")
def scale_round(u: np.float32, w: np.float32, e: int) -> Any:
    """(u + w) 2^e rounded once to float32 (u + w about in [0.99, 2.02]; e >= -152), the subnormal grid
    included: below 2^-126 the sum is rounded to a multiple of 2^(-149 - e) before the exact scaling."""
    if e > -126 or (e == -126 and u >= ONE):
        y = u + w
        if e > 126:
            return (y * pow2(e - 1)) * _TWO   # overflows to inf exactly when the rounded value does
        return y * pow2(e)
    m = pow2(-149 - e) if -149 - e <= 127 else INF        # the grid's spacing, relative to u + w
    if m > F32(8.0):
        return ZERO
    hb = f2u(u)
    # u cut at the grid: clear the bits below m (u's exponent field minus m's gives the bits to keep)
    ue = np.int64((hb >> U32(23)) & U32(255))
    me = np.int64((f2u(m) >> U32(23)) & U32(255))
    drop = me - ue + 23
    if drop <= 0:
        uh = u
    elif drop >= 24:
        uh = ZERO
    else:
        uh = u2f(hb & U32((0xFFFFFFFF << drop) & 0xFFFFFFFF))
    t = (u - uh) + w
    c = SHIFTER * m
    tr = (t + c) - c
    z = uh + tr
    return (z * pow2(e + 64)) * pow2(-64)


@numba.njit(cache=True)
def raw_exp32(x: np.float32) -> Any:
    """exp(x) from the float32 pair alone: correctly rounded except within a few 2^-37 of a rounding boundary;
    exact specials (NaN -> NaN, +inf -> +inf, -inf -> +0)."""
    if x != x:
        return x + x
    if x > EXP_HI:
        return INF
    if x < EXP_LO:
        return ZERO
    if abs(x) < EXP_TINY:
        return ONE + x
    u, w, e = exp_core(x, ZERO)
    return scale_round(u, w, e)


@numba.njit(cache=True)
def exp32(x: np.float32) -> Any:
    """exp(x) in float32, correctly rounded on every input: raw_exp32, corrected on its exception table's inputs."""
    return cr_fix(EXP_KEYS, EXP_VALS, EXP_DISP, x, raw_exp32(x))


_VEC_LO = F32(-87.0)   # exp(x) for x >= this is normal (2^e (u + w) with e >= -126, u >= 1 at e = -126)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _exp_lanes(x: np.float32) -> Any:
    """exp32(x) for x >= -87 without a branch (selects only), so that a loop of it vectorises (the table reads
    become gathers): raw_exp32's own path through exp_core and scale_round's normal case (tiny |x| needs no
    case of its own there: 1 + x and exp(x) both round to 1), then exp32's table lookup; NaN gives x + x and
    x > EXP_HI gives +inf as in exp32. An x below -87, whose result may be subnormal or zero, is returned as
    itself: a negative number, which no result is."""
    xc = min(max(x, _VEC_LO), EXP_HI)
    u, w, e = exp_core(xc, ZERO)
    big = e > 126
    a = pow2(e - 1 if big else e)
    y = ((u + w) * a) * (_TWO if big else ONE)
    y = cr_fix(EXP_KEYS, EXP_VALS, EXP_DISP, x, y)
    y = INF if x > EXP_HI else y
    y = x if x < _VEC_LO else y
    return x + x if x != x else y


@numba.njit(cache=True, error_model="numpy")
def exp_array(src: Any, dst: Any) -> None:
    """dst[i] = exp32(src[i]) for every i, the same bits (dst may be src; no other overlap). The first loop is
    _exp_lanes over the row, which LLVM vectorises; the second gives the numbers below -87 (left negative)
    exp32's answer. The first loop always runs in place, on dst (src copied there first when it is another
    array): as two arrays that might overlap, LLVM would check at run time, find them equal and run the loop
    scalar (11.5 ns a number against 3); and one vectorised loop, not one per case, halves this function's
    compile time at a cold start."""
    n = src.size
    if src.ctypes.data != dst.ctypes.data:
        for i in range(n):
            dst[i] = src[i]
    for i in range(n):
        dst[i] = _exp_lanes(dst[i])
    for i in range(n):
        if dst[i] < ZERO:
            dst[i] = exp32(dst[i])
