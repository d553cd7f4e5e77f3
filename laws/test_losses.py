"""Laws of the losses (main.bend lines 2745-2956): the call's contract for every op record tagged "losses" (its
inputs untouched, dy of y's shape, the same bits twice), cross-entropy's gradient rows, labels past the last class,
tree_sum, MSE's gradient; over drawn shapes (1 and non powers of two included) and float32 values with zeros of both
signs, subnormals, tiny and huge magnitudes (infinities and NaNs where a law speaks of them)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import bendtorch.impl as L
from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.losses import tree_sum, tree_sum_inplace, tree_sum_plain
from bendtorch.impl.losses import NLL, CrossEntropy, MSE
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import arrays, bits32, elems
from bendtorch.records.ops import op, sample, tagged

F32 = np.float32
U = 2.0 ** -24  # the unit roundoff of float32 (round to nearest)


def same_or_nan(a: Any, b: Any) -> bool:
    """The same bits, where a NaN only has to meet a NaN (payloads may differ between numpy and numba's order)."""
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    na, nb = np.isnan(a), np.isnan(b)
    return a.shape == b.shape and bool(np.array_equal(na, nb)) and \
        bool(np.array_equal(a[~na].view(np.uint32), b[~nb].view(np.uint32)))


# the losses the records tag "losses": each is held to the call's contract below
LOSS_OPS = [r.name for r in tagged("losses")]


def check_loss_call(loss: Any, y: Any, t: Any) -> None:
    """One loss call's contract (DESIGN.md: ownership, LossOut(loss, dy)): the loss is a float32 number, dy a new
    C-contiguous float32 array of y's shape, y and t keep every bit, and a second call gives the same bits."""
    y0, t0 = y.copy(), t.copy()
    with np.errstate(all="ignore"):
        a, b = loss(y, t), loss(y, t)
    dy = np.asarray(a.dy)
    assert np.ndim(a.loss) == 0 and np.asarray(a.loss).dtype == F32, a.loss
    assert dy.shape == y.shape and dy.dtype == F32 and dy.flags.c_contiguous and dy is not y
    assert np.array_equal(y.view(np.uint8), y0.view(np.uint8)) and np.array_equal(t.view(np.uint8), t0.view(np.uint8))
    assert same_or_nan(a.loss, b.loss) and same_or_nan(a.dy, b.dy)


@pytest.mark.parametrize("name", LOSS_OPS)
@law("losses", "call_contract", "bit for bit")
@given(seed=st.integers(0, 2**32 - 1), case=st.integers(0, 2**8))
def test_a_loss_keeps_its_inputs_and_gives_dy_of_y(name: str, seed: int, case: int) -> None:
    """Every loss of the records (CrossEntropy, NLL, MSE, ...), on its record's sample inputs at any seed and each
    of its shapes: the loss is a float32 number and dy a new float32 array of y's shape, y and the targets are left
    as they were, bit for bit, and the same call again gives the same bits (main.bend lines 2745-2956)."""
    r = op(name)
    d = r.shapes[case % len(r.shapes)]
    s = sample(r, L, d, seed)
    check_loss_call(r.build(L, d), s.x, s.t)


@st.composite
def logits(draw: Any, max_abs: float = 1e3) -> Any:
    n, c = draw(st.integers(1, 7)), draw(st.integers(1, 40))
    z = draw(arrays((n, c), st.one_of(elems(max_abs), elems(3.4e38))))
    labels = np.array(draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)), np.int64)
    return z, labels


def ce_row_bound(n: int, c: int) -> float:
    """The bound on |sum_j dz[i, j]| (exact sum of the float32 gradient row) for a row with a label < c.

    With u = 2^-24 and d = ceil(log2 c): the exponentials e_j (whatever their own errors) have the exact sum S >= 1
    (the max's e is exp(0) = 1); tree_sum gives s = S (1 + t), |t| <= d u / (1 - d u) (each e passes through at most
    d additions); p_j = e_j / s (1 + a_j) + b_j, |a_j| <= u, |b_j| <= 2^-150 (underflow); so |sum p_j - 1| <=
    |S/s - 1| + u S/s + c 2^-150. The hit class's p_y - 1 is rounded once (<= u), the others' p_j - 0 are exact; each
    division by n adds a relative u on |p_j - h_j| (whose sum is <= 2 + small) and 2^-150 of underflow. In all:
    |sum_j dz[i, j]| <= (d + 4) u (1 + 2^-10) / n + c 2^-149."""
    d = math.ceil(math.log2(c)) if c > 1 else 0
    return (d + 4) * U * (1 + 2.0 ** -10) / n + c * 2.0 ** -149


