"""impl.layers.linear and impl.layers.embedding: shapes, the products' bits, dump / load / store, count, step, and
the embedding's ordered gradient and id checks."""

from __future__ import annotations

import numpy as np
import pytest

from bendtorch.impl.kernels.matmul import mm_plain
from bendtorch.impl.layers.embedding import Embedding
from bendtorch.impl.layers.linear import Lin, Linear, LinearFirst, LinearNB
from bendtorch.impl.optim import CAdamW, opt_at, state_new
from bendtorch.impl.optstate import SGD, TwoMom
from bendtorch.impl.specs import ShapeError

F32 = np.float32


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape, dtype=F32)


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.shape == y.shape and x.dtype == y.dtype and bool(np.array_equal(x.view(np.uint32), y.view(np.uint32)))


def _lin_params(rng: np.random.Generator, i: int, o: int) -> Lin:
    return Lin(_rand(rng, o, i), _rand(rng, 1, o))


@pytest.mark.parametrize("first", [False, True])
def test_linear_forward_backward(first: bool) -> None:
    rng = np.random.default_rng(1)
    n, i, o = 4, 3, 5
    lay = LinearFirst(n, i, o) if first else Linear(n, i, o)
    assert lay.name == ("LinearFirst(4, 3, 5)" if first else "Linear(4, 3, 5)")
    assert lay.count() == o * (i + 1)
    p = _lin_params(rng, i, o)
    x = _rand(rng, n, i)
    r = lay.fwd(p, x)
    assert r.s is x  # the saved value is x itself
    assert _same_bits(r.y, mm_plain(x, np.ascontiguousarray(p.w.T)) + p.b)
    dy = _rand(rng, n, o)
    g0 = _lin_params(rng, i, o)
    g = Lin(g0.w.copy(), g0.b.copy())
    rb = lay.bwd(r.p, r.s, dy, g)
    assert rb.g.w is g.w and rb.g.b is g.b  # added in place
    assert _same_bits(rb.g.w, g0.w + mm_plain(np.ascontiguousarray(dy.T), x))
    assert _same_bits(rb.g.b, g0.b + mm_plain(np.ones((1, n), F32), dy))
    if first:
        assert _same_bits(rb.dx, np.zeros((n, i), F32))
    else:
        assert _same_bits(rb.dx, mm_plain(dy, p.w))


def test_linear_nb() -> None:
    rng = np.random.default_rng(2)
    n, i, o = 7, 20, 3
    lay = LinearNB(n, i, o)
    assert lay.name == "LinearNB(7, 20, 3)" and lay.count() == o * i
    w, x, dy = _rand(rng, o, i), _rand(rng, n, i), _rand(rng, n, o)
    r = lay.fwd(w, x)
    assert _same_bits(r.y, mm_plain(x, np.ascontiguousarray(w.T)))
    g0 = _rand(rng, o, i)
    rb = lay.bwd(w, r.s, dy, g0.copy())
    assert _same_bits(rb.dx, mm_plain(dy, w))
    assert _same_bits(rb.g, g0 + mm_plain(np.ascontiguousarray(dy.T), x))
    assert lay.zeros().shape == (o, i)


def test_linear_shape_errors() -> None:
    lay = Linear(4, 3, 5)
    with pytest.raises(ShapeError):
        lay.fwd(lay.zeros(), np.zeros((4, 2), F32))
    with pytest.raises(ShapeError):
        lay.fwd(lay.zeros(), np.zeros((4, 3), np.float64))


def test_linear_dump_load_store_round_trip() -> None:
    rng = np.random.default_rng(3)
    i, o = 3, 5
    lay = Linear(2, i, o)
    p = _lin_params(rng, i, o)
    d = lay.dump(p)
    assert d.dtype == F32 and d.size == lay.count()
    assert _same_bits(d, np.concatenate([p.w.reshape(-1), p.b.reshape(-1)]))  # w then b, row by row
    xs = np.zeros(lay.count() + 4, F32)
    assert lay.store(p, xs, 3) == 3 + lay.count()
    assert _same_bits(xs[3:3 + lay.count()], d)
    q = lay.zeros()
    ld = lay.load(q, xs, 3)
    assert ld.off == 3 + lay.count()
    assert _same_bits(ld.p.w, p.w) and _same_bits(ld.p.b, p.b)
    with pytest.raises(ShapeError):
        lay.load(lay.zeros(), xs, 6)
    nb = LinearNB(2, i, o)
    w = p.w.copy()
    assert _same_bits(nb.dump(w), p.w.reshape(-1))
    assert nb.load(nb.zeros(), nb.dump(w), 0).off == o * i


