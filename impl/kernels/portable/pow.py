"""impl's portable pow: exp(y log x) with log x and the product y log x as pairs (x > 0; the IEEE special cases
around it). A function of two float32s (2^64 inputs, beyond any list), so no exception table: the pair evaluation
alone.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.eft import (F32, INF, NAN, ONE, SHIFTER, TWO23, U32, ZERO, f2u, fast_two_sum,
                                                 two_prod)
from bendtorch.impl.kernels.portable.exp import EXP_HI, EXP_LO, exp_core, scale_round
from bendtorch.impl.kernels.portable.log import log_core


@numba.njit(cache=True)
def _is_int(y: np.float32) -> Any:
    return y == (y + SHIFTER) - SHIFTER if abs(y) < TWO23 else True


@numba.njit(cache=True)
def _is_odd_int(y: np.float32) -> Any:
    if abs(y) >= F32(16777216.0) or not _is_int(y):
        return False
    return (np.int64(y) & 1) == 1


@numba.njit(cache=True)
def pow32(x: np.float32, y: np.float32) -> Any:
    """x^y in float32 as exp(y log x) with both in pairs; the C99 special cases (pow(x, +-0) = 1, pow(1, y) = 1,
    a negative x to an integer power, zeros and infinities)."""
    if y == ZERO or x == ONE:
        return ONE
    if x != x or y != y:
        return x + y
    neg = False
    if x < ZERO:
        if abs(y) != INF and not _is_int(y):
            return NAN
        neg = _is_odd_int(y)
        x = -x
    if abs(y) == INF:
        if x == ONE:
            return ONE
        return INF if (x > ONE) == (y > ZERO) else ZERO
    if x == ZERO or x == INF:
        if f2u(x) >> U32(31):                  # -0 to an odd integer power keeps its sign
            neg = _is_odd_int(y)
        big = (x == INF) == (y > ZERO)
        r = INF if big else ZERO
        return -r if neg else r
    lh, ll = log_core(x)
    zp = y * lh
    # decided by the rounded product alone when it is far out (its error is far below the margins of EXP_HI and
    # EXP_LO), before two_prod, whose partial products overflow for |y log x| near the float32 limit
    if zp > EXP_HI:
        return -INF if neg else INF
    if zp < EXP_LO:
        return -ZERO if neg else ZERO
    zh, ze = two_prod(y, lh)
    zl = ze + y * ll
    zh, zl = fast_two_sum(zh, zl)
    if zh > EXP_HI:
        r = INF
    elif zh < EXP_LO:
        r = ZERO
    else:
        u, w, e = exp_core(zh, zl)
        r = scale_round(u, w, e)
    return -r if neg else r
