"""Laws of the layer protocol (main.bend lines 27-160) and the combinators (lines 763-881, 1942-2118), for every
layer and combinator of impl (laws.catalog.KINDS: the Linears, the activations, Softmax, LogSoftmax, RMSNorm,
LayerNorm, Dropout, Embedding, RoPE, Attention, Id, Seq, Fork, Both, Tie, Add2, Mul2, Residual, and a small Llama),
with drawn shapes (1 and non powers of two included) and values that include zeros of both signs, subnormals, tiny
and large magnitudes, infinities and NaNs (raw 32-bit patterns where a law copies numbers).

The per-layer laws run once per kind (pytest parameters), each kind with the profile's number of examples; the
table's example count is their sum. They call the raw functions (f_fwd, f_bwd, ...), not the checked methods, so
the checks in Layer.fwd / Layer.bwd are not what makes them hold."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bendtorch.impl as L
from bendtorch.impl.optim import adamw, opt_at, state_new
from bendtorch.impl.protocol import Layer
from bendtorch.impl.specs import check_value, structure_diff
from bendtorch.laws.catalog import (KINDS, Src, leaves, mat_layer, of_kind, same_shape, same_tree, same_value, tie,
                          tree_copy, value_of)
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import seeds

F32 = np.float32


def arrays_of(tree: Any) -> list[Any]:
    return [x for x in leaves(tree) if isinstance(x, np.ndarray)]


def any_values(kind: str, data: Any) -> tuple[Any, Any, Any, Any]:
    """A layer of the kind with parameters, an input and an output gradient of its shapes, any float32 values
    (inf and NaN included)."""
    b = data.draw(of_kind(kind))
    src = Src(data.draw(seeds()), allow_nan=True, allow_infinity=True)
    lay = b.layer
    return lay, b.make_p(src), value_of(lay.x_spec, src, b.vocab), value_of(lay.y_spec, src)


@pytest.mark.parametrize("kind", KINDS)
@law("protocol", "dx_and_g_shapes", "bit for bit (structure)")
@given(data=st.data())
def test_dx_has_x_structure_and_g_has_p_structure(kind: str, data: Any) -> None:
    """Bwd{p, dx, g} (main.bend lines 35-41): dx has x's shape and structure (the empty id list for ids, line 1916)
    and g has p's, as DESIGN.md states p for each layer (Lin(w: o x i, b: 1 x o), LN(g, b), DropP(t), a v x d table,
    pairs for the combinators); y has the declared output's. g is the gradient handed in, its arrays updated in
    place (the same objects come back)."""
    lay, p, x, dy = any_values(kind, data)
    g = lay.zeros()
    with np.errstate(all="ignore"):
        f = lay.f_fwd(p, x)
        r = lay.f_bwd(f.p, f.s, dy, g)
    assert check_value(f.y, lay.y_spec, lay.dtype) is None
    assert check_value(r.dx, lay.x_spec, lay.dtype, grad=True) is None, check_value(r.dx, lay.x_spec, lay.dtype,
                                                                                     grad=True)
    assert structure_diff(r.g, p) is None, structure_diff(r.g, p)
    assert structure_diff(r.p, p) is None
    assert all(a is c for a, c in zip(arrays_of(r.g), arrays_of(g)))


@pytest.mark.parametrize("kind", KINDS)
@law("protocol", "inputs_untouched", "bit for bit")
@given(data=st.data())
def test_fwd_and_bwd_leave_their_inputs(kind: str, data: Any) -> None:
    """Ownership (DESIGN.md, main.bend line 18): fwd and bwd never write into x, s or dy. x, dy and the saved
    values keep every bit (NaN payloads and the sign of zero included) through forward and backward."""
    lay, p, x, dy = any_values(kind, data)
    x0, dy0 = tree_copy(x), tree_copy(dy)
    with np.errstate(all="ignore"):
        f = lay.f_fwd(p, x)
        s0 = tree_copy(f.s)
        lay.f_bwd(f.p, f.s, dy, lay.zeros())
    assert same_value(x, x0) and same_value(dy, dy0) and same_value(f.s, s0)


@pytest.mark.parametrize("kind", KINDS)
@law("protocol", "zeros_structure", "bit for bit")
@given(data=st.data())
def test_zeros_has_p_structure(kind: str, data: Any) -> None:
    """zeros : () -> P (main.bend line 119): zeros has p's structure (as DESIGN.md states p), every number +0.0 and
    every counter 0, and each call gives arrays of its own (gradients and optimizer buffers are written in place)."""
    b = data.draw(of_kind(kind))
    p = b.make_p(Src(data.draw(seeds())))
    z1, z2 = b.layer.zeros(), b.layer.zeros()
    assert structure_diff(z1, p) is None and structure_diff(p, z1) is None
    for v in leaves(z1):
        if isinstance(v, np.ndarray):
            assert np.all(v.view(np.uint32) == 0)
        else:
            assert v == 0
    assert not any(a is c for a, c in zip(arrays_of(z1), arrays_of(z2)))


@pytest.mark.parametrize("kind", KINDS)
@law("protocol", "count_is_dump", "bit for bit")
@given(data=st.data())
def test_count_equals_the_numbers_dump_gives(kind: str, data: Any) -> None:
    """count : () -> int equals the numbers dump gives (main.bend lines 119, 812): dump is one flat float32 array of
    count() numbers, and count() is the sum of DESIGN.md's parameter sizes (a counter counts one)."""
    b = data.draw(of_kind(kind))
    p = b.make_p(Src(data.draw(seeds())))
    d = b.layer.dump(p)
    assert d.ndim == 1 and d.dtype == np.float32
    assert d.size == b.layer.count() == sum(v.size if isinstance(v, np.ndarray) else 1 for v in leaves(p))


