"""The losses (main.bend lines 2745-2956): tree_sum's exact pairing on hand-checked cases, every numba kernel equal to
its plain twin bit for bit (one thread and two), the seed's rules (a label past the last class, x[y] read before the
row is overwritten, MSE's 2 / (n*c) rounded once), and the labels' validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from bendtorch.impl.bits import f32_bits, same_bits
from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels import losses as K
from bendtorch.impl.kernels.rows import softmax_fwd_plain
from bendtorch.impl.losses import MSE, NLL, CrossEntropy
from bendtorch.impl.specs import ShapeError

F32 = np.float32
Arr = npt.NDArray[np.float32]



def f32s(*xs: float | np.floating[Any]) -> Arr:
    return np.array(xs, dtype=F32)


# ---------------------------------------------------------------------------------------------------------------
# tree_sum
# ---------------------------------------------------------------------------------------------------------------

def test_tree_sum_hand_cases() -> None:
    u = 2.0 ** -24
    # m = 5: ((x0 + x1) + (x2 + x3)) + x4. 1 + u ties to 1; u + u = 2u; 1 + 2u exact; (1 + 2u) + u ties to even,
    # 1 + 4u. Left to right would give 1 (each + u ties back to 1).
    a = f32s(1.0, u, u, u, u)
    for f in (K.tree_sum, K.tree_sum_plain):
        assert f(a) == F32(1.0 + 4 * u)
    assert F32(F32(F32(F32(F32(1.0) + F32(u)) + F32(u)) + F32(u)) + F32(u)) == F32(1.0)
    # m = 7: [x0+x1, x2+x3, x4+x5, x6] -> [(01)+(23), (45)+6] -> sum. 1 + 2^24 ties to 2^24, 1 - 2^24 exact:
    # 2^24 - 16777215 = 1, 2 + 1 = 3, 1 + 3 = 4; left to right gives 3.
    b = f32s(1.0, 2.0 ** 24, 1.0, -(2.0 ** 24), 1.0, 1.0, 1.0)
    for f in (K.tree_sum, K.tree_sum_plain):
        assert f(b) == F32(4.0)
    # m = 6: the odd carry happens in the second pass ([01, 23, 45] -> [01+23, 45] -> sum):
    # 1 + 2^24 ties to 2^24, 1 - 2^24 exact, 1 + 1 = 2: (2^24 - 16777215) + 2 = 3; left to right gives 2.
    c = f32s(1.0, 2.0 ** 24, 1.0, -(2.0 ** 24), 1.0, 1.0)
    for f in (K.tree_sum, K.tree_sum_plain):
        assert f(c) == F32(3.0)
    # m <= 1 gives a[0] (its bits: -0 stays -0); m = 0 gives +0.0
    for f in (K.tree_sum, K.tree_sum_plain):
        assert f32_bits(f(f32s(-0.0))) == 0x80000000
        assert f32_bits(f(f32s())) == 0
        assert f(f32s(3.0, 4.0)) == F32(7.0)


def test_tree_sum_equals_plain() -> None:
    rng = np.random.default_rng(0)
    for m in list(range(0, 40)) + [255, 256, 257, 1000]:
        a = (rng.standard_normal(m) * np.exp(rng.uniform(-10, 10, m))).astype(F32)
        assert f32_bits(K.tree_sum(a)) == f32_bits(K.tree_sum_plain(a)), m


# ---------------------------------------------------------------------------------------------------------------
# cross-entropy, MSE, NLL: kernels against plain twins
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,c", [(1, 1), (3, 2), (17, 13), (6, 1000)])
def test_losses_equal_plain(n: int, c: int, threads: int) -> None:
    rng = np.random.default_rng(n * 100 + c)
    z = (rng.standard_normal((n, c)) * 5).astype(F32)
    lab = rng.integers(0, c + 2, n).astype(np.int64)           # some past the last class
    lab_k = np.minimum(lab, c)
    dz = np.empty_like(z)
    loss = F32(K.ce_into(z, lab_k, dz))
    ploss, pdz = K.ce_plain(z, lab_k)
    assert f32_bits(loss) == f32_bits(ploss) and same_bits(dz, pdz)
    ce = CrossEntropy(n, c)(z, lab)
    assert f32_bits(ce.loss) == f32_bits(ploss) and same_bits(ce.dy, pdz)

    g = np.zeros_like(z)
    loss = F32(K.nll_into(z, lab_k, g))
    ploss, pg = K.nll_plain(z, lab_k)
    assert f32_bits(loss) == f32_bits(ploss) and same_bits(g, pg)
    nll = NLL(n, c)(z, lab)
    assert f32_bits(nll.loss) == f32_bits(ploss) and same_bits(nll.dy, pg)

    t = rng.standard_normal((n, c)).astype(F32)
    ms = MSE(n, c)(z, t)
    ploss, pdy = K.mse_plain(z, t)
    assert f32_bits(ms.loss) == f32_bits(ploss) and same_bits(ms.dy, pdy)


def test_losses_specials(threads: int) -> None:
    z = f32s(0.0, -0.0, 1e-45, 3e38, -3e38, np.inf, -np.inf, np.nan, 1.0, 2.0).reshape(5, 2)
    lab = np.array([0, 1, 1, 0, 1], dtype=np.int64)
    dz = np.empty_like(z)
    loss = F32(K.ce_into(z, lab, dz))
    ploss, pdz = K.ce_plain(z, lab)
    assert np.isnan(loss) and np.isnan(ploss)
    # rows without NaN or inf-inf agree bit for bit; the others are NaN in both
    assert same_bits(dz[:2], pdz[:2]) and np.array_equal(np.isnan(dz), np.isnan(pdz))
    t = np.zeros_like(z)
    ms = MSE(5, 2)(z, t)
    ploss2, pdy = K.mse_plain(z, t)
    assert f32_bits(ms.loss) == f32_bits(ploss2) and same_bits(ms.dy, pdy)


# ---------------------------------------------------------------------------------------------------------------
# the seed's rules
# ---------------------------------------------------------------------------------------------------------------

def test_cross_entropy_hand_values() -> None:
    # one row of zeros, label 1: m = 0, e = 1, 1, 1, s = tree_sum = (1 + 1) + 1 = 3;
    # loss = 0 - ((z[1] - 0) - log(3)) = log(3), divided by nf = 1; gradient (1/3 - [j == 1]) / 1
    out = CrossEntropy(1, 3)(np.zeros((1, 3), F32), np.array([1]))
    assert out.loss == F32(F32(0.0) - F32(F32(0.0) - libm.logf(F32(3.0))))
    third = F32(F32(1.0) / F32(3.0))
    assert same_bits(out.dy, f32s(third, F32(third - F32(1.0)), third).reshape(1, 3))
    # x[y] is read before the row is overwritten by the probabilities: a big logit at the label
    z = f32s(10.0, 0.0, -3.0).reshape(1, 3)
    out = CrossEntropy(1, 3)(z, np.array([0]))
    e = [libm.expf(F32(v - F32(10.0))) for v in z[0]]
    s = F32(F32(e[0] + e[1]) + e[2])
    assert out.loss == F32(F32(0.0) - F32(F32(F32(10.0) - F32(10.0)) - libm.logf(s)))


def test_cross_entropy_label_past_last_class() -> None:
    # the row picks probability 0 clamped at 1e-12: loss - log(max(0.0, 1e-12)); gradient p / nf, no class hit
    z = f32s(1.0, 2.0, 3.0, 0.5, 0.5, 0.5).reshape(2, 3)
    out = CrossEntropy(2, 3)(z, np.array([3, 2**32 - 1]))
    bad = libm.logf(F32(1e-12))
    assert out.loss == F32(F32(F32(F32(0.0) - bad) - bad) / F32(2.0))
    assert abs(float(out.loss) - 27.631021) < 1e-5
    # the rows' probabilities (tree_sum of 3 numbers = (e0 + e1) + e2, the same as left to right), over nf = 2
    sm = softmax_fwd_plain(z)
    assert same_bits(out.dy, sm / F32(2.0))


def test_labels_past_u32_are_refused() -> None:
    # past 2^32 the seed disagrees with itself: its loss takes the past-the-end branch for 2^32 but its gradient hits
    # class U32.from_nat(2^32) = 0 (main.bend lines 2840-2880); impl refuses such a label (docs/DESIGN.md)
    z = f32s(1.0, 2.0, 3.0, 0.5, 0.5, 0.5).reshape(2, 3)
    for loss in (CrossEntropy(2, 3), NLL(2, 3)):
        with pytest.raises(ValueError, match=r"label 4294967296 at position 1 is >= 2\^32"):
            loss(z, np.array([0, 2**32], dtype=np.uint64))


def test_mse_rules() -> None:
    n, c = 1, 3
    y = f32s(1.0, 2.0, 4.0).reshape(1, 3)
    t = f32s(0.5, -0.5, -1.0).reshape(1, 3)        # d = 0.5, 2.5, 5: 2.5 and 5 round differently
    out = MSE(n, c)(y, t)
    kk = F32(F32(2.0) / F32(3.0))                   # 2 / float32(n*c) rounded once, then d * kk
    d = y - t
    assert same_bits(out.dy, d * kk)
    assert out.loss == F32(K.tree_sum_plain(d * d) / F32(3.0))
    assert not same_bits(out.dy, (d * F32(2.0)) / F32(3.0))   # the other rounding differs here
    with pytest.raises(ShapeError):
        MSE(1, 3)(y, np.zeros((3, 1), F32))


def test_nll_rules() -> None:
    lp = f32s(-1.0, -2.0, -0.5, -3.0).reshape(2, 2)
    out = NLL(2, 2)(lp, np.array([1, 7]))
    # acc = (0 + lp[0, 1]) + 0.0; loss = -(acc / 2); the second row's gradient stays zero
    assert out.loss == F32(1.0)
    assert same_bits(out.dy, f32s(0.0, -0.5, 0.0, 0.0).reshape(2, 2))


@pytest.mark.parametrize("make", [CrossEntropy, NLL])
def test_label_validation(make: object) -> None:
    loss = make(3, 4)  # type: ignore[operator]
    y = np.zeros((3, 4), F32)
    y0 = y.copy()
    with pytest.raises(ValueError, match=r"position 2"):
        loss(y, np.array([0, 1, -1]))
    with pytest.raises(ValueError, match=loss.name.replace("(", r"\(").replace(")", r"\)")):
        loss(y, np.array([0, 1]))
    with pytest.raises(ValueError):
        loss(y, np.array([[0, 1, 2]]))
    with pytest.raises(ValueError):
        loss(y, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError):
        loss(y, np.array([True, False, True]))
    with pytest.raises(ShapeError):
        loss(np.zeros((4, 3), F32), np.array([0, 1, 2]))
    out = loss(y, [0, 1, 3])                          # a list of ints is fine; y is never written
    assert out.dy.shape == (3, 4) and same_bits(y, y0)
    assert same_bits(loss(y, np.array([0, 1, 3], dtype=np.uint8)).dy, out.dy)
