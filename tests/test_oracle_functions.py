"""The sweep functions' float64 references (bendtorch.oracle.functions): their exp, which gives the C library's
overflow and underflow results and its 1 near 0 without calling it, is the C library's exp bit for bit on every
float32 input near its overflow and underflow bounds, on a stride of those beyond them and of those near its bound
around 0; the same comparison catches each bound moved. Their sigmoid pair, which gives its quotients without
dividing where exp's value is 0 or 1, is the two divisions bit for bit on the float32 inputs around where it switches
and a stride of all the others; a wrong constant is caught."""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from bendtorch.oracle import functions as OF


@numba.njit(cache=True)
def _differ(xs: Any, over: float, under: float, one: float, own: bool) -> int:
    """How many x give other bits than math.exp(x): OF._exp's (own) or the same rule with the bounds given."""
    n = 0
    for x in xs:
        if own:
            a = OF._exp(x)
        else:
            a = math.inf if x > over else (0.0 if x < under else (1.0 if abs(x) < one else math.exp(x)))
        if np.float64(a).view(np.uint64) != np.float64(math.exp(x)).view(np.uint64) and not (a != a and x != x):
            n += 1
    return n


def _inputs() -> Any:
    """Every float32 within 2 of the overflow and underflow bounds, a stride of 61 over the rest beyond them, a
    stride of 7 over the float32 of either sign within a factor 4 of the bound around 0, the infinities and NaN, as
    float64."""
    f32, neg = np.float32, np.uint32(0x80000000)

    def bits(x: float) -> int:
        return int(f32(x).view(np.uint32))

    near = [np.arange(bits(OF.EXP_OVER - 2.0), bits(OF.EXP_OVER + 2.0), dtype=np.uint32),
            np.arange(bits(-OF.EXP_UNDER - 2.0), bits(-OF.EXP_UNDER + 2.0), dtype=np.uint32) | neg]
    beyond = [np.arange(bits(OF.EXP_OVER), 0x7F800000, 61, dtype=np.uint32),
              np.arange(bits(-OF.EXP_UNDER), 0x7F800000, 61, dtype=np.uint32) | neg]
    around_0 = np.arange(bits(OF.EXP_ONE / 4), bits(OF.EXP_ONE * 4), 7, dtype=np.uint32)
    zero = [around_0, around_0 | neg]
    special = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0, 0x80000000], dtype=np.uint32)
    return np.concatenate(near + beyond + zero + [special]).view(np.float32).astype(np.float64)


def test_exp_is_the_c_librarys_beyond_and_near_its_bounds() -> None:
    xs = _inputs()
    assert xs.size > 3 * 10**7 and (xs > OF.EXP_OVER).sum() > 10**7 and (xs < OF.EXP_UNDER).sum() > 10**7
    assert (abs(xs) < OF.EXP_ONE).sum() > 10**6
    assert _differ(xs, 0.0, 0.0, 0.0, True) == 0


def test_the_comparison_catches_a_bound_moved() -> None:
    # exp(709.5) is finite, exp(-745.1) is the smallest subnormal, not 0, and exp(-1.5 2^-54) rounds to 1 - 2^-53: each
    # bound moved that far fails on them
    xs = _inputs()
    bounds = (OF.EXP_OVER, OF.EXP_UNDER, OF.EXP_ONE)
    assert _differ(xs, *bounds, False) == 0
    assert _differ(xs, OF.EXP_OVER - 1.0, OF.EXP_UNDER, OF.EXP_ONE, False) > 0
    assert _differ(xs, OF.EXP_OVER, OF.EXP_UNDER + 1.0, OF.EXP_ONE, False) > 0
    assert _differ(xs, OF.EXP_OVER, OF.EXP_UNDER, OF.EXP_ONE * 4, False) > 0


@numba.njit(cache=True)
def _pair_differ(xs: Any, zero_pos: tuple[float, float], zero_neg: tuple[float, float], one: tuple[float, float],
                 own: bool) -> int:
    """How many x give other bits than the two divisions (1/(1 + t), t/(1 + t) for x >= 0, t = exp(-x); mirrored
    for x < 0): OF._sig_pair's (own) or the shortcut with the constants given for t = 0 (x >= 0, x < 0) and t = 1."""
    n = 0
    for x in xs:
        t = OF._exp(-abs(x)) if x == x else OF._exp(x)
        q = (1.0 / (1.0 + t), t / (1.0 + t))
        want = q if x >= 0.0 or x != x else (q[1], q[0])
        if own:
            got = OF._sig_pair(x)
        elif t == 0.0:
            got = zero_pos if x >= 0.0 else zero_neg
        elif t == 1.0:
            got = one
        else:
            got = want
        for a, b in ((got[0], want[0]), (got[1], want[1])):
            if np.float64(a).view(np.uint64) != np.float64(b).view(np.uint64):
                n += 1
                break
    return n


def _pair_inputs() -> Any:
    """Every float32 within a factor 2 of 746 and of 2^-54 in magnitude (where exp(-|x|) becomes 0 and 1), of either
    sign; a stride of 9973 over all the others; the infinities, NaN and the zeros; as float64."""
    f32, neg = np.float32, np.uint32(0x80000000)

    def bits(x: float) -> int:
        return int(f32(x).view(np.uint32))

    pos = np.concatenate([np.arange(bits(373.0), bits(1492.0), dtype=np.uint32),
                          np.arange(bits(2.0 ** -55), bits(2.0 ** -53), dtype=np.uint32),
                          np.arange(0, 0x7F800000, 9973, dtype=np.uint32)])
    special = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0, 0x80000000], dtype=np.uint32)
    return np.concatenate([pos, pos | neg, special]).view(np.float32).astype(np.float64)


def test_sigmoid_pair_is_the_two_divisions() -> None:
    xs = _pair_inputs()
    t = np.exp(-np.abs(xs[~np.isnan(xs)]))
    assert (t == 0.0).sum() > 10**6 and (t == 1.0).sum() > 10**6 and ((t > 0.0) & (t < 1.0)).sum() > 10**6
    assert _pair_differ(xs, (1.0, 0.0), (0.0, 1.0), (0.5, 0.5), True) == 0


def test_the_pair_comparison_catches_a_wrong_constant() -> None:
    # the constants OF._sig_pair gives pass; each swapped, or t = 1's halves as t = 0's pair, fails
    xs = _pair_inputs()
    assert _pair_differ(xs, (1.0, 0.0), (0.0, 1.0), (0.5, 0.5), False) == 0
    assert _pair_differ(xs, (0.0, 1.0), (0.0, 1.0), (0.5, 0.5), False) > 0
    assert _pair_differ(xs, (1.0, 0.0), (1.0, 0.0), (0.5, 0.5), False) > 0
    assert _pair_differ(xs, (1.0, 0.0), (0.0, 1.0), (1.0, 0.0), False) > 0