@pytest.mark.parametrize("kind", KINDS)
@law("protocol", "load_store_dump", "bit for bit")
@given(data=st.data())
def test_load_of_store_and_dump_agree(kind: str, data: Any) -> None:
    """store then load gives p back, and agrees with dump (main.bend lines 563, 579, 812): store(p, xs, off) writes
    dump(p)'s numbers at off, bit for bit (raw 32-bit patterns: every NaN payload, both zeros, infinities), touches
    nothing else and returns off + count; load(zeros, xs, off) reads them back into p's structure with the same bits
    and returns off + count."""
    b = data.draw(of_kind(kind))
    seed = data.draw(seeds())
    src = Src(seed, bits=True)
    lay = b.layer
    p = b.make_p(src)
    n = lay.count()
    off, extra = data.draw(st.integers(0, 5)), data.draw(st.integers(0, 3))
    xs = Src(seed + 1, bits=True).mat(1, off + n + extra).reshape(-1)
    xs0 = xs.copy()
    assert lay.store(p, xs, off) == off + n
    u, u0 = xs.view(np.uint32), xs0.view(np.uint32)
    assert np.array_equal(u[off:off + n], lay.dump(p).view(np.uint32))
    assert np.array_equal(u[:off], u0[:off]) and np.array_equal(u[off + n:], u0[off + n:])
    back = lay.load(lay.zeros(), xs, off)
    assert back.off == off + n
    assert structure_diff(back.p, p) is None and same_tree(back.p, p)
    assert np.array_equal(lay.dump(back.p).view(np.uint32), lay.dump(p).view(np.uint32))


# ---------------------------------------------------------------------------------------------------------------
# Combinators
# ---------------------------------------------------------------------------------------------------------------

def fwd_bwd(lay: Any, p: Any, x: Any, dy: Any) -> tuple[Any, Any, Any]:
    """y, dx and the gradient from a zero one (raw functions)."""
    with np.errstate(all="ignore"):
        f = lay.f_fwd(p, x)
        r = lay.f_bwd(f.p, f.s, dy, lay.zeros())
    return f.y, r.dx, r.g


def adamw_step(lay: Any, p: Any, g: Any) -> Any:
    cfg = adamw(lr=0.01)
    with np.errstate(all="ignore"):
        r = lay.step(opt_at(cfg, F32(0.1), F32(0.001)), p, g, state_new(cfg, lay.zeros))
    return r


@st.composite
def chains(draw: Any) -> Any:
    n = draw(st.integers(1, 6))
    ds = [draw(st.integers(1, 6)) for _ in range(4)]
    return [draw(mat_layer(n, ds[i], ds[i + 1])) for i in range(3)], draw(seeds())


