"""The sweep functions' exact references: the float64 home of what the exhaustive checker (bendtorch.reports.sweep)
compares every library with, named by the records of bendtorch.records.functions ("bendtorch.oracle.functions:ref_exp").

`ref_NAME(x)` (numba-compiled, float64) returns (y, s): y is f(x) with |y - f(x)| <= 2^-46 s, where s = |y| for one
C library call (glibc documents a few float64 ulps) and, for a formula of several operations, s also covers the
magnitude of its terms and the condition of the step that magnifies a rounding (so cancellation is accounted for).
The checker rounds y to float32 unless y lies within 2^-46 s of a float32 rounding boundary; there it asks
`mp_NAME(x)`, the same function in mpmath at a precision it raises until the boundary is far.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath as mp
import numba

from bendtorch.oracle.funcs import GELU_A as _GA
from bendtorch.oracle.funcs import INV_SQRT2 as _INV_SQRT2
from bendtorch.oracle.funcs import INV_SQRT_2PI as _INV_SQRT_2PI
from bendtorch.oracle.funcs import SQRT_2_OVER_PI as _SQRT_2_PI


# exp's arguments where its float64 value is fixed: above EXP_OVER it overflows to +inf (exp(709.79) already does),
# below EXP_UNDER it rounds to +0 (exp(-746) < 2^-1076, under half the smallest subnormal, 2^-1074), and within
# EXP_ONE of 0 it is 1 (exp(x) is within 2^-55 of 1 there, its other neighbour 1 - 2^-53 three quarters of an ulp
# away, so any exp with an error under 0.51 ulps, glibc's documented bound, gives 1)
EXP_OVER = 710.0
EXP_UNDER = -746.0
EXP_ONE = 2.0 ** -55


@numba.njit(cache=True, error_model="numpy")
def _exp(x: float) -> float:
    """math.exp(x), the C library's exp, with the result given at once where round-to-nearest fixes it: +inf above
    EXP_OVER, +0 below EXP_UNDER, 1 within EXP_ONE of 0. Beyond the first two the C library takes its overflow or
    underflow path, which sets errno: half of the checker's time an input on exp's inputs above 88 in magnitude (more
    than half of all float32 inputs), 13.5-14.9 ns against 6.7-7.0 with the bounds; near 0 the call is most of the
    rest (glibc 2.36, Intel Xeon, family 6, model 167). The same bits as the call on every input: compared on all
    2^32 float32 inputs when written (none differ), and in tests/test_oracle_functions.py on those near the bounds
    and a stride of those beyond them."""
    if x > EXP_OVER:
        return math.inf
    if x < EXP_UNDER:
        return 0.0
    if abs(x) < EXP_ONE:
        return 1.0
    return math.exp(x)


@numba.njit(cache=True, error_model="numpy")
def _sig_pair(x: float) -> tuple[float, float]:
    """(sigma(x), 1 - sigma(x)) in float64, each with relative error a few 2^-53 for every x (no cancellation).
    Where t (exp of -|x|) is 0 or 1, the two quotients are exact, (1, 0) and (1/2, 1/2), and are given without
    dividing: the same values (IEEE division is exact there), so the same bits on every input. t is 0 or 1 for about
    three quarters of all float32 x (|x| above 745 or below 2^-54), where the two divisions took about a fifth of the
    checker's reference pass (dsilu's 4.2-4.4 -> 3.4 ns an input in those chunks; Intel Xeon, family 6, model 167)."""
    t = _exp(-x) if x >= 0.0 else _exp(x)
    if t == 0.0:
        s, c = 1.0, 0.0
    elif t == 1.0:
        s, c = 0.5, 0.5
    else:
        s, c = 1.0 / (1.0 + t), t / (1.0 + t)
    return (s, c) if x >= 0.0 else (c, s)  # for x < 0, sigma(x) = t / (1 + t) and 1 - sigma(x) = 1 / (1 + t)


@numba.njit(cache=True, error_model="numpy")
def ref_exp(x: float) -> tuple[float, float]:
    y = _exp(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_log(x: float) -> tuple[float, float]:
    if x < 0.0:
        return math.nan, 0.0
    if x == 0.0:
        return -math.inf, 0.0
    y = math.log(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_tanh(x: float) -> tuple[float, float]:
    y = math.tanh(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_sin(x: float) -> tuple[float, float]:
    y = math.sin(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_cos(x: float) -> tuple[float, float]:
    y = math.cos(x)
    return y, abs(y)


ROPE_BASE = 10000.0  # the seed's RoPE base: its table takes powf(base, 2c/d)


@numba.njit(cache=True, error_model="numpy")
def ref_pow(x: float) -> tuple[float, float]:
    y = math.pow(ROPE_BASE, x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_erf(x: float) -> tuple[float, float]:
    y = math.erf(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_sqrt(x: float) -> tuple[float, float]:
    y = math.sqrt(x) if x >= 0.0 or x != x else math.nan
    if x == 0.0:
        y = x  # sqrt(-0) = -0
    return y, abs(y) if y == y else 0.0


@numba.njit(cache=True, error_model="numpy")
def ref_rsqrt(x: float) -> tuple[float, float]:
    if x < 0.0:
        return math.nan, 0.0
    if x == 0.0:
        return 1.0 / x, 0.0  # +-inf, the sign of the zero
    y = 1.0 / math.sqrt(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_sigmoid(x: float) -> tuple[float, float]:
    s, _ = _sig_pair(x)
    return s, s


@numba.njit(cache=True, error_model="numpy")
def ref_silu(x: float) -> tuple[float, float]:
    if x == -math.inf:
        return -0.0, 0.0
    s, _ = _sig_pair(x)
    y = x * s
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_gelu_tanh(x: float) -> tuple[float, float]:
    """0.5 x (1 + tanh(u)) = x sigma(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 2u carries a relative error of a few
    2^-53, which exp magnifies by |2u|: the scale says so."""
    if x == -math.inf:
        return -0.0, 0.0
    if x == math.inf:
        return x, 0.0
    v = 2.0 * _SQRT_2_PI * (x + _GA * x * x * x)
    s, c = _sig_pair(v)
    y = x * s
    return y, abs(y) * (1.0 + abs(v) * c)  # sigma(v)'s relative sensitivity to v is 1 - sigma(v) = c


@numba.njit(cache=True, error_model="numpy")
def ref_gelu_erf(x: float) -> tuple[float, float]:
    """x Phi(x) = 0.5 x erfc(-x/sqrt 2); erfc's relative condition at t = -x/sqrt 2 is |x| phi(x) / Phi(x) (about
    x^2 for x < 0, going to 0 for x > 0, where the value is x)."""
    if x == -math.inf:
        return -0.0, 0.0
    cdf = 0.5 * math.erfc(-x * _INV_SQRT2)
    y = x * cdf
    cond = abs(x) * _INV_SQRT_2PI * _exp(-0.5 * x * x) / cdf if cdf > 0.0 else x * x
    return y, abs(y) * (1.0 + cond + (x * x if cdf < 0.5 else 0.0))


@numba.njit(cache=True, error_model="numpy")
def ref_dsigmoid(x: float) -> tuple[float, float]:
    """sigma'(x) = sigma(x) (1 - sigma(x)) (even)."""
    s, c = _sig_pair(x)
    y = s * c
    return y, y * (1.0 + abs(x))


