"""Ulp error: the one definition every test, report and sweep uses.

ulp_error(x, exact) = |x - exact| / ulp32(exact), with ulp32(y) the spacing of float32 numbers in the binade of the
exact value: 2^(e - 23) for 2^e <= |y| < 2^(e+1) (e >= -126), and 2^-149 for |y| < 2^-126 (subnormals and zero).
This is the error "in ulps of the truth" (Muller's ulp of the exact value); a correctly rounded float32 is at most
0.5 from it. Special values: NaN against NaN is 0; NaN against a number, a number against NaN, or an infinity against
anything but the same infinity is inf. +0 and -0 count as equal here (a law that tells them apart says so itself).

`exact` is float64 (or better, given as float64 after rounding): its own error, at most a few 2^-53 relative, is
below 2^-29 of a float32 ulp and does not show in the figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

_MIN_NORMAL_EXP = -126


def ulp32(exact: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The float32 ulp at each exact value (2^-149 below the normal range; inf for inf and NaN)."""
    y = np.abs(np.asarray(exact, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        m, e = np.frexp(y)  # y = m 2^e, 0.5 <= m < 1, so the binade's exponent is e - 1
    e = np.where(y < 2.0 ** _MIN_NORMAL_EXP, _MIN_NORMAL_EXP, np.maximum(e - 1, _MIN_NORMAL_EXP))
    u = np.ldexp(1.0, e - 23)
    u = np.where(np.isfinite(y), u, np.inf)
    return np.asarray(u, dtype=np.float64)


def ulp_error(x: npt.ArrayLike, exact: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """|x - exact| / ulp32(exact), element-wise, with the special cases in the module's docstring."""
    xa = np.asarray(x, dtype=np.float64)
    ea = np.asarray(exact, dtype=np.float64)
    xa, ea = np.broadcast_arrays(xa, ea)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(xa - ea) / ulp32(ea)
    both_nan = np.isnan(xa) & np.isnan(ea)
    one_nan = np.isnan(xa) ^ np.isnan(ea)
    inf_same = np.isinf(xa) & np.isinf(ea) & (np.sign(xa) == np.sign(ea))
    inf_other = (np.isinf(xa) | np.isinf(ea)) & ~inf_same & ~np.isnan(xa) & ~np.isnan(ea)
    err = np.where(both_nan | inf_same, 0.0, err)
    err = np.where(one_nan | inf_other, np.inf, err)
    return np.asarray(err, dtype=np.float64)


def ulp_stats(errs: npt.ArrayLike) -> dict[str, Any]:
    """max, p99 and median of a set of ulp errors, and how many there were."""
    e = np.asarray(errs, dtype=np.float64).reshape(-1)
    if e.size == 0:
        return {"max": 0.0, "p99": 0.0, "median": 0.0, "n": 0}
    return {"max": float(np.max(e)), "p99": float(np.quantile(e, 0.99)), "median": float(np.median(e)),
            "n": int(e.size)}


def normwise(x: npt.ArrayLike, exact: npt.ArrayLike) -> float:
    """max |x - exact| / ulp32(max |exact|): the error in ulps of the array's largest exact value, a relative bound
    that elements whose exact value is near zero (where any float32 order loses its relative accuracy) cannot blow
    up. A NaN difference counts as inf; a non-finite largest exact value falls back to the largest ulp_error."""
    e = np.asarray(exact, np.float64).reshape(-1)
    xa = np.asarray(x, np.float64).reshape(-1)
    if e.size == 0:
        return 0.0
    scale = float(np.max(np.abs(e)))
    if not np.isfinite(scale):
        return float(np.max(ulp_error(xa, e)))
    with np.errstate(invalid="ignore"):
        d = np.abs(xa - e)
    return float(np.max(np.where(np.isnan(d), np.inf, d)) / float(ulp32(scale)))


# ---------------------------------------------------------------------------------------------------------------
# The same definition on one pair of numbers, compiled, for loops over billions of inputs (the exhaustive sweeps of
# bendtorch.reports.sweep). It follows ulp_error's contract case by case; tests/test_sweep_erf.py checks the two agree.
# ---------------------------------------------------------------------------------------------------------------

import math  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402,F811


@numba.njit(cache=True)
def ulp32_1(exact: float) -> float:
    """ulp32 of one float64 value (2^-149 below 2^-126; inf for inf and NaN). The binade's exponent is read from
    the float64's exponent field (|y| >= 2^-126 is a normal float64), 2^(e - 23) built from its bits."""
    y = abs(exact)
    if not (y < math.inf):
        return math.inf
    if y < 2.0 ** _MIN_NORMAL_EXP:
        return 2.0 ** -149
    e = np.int64((np.float64(y).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))  # biased: e - 1023
    return np.uint64((e - 23) << 52).view(np.float64)


@numba.njit(cache=True)
def ulp_error1_u(x: float, exact: float, u: float) -> float:
    """ulp_error1(x, exact) given u = ulp32_1(exact), computed once when several results share one exact value."""
    xn = x != x
    en = exact != exact
    if xn and en:
        return 0.0
    if xn or en:
        return math.inf
    if math.isinf(x) or math.isinf(exact):
        return 0.0 if x == exact else math.inf
    return abs(x - exact) / u


@numba.njit(cache=True)
def ulp_error1(x: float, exact: float) -> float:
    """ulp_error for one pair: |x - exact| / ulp32(exact), NaN against NaN 0, NaN against a number inf, equal
    infinities 0, an infinity against anything else inf."""
    return ulp_error1_u(x, exact, ulp32_1(exact))