@law("losses", "ce_grad_rows_sum_zero", "within (ceil(log2 c) + 4) 2^-24 (1 + 2^-10) / n + c 2^-149")
@given(logits())
@example((np.array([[0.0, 0.0, 0.0]], F32), np.array([0])))
@example((np.array([[3e38, -3e38, 1e-45, -0.0]], F32), np.array([1])))
def test_cross_entropy_gradient_rows_sum_to_zero(zl: Any) -> None:
    """Cross-entropy's gradient is (softmax(z) - onehot) / n (main.bend lines 2748-2749, ce_g line 2840), so each
    row sums to zero: for finite logits and a label < c, the exact sum of the float32 row is within the bound derived
    in ce_row_bound, (ceil(log2 c) + 4) 2^-24 (1 + 2^-10) / n + c 2^-149 (the tree sum of the exponentials, line
    2759, one rounding per division and subtraction, underflow to subnormals)."""
    z, labels = zl
    n, c = z.shape
    with np.errstate(all="ignore"):
        dz = CrossEntropy(n, c)(z, labels).dy
    bound = ce_row_bound(n, c)
    for i in range(n):
        s = math.fsum(float(v) for v in dz[i])
        assert abs(s) <= bound, (i, s, bound)


@st.composite
def bad_labels(draw: Any) -> Any:
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 9))
    z = draw(arrays((n, c), elems(1e3)))
    lab = [draw(st.one_of(st.integers(0, c - 1), st.integers(c, c + 3), st.sampled_from([2**31, 2**32 - 1])))
           for _ in range(n)]
    return z, np.array(lab, np.int64)


def row_probs(z_row: Any) -> Any:
    """The seed's softmax of one row as the loss computes it, read from one-row losses with VALID labels: with n = 1,
    dz = p - [j == y] exactly, so p_j = dz_j for j != y (labels 0 and c - 1 cover every j; c = 1 gives p = 1, the
    one exponential divided by itself, or NaN where z is not finite)."""
    c = z_row.size
    ce = CrossEntropy(1, c)
    with np.errstate(all="ignore"):
        a = ce(z_row.reshape(1, c), np.array([0])).dy[0]
        if c == 1:  # exp(z - z) / exp(z - z): 1, or NaN for an infinite or NaN z
            return np.array([1.0 if np.isfinite(z_row[0]) else np.nan], F32)
        b = ce(z_row.reshape(1, c), np.array([c - 1])).dy[0]
    p = a.copy()
    p[0] = b[0]
    return p


@law("losses", "label_past_last_class", "bit for bit")
@given(bad_labels())
@example((np.array([[1.0, 2.0]], F32), np.array([2])))
@example((np.array([[np.nan]], F32), np.array([2**32 - 1])))
def test_a_label_past_the_last_class(zl: Any) -> None:
    """A label past the last class gets the seed's loss and gradient (DESIGN.md; ce_pick / ce_bad, main.bend lines
    2859-2870; nll_one, line 2931). CrossEntropy: the row adds -log(max(0.0, 1e-12)) (= -logf(1e-12)) to the loss
    whatever its logits (a NaN row included), and its gradient is softmax / n with no class hit; the loss is
    0.0 - term_0 - term_1 ... in row order, divided by n (ce_rows, ce_fin), each valid row's term being exactly minus
    its one-row loss. NLL: the row picks 0.0 (acc + 0.0) and its gradient row stays +0.0; valid rows get -1/n at the
    label. Labels as large as 2^32 - 1 included (a larger one is refused: DESIGN.md). Bit for bit (NaN matched as
    NaN)."""
    z, lab = zl
    n, c = z.shape
    nf = F32(n)
    with np.errstate(all="ignore"):
        out = CrossEntropy(n, c)(z, lab)
        acc = F32(0.0)
        for i in range(n):
            if lab[i] >= c:
                term = libm.logf(F32(1e-12))
                p = row_probs(z[i])
                assert same_or_nan(out.dy[i], p / nf)
            else:
                term = F32(-CrossEntropy(1, c)(z[i:i + 1], lab[i:i + 1]).loss)
            acc = F32(acc - term)
        assert same_or_nan(out.loss, F32(acc / nf))
        if n == 1 and lab[0] >= c:
            assert out.loss == F32(-libm.logf(F32(1e-12)))
        lo = NLL(n, c)(z, lab)
        acc = F32(0.0)
        g = np.zeros((n, c), F32)
        for i in range(n):
            if lab[i] < c:
                acc = F32(acc + z[i, lab[i]])
                g[i, lab[i]] = F32(-F32(F32(1.0) / nf))
            else:
                acc = F32(acc + F32(0.0))
        assert same_or_nan(lo.loss, F32(-F32(acc / nf)))
        assert np.array_equal(lo.dy.view(np.uint32), g.view(np.uint32))


@st.composite
def exact_sums(draw: Any) -> Any:
    """m values whose every partial sum is representable: integers |k| <= 2^16, m <= 64 (partial sums < 2^23),
    scaled by one power of two 2^e (dyadic values), -0 among them."""
    m = draw(st.integers(0, 64))
    e = draw(st.integers(-100, 100))
    ks = draw(st.lists(st.one_of(st.integers(-2**16, 2**16), st.just(0)), min_size=m, max_size=m))
    negz = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    xs = [float(F32(k * 2.0 ** e)) if not (k == 0 and nz) else -0.0 for k, nz in zip(ks, negz)]
    return np.array(xs, F32), draw(st.randoms(use_true_random=False))