@numba.njit(cache=True, error_model="numpy")
def ref_dtanh(x: float) -> tuple[float, float]:
    """tanh'(x) = 1 - tanh(x)^2 = 4 sigma(2x)(1 - sigma(2x)) (even)."""
    s, c = _sig_pair(2.0 * x)
    y = 4.0 * s * c
    return y, y * (1.0 + 2.0 * abs(x))


@numba.njit(cache=True, error_model="numpy")
def ref_dsilu(x: float) -> tuple[float, float]:
    """silu'(x) = sigma(x) (1 + x (1 - sigma(x))); the scale is the terms' magnitude (a zero near x = -2.3994).
    exp's argument is x itself (exact), so no factor in |x|: with one, every x above 2^22 (where the value is 1)
    would be within the margin of a rounding boundary and go to mpmath."""
    s, c = _sig_pair(x)
    y = s * (1.0 + x * c)
    return y, s * (1.0 + abs(x) * c)


@numba.njit(cache=True, error_model="numpy")
def ref_dgelu_tanh(x: float) -> tuple[float, float]:
    """d/dx 0.5 x (1 + tanh u) = sigma(2u) (1 + 2 x (1 - sigma(2u)) u'), u' = sqrt(2/pi)(1 + 3 0.044715 x^2)."""
    v = 2.0 * _SQRT_2_PI * (x + _GA * x * x * x)
    du = _SQRT_2_PI * (1.0 + 3.0 * _GA * x * x)
    s, c = _sig_pair(v)
    y = s * (1.0 + 2.0 * x * c * du)
    return y, s * (1.0 + 2.0 * abs(x) * c * du) * (1.0 + abs(v) * c)  # v's rounding moves sigma by c |dv|