@law("protocol", "seq_assoc", "bit for bit")
@given(chains())
def test_seq_is_associative(prob: Any) -> None:
    """Composition is associative (Seq, main.bend line 837): Seq(Seq(a, b), c) and Seq(a, Seq(b, c)) give the same
    output, input gradient and parameter gradients bit for bit, the same dump, and the same parameters and AdamW
    moments after a step (values with infinities and NaNs)."""
    (a, b, c), seed = prob
    src = Src(seed, allow_nan=True, allow_infinity=True)
    pa, pb, pc = a.make_p(src), b.make_p(src), c.make_p(src)
    x = value_of(a.layer.x_spec, src)
    dy = value_of(c.layer.y_spec, src)
    left: Any = L.Seq(L.Seq(a.layer, b.layer), c.layer)
    right: Any = L.Seq(a.layer, L.Seq(b.layer, c.layer))
    pl = ((tree_copy(pa), tree_copy(pb)), tree_copy(pc))
    pr = (tree_copy(pa), (tree_copy(pb), tree_copy(pc)))
    yl, dxl, gl = fwd_bwd(left, pl, x, dy)
    yr, dxr, gr = fwd_bwd(right, pr, x, dy)
    assert same_value(yl, yr) and same_value(dxl, dxr) and same_tree(gl, gr)
    assert np.array_equal(left.dump(pl).view(np.uint32), right.dump(pr).view(np.uint32))
    sl, sr = adamw_step(left, pl, gl), adamw_step(right, pr, gr)
    assert same_tree(sl.p, sr.p) and same_tree(sl.st.m, sr.st.m) and same_tree(sl.st.v, sr.st.v)


@st.composite
def singles(draw: Any) -> Any:
    n, di, do = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return draw(mat_layer(n, di, do, 2)), draw(seeds())


@law("protocol", "id_unit", "bit for bit")
@given(singles())
def test_id_is_seq_unit(prob: Any) -> None:
    """Id is Seq's unit (Id, main.bend line 1946): Seq(Id, f) and Seq(f, Id) give f's output, input gradient and
    parameter gradient bit for bit, and the same dump."""
    f, seed = prob
    src = Src(seed, allow_nan=True, allow_infinity=True)
    p = f.make_p(src)
    x = value_of(f.layer.x_spec, src)
    dy = value_of(f.layer.y_spec, src)
    y0, dx0, g0 = fwd_bwd(f.layer, tree_copy(p), x, dy)
    left: Layer[Any, Any, Any, Any] = L.Seq(L.Id(f.layer.x_spec), f.layer)
    right: Layer[Any, Any, Any, Any] = L.Seq(f.layer, L.Id(f.layer.y_spec))
    y1, dx1, g1 = fwd_bwd(left, (None, tree_copy(p)), x, dy)
    y2, dx2, g2 = fwd_bwd(right, (tree_copy(p), None), x, dy)
    assert same_value(y1, y0) and same_value(dx1, dx0) and same_tree(g1, g0)
    assert same_value(y2, y0) and same_value(dx2, dx0) and same_tree(g2, g0)
    d = f.layer.dump(p).view(np.uint32)
    assert np.array_equal(left.dump((None, p)).view(np.uint32), d)
    assert np.array_equal(right.dump((p, None)).view(np.uint32), d)


@st.composite
def squares(draw: Any) -> Any:
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    return draw(same_shape(n, d, 1)), draw(seeds())


@law("protocol", "residual", "bit for bit")
@given(squares())
def test_residual_is_x_plus_f(prob: Any) -> None:
    """Residual(f) is x + f(x) (main.bend line 2117, Seq(Fork(Id, f), Add2)): y = x + f(x), dx = dy + f's dx (Fork
    adds Id's dx, which is dy, and f's) and the parameter gradient is f's, bit for bit (infinities and NaNs
    included)."""
    f, seed = prob
    src = Src(seed, allow_nan=True, allow_infinity=True)
    p = f.make_p(src)
    x = value_of(f.layer.x_spec, src)
    dy = value_of(f.layer.y_spec, src)
    fy, fdx, fg = fwd_bwd(f.layer, tree_copy(p), x, dy)
    ry, rdx, rg = fwd_bwd(L.Residual(f.layer), ((None, tree_copy(p)), None), x, dy)
    with np.errstate(all="ignore"):
        assert same_value(ry, x + fy)
        assert same_value(rdx, dy + fdx)
    assert same_tree(rg, fg)


