"""impl.kernels.attention and impl.kernels.rope: the compiled kernels against their plain twins, bit for bit; the
parallel kernels against the sequential ones (the seed's laws attn_par_fwd / attn_par_bwd: running the sequences in
parallel gives the bits of running them one after another, main.bend line 2697), under 1 and 2 threads; the causal
law (no gradient reaches a key or value after the query's position) and the layers' shape checks."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from bendtorch.impl.kernels import attention as A
from bendtorch.impl.kernels import rope as R
from bendtorch.impl.layers.attention import Attention
from bendtorch.impl.layers.rope import RoPE
from bendtorch.impl.specs import ShapeError

F32 = np.float32

# (b, t, kv, g, hd): b = 1, 3 (not a power of two), 5; g = 1 (plain multi-head), 2, 3; hd odd and even
CASES = [(1, 1, 1, 1, 1), (3, 5, 2, 2, 4), (1, 7, 1, 3, 3), (5, 6, 3, 1, 2), (2, 9, 2, 3, 5)]


def _inputs(b: int, t: int, kv: int, g: int, hd: int, seed: int, scale: float = 1.0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    n, w, kvw = b * t, kv * g * hd, kv * hd
    q = (rng.standard_normal((n, w)) * scale).astype(F32)
    k = (rng.standard_normal((n, kvw)) * scale).astype(F32)
    v = rng.standard_normal((n, kvw)).astype(F32)
    dy = rng.standard_normal((n, w)).astype(F32)
    return q, k, v, dy, F32(1.0 / np.sqrt(hd))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))


@pytest.mark.parametrize("case", CASES)
def test_fast_equals_plain(case: tuple[int, int, int, int, int]) -> None:
    b, t, kv, g, hd = case
    for seed, scale in [(0, 1.0), (1, 4.0)]:  # scale 4: peaked softmaxes, exps far below 1
        q, k, v, dy, sc = _inputs(b, t, kv, g, hd, seed, scale)
        for par in (False, True):
            assert _same(A.attn_fwd(q, k, v, b, t, kv, g, hd, sc, par), A.attn_fwd_plain(q, k, v, b, t, kv, g, hd, sc))
            fast = A.attn_bwd(q, k, v, dy, b, t, kv, g, hd, sc, par)
            plain = A.attn_bwd_plain(q, k, v, dy, b, t, kv, g, hd, sc)
            for x, y in zip(fast, plain):
                assert _same(x, y)


def test_parallel_equals_sequential_any_thread_count() -> None:
    b, t, kv, g, hd = 7, 12, 2, 2, 6  # b = 7: not a power of two, uneven split over threads
    q, k, v, dy, sc = _inputs(b, t, kv, g, hd, 3)
    ref_o = A.attn_fwd(q, k, v, b, t, kv, g, hd, sc, par=False)
    ref_d = A.attn_bwd(q, k, v, dy, b, t, kv, g, hd, sc, par=False)
    old = numba.get_num_threads()
    try:
        for nt in sorted({1, min(2, int(getattr(numba.config, "NUMBA_NUM_THREADS")))}):
            numba.set_num_threads(nt)
            assert _same(A.attn_fwd(q, k, v, b, t, kv, g, hd, sc, par=True), ref_o)
            for x, y in zip(A.attn_bwd(q, k, v, dy, b, t, kv, g, hd, sc, par=True), ref_d):
                assert _same(x, y)
    finally:
        numba.set_num_threads(old)


def test_sequences_are_independent() -> None:
    # each sequence alone gives the bits it has inside the batch (what the parallel law rests on)
    b, t, kv, g, hd = 3, 8, 1, 2, 4
    q, k, v, dy, sc = _inputs(b, t, kv, g, hd, 4)
    o = A.attn_fwd(q, k, v, b, t, kv, g, hd, sc)
    d = A.attn_bwd(q, k, v, dy, b, t, kv, g, hd, sc)
    for bi in range(b):
        rs = slice(bi * t, bi * t + t)
        assert _same(A.attn_fwd(q[rs], k[rs], v[rs], 1, t, kv, g, hd, sc), o[rs])
        for x, y in zip(A.attn_bwd(q[rs], k[rs], v[rs], dy[rs], 1, t, kv, g, hd, sc), d):
            assert _same(x, y[rs])


def test_causal() -> None:
    # changing the keys and values at position p changes no output before p, and dy at position p reaches no key
    # or value after p (the laws causal, causal_keys, causal_grad)
    b, t, kv, g, hd = 1, 6, 1, 2, 3
    q, k, v, dy, sc = _inputs(b, t, kv, g, hd, 5)
    o = A.attn_fwd(q, k, v, b, t, kv, g, hd, sc)
    k2, v2 = k.copy(), v.copy()
    k2[4] += F32(3.0)
    v2[4] -= F32(2.0)
    o2 = A.attn_fwd(q, k2, v2, b, t, kv, g, hd, sc)
    assert _same(o[:4], o2[:4]) and not np.array_equal(o[4:], o2[4:])
    d1 = np.zeros_like(dy)
    d1[2] = dy[2]
    _, dk, dv = A.attn_bwd(q, k, v, d1, b, t, kv, g, hd, sc)
    assert not np.any(dk[3:]) and not np.any(dv[3:]) and np.any(dv[:3])


def test_attn_tree_rule() -> None:
    # the seed's rule (main.bend line 2699): b >= 8, or b >= 2 with t*w >= 4096
    assert not A.attn_tree(1, 128, 576) and A.attn_tree(2, 128, 576) and A.attn_tree(8, 16, 32)
    assert not A.attn_tree(4, 16, 32) and A.attn_tree(2, 64, 64) and not A.attn_tree(2, 63, 64)
    assert A.attn_parallel(1, 128, 576) and not A.attn_parallel(4, 16, 32)


def test_nan_propagates_like_the_seed() -> None:
    # a NaN in V at position 5 reaches every output row through P·V's full sum (0 * NaN, pmul sums all t positions)
    b, t, kv, g, hd = 1, 6, 1, 1, 2
    q, k, v, dy, sc = _inputs(b, t, kv, g, hd, 6)
    v[5, 0] = np.nan
    o = A.attn_fwd(q, k, v, b, t, kv, g, hd, sc)
    assert np.all(np.isnan(o[:, 0])) and not np.any(np.isnan(o[:, 1]))
    assert np.array_equal(o, A.attn_fwd_plain(q, k, v, b, t, kv, g, hd, sc), equal_nan=True)


@pytest.mark.parametrize("n,t,h,half", [(6, 3, 2, 4), (10, 5, 1, 1), (8, 8, 3, 3)])
def test_rope_fast_equals_plain(n: int, t: int, h: int, half: int) -> None:
    rng = np.random.default_rng(n + t)
    x = rng.standard_normal((n, h * 2 * half)).astype(F32)
    cs, sn = R.rope_table(t, half, F32(10000.0))
    for fwd in (True, False):
        assert _same(R.rope_apply(x, cs, sn, t, h, half, fwd), R.rope_apply_plain(x, cs, sn, t, h, half, fwd))


def test_rope_table_position_zero_and_round_trip() -> None:
    cs, sn = R.rope_table(4, 3, F32(100000.0))
    assert np.all(cs[0] == 1) and np.all(sn[0] == 0)  # angle 0 * inv = 0 exactly
    lay = RoPE(8, 12, 4, 2, 3, 100000.0)
    x = np.random.default_rng(1).standard_normal((8, 12)).astype(F32)
    y = lay.fwd(None, x).y
    back = lay.bwd(None, None, y, None).dx
    assert np.max(np.abs(back - x)) < 1e-5  # rotation then the opposite rotation: a few float32 roundings
    assert not np.array_equal(y, x)


def test_shape_errors() -> None:
    Attention(10, 8, 4, 2, 5, 2, 2, 2, 0.5)  # n = b*t, w = kv*g*hd, kvw = kv*hd: accepted
    for bad in [(9, 8, 4, 2, 5, 2, 2, 2), (10, 12, 4, 2, 5, 2, 2, 2), (10, 8, 8, 2, 5, 2, 2, 2)]:
        with pytest.raises(ShapeError):
            Attention(*bad, 0.5)
    with pytest.raises(ShapeError):
        RoPE(4, 10, 2, 2, 3, 10000.0)
    lay = Attention(6, 8, 4, 2, 3, 2, 2, 2, 0.5)
    x = np.zeros((6, 8), F32)
    with pytest.raises(ShapeError):
        lay.fwd(None, (x, (np.zeros((6, 8), F32), np.zeros((6, 4), F32))))
