"""Laws of RoPE (main.bend lines 2120-2197): each pair (x[c], x[c + half]) of a head turns by pos * inv[c]; over
drawn shapes (rows of b sequences of t positions, h heads of 2*half numbers, non powers of two included), bases, and
float32 values with zeros of both signs, subnormals, tiny and large magnitudes (infinities and NaNs where a law
speaks of them)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from bendtorch.impl.layers.rope import RoPE
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import arrays, elems

F32 = np.float32
U = 2.0 ** -24


@st.composite
def rope_problems(draw: Any, el: Any) -> Any:
    b, t, h, half = draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(1, 3)), draw(st.integers(1, 5))
    base = draw(st.one_of(st.sampled_from([10000.0, 100000.0, 500000.0]), st.floats(1.5, 1e6, width=32)))
    n, w = b * t, h * 2 * half
    return RoPE(n, w, t, h, half, base), t, h, half, draw(arrays((n, w), el))


def pairs(x: Any, h: int, half: int) -> tuple[Any, Any]:
    """(a, b): each n x h x half; pair (a, b) = (x[c], x[c + half]) of each head."""
    xr = x.reshape(x.shape[0], h, 2, half)
    return xr[:, :, 0, :], xr[:, :, 1, :]


def plus_zero(a: Any, partner: Any, neg: Any) -> Any:
    """a + (partner * +0.0), the zero's sign being `neg` (an array of bools): NaN where the partner is not finite
    (inf * 0) or a is NaN; a itself otherwise, except -0 + +0 = +0."""
    out = a.copy()
    nz = (a.view(np.uint32) == 0x80000000) & ~neg
    out[nz] = F32(0.0)
    out[~np.isfinite(partner) | np.isnan(a)] = F32(np.nan)
    return out


@law("rope", "position_zero_identity",
     "bit for bit for finite numbers but -0 may become +0; a non-finite number makes its partner NaN")
@given(rope_problems(elems(3.4e38, allow_nan=True, allow_infinity=True)), st.booleans())
@example((RoPE(1, 2, 1, 1, 1, 10000.0), 1, 1, 1, np.array([[-0.0, -1.0]], F32)), False)
@example((RoPE(1, 2, 1, 1, 1, 10000.0), 1, 1, 1, np.array([[1.0, np.inf]], F32)), False)
def test_position_zero_is_the_identity(prob: Any, backward: bool) -> None:
    """Position 0 is the identity: its angle is 0, cos = 1 and sin = +0 exactly (rope_ang, line 2133), so the
    rotation (a cos - b sin, b cos + a sin) (rope_p3, line 2151) gives (a, b) back bit for bit for finite numbers,
    forward and backward, with two exceptions found by this law, both IEEE's: a * 1 + (-b) * 0 adds a zero whose
    sign is the partner's product's, and -0 + +0 = +0, so a -0 becomes +0 when that zero is +0 (forward: a = -0 with
    b <= -0, or b = -0 with a >= +0); and inf * 0 = NaN, so an infinite or NaN number makes its partner NaN. NaNs stay
    NaN (a signaling one comes back quiet)."""
    lay, t, h, half, x = prob
    with np.errstate(all="ignore"):
        y = lay.bwd(None, None, x, None).dx if backward else lay.fwd(None, x).y
    a, b = pairs(x, h, half)
    sa, sb = np.signbit(a), np.signbit(b)
    if backward:   # (a + b*0, b + -(a*0))
        w1, w2 = plus_zero(a, b, sb), plus_zero(b, a, ~sa)
    else:          # (a + (-b)*0, b + a*0)
        w1, w2 = plus_zero(a, b, ~sb), plus_zero(b, a, sa)
    ya, yb = pairs(y, h, half)
    rows = np.arange(x.shape[0]) % t == 0
    for got, want in ((ya[rows], w1[rows]), (yb[rows], w2[rows])):
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def norms(a: Any, b: Any) -> Any:
    return np.hypot(a.astype(np.float64), b.astype(np.float64))


FINITE = elems(1e37)


@law("rope", "backward_after_forward", "within 8 2^-24 r + 2^-147 of x, r the pair's norm")
@given(rope_problems(FINITE))
@example((RoPE(2, 2, 2, 1, 1, 10000.0), 2, 1, 1, np.array([[1.0, 2.0], [3.0, -4.0]], F32)))
def test_backward_after_forward_gives_x_back(prob: Any) -> None:
    """Backward after forward gives x back within a stated bound (the backward pass rotates by the opposite angle,
    main.bend line 2123). Bound, per number of a pair (a, b) of norm r: |x'' - x| <= 8 2^-24 r + 2^-147.
    Derivation, u = 2^-24, (c, s) the table's float32 cos and sin: each computed component of a rotation is within
    (2u + u^2)(|a c| + |b s|) <= 2.0001 u sqrt(c^2 + s^2) r of the exact one (two products and a sum rounded),
    plus 2^-149 of underflow; R^T R = (c^2 + s^2) I, and |c^2 + s^2 - 1| <= 3u when cosf and sinf are within an
    ulp; so x'' - x = (c^2 + s^2 - 1) x + R^T e1 + e2 is within (3 + 2 sqrt 2 + 2) u r (1 + 2^-20) + 2^-148."""
    lay, t, h, half, x = prob
    back = lay.bwd(None, None, lay.fwd(None, x).y, None).dx
    a, b = pairs(x, h, half)
    r = norms(a, b)
    for got, orig in zip(pairs(back, h, half), (a, b)):
        err = np.abs(got.astype(np.float64) - orig.astype(np.float64))
        assert np.all(err <= 8 * U * r + 2.0 ** -147), float(np.max(err / np.maximum(r, 1e-300)))


@law("rope", "pair_norm_kept", "within 5 2^-24 r + 2^-147 of r, the pair's norm")
@given(rope_problems(FINITE), st.booleans())
@example((RoPE(1, 2, 1, 1, 1, 10000.0), 1, 1, 1, np.array([[3.0, 4.0]], F32)), False)
def test_each_pair_keeps_its_norm(prob: Any, backward: bool) -> None:
    """Each pair's norm is kept (a rotation, main.bend line 2122) within |‖(a', b')‖ - ‖(a, b)‖| <= 5 2^-24 r +
    2^-147, r = ‖(a, b)‖, forward and backward. Derivation: ‖R x‖ = sqrt(c^2 + s^2) r with |c^2 + s^2 - 1| <= 3u,
    so within 1.5u r of r; the roundings add at most sqrt 2 (2.0001 u) sqrt(c^2 + s^2) r <= 2.83u r (1 + 2^-20), and
    underflow 2^-148."""
    lay, t, h, half, x = prob
    y = lay.bwd(None, None, x, None).dx if backward else lay.fwd(None, x).y
    r0 = norms(*pairs(x, h, half))
    r1 = norms(*pairs(y, h, half))
    assert np.all(np.abs(r1 - r0) <= 5 * U * r0 + 2.0 ** -147), float(np.max(np.abs(r1 - r0) /
                                                                            np.maximum(r0, 1e-300)))
    assert math.isfinite(float(np.max(r1, initial=0.0)))