@st.composite
def forks(draw: Any) -> Any:
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return draw(mat_layer(n, d, draw(st.integers(1, 6)))), draw(mat_layer(n, d, draw(st.integers(1, 6)))), \
        draw(seeds())


@law("protocol", "fork_dx_sum", "bit for bit")
@given(forks())
def test_fork_dx_is_the_sum(prob: Any) -> None:
    """Fork's dx is the sum of both branches' (main.bend lines 1979-1996): Fork(a, b) gives (a(x), b(x)), dx =
    dx_a + dx_b element-wise (one float32 rounding each), and the gradients (g_a, g_b), bit for bit."""
    a, b, seed = prob
    src = Src(seed, allow_nan=True, allow_infinity=True)
    pa, pb = a.make_p(src), b.make_p(src)
    x = value_of(a.layer.x_spec, src)
    dya, dyb = value_of(a.layer.y_spec, src), value_of(b.layer.y_spec, src)
    ya, dxa, ga = fwd_bwd(a.layer, tree_copy(pa), x, dya)
    yb, dxb, gb = fwd_bwd(b.layer, tree_copy(pb), x, dyb)
    y, dx, g = fwd_bwd(L.Fork(a.layer, b.layer), (tree_copy(pa), tree_copy(pb)), x, (dya, dyb))
    assert same_value(y, (ya, yb)) and same_tree(g, (ga, gb))
    with np.errstate(all="ignore"):
        assert same_value(dx, dxa + dxb)


@st.composite
def ties(draw: Any) -> Any:
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return draw(tie(n, d)), draw(seeds())


@law("protocol", "tie_grad_step", "bit for bit")
@given(ties())
def test_tie_adds_both_gradients_and_steps_once(prob: Any) -> None:
    """Tie adds both uses' gradients into one and steps it once (main.bend lines 2024-2074): for Tie(first, mid,
    last) sharing first's parameter P, the output is last(P, mid(first(P, x))); P's gradient is last's backward into
    a zero gradient followed by first's backward into that same gradient, bit for bit, which is g_last + g_first
    (each from zero) bit for bit wherever first adds each cell once (LinearNB; Embedding with distinct ids; an id
    repeated in the batch adds its rows one after another into g, line 1899); and one step changes P once: the
    same bits as first's step alone on P and that gradient (mid stepped once too); count counts P once."""
    t, seed = prob
    lay = t.layer
    la, lb, lc = lay.children
    src = Src(seed, special_rate=0.05)
    pa, pb = t.make_p(src)
    x = value_of(lay.x_spec, src, t.vocab)
    dy = value_of(lay.y_spec, src)
    y, dx, g = fwd_bwd(lay, (tree_copy(pa), tree_copy(pb)), x, dy)
    with np.errstate(all="ignore"):
        f1 = la.f_fwd(pa, x)
        f2 = lb.f_fwd(pb, f1.y)
        f3 = lc.f_fwd(pa, f2.y)
        assert same_value(y, f3.y)
        ga = la.zeros()
        r3 = lc.f_bwd(pa, f3.s, dy, ga)
        r2 = lb.f_bwd(pb, f2.s, r3.dx, lb.zeros())
        r1 = la.f_bwd(pa, f1.s, r2.dx, ga)
        assert same_value(dx, r1.dx) and same_tree(g, (ga, r2.g))
        g_last = lc.f_bwd(pa, f3.s, dy, la.zeros()).g
        g_first = la.f_bwd(pa, f1.s, r2.dx, la.zeros()).g
        once = isinstance(x, np.ndarray) and (x.dtype.kind == "f" or len(set(x.tolist())) == len(x))
        if once:
            assert same_tree(g[0], g_last + g_first)
    assert lay.count() == la.count() + lb.count()
    s = adamw_step(lay, (tree_copy(pa), tree_copy(pb)), tree_copy(g))
    sa = adamw_step(la, tree_copy(pa), tree_copy(g[0]))
    sb = adamw_step(lb, tree_copy(pb), tree_copy(g[1]))
    assert same_tree(s.p, (sa.p, sb.p)) and same_tree(s.st.m, (sa.st.m, sb.st.m))
    assert same_tree(s.st.v, (sa.st.v, sb.st.v))