@law("losses", "tree_sum_exact", "bit for bit")
@given(exact_sums())
@example((np.array([-0.0, -0.0, -0.0], F32), None))
@example((np.array([], F32), None))
def test_tree_sum_is_exact_where_the_sum_is_representable(xr: Any) -> None:
    """tree_sum (main.bend lines 2759-2809) is exact where the exact sum is representable: small integers and dyadic
    values (k 2^e, |k| <= 2^16, at most 64 of them, so every partial sum fits in 24 bits) sum to exactly their sum, in
    any order; zero's sign is IEEE's: -0 only when every value is -0, and no value gives +0."""
    xs, rnd = xr
    exact = sum((Fraction(float(v)) for v in xs), Fraction(0))
    got = tree_sum(xs)
    assert Fraction(float(got)) == exact
    if exact == 0:
        allneg = xs.size > 0 and bool(np.all(xs.view(np.uint32) == 0x80000000))
        assert bool(np.signbit(got)) == allneg
    if rnd is not None:
        perm = xs.copy()
        rnd.shuffle(perm)
        assert Fraction(float(tree_sum(perm))) == exact


@law("losses", "tree_sum_order_only", "bit for bit")
@given(st.lists(st.one_of(bits32(), elems(3.4e38).map(F32)), min_size=0, max_size=70), st.integers(1, 4),
       st.integers(0, 5))
def test_tree_sum_depends_on_nothing_but_the_values_order(xs: list[np.float32], stride: int, pad: int) -> None:
    """tree_sum depends on nothing but the values in their order (main.bend lines 2759-2809): the same values in the
    same order give the same bits whether they come as a 1-D array, a 2-D one of any shape, a strided view with
    garbage between them, or the first m numbers of a scratch array followed by NaNs; and the result is the seed's
    pairwise passes written out plainly from its words (tree_sum_plain; bit for bit; NaN only has to meet NaN there, as numpy and numba may
    pass different NaN payloads on)."""
    a = np.array(xs, F32)
    ref = tree_sum(a)
    m = a.size
    with np.errstate(all="ignore"):
        assert same_or_nan(tree_sum_plain(a), ref)
    big = np.full(m * stride + pad, F32(np.nan), F32)
    big[:m * stride:stride] = a
    assert same_or_nan(ref, tree_sum(big[:m * stride:stride])) and \
        np.array_equal(np.array([tree_sum(big[:m * stride:stride])]).view(np.uint32), np.array([ref]).view(np.uint32))
    for r in range(1, m + 1):
        if m % r == 0:
            assert np.array_equal(np.array([tree_sum(a.reshape(r, m // r))]).view(np.uint32),
                                  np.array([ref]).view(np.uint32))
    scratch = np.concatenate([a, np.full(pad, F32(np.nan), F32)])
    got = tree_sum_inplace(scratch, m)
    assert np.array_equal(np.array([got], F32).view(np.uint32), np.array([ref]).view(np.uint32))


@st.composite
def mse_problems(draw: Any) -> Any:
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 9))  # a mean over no numbers is refused (DESIGN.md)
    el = st.one_of(elems(1e3, allow_nan=True, allow_infinity=True), elems(1e30))
    return draw(arrays((n, c), el)), draw(arrays((n, c), el))


@law("losses", "mse_grad", "bit for bit; within 3 2^-24 relative + 2^-149 of 2(y - t)/(nc)")
@given(mse_problems())
@example((np.array([[1.0, 2.0, 3.0]], F32), np.array([[0.5, 2.0, -1e30]], F32)))
def test_mse_gradient(yt: Any) -> None:
    """MSE's gradient is 2 (y - t) / (n c) (main.bend lines 2916-2921) as the seed rounds it: (y - t) * kk with
    kk = 2 / float32(n c) rounded once (mse_l, line 2904), bit for bit (NaN matched as NaN); so, where y - t and the
    result neither overflow nor are NaN, within 3 2^-24 (1 + 2^-20) relative (three roundings) plus 2^-149
    (underflow) of the exact 2 (y - t) / (n c). The loss is tree_sum(d d) / float32(n c), bit for bit."""
    y, t = yt
    n, c = y.shape
    with np.errstate(all="ignore"):
        out = MSE(n, c)(y, t)
        d = y - t
        kk = F32(F32(2.0) / F32(n * c)) if n * c else F32(np.inf)
        assert same_or_nan(out.dy, d * kk)
        if n * c:
            assert same_or_nan(out.loss, F32(tree_sum(d * d) / F32(n * c)))
    for yv, tv, g in zip(y.reshape(-1), t.reshape(-1), out.dy.reshape(-1)):
        if not (np.isfinite(yv) and np.isfinite(tv) and np.isfinite(g)):
            continue
        exact = 2 * (Fraction(float(yv)) - Fraction(float(tv))) / (n * c)
        err = abs(Fraction(float(g)) - exact)
        assert err <= Fraction(3 * U * (1 + 2.0 ** -20)) * abs(exact) + Fraction(2.0 ** -149)