@numba.njit(cache=True, error_model="numpy")
def ref_dgelu_erf(x: float) -> tuple[float, float]:
    """d/dx x Phi(x) = Phi(x) + x phi(x) (a zero near x = -0.7518)."""
    if x == -math.inf:
        return -0.0, 0.0
    if x == math.inf:
        return 1.0, 0.0
    cdf = 0.5 * math.erfc(-x * _INV_SQRT2)
    pdf = _INV_SQRT_2PI * _exp(-0.5 * x * x)
    y = cdf + x * pdf
    # cdf's relative condition is |x| pdf / cdf (x^2 for x < 0, 0 for large x > 0); exp's argument -x^2/2 is
    # rounded, so x pdf carries x^2 times its relative error
    cond = abs(x) * pdf / cdf if cdf > 0.0 else x * x
    return y, cdf * (1.0 + cond + (x * x if cdf < 0.5 else 0.0)) + abs(x) * pdf * (1.0 + x * x)


# ---- the same functions in mpmath (at the caller's working precision), for the hard cases -------------------------

def _sq() -> Any:
    return mp.sqrt(2 / mp.pi)


def _ga() -> Any:
    return mp.mpf(44715) / 10 ** 6


def _sig(x: Any) -> Any:
    return 1 / (1 + mp.exp(-x))


def _phi(x: Any) -> Any:
    return mp.erfc(-x / mp.sqrt(2)) / 2


def mp_exp(x: Any) -> Any:
    return mp.exp(x)


def mp_log(x: Any) -> Any:
    return mp.log(x)


def mp_tanh(x: Any) -> Any:
    return mp.tanh(x)


def mp_sin(x: Any) -> Any:
    return mp.sin(x)


def mp_cos(x: Any) -> Any:
    return mp.cos(x)


def mp_pow(x: Any) -> Any:
    return mp.mpf(int(ROPE_BASE)) ** x


def mp_erf(x: Any) -> Any:
    return mp.erf(x)


def mp_sqrt(x: Any) -> Any:
    return mp.sqrt(x)


def mp_rsqrt(x: Any) -> Any:
    return 1 / mp.sqrt(x)


def mp_sigmoid(x: Any) -> Any:
    return _sig(x)


def mp_silu(x: Any) -> Any:
    return x * _sig(x)


def mp_gelu_tanh(x: Any) -> Any:
    return x / 2 * (1 + mp.tanh(_sq() * (x + _ga() * x ** 3)))


def mp_gelu_erf(x: Any) -> Any:
    return x * _phi(x)


def mp_dsigmoid(x: Any) -> Any:
    return _sig(x) * (1 - _sig(x))


def mp_dtanh(x: Any) -> Any:
    return mp.sech(x) ** 2


def mp_dsilu(x: Any) -> Any:
    return _sig(x) * (1 + x * (1 - _sig(x)))


def mp_dgelu_tanh(x: Any) -> Any:
    u = _sq() * (x + _ga() * x ** 3)
    return (1 + mp.tanh(u)) / 2 + x / 2 * mp.sech(u) ** 2 * _sq() * (1 + 3 * _ga() * x ** 2)


def mp_dgelu_erf(x: Any) -> Any:
    return _phi(x) + x * mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)
