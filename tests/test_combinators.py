"""The protocol and the combinators on small layers defined here (so these tests do not depend on impl's layers):
shapes checked at composition time and on every call, gradients of pairs, Tie's shared parameter, optimizer state
split and join, and the training step's bookkeeping."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from bendtorch.impl.bits import same_bits
from bendtorch.impl.combinators import Add2, Both, Fork, Id, Mul2, Residual, Seq, Tie
from bendtorch.impl.optim import (CAdam, CAdamW, CMomentum, CSGD, adamw, beta_ok, cfg_check, cfg_ok, opt_at, opt_mat)
from bendtorch.impl.optstate import (ConfigError, NoMom, OneMom, Packed, PLeaf, PNew, PNode, TwoMom, state_join,
                                     state_split)
from bendtorch.impl.protocol import Bwd, Fwd, Layer, Loss, LossOut, Step, mat_param
from bendtorch.impl.specs import Mat, MatSpec, ShapeError
from bendtorch.impl.train import Train, train_new, train_step

F32 = np.float32


def scale(n: int, c: int, name: str = "Scale") -> Layer[Mat, Mat, Mat, Mat]:
    """y = x * w (w a 1 x c gain broadcast over rows); dx = dy * w; dw += column sums of dy * x (rows in order)."""

    def fwd(p: Mat, x: Mat) -> Fwd[Mat, Mat, Mat]:
        return Fwd(p, x * p, x)

    def bwd(p: Mat, s: Mat, dy: Mat, g: Mat) -> Bwd[Mat, Mat]:
        acc = np.zeros((1, c), F32)
        for i in range(n):
            acc[0] = acc[0] + dy[i] * s[i]
        g += acc
        return Bwd(p, dy * p, g)

    return mat_param(f"{name}({n}x{c})", MatSpec(n, c), MatSpec(n, c), F32, 1, c, fwd, bwd, opt_mat)


def mse(n: int, c: int) -> Loss[Mat, Mat]:
    def f(y: Mat, t: Mat) -> LossOut[Mat]:
        d = y - t
        return LossOut(F32(np.sum(d * d) / F32(n * c)), d * F32(2.0 / (n * c)))
    return Loss("mse", MatSpec(n, c), F32, f)


def rnd(*shape: int, seed: int = 0) -> Mat:
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def test_seq_refuses_shapes_that_do_not_meet() -> None:
    with pytest.raises(ShapeError) as e:
        Seq(scale(4, 3, "A"), scale(4, 5, "B"))
    msg = str(e.value)
    assert "A(4x3)" in msg and "B(4x5)" in msg and "Mat[4 x 3]" in msg and "Mat[4 x 5]" in msg


def test_layers_of_two_dtypes_do_not_mix() -> None:
    a = scale(2, 2)
    b64: Layer[None, Any, Any, None] = Id(MatSpec(2, 2), np.float64)
    with pytest.raises(ShapeError, match="float64"):
        Seq(a, b64)


def test_fwd_checks_the_input_shape_and_dtype() -> None:
    lay = scale(4, 3)
    with pytest.raises(ShapeError, match=r"Scale\(4x3\)\.fwd: input x: expected Mat\[4 x 3\], got shape \(3, 4\)"):
        lay.fwd(lay.zeros(), rnd(3, 4))
    with pytest.raises(ShapeError, match="float32"):
        lay.fwd(lay.zeros(), rnd(4, 3).astype(np.float64))


def test_bwd_refuses_a_transposed_gradient() -> None:
    good = scale(3, 2)

    def bad_bwd(p: Mat, s: Mat, dy: Mat, g: Mat) -> Bwd[Mat, Mat]:
        return Bwd(p, np.ascontiguousarray((dy * p).T), g)

    bad = dataclasses.replace(good, name="Bad", f_bwd=bad_bwd)
    p = np.ones((1, 2), F32)
    f = bad.fwd(p, rnd(3, 2))
    with pytest.raises(ShapeError, match="dx must have x's structure"):
        bad.bwd(p, f.s, rnd(3, 2), bad.zeros())
    with pytest.raises(ShapeError, match="g has not the parameters' structure"):
        good.bwd(p, f.s, rnd(3, 2), np.zeros((2, 1), F32))


def test_seq_is_associative_bit_for_bit() -> None:
    a, b, c = scale(4, 3, "A"), scale(4, 3, "B"), scale(4, 3, "C")
    left, right = Seq(Seq(a, b), c), Seq(a, Seq(b, c))
    pa, pb, pc = rnd(1, 3, seed=1), rnd(1, 3, seed=2), rnd(1, 3, seed=3)
    x, dz = rnd(4, 3, seed=4), rnd(4, 3, seed=5)
    fl = left.fwd(((pa, pb), pc), x)
    fr = right.fwd((pa, (pb, pc)), x)
    assert same_bits(fl.y, fr.y)
    bl = left.bwd(fl.p, fl.s, dz, left.zeros())
    br = right.bwd(fr.p, fr.s, dz, right.zeros())
    assert same_bits(bl.dx, br.dx)
    assert same_bits(bl.g[0][0], br.g[0]) and same_bits(bl.g[0][1], br.g[1][0]) and same_bits(bl.g[1], br.g[1][1])
    assert same_bits(left.dump(((pa, pb), pc)), right.dump((pa, (pb, pc))))


def test_id_is_the_unit_of_seq() -> None:
    a = scale(2, 3)
    ident: Layer[None, Mat, Mat, None] = Id(MatSpec(2, 3))
    p, x, dy = rnd(1, 3, seed=1), rnd(2, 3, seed=2), rnd(2, 3, seed=3)
    f0 = a.fwd(p, x)
    b0 = a.bwd(p, f0.s, dy, a.zeros())
    both: list[tuple[Any, Any]] = [(Seq(ident, a), (None, p)), (Seq(a, ident), (p, None))]
    for m, pp in both:
        f = m.fwd(pp, x)
        assert same_bits(f.y, f0.y)
        b = m.bwd(f.p, f.s, dy, m.zeros())
        assert same_bits(b.dx, b0.dx)


def test_fork_sums_the_input_gradients_and_residual_is_x_plus_f() -> None:
    a, b = scale(2, 3, "A"), scale(2, 3, "B")
    pa, pb, x = rnd(1, 3, seed=1), rnd(1, 3, seed=2), rnd(2, 3, seed=3)
    fk = Fork(a, b)
    f = fk.fwd((pa, pb), x)
    d1, d2 = rnd(2, 3, seed=4), rnd(2, 3, seed=5)
    bw = fk.bwd(f.p, f.s, (d1, d2), fk.zeros())
    assert same_bits(bw.dx, d1 * pa + d2 * pb)
    r = Residual(a)
    fr = r.fwd(((None, pa), None), x)
    assert same_bits(fr.y, x + x * pa)
    br = r.bwd(fr.p, fr.s, d1, r.zeros())
    assert same_bits(br.dx, d1 + d1 * pa)


def test_both_and_mul2_add2() -> None:
    a, b = scale(2, 2, "A"), scale(2, 2, "B")
    bo = Both(a, b)
    pa, pb, x1, x2 = rnd(1, 2, seed=1), rnd(1, 2, seed=2), rnd(2, 2, seed=3), rnd(2, 2, seed=4)
    f = bo.fwd((pa, pb), (x1, x2))
    assert same_bits(f.y[0], x1 * pa) and same_bits(f.y[1], x2 * pb)
    m: Layer[None, tuple[Mat, Mat], Mat, tuple[Mat, Mat]] = Mul2(2, 2)
    fm = m.fwd(None, (x1, x2))
    assert same_bits(fm.y, x1 * x2)
    dy = rnd(2, 2, seed=5)
    bm = m.bwd(None, fm.s, dy, None)
    assert same_bits(bm.dx[0], dy * x2) and same_bits(bm.dx[1], dy * x1)
    ad: Layer[None, tuple[Mat, Mat], Mat, None] = Add2(2, 2)
    assert same_bits(ad.fwd(None, (x1, x2)).y, x1 + x2)
    ba = ad.bwd(None, None, dy, None)
    assert same_bits(ba.dx[0], dy) and same_bits(ba.dx[1], dy) and ba.dx[0] is not ba.dx[1]


def test_tie_adds_both_uses_into_one_gradient_and_steps_once() -> None:
    first, mid, last = scale(2, 3, "First"), scale(2, 3, "Mid"), scale(2, 3, "Last")
    t = Tie(first, mid, last)
    pw, pm, x, dy = rnd(1, 3, seed=1), rnd(1, 3, seed=2), rnd(2, 3, seed=3), rnd(2, 3, seed=4)
    f = t.fwd((pw, pm), x)
    assert same_bits(f.y, ((x * pw) * pm) * pw)
    b = t.bwd(f.p, f.s, dy, t.zeros())
    # last's gradient first (into zeros), then first's added to it, as the seed's tie_bwd orders them
    g_last = last.bwd(pw, (x * pw) * pm, dy, last.zeros()).g
    d_mid = mid.bwd(pm, x * pw, dy * pw, mid.zeros())
    g_both = first.bwd(pw, x, d_mid.dx, g_last.copy()).g
    assert same_bits(b.g[0], g_both)
    assert t.count() == 6  # the shared parameter counted once
    st = t.step(opt_at(CSGD(F32(0.5)), F32(0), F32(0)), (pw.copy(), pm.copy()), b.g, NoMom())
    assert same_bits(st.p[0], pw + F32(-0.5) * g_both)  # stepped once
    assert not st.g[0].any() and not st.g[1].any()


def test_tie_refuses_unshared_structures() -> None:
    with pytest.raises(ShapeError, match="share one parameter structure"):
        Tie(scale(2, 3, "First"), Id(MatSpec(2, 3)), Seq(scale(2, 3, "L1"), scale(2, 3, "L2")))  # type: ignore[misc]


def test_state_split_then_join_is_the_identity() -> None:
    a, b = rnd(1, 2, seed=1), rnd(1, 2, seed=2)
    for st in (OneMom((a, b)), TwoMom((a, b), (b, a))):
        l, r = state_split(st)
        j = state_join(l, r)
        assert type(j) is type(st)
    tree = Packed(PNode(PLeaf(2, np.zeros(1, np.uint32), np.zeros(1, np.uint32)), PNew(True)))
    l, r = state_split(tree)
    assert state_join(l, r) == tree
    l2, r2 = state_split(Packed(PNew(True)))  # type: ignore[var-annotated]
    assert l2 == Packed(PNew(True)) and r2 == Packed(PNew(True))
    assert isinstance(state_join(NoMom(), OneMom(a)), NoMom)


def test_dump_load_store_round_trip() -> None:
    m = Seq(scale(2, 3, "A"), scale(2, 3, "B"))
    p = (rnd(1, 3, seed=1), rnd(1, 3, seed=2))
    xs = m.dump(p)
    assert xs.size == m.count() == 6 and xs.dtype == F32
    buf = np.zeros(m.count() + 2, F32)
    assert m.store(p, buf, 1) == 7
    q = m.load(m.zeros(), buf, 1)
    assert q.off == 7 and same_bits(m.dump(q.p), xs)


def test_beta_ok_accepts_one_minus_b_and_rejects_typos() -> None:
    for b in (0.9, 0.99, 0.999, 0.9999, 0.0, 0.5):
        assert beta_ok(F32(b), F32(1.0) - F32(b))
        assert beta_ok(F32(b), F32(1.0 - b))
    assert not beta_ok(F32(0.999), F32(0.01))
    assert not beta_ok(F32(0.9), F32(0.001))
    assert not beta_ok(F32(np.nan), F32(0.1))
    assert not beta_ok(F32(1.0), F32(0.0))  # c must be > 0


def test_cfg_check_names_the_fields() -> None:
    cfg = CAdamW(F32(1e-3), F32(0.9), F32(0.999), F32(1e-8), F32(0.0), F32(0.001), F32(0.1))
    assert not cfg_ok(cfg)
    with pytest.raises(ConfigError, match="c1 = .* is not 1 - b1.*c2 = .* is not 1 - b2"):
        cfg_check(cfg)
    cfg_check(adamw())
    with pytest.raises(ConfigError, match="field lr"):
        CSGD("fast")  # type: ignore[arg-type]


def _run(cfg: Any, steps: int) -> Train[Mat]:
    m = scale(4, 3)
    tr = train_new(m, cfg, rnd(1, 3, seed=7))
    for k in range(steps):
        tr = train_step(m, mse(4, 3), cfg, tr, rnd(4, 3, seed=10 + k), rnd(4, 3, seed=20 + k))
        assert not tr.g.any()
    return tr


def test_training_zeroes_the_gradient_and_lr_zero_keeps_the_parameters() -> None:
    p0 = rnd(1, 3, seed=7)
    for cfg in (CSGD(F32(0.0)), CMomentum(F32(0.0), F32(0.9)),
                CAdamW(F32(0.0), F32(0.9), F32(0.999), F32(1e-8), F32(0.1), F32(0.1), F32(0.001))):
        tr = _run(cfg, 3)
        assert same_bits(tr.p, p0), cfg
    tr = _run(adamw(lr=1e-2), 3)
    assert not same_bits(tr.p, p0)
    assert tr.p1 == F32(F32(0.19) + F32(F32(0.1) * F32(F32(1) - F32(0.19))))  # q1 advanced as q + c1 (1 - q)


def test_a_poisoned_configuration_makes_every_later_loss_nan() -> None:
    bad = CAdam(F32(1e-3), F32(0.9), F32(0.999), F32(1e-8), F32(0.0), F32(0.1), F32(0.01))
    m = scale(4, 3)
    tr = train_new(m, bad, rnd(1, 3, seed=7))
    losses = []
    for k in range(3):
        tr = train_step(m, mse(4, 3), bad, tr, rnd(4, 3, seed=10 + k), rnd(4, 3, seed=20 + k))
        losses.append(float(tr.loss))
    assert np.isfinite(losses[0]) and all(np.isnan(v) for v in losses[1:])


def test_a_mismatched_state_leaves_the_values_untouched() -> None:
    w, g = rnd(2, 2, seed=1), rnd(2, 2, seed=2)
    w0, g0 = w.copy(), g.copy()
    op = opt_at(adamw(), F32(0.1), F32(0.001))
    r = opt_mat(op, w, g, OneMom(np.zeros((2, 2), F32)))
    assert isinstance(r, Step) and same_bits(r.p, w0) and same_bits(r.g, g0)
    assert isinstance(r.st, OneMom)


def test_train_new_refuses_parameters_of_another_model() -> None:
    with pytest.raises(ShapeError, match="do not fit"):
        train_new(scale(4, 3), adamw(), rnd(1, 4))


def test_a_wrong_gradient_deep_in_a_composition_is_caught_by_its_layer() -> None:
    # a combinator checks only its own level of g (a pair of the right kinds); the layer whose part is wrong names
    # itself
    m = Seq(scale(2, 3, "A"), Seq(scale(2, 3, "B"), scale(2, 3, "C")))
    p = (rnd(1, 3, seed=1), (rnd(1, 3, seed=2), rnd(1, 3, seed=3)))
    f = m.fwd(p, rnd(2, 3, seed=4))
    bad = (np.zeros((1, 3), F32), (np.zeros((1, 3), F32), np.zeros((3, 1), F32)))
    with pytest.raises(ShapeError, match=r"^C\(2x3\)\.bwd: the gradient g has not the parameters' structure: g: "
                       r"expected an array \(1, 3\) of float32"):
        m.bwd(f.p, f.s, rnd(2, 3, seed=5), bad)
    with pytest.raises(ShapeError, match=r"Seq\(A\(2x3\), .*\.bwd: the gradient g has not the parameters'"):
        m.bwd(f.p, f.s, rnd(2, 3, seed=5), np.zeros((1, 3), F32))  # type: ignore[arg-type]


def test_load_and_store_check_the_array_and_the_offset() -> None:
    lay = scale(2, 3)
    p = lay.zeros()
    xs = np.arange(6, dtype=F32)
    assert lay.store(p, xs, 3) == 6 and lay.load(p, xs, 3).off == 6
    for bad_xs, off in ((xs.reshape(2, 3), 0), (xs.tolist(), 0), (xs.astype(np.int64), 0), (xs, -1), (xs, 7),
                        (xs, 1.0)):
        for f in (lay.load, lay.store):
            with pytest.raises(ShapeError, match=r"^Scale\(2x3\)\.(load|store): "):
                f(p, bad_xs, off)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match=r"load: 3 numbers wanted from offset 4"):
        lay.load(p, xs, 4)
