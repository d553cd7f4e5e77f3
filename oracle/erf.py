"""Pieces of the exact erf that the exhaustive checker (bendtorch.reports.sweep) and the notebooks share.

erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt. The checker decides the correctly rounded float32 of erf(x) input by
input: the C library's float64 erf rounded to float32, unless erf(x) could sit on the other side of a float32
rounding boundary (`mid_f32`) than the float64 value; those hard cases it decides with mpmath.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import numpy.typing as npt


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


def erf64(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """glibc's double erf element-wise (math.erf is the same C function)."""
    xs = np.asarray(x, dtype=np.float64)
    return np.vectorize(math.erf, otypes=[np.float64])(xs) if xs.size else xs.copy()
