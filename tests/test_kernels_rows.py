"""The row-wise kernels and layers (main.bend lines 1290-1866): Softmax, LogSoftmax, RMSNorm, LayerNorm. Every numba
kernel equals its plain twin bit for bit (random inputs at several scales and shapes, specials, one thread and two),
the seed's max rule, and the layers' bookkeeping: the parameter gradients added into g in place after summing the
rows from zeros, LayerNorm's step / dump / load / store."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from bendtorch.impl.bits import f32_bits, same_bits
from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels import rows as K
from bendtorch.impl.layers.rows import LN, LayerNorm, LogSoftmax, RMSNorm, Softmax
from bendtorch.impl.optim import CAdamW, CSGD, opt_at, state_new
from bendtorch.impl.optstate import TwoMom
from bendtorch.impl.specs import ShapeError

from tests.bitcheck import same_bits_or_nan  # noqa: E402

F32 = np.float32
Arr = npt.NDArray[np.float32]
# (n, c): one row, one column, a column count over two blocks of K.CB, a tall matrix
SHAPES = [(1, 1), (1, 7), (5, 1), (6, 150), (40, 33)]
EPS = F32(1e-5)




def mats(n: int, c: int, seed: int, scale: float = 1.0) -> tuple[Arr, Arr, Arr, Arr, Arr]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * scale + rng.standard_normal((n, 1)) * scale).astype(F32)
    dy = rng.standard_normal((n, c)).astype(F32)
    g = rng.standard_normal((1, c)).astype(F32)
    b = rng.standard_normal((1, c)).astype(F32)
    acc = rng.standard_normal((1, c)).astype(F32)
    return x, dy, g, b, acc


def special_rows(c: int) -> Arr:
    """Rows with -0, +0, subnormals, huge numbers, infinities and NaN, next to ordinary ones."""
    rng = np.random.default_rng(9)
    sp = [0.0, -0.0, 1e-45, -1e-40, 3e38, -3e38, 1e20, np.inf, -np.inf, np.nan]
    rows = [rng.standard_normal(c).astype(F32) for _ in sp]
    for i, v in enumerate(sp):
        rows[i][i % c] = v
    rows.append(np.zeros(c, F32))
    rows.append(np.full(c, -0.0, F32))
    rows.append(np.full(c, 1e-45, F32))
    return np.stack(rows).astype(F32)


def check_all(x: Arr, dy: Arr, g: Arr, b: Arr, acc: Arr, same: Callable[[Arr, Arr], bool]) -> None:
    n, c = x.shape
    y = np.empty_like(x)
    dx = np.empty_like(x)
    K.softmax_fwd_into(x, y)
    assert same(y, K.softmax_fwd_plain(x)), "softmax fwd"
    K.softmax_bwd_into(y, dy, dx)
    assert same(dx, K.softmax_bwd_plain(y, dy)), "softmax bwd"
    K.logsoftmax_fwd_into(x, y)
    assert same(y, K.logsoftmax_fwd_plain(x)), "log_softmax fwd"
    K.logsoftmax_bwd_into(y, dy, dx)
    assert same(dx, K.logsoftmax_bwd_plain(y, dy)), "log_softmax bwd"
    K.rms_fwd_into(x, g, EPS, y)
    assert same(y, K.rms_fwd_plain(x, g, EPS)), "rms fwd"
    ga = acc.copy()
    K.rms_bwd_into(x, g, dy, EPS, dx, ga)
    pdx, pga = K.rms_bwd_plain(x, g, dy, EPS, acc)
    assert same(dx, pdx) and same(ga, pga), "rms bwd"
    K.ln_fwd_into(x, g, b, EPS, y)
    assert same(y, K.ln_fwd_plain(x, g, b, EPS)), "layer norm fwd"
    gg, gb = acc.copy(), b.copy()
    K.ln_bwd_into(x, g, dy, EPS, dx, gg, gb)
    pdx, pgg, pgb = K.ln_bwd_plain(x, g, dy, EPS, acc, b)
    assert same(dx, pdx) and same(gg, pgg) and same(gb, pgb), "layer norm bwd"


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{n}x{c}" for n, c in SHAPES])
@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_row_kernels_equal_plain(shape: tuple[int, int], scale: float, threads: int) -> None:
    x, dy, g, b, acc = mats(*shape, seed=shape[0] * 1000 + shape[1], scale=scale)
    check_all(x, dy, g, b, acc, same_bits)


@pytest.mark.parametrize("c", [1, 3, 70])
def test_row_kernels_specials(c: int, threads: int) -> None:
    x = special_rows(c)
    _, dy, g, b, acc = mats(x.shape[0], c, seed=c)
    dy[3, 0] = np.nan
    dy[4, 0] = np.inf
    check_all(x, dy, g, b, acc, same_bits_or_nan)


def test_zero_eps_divides_by_zero_as_ieee() -> None:
    # eps = 0 on a zero row: r = 1 / sqrt(0) = inf, y = g * (0 * inf) = NaN, as the seed's F32 (no exception)
    x = np.zeros((2, 3), F32)
    x[1] = [1.0, 2.0, 3.0]
    g = np.ones((1, 3), F32)
    y = np.empty_like(x)
    K.rms_fwd_into(x, g, F32(0.0), y)
    assert np.all(np.isnan(y[0])) and same_bits(y, K.rms_fwd_plain(x, g, F32(0.0)))
    K.ln_fwd_into(x, g, np.zeros((1, 3), F32), F32(0.0), y)
    assert np.all(np.isnan(y[0])) and same_bits(y, K.ln_fwd_plain(x, g, np.zeros((1, 3), F32), F32(0.0)))


def test_row_max_rule() -> None:
    # Bend's F32.max(a, b) = (b if a < b else a), from the first: a later NaN is passed over, a first NaN stays,
    # and of +0 and -0 the earlier stays
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, 5.0, 1.0, 0.0], [-0.0, 0.0, -1.0, -2.0],
                  [0.0, -0.0, -1.0, -2.0]], dtype=F32)
    assert K.row_max(x, 0) == F32(3.0)
    assert np.isnan(K.row_max(x, 1))
    assert f32_bits(K.row_max(x, 2)) == 0x80000000 and f32_bits(K.row_max(x, 3)) == 0
    # a NaN after the max only spoils its own exponential in log_softmax's output... and the sum, hence the row
    y = np.empty_like(x)
    K.logsoftmax_fwd_into(x, y)
    assert np.all(np.isnan(y[0])) and np.all(np.isnan(y[1]))


def test_softmax_hand_values() -> None:
    x = np.array([[0.0, np.log(3.0), 0.0]], dtype=F32)
    y = np.empty_like(x)
    K.softmax_fwd_into(x, y)
    m = x[0, 1]
    e = [libm.expf(F32(v - m)) for v in x[0]]
    s = F32(F32(F32(F32(0.0) + e[0]) + e[1]) + e[2])    # pexp: left to right from +0.0
    assert [f32_bits(v) for v in y[0]] == [f32_bits(F32(v / s)) for v in e]


def test_rmsnorm_layer_accumulates_into_g() -> None:
    n, d = 7, 90
    x, dy, gain, _, acc = mats(n, d, seed=5)
    lay = RMSNorm(n, d)
    x0 = x.copy()
    r = lay.fwd(gain, x)
    assert same_bits(r.y, K.rms_fwd_plain(x, gain, EPS)) and same_bits(r.s, x) and r.s is not x
    g = acc.copy()
    bw = lay.bwd(gain, r.s, dy, g)
    pdx, pg = K.rms_bwd_plain(x, gain, dy, EPS, acc)
    assert bw.g is g and same_bits(g, pg) and same_bits(bw.dx, pdx)     # added into g in place
    # from a zero gradient, g is the column sums, row after row from +0.0
    g0 = lay.zeros()
    lay.bwd(gain, r.s, dy, g0)
    xh = x * K._rms_inv_plain(x, EPS)[:, None]
    col = np.zeros((1, d), F32)
    for i in range(n):
        col = col + dy[i:i + 1] * xh[i:i + 1]
    assert same_bits(g0, col)
    assert same_bits(x, x0) and lay.count() == d
    with pytest.raises(ValueError):
        RMSNorm(3, 0)


def test_layernorm_layer() -> None:
    n, d = 5, 20
    x, dy, gw, gb, acc = mats(n, d, seed=6)
    lay = LayerNorm(n, d, eps=1e-5)
    p = LN(gw.copy(), gb.copy())
    r = lay.fwd(p, x)
    assert same_bits(r.y, K.ln_fwd_plain(x, gw, gb, EPS))
    g = LN(acc.copy(), acc.copy() * F32(2))
    g_in = LN(g.g.copy(), g.b.copy())
    bw = lay.bwd(p, r.s, dy, g)
    pdx, pgg, pgb = K.ln_bwd_plain(x, gw, dy, EPS, g_in.g, g_in.b)
    assert bw.g.g is g.g and bw.g.b is g.b
    assert same_bits(bw.dx, pdx) and same_bits(g.g, pgg) and same_bits(g.b, pgb)
    # SGD step on each of g and b: w + (-lr) * grad, the gradient zeroed, an LN back
    cfg = CSGD(F32(0.1))
    w0 = LN(p.g.copy(), p.b.copy())
    st = lay.step(opt_at(cfg, F32(0), F32(0)), p, g, state_new(cfg, lay.zeros))
    assert isinstance(st.p, LN) and isinstance(st.g, LN)
    assert same_bits(st.p.g, w0.g + F32(-0.1) * pgg) and same_bits(st.p.b, w0.b + F32(-0.1) * pgb)
    assert not np.any(st.g.g) and not np.any(st.g.b)
    # AdamW: the state's buffers stay LN records after the split and the join
    acfg = CAdamW(F32(1e-3), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001))
    ast = state_new(acfg, lay.zeros)
    s2 = lay.step(opt_at(acfg, F32(0.1), F32(0.001)), st.p, lay.zeros(), ast)
    assert isinstance(s2.st, TwoMom) and isinstance(s2.st.m, LN) and isinstance(s2.st.v, LN)
    # dump / store / load: g's numbers then b's
    flat = lay.dump(s2.p)
    assert same_bits(flat, np.concatenate([s2.p.g.ravel(), s2.p.b.ravel()])) and lay.count() == 2 * d
    xs = np.zeros(2 * d + 3, F32)
    assert lay.store(s2.p, xs, 3) == 2 * d + 3
    ld = lay.load(lay.zeros(), xs, 3)
    assert ld.off == 2 * d + 3 and same_bits(ld.p.g, s2.p.g) and same_bits(ld.p.b, s2.p.b)
    with pytest.raises(ShapeError):
        lay.load(lay.zeros(), xs, 5)


def test_softmax_layers() -> None:
    n, c = 4, 9
    x, dy, *_ = mats(n, c, seed=7)
    x0 = x.copy()
    for lay, fwd_p, bwd_p in [(Softmax(n, c), K.softmax_fwd_plain, K.softmax_bwd_plain),
                              (LogSoftmax(n, c), K.logsoftmax_fwd_plain, K.logsoftmax_bwd_plain)]:
        r = lay.fwd(None, x)
        assert same_bits(r.y, fwd_p(x)) and same_bits(r.s, r.y) and r.s is not r.y
        b = lay.bwd(None, r.s, dy, None)
        assert same_bits(b.dx, bwd_p(r.y, dy)) and b.g is None
        assert lay.count() == 0
    assert same_bits(x, x0)
