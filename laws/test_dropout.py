"""Laws of Dropout (main.bend lines 1219-1288): the mask is a counter-based hash of (seed, step, index); over drawn
shapes (non powers of two included), 32-bit seeds and steps, drop probabilities p in [0, 1] (0, 1, tiny and
near-1 values included) and float32 inputs of any bits."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from bendtorch.impl.layers.dropout import DropP, Dropout
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import arrays, elems, seeds

F32 = np.float32
M32 = 0xFFFFFFFF


def mix32(x: int) -> int:
    """lowbias32 (main.bend line 1229) on Python integers mod 2^32."""
    a = x ^ (x >> 16)
    b = (a * 2146121005) & M32
    c = b ^ (b >> 15)
    d = (c * 2221713035) & M32
    return d ^ (d >> 16)


def seed_factor(seed: int, t: int, i: int, p: np.float32) -> np.float32:
    """drop_k (line 1237) from the seed's words: u = float32(mix32(key + i) >> 8) / 2^24 with key =
    mix32(seed ^ mix32(t)) (drop_mask, line 1248); 0.0 if u < p else 1 / (1 - p) in float32."""
    key = mix32(seed ^ mix32(t))
    u = F32(F32(mix32((key + i) & M32) >> 8) / F32(16777216.0))
    with np.errstate(all="ignore"):
        return F32(0.0) if u < p else F32(F32(1.0) / F32(F32(1.0) - p))


def probs() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0.1, 0.9, 1e-7, 0.99999994]),
                     st.floats(0.0, 1.0, width=32)).map(F32)


def factors(n: int, c: int, p: np.float32, seed: int, t: int) -> Any:
    """The factors Dropout's forward saves at step t."""
    return Dropout(n, c, float(p), seed).fwd(DropP(t), np.ones((n, c), F32)).s


@law("dropout", "same_mask", "bit for bit")
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), probs(), seeds(), seeds())
@example(3, 5, 5, 3, F32(0.5), 2**32 - 1, 2**32 - 1)
def test_same_seed_step_and_index_give_the_same_mask(n1: int, c1: int, n2: int, c2: int, p: np.float32, seed: int,
                                                      t: int) -> None:
    """The same seed, step and index give the same mask (drop_mask, main.bend lines 1237-1248): the factor of flat
    index i depends on (seed, t, i) only, not on the matrix's shape or on another call: two calls agree, two shapes
    agree on their common indices, and each factor is the seed's hash written out here from its words."""
    a = factors(n1, c1, p, seed, t).reshape(-1)
    b = factors(n2, c2, p, seed, t).reshape(-1)
    assert np.array_equal(a.view(np.uint32), factors(n1, c1, p, seed, t).reshape(-1).view(np.uint32))
    k = min(a.size, b.size)
    assert np.array_equal(a[:k].view(np.uint32), b[:k].view(np.uint32))
    want = np.array([seed_factor(seed, t, i, p) for i in range(a.size)], F32)
    assert np.array_equal(a.view(np.uint32), want.view(np.uint32))


@st.composite
def drop_problems(draw: Any) -> Any:
    n, c = draw(st.integers(1, 8)), draw(st.integers(1, 9))
    el = elems(3.4e38, allow_nan=True, allow_infinity=True)
    return draw(arrays((n, c), el)), draw(arrays((n, c), el)), draw(probs()), draw(seeds()), draw(seeds())


@law("dropout", "factors_0_or_scale", "bit for bit")
@given(drop_problems())
@example((np.array([[np.inf, -0.0]], F32), np.array([[1.0, 2.0]], F32), F32(0.5), 0, 0))
def test_every_factor_is_0_or_the_scale(prob: Any) -> None:
    """Every factor is 0 or 1/(1 - p) (drop_k, main.bend line 1237; the scale rounded as (1.0 / (1.0 - p)), line
    1248): each is +0.0 or exactly that float32 (+inf for p = 1, where every factor is 0); y = x * factor and
    dx = dy * factor element by element (Ew.zip f32_mul, lines 1258, 1288), bit for bit (NaN matched as NaN; an
    infinite x at a dropped position gives inf * 0 = NaN, as the seed's product does)."""
    x, dy, p, seed, t = prob
    n, c = x.shape
    lay = Dropout(n, c, float(p), seed)
    f = lay.fwd(DropP(t), x)
    with np.errstate(all="ignore"):
        scale = F32(F32(1.0) / F32(F32(1.0) - p))
        u = f.s.view(np.uint32)
        assert np.all((u == 0) | (u == np.array([scale], F32).view(np.uint32)[0]))
        yy = x * f.s
        dx = lay.bwd(DropP(t), f.s, dy, DropP(0)).dx
        dd = dy * f.s
    for got, want in ((f.y, yy), (dx, dd)):
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@law("dropout", "p_zero_identity", "bit for bit, but a signaling NaN comes back quiet")
@given(st.integers(1, 8), st.integers(1, 9), seeds(), seeds(), st.data())
@example(1, 1, 0, 0, None)
def test_p_zero_is_the_identity(n: int, c: int, seed: int, t: int, data: Any) -> None:
    """p = 0 is the identity: every factor is 1/(1 - 0) = 1 (u < 0 never holds), so y = x and dx = dy bit for bit
    (both zeros, subnormals, infinities, quiet NaNs and their payloads), with one exception found by this law: x * 1
    is an IEEE operation, which quiets a signaling NaN (it comes back with its payload and the quiet bit 0x00400000
    set), as the seed's F32 product does."""
    if data is None:  # the pinned case: a signaling NaN
        x = np.array([[0x7F800001]], np.uint32).view(F32)
    else:
        word = st.one_of(st.integers(0, M32), st.sampled_from([0x80000000, 0x7F800001, 0xFFA00001, 0x7FC00000,
                                                                0x7F800000, 0x00000001]))
        vals = data.draw(st.lists(word, min_size=n * c, max_size=n * c))
        x = np.array(vals, np.uint32).reshape(n, c).view(F32)
    lay = Dropout(x.shape[0], x.shape[1], 0.0, seed)
    with np.errstate(all="ignore"):
        f = lay.fwd(DropP(t), x)
        dx = lay.bwd(DropP(t), f.s, x, DropP(0)).dx
    u = x.view(np.uint32)
    snan = ((u & 0x7F800000) == 0x7F800000) & ((u & 0x007FFFFF) != 0) & ((u & 0x00400000) == 0)
    want = np.where(snan, u | 0x00400000, u)
    assert np.array_equal(f.y.view(np.uint32), want) and np.array_equal(dx.view(np.uint32), want)
    if data is None:
        assert f.y.view(np.uint32)[0, 0] != u[0, 0]  # the exception is real