def test_linear_step_matches_opt_mat_per_matrix() -> None:
    rng = np.random.default_rng(4)
    i, o = 6, 4
    lay = Linear(3, i, o)
    cfg = CAdamW(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001))
    p, g = _lin_params(rng, i, o), _lin_params(rng, i, o)
    pw, pb, gw, gb = p.w.copy(), p.b.copy(), g.w.copy(), g.b.copy()
    st = state_new(cfg, lay.zeros)
    op = opt_at(cfg, F32(0.1), F32(0.001))
    r = lay.step(op, p, g, st)
    assert isinstance(r.p, Lin) and isinstance(r.g, Lin)
    assert isinstance(r.st, TwoMom) and isinstance(r.st.m, Lin) and isinstance(r.st.v, Lin)
    assert not r.g.w.any() and not r.g.b.any()
    # the same step on each matrix alone
    from bendtorch.impl.optim import opt_mat
    zw, zb = np.zeros_like(pw), np.zeros_like(pb)
    sw = opt_mat(op, pw, gw, TwoMom(zw, zw.copy()))
    sb = opt_mat(op, pb, gb, TwoMom(zb, zb.copy()))
    assert _same_bits(r.p.w, sw.p) and _same_bits(r.p.b, sb.p)
    assert isinstance(sw.st, TwoMom) and isinstance(sb.st, TwoMom)
    assert _same_bits(r.st.m.w, sw.st.m) and _same_bits(r.st.v.b, sb.st.v)
    # SGD: no state
    p2, g2 = _lin_params(rng, i, o), _lin_params(rng, i, o)
    want = p2.w + (-F32(0.5)) * g2.w
    r2 = lay.step(SGD(F32(0.5)), p2, g2, state_new(cfg, lay.zeros))
    assert _same_bits(r2.p.w, want)


# ---- Embedding ----


def test_embedding_forward_backward() -> None:
    rng = np.random.default_rng(5)
    n, v, d = 6, 10, 4
    lay = Embedding(n, v, d)
    assert lay.count() == v * d and lay.zeros().shape == (v, d)
    assert "Embedding" in lay.name
    table = _rand(rng, v, d)
    ids = np.array([3, 0, 9, 3, 3, 1], np.int64)
    r = lay.fwd(table, ids)
    assert _same_bits(r.y, table[ids])
    dy = _rand(rng, n, d)
    g0 = _rand(rng, v, d)
    g = g0.copy()
    rb = lay.bwd(table, r.s, dy, g)
    assert rb.g is g
    assert rb.dx.shape == (0,) and rb.dx.dtype == np.int64
    want = g0.copy()
    for q in range(n):  # rows in order, each added once
        want[ids[q]] = want[ids[q]] + dy[q]
    assert _same_bits(g, want)


def test_embedding_repeated_ids_accumulate_in_order() -> None:
    # 0 + 1 + 2^-24 + 2^-24 in order is 1 (each 2^-24 is half an ulp of 1, a tie to even); any other order, e.g.
    # the two small ones first, gives 1 + 2^-23
    lay = Embedding(3, 2, 1)
    ids = np.array([1, 1, 1])
    dy = np.array([[1.0], [2.0 ** -24], [2.0 ** -24]], F32)
    g = lay.zeros()
    lay.bwd(lay.zeros(), lay.fwd(lay.zeros(), ids).s, dy, g)
    assert g[1, 0] == F32(1.0) and g[0, 0] == F32(0.0)


def test_embedding_bad_ids() -> None:
    lay = Embedding(3, 5, 2)
    t = lay.zeros()
    with pytest.raises(ValueError, match=r"Embedding.*id 5 at position 2"):
        lay.fwd(t, np.array([0, 4, 5]))
    with pytest.raises(ValueError, match=r"Embedding.*id -1 at position 0"):
        lay.fwd(t, np.array([-1, 0, 1]))
    with pytest.raises(ValueError, match="Embedding"):
        lay.fwd(t, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="Embedding"):
        lay.fwd(t, np.array([0, 1]))
    with pytest.raises(ValueError, match="Embedding"):  # the raw function checks too
        lay.f_fwd(t, np.array([0, 1]))


def test_embedding_dump_load_store_and_step() -> None:
    rng = np.random.default_rng(6)
    lay = Embedding(2, 3, 4)
    t = _rand(rng, 3, 4)
    d = lay.dump(t)
    assert _same_bits(d, t.reshape(-1))
    xs = np.zeros(20, F32)
    assert lay.store(t, xs, 5) == 17
    ld = lay.load(lay.zeros(), xs, 5)
    assert _same_bits(ld.p, t) and ld.off == 17
    g = _rand(rng, 3, 4)
    want = t + (-F32(0.25)) * g
    r = lay.step(SGD(F32(0.25)), t, g, state_new(CAdamW(*(F32(c) for c in (1e-3, 0.9, 0.999, 1e-8, 0.0, 0.1,
                                                                            0.001))), lay.zeros))
    assert _same_bits(r.p, want) and not r.g.any()
