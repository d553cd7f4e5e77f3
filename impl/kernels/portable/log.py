"""impl's portable log: x = 2^e m, m in [sqrt(1/2), sqrt 2); c ~ 1/m from a 128-entry table (c = 1 around m = 1),
r = m c - 1 exact; log x = e ln2 - log c + r - r^2/2 + r^3/3 - ..., the first four terms summed without error.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.cr_table import LOG_DISP, LOG_KEYS, LOG_VALS, cr_fix
from bendtorch.impl.kernels.portable.eft import (F32, HALF, INF, NAN, ONE, SIXTH, TWO23, U32, ZERO, f2u,
                                                 fast_two_sum, split, two_prod, two_sum, u2f)
from bendtorch.impl.kernels.portable.tables import LN2_H, LN2_L, LOG_C, LOG_TH, LOG_TL

_THIRD = F32(0.3333333333333333)
_QUARTER = F32(0.25)
_FIFTH = F32(0.2)
_TINY_NORMAL = F32(1.1754944e-38)


@numba.njit(cache=True, inline="always")
def log_core(x: np.float32) -> Any:
    """log(x) as a pair s + t (|t| <= ulp(s)), for finite x > 0, accurate to a few 2^-45 relative."""
    e = np.int64(0)
    if x < _TINY_NORMAL:
        x = x * TWO23
        e = np.int64(-23)
    b = f2u(x)
    e += np.int64(b >> U32(23)) - 127
    mb = b & U32(0x7FFFFF)
    if mb > U32(0x3504F3):                     # m > sqrt 2: take m/2, one more power of two
        m = u2f(mb | U32(0x3F000000))
        e += 1
        j = 64 + np.int64(mb >> U32(17))
    else:
        m = u2f(mb | U32(0x3F800000))
        j = np.int64(mb >> U32(16))
    c = LOG_C[j]
    mh, ml = split(m)
    rh, rl = two_sum(mh * c - ONE, ml * c)    # m c - 1 exactly: mh c and ml c exact, mh c - 1 exact
    p, pe = two_prod(rh, rh)
    ph = p * HALF
    pl = pe * HALF                            # r^2/2 = ph + pl exactly
    r3 = p * rh
    poly = r3 * (_THIRD - rh * (_QUARTER - rh * (_FIFTH - rh * SIXTH)))
    ef = F32(e)
    a = ef * LN2_H                             # exact: 15-bit ln2_h, |e| < 2^8
    s, t1 = two_sum(a, LOG_TH[j])
    s, t2 = two_sum(s, rh)
    s, t3 = two_sum(s, -ph)
    small = ((t1 + t2) + t3) + ((ef * LN2_L + LOG_TL[j]) + ((rl - rh * rl) - pl + poly))
    return fast_two_sum(s, small)


@numba.njit(cache=True)
def raw_log32(x: np.float32) -> Any:
    """log(x) from the float32 pair alone: correctly rounded except within a few 2^-45 of a rounding boundary; NaN
    for x < 0 and NaN, -inf for +-0, +inf for +inf."""
    if x != x:
        return x + x
    if x < ZERO:
        return NAN
    if x == ZERO:
        return -INF
    if x == INF:
        return x
    s, t = log_core(x)
    return s + t


@numba.njit(cache=True)
def log32(x: np.float32) -> Any:
    """log(x) in float32, correctly rounded on every input: raw_log32, corrected on its exception table's inputs."""
    return cr_fix(LOG_KEYS, LOG_VALS, LOG_DISP, x, raw_log32(x))