# ln(2 / 1e-9): Bernstein's bound below is exceeded with probability at most 1e-9
_LOG_2_OVER_DELTA = math.log(2e9)


def kept_bound(n: int, p: float) -> float:
    """The bound on |kept / n - (1 - p)| of the kept_fraction law, for n numbers dropped with probability p: at most
    (L / 3 + sqrt(L^2 / 9 + 2 L v)) / n + 2^-24 with L = ln(2 / 1e-9) and v = n (p (1 - p) + 2^-24). A number is
    dropped with probability p' = ceil(p 2^24) / 2^24 (u = (h >> 8) / 2^24 takes 2^24 equally likely values, for a
    uniform hash), within 2^-24 above p, so the dropped count D is Binomial(n, p'), whose variance n p'(1 - p') is
    at most v. Bernstein's inequality, P(|D - n p'| >= t) <= 2 exp(-t^2 / (2 (v + t / 3))), holds for every n and
    p'; t = L / 3 + sqrt(L^2 / 9 + 2 L v) solves t^2 = 2 L (v + t / 3), so the bound fails with probability at most
    1e-9 (and n (p' - p) <= n 2^-24 is the rest). For a large variance it is about 6.5 standard deviations; for a
    small one (n p near 0) it is about 2 L / 3 = 14.3 numbers: there the count is Poisson-like, and a bound of a
    few standard deviations (6 sqrt(p (1 - p) / n) + 1 / n, an earlier form of this law) is exceeded by two drops
    in 256 at p = 1e-4 (n p = 0.026; the example below) with probability about (n p)^2 / 2 = 3e-4."""
    lg = _LOG_2_OVER_DELTA
    v = n * (p * (1.0 - p) + 2.0 ** -24)
    return (lg / 3.0 + math.sqrt(lg * lg / 9.0 + 2.0 * lg * v)) / n + 2.0 ** -24


@law("dropout", "kept_fraction", "within Bernstein's bound (fails with probability < 1e-9)")
@given(st.integers(1, 64), st.integers(32, 256), st.floats(0.0, 1.0, width=32).map(F32), seeds(), seeds())
@example(1, 256, F32(0.5), 0, 0)
@example(7, 100, F32(1.0), 1, 2)
@example(4, 64, F32(1e-4), 36, 1)   # two of 256 dropped at p = 1e-4: a fair draw (see kept_bound)
def test_the_kept_fraction_is_near_1_minus_p(n: int, c: int, p: np.float32, seed: int, t: int) -> None:
    """The kept fraction is within a statistical bound of 1 - p (each number kept with probability 1 - p, main.bend
    line 1220): |kept / N - (1 - p)| <= kept_bound(N, p) over N = n c numbers, a bound every Binomial count meets
    except with probability 1e-9."""
    k = factors(n, c, p, seed, t)
    N = n * c
    kept = int(np.count_nonzero(k))
    assert abs(kept / N - (1 - float(p))) <= kept_bound(N, float(p))


@law("dropout", "another_step_another_mask", "bit for bit (fails with probability < 1e-11)")
@given(st.integers(16, 64), st.integers(16, 64), st.floats(float(F32(0.05)), float(F32(0.95)), width=32).map(F32),
       seeds(), seeds(), st.integers(1, 2**32 - 1))
@example(16, 16, F32(0.5), 0, 2**32 - 1, 1)
def test_another_step_gives_another_mask(n: int, c: int, p: np.float32, seed: int, t: int, dt: int) -> None:
    """Another step gives another mask (the step counter in the hash's key, main.bend line 1248): for steps t and
    t' = t + dt mod 2^32 (dt != 0) the two masks differ. A statistical law: two independent masks of N >= 256 numbers
    with 0.05 <= p <= 0.95 coincide with probability (p^2 + (1-p)^2)^N < 1e-11. The layer's step moves to the next
    mask: step gives DropP(t + 1 mod 2^32) whatever the optimizer (drop_step, line 1265), so from 2^32 - 1 it wraps
    to 0 and gives step 0's mask again."""
    t2 = (t + dt) & M32
    a, b = factors(n, c, p, seed, t), factors(n, c, p, seed, t2)
    assert not np.array_equal(a.view(np.uint32), b.view(np.uint32))
    lay = Dropout(n, c, float(p), seed)
    nxt = lay.step(None, DropP(t), DropP(0), None).p  # type: ignore[arg-type]
    assert nxt == DropP((t + 1) & M32)
    assert np.array_equal(lay.fwd(nxt, np.ones((n, c), F32)).s.view(np.uint32),
                          factors(n, c, p, seed, (t + 1) & M32).view(np.uint32))
