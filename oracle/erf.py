"""The exact erf, rounded to float32, decided input by input.

erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt. For a float32 input x, the correctly rounded float32 of erf(x)
(round to nearest, ties to even; a tie cannot happen, erf of a nonzero algebraic number being transcendental) is found
in two steps:

1. y64 = erf(x) in float64, from the C library's erf (numba's math.erf on a float64 calls glibc's erf; glibc lists
   erf's largest known error on x86_64 as 1 ulp of float64, 2^-52 relative). y64 rounded to float32 is the correctly
   rounded result unless erf(x) and y64 can sit on opposite sides of a float32 rounding boundary (a midpoint between
   two adjacent float32 numbers): that needs |y64 - midpoint| <= the float64 error. We take a margin 64 times
   glibc's bound, REL_MARGIN = 2^-46 relative, and call every input with |y64 - m| <= REL_MARGIN * |y64| a hard case.
2. Each hard case is decided by mpmath (`round32_mp`): erf(x) at `prec` bits compared with the midpoint exactly, the
   precision raised until the distance to the midpoint is far above the evaluation error.

`check_float64_error` measures glibc's actual error against mpmath on given inputs, so a report can show the margin
is not a guess (the largest error it finds must be below REL_MARGIN by a wide factor).

erf is odd, so only x >= 0 (sign bit clear) is computed; the caller negates for -x (the float32 rounding is
symmetric, so round(erf(-x)) = -round(erf(x))). NaN gives NaN, +inf gives 1 (exact).
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numba
import numpy as np
import numpy.typing as npt

REL_MARGIN = 2.0 ** -46  # the float64 error allowed for (64 x glibc's documented 1 ulp = 2^-52 relative)
MP_START_PREC = 96


@numba.njit(cache=True)
def mid_f32(y: float, c: float) -> float:
    """The float32 rounding boundary on y's side of c = float32(y) (y >= 0): c +- half the spacing there."""
    m, e = math.frexp(c)
    be = e - 1
    if c == 0.0 or be < -126:
        be = -126
    sp = math.ldexp(1.0, be - 23)
    if y >= c:
        return c + 0.5 * sp
    if m == 0.5 and e - 1 > -126:  # c a power of two: the spacing below is half
        sp = 0.5 * sp
    return c - 0.5 * sp


@numba.njit(cache=True)
def ref_pass(bits: Any, y64: Any, c32: Any, hard: Any) -> int:
    """For each positive float32 bit pattern: y64 = glibc erf(x) in float64, c32 = y64 rounded to float32, and
    hard = y64 too close to a float32 rounding boundary to decide (see the module docstring). Returns the number of
    hard cases."""
    nh = 0
    for i in range(bits.size):
        x = np.float64(np.uint32(bits[i]).view(np.float32))
        hard[i] = False
        if x != x:
            y64[i] = x
            c32[i] = np.float32(x)
            continue
        if x == np.inf:
            y64[i] = 1.0
            c32[i] = np.float32(1.0)
            continue
        y = math.erf(x)
        y64[i] = y
        c = np.float32(y)
        c32[i] = c
        if y == 0.0:
            continue
        mid = mid_f32(y, np.float64(c))
        if abs(y - mid) <= REL_MARGIN * y:
            hard[i] = True
            nh += 1
    return nh


def erf64(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """glibc's double erf element-wise (math.erf is the same C function)."""
    xs = np.asarray(x, dtype=np.float64)
    return np.vectorize(math.erf, otypes=[np.float64])(xs) if xs.size else xs.copy()


def round32_mp(x: float) -> tuple[np.float32, int]:
    """The correctly rounded float32 of erf(x) for a float32 x >= 0, decided by mpmath; returns it and the
    precision (bits) that decided it."""
    if math.isnan(x):
        return np.float32(np.nan), 0
    prec = MP_START_PREC
    while True:
        with mpmath.workprec(prec):
            y = mpmath.erf(mpmath.mpf(x))
            c = np.float32(float(y))
            lo, hi = c, c
            if mpmath.mpf(float(c)) <= y:
                hi = np.nextafter(c, np.float32(np.inf))
            else:
                lo = np.nextafter(c, np.float32(-np.inf))
            m = (mpmath.mpf(float(lo)) + mpmath.mpf(float(hi))) / 2  # exact: float32 midpoints fit in prec bits
            d = y - m
            # mpmath's erf is good to a few ulps of the working precision; ask for 2^16 of them of room
            if abs(d) > abs(y) * mpmath.mpf(2) ** (16 - prec):
                return (lo if d < 0 else hi), prec
        prec *= 2
        if prec > 4096:
            raise ArithmeticError(f"erf({x!r}) not decided at 4096 bits")


def check_float64_error(xs: npt.ArrayLike, prec: int = 120) -> float:
    """The largest |glibc erf(x) - erf(x)| over xs, in ulps of float64 (2^-52 relative to erf(x)'s binade)."""
    worst = 0.0
    with mpmath.workprec(prec):
        for x in np.asarray(xs, dtype=np.float64).reshape(-1):
            if not math.isfinite(float(x)) or x == 0.0:
                continue
            y = mpmath.erf(mpmath.mpf(float(x)))
            u = math.ldexp(1.0, math.frexp(float(y))[1] - 53)
            err = float(abs(mpmath.mpf(math.erf(float(x))) - y)) / u
            worst = max(worst, err)
    return worst


def erf_cr32(xs: npt.ArrayLike) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64], int]:
    """The correctly rounded float32 erf of every float32 in xs (any sign), the float64 erf, and how many inputs
    needed mpmath."""
    x = np.ascontiguousarray(xs, dtype=np.float32).reshape(-1)
    bits = x.view(np.uint32)
    pos = bits & np.uint32(0x7FFFFFFF)
    neg = (bits >> np.uint32(31)).astype(bool)
    y64 = np.empty(x.size, dtype=np.float64)
    c32 = np.empty(x.size, dtype=np.float32)
    hard = np.empty(x.size, dtype=np.bool_)
    nh = ref_pass(pos, y64, c32, hard)
    for i in np.flatnonzero(hard):
        c32[i] = round32_mp(float(pos[i:i + 1].view(np.float32)[0]))[0]
    c32 = np.where(neg, -c32, c32).astype(np.float32)
    y64 = np.where(neg, -y64, y64)
    return c32, y64, int(nh)
