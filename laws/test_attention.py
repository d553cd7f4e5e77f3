"""Laws of causal grouped-query attention (main.bend lines 2199-2742) over impl's Attention layer: shapes with b
sequences of t positions, kv key/value heads of g query heads each, head dim hd (counts from 1, so 3, 5, 7 occur),
scales sc, and float32 values with zeros of both signs, subnormals, tiny and large magnitudes (infinities and NaNs
where a law speaks of them).

How the laws are observed without a hook in the kernel (impl.kernels.attention keeps P and G inside each unit):
- P itself: with V one-hot (V[j, kc + d] = 1 where d = j, else 0; hd >= t), O[i, hc + d] = sum_j P[i, j] V[j, d]
  is exactly P[i, d] (the other products are +0 and a sum from +0.0 adds them exactly), so O shows P's row.
- G itself: with Q one-hot in one query head of each group (Q[i, hc + d] = 1 where d = i) and zero in the others,
  dK[j, kc + d] = sum_i G[i, j] Q[i, hc + d] + (the other heads' +0) is exactly G[d, j] (-0 read as +0).
- What is read: a NaN (or any bits) planted where the law says nothing is read must not reach the output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numba
import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from bendtorch.impl.bits import same_bits
from bendtorch.impl.kernels import attention as AK
from bendtorch.impl.kernels.index import kv_of
from bendtorch.impl.kernels import libm
from bendtorch.impl.layers.attention import Attention
from bendtorch.laws.registry import law, need_threads
from bendtorch.laws.strategies import arrays, attn_shapes, elems, scales

F32 = np.float32
NAN = F32(np.nan)


@dataclass
class Case:
    """One attention problem: shapes, scale and the inputs (Q n x w, K and V n x kvw, dO n x w)."""

    b: int
    t: int
    kv: int
    g: int
    hd: int
    sc: np.float32
    q: Any
    k: Any
    v: Any
    dy: Any

    @property
    def n(self) -> int:
        return self.b * self.t

    @property
    def w(self) -> int:
        return self.kv * self.g * self.hd

    @property
    def kvw(self) -> int:
        return self.kv * self.hd

    def layer(self, par: bool | None = None) -> Any:
        return Attention(self.n, self.w, self.kvw, self.b, self.t, self.kv, self.g, self.hd, self.sc, par)

    def fwd(self, par: bool | None = None, q: Any = None, k: Any = None, v: Any = None) -> Any:
        x = (self.q if q is None else q, (self.k if k is None else k, self.v if v is None else v))
        return self.layer(par).fwd(None, x).y

    def bwd(self, par: bool | None = None, q: Any = None, k: Any = None, v: Any = None, dy: Any = None) -> Any:
        lay = self.layer(par)
        x = (self.q if q is None else q, (self.k if k is None else k, self.v if v is None else v))
        f = lay.fwd(None, x)
        dq, (dk, dv) = lay.bwd(None, f.s, self.dy if dy is None else dy, None).dx
        return dq, dk, dv


@st.composite
def cases(draw: st.DrawFn, /, el: Any = None, hd_at_least_t: bool = False, **shape: int) -> Case:
    b, t, kv, g, hd = draw(attn_shapes(**shape))
    if hd_at_least_t:
        hd = t + draw(st.integers(0, 2))
    n, w, kvw = b * t, kv * g * hd, kv * hd
    e = el if el is not None else elems(1e3)
    return Case(b, t, kv, g, hd, draw(scales()), draw(arrays((n, w), e)), draw(arrays((n, kvw), e)),
                draw(arrays((n, kvw), e)), draw(arrays((n, w), e)))


def mk(b: int, t: int, kv: int, g: int, hd: int, sc: float, q: Any, k: Any, v: Any, dy: Any = None) -> Case:
    """A hand-written case for @example."""
    q, k, v = (np.array(a, F32).reshape(b * t, -1) for a in (q, k, v))
    return Case(b, t, kv, g, hd, F32(sc), q, k, v, np.ones_like(q) if dy is None else np.array(dy, F32))


# ---- the seed's order, written out from main.bend (sdot line 1304, psmc line 1372, gfix line 2415) ----

def sdot(a: Any, b: Any) -> np.float32:
    """a[0] b[0] + a[1] b[1] + ... left to right from +0.0, each product and sum rounded to float32."""
    acc = F32(0.0)
    for x, y in zip(a, b):
        acc = F32(acc + F32(F32(x) * F32(y)))
    return acc


def fmax(a: np.float32, b: np.float32) -> np.float32:
    return b if (b > a or a != a) else a


def ref_probs(qs: Any, ks: Any, sc: np.float32) -> Any:
    """P of one head (t x t): row i is the softmax of the i + 1 scaled scores against keys 0..i (prow, line 2290):
    max from the first (pmax0), e = expf(x - m) summed left to right from +0.0 (pexp), each e / sum (pdiv); the
    positions after i stay +0.0."""
    t = qs.shape[0]
    p = np.zeros((t, t), F32)
    for i in range(t):
        s = [F32(sdot(qs[i], ks[j]) * sc) for j in range(i + 1)]
        m = s[0]
        for x in s[1:]:
            m = fmax(m, x)
        es = [libm.expf(F32(x - m)) for x in s]
        acc = F32(0.0)
        for e in es:
            acc = F32(acc + e)
        p[i, :i + 1] = [F32(e / acc) for e in es]
    return p


def ref_g(p: Any, ds: Any, vs: Any, sc: np.float32) -> Any:
    """G of one head (grow, line 2464): dP[i, j] = sdot(dO row i, V row j) for j <= i, s = sum of dP P over the
    i + 1 positions from +0.0, G = (P (dP - s)) sc; the positions after i stay +0.0."""
    t = p.shape[0]
    gm = np.zeros((t, t), F32)
    for i in range(t):
        dp = [sdot(ds[i], vs[j]) for j in range(i + 1)]
        s = F32(0.0)
        for j in range(i + 1):
            s = F32(s + F32(dp[j] * p[i, j]))
        gm[i, :i + 1] = [F32(F32(p[i, j] * F32(dp[j] - s)) * sc) for j in range(i + 1)]
    return gm


def head_cols(hi: int, g: int, hd: int) -> tuple[slice, slice]:
    hc, kc = AK._head_cols_py(hi, g, hd)
    return slice(hc, hc + hd), slice(kc, kc + hd)


# ---------------------------------------------------------------------------------------------------------------


@st.composite
def causal_problems(draw: Any) -> Any:
    c = draw(cases(hd_at_least_t=True, max_b=3, max_t=6, max_kv=2))
    bi = draw(st.integers(0, c.b - 1))
    i = draw(st.integers(0, c.t - 1))
    m = c.t - i - 1
    bad = draw(st.booleans())
    el = elems(1e3, allow_nan=bad, allow_infinity=bad)
    return c, bi, i, draw(arrays((m, c.w), el)), draw(arrays((m, c.kvw), el)), draw(arrays((m, c.kvw), el))


def assert_poisoned_by_later(c: Any, base: Any, later: Any, r0: int, i: int, got: Any, keep: Any) -> None:
    """got equals base bit for bit on the kept rows, except where a non-finite number among the `later` key or
    value rows (positions i+1.. of the sequence from row r0) reaches them through a sum over all t positions: the
    first such position j in a key/value column makes NaN every row before j of the query columns reading it."""
    want = base.copy()
    for hi in range(c.kv * c.g):
        qc, kc = head_cols(hi, c.g, c.hd)
        for d in range(c.hd):
            bad = np.flatnonzero(~np.isfinite(later[:, kc.start + d]))
            if bad.size:
                want[r0:r0 + i + 1 + int(bad[0]), qc.start + d] = NAN
    nan_w = np.isnan(want[keep])
    assert np.all(np.isnan(got[keep][nan_w]))
    assert np.array_equal(got[keep][~nan_w].view(np.uint32), want[keep][~nan_w].view(np.uint32))


@law("attention", "causal", "bit for bit; an inf/NaN value at a later position makes earlier rows NaN in its column")
@given(causal_problems())
@example((mk(1, 2, 1, 1, 2, 1.0, [[1, 1], [1, 1]], [[1, 1], [1, 1]], [[1, 2], [3, 4]]), 0, 0,
          np.ones((1, 2), F32), np.ones((1, 2), F32), np.array([[np.inf, 0]], F32)))
def test_causal(prob: Any) -> None:
    """`causal` (main.bend lines 2287-2291, "the softmax over as many positions as were written: i + 1 (the law
    causal). The positions after i are never written and keep their zeros"): the softmax of query position i runs over
    exactly i + 1 positions, and changing queries, keys or values at later positions leaves row i's output bit for
    bit.

    Part 1, bit for bit: with V one-hot, O shows P; row i of every head equals the softmax of exactly its i + 1
    scores in the seed's order (ref_probs), and its positions after i are +0.0.
    Part 2, bit for bit for finite values, with one exception found by this law: O = P·V runs over ALL t positions
    (pmul, line 2311: the zeros after i are multiplied too), so an infinite or NaN value at a later position j makes
    0 * inf = NaN, and O[r, c] is NaN for every r < j of its sequence in every column c reading that value. Rows of
    other sequences and every other number keep their bits."""
    c, bi, i, nq, nk, nv = prob
    r0 = bi * c.t
    # part 1: V one-hot in each key/value head's columns, O = P
    v1 = np.zeros_like(c.v)
    for kvh in range(c.kv):
        for j in range(c.t):
            v1[j::c.t, kvh * c.hd + j] = F32(1.0)
    o = c.fwd(v=v1)
    rows = slice(r0, r0 + c.t)
    for hi in range(c.kv * c.g):
        qc, kc = head_cols(hi, c.g, c.hd)
        p = ref_probs(c.q[rows, qc], c.k[rows, kc], c.sc)
        got = o[rows, qc][:, :c.t]
        assert same_bits(got, p), f"head {hi}: P differs from the softmax over i + 1 positions"
        assert np.all(o[rows, qc][:, c.t:].view(np.uint32) == 0)
    # part 2: later positions changed
    o0 = c.fwd()
    q2, k2, v2 = c.q.copy(), c.k.copy(), c.v.copy()
    later = slice(r0 + i + 1, r0 + c.t)
    q2[later], k2[later], v2[later] = nq, nk, nv
    o2 = c.fwd(q=q2, k=k2, v=v2)
    keep = np.ones(c.n, bool)
    keep[later] = False
    assert_poisoned_by_later(c, o0, nv, r0, i, o2, keep)


@st.composite
def key_problems(draw: Any) -> Any:
    c = draw(cases(max_b=3, max_t=6))
    bi = draw(st.integers(0, c.b - 1))
    i = draw(st.integers(0, c.t - 1))
    m = c.t - i - 1
    bad = draw(st.booleans())
    el = elems(1e3, allow_nan=bad, allow_infinity=bad)
    return c, bi, i, draw(arrays((m, c.kvw), el))


@law("attention", "causal_keys", "forward bit for bit for any keys; dQ bit for bit for finite later keys")
@given(key_problems())
@example((mk(1, 2, 1, 1, 1, 1.0, [[1], [1]], [[1], [1]], [[1], [1]]), 0, 0, np.array([[np.nan]], F32)))
def test_causal_keys(prob: Any) -> None:
    """`causal_keys` (qrow, main.bend lines 2244-2247: "against keys 0..i ..., the one place attention reads keys,
    i + 1 of them"): query i reads keys 0..i only. Forward, bit for bit: keys after position i replaced by anything
    (NaN and infinities included) leave O's rows 0..i, and every row of the other sequences, bit for bit.

    Backward, an exception this law states: dQ = G·K (pmul, line 2495) runs over ALL t keys, the zeros of G after i
    included, so a finite later key leaves dQ's rows 0..i bit for bit but an infinite or NaN key at a later position j
    makes 0 * inf = NaN in dQ[r, c] for every r < j reading that key column (dK and dV of rows 0..i: bit for bit
    whenever those keys are finite)."""
    c, bi, i, nk = prob
    r0 = bi * c.t
    later = slice(r0 + i + 1, r0 + c.t)
    k2 = c.k.copy()
    k2[later] = nk
    keep = np.ones(c.n, bool)
    keep[later] = False
    assert same_bits(c.fwd(k=k2)[keep], c.fwd()[keep])
    dq0, _, _ = c.bwd()
    dq2, _, _ = c.bwd(k=k2)
    assert_poisoned_by_later(c, dq0, nk, r0, i, dq2, keep)


@st.composite
def grad_problems(draw: Any) -> Any:
    c = draw(cases(hd_at_least_t=True, max_b=3, max_t=6, max_kv=2))
    bi = draw(st.integers(0, c.b - 1))
    i = draw(st.integers(0, c.t - 1))
    bad = draw(st.booleans())
    row = draw(arrays((c.w,), elems(1e3, allow_nan=bad, allow_infinity=bad)))
    first = draw(st.integers(0, c.g - 1))
    return c, bi, i, row, first


@law("attention", "causal_grad", "bit for bit (+0.0); dV after i is NaN where dO's row i is inf/NaN")
@given(grad_problems())
@example((mk(1, 2, 1, 1, 2, 1.0, [[1, 0], [0, 1]], [[1, 1], [1, 1]], [[1, 1], [1, 1]]), 0, 0,
          np.array([np.inf, 1], F32), 0))
def test_causal_grad(prob: Any) -> None:
    """`causal_grad` (grow, main.bend lines 2460-2465: "G starts as zeros and nothing else writes the row, so its
    positions after i stay 0: no gradient reaches a key or value after the query's position").

    Part 1: dO zero but at query row i of one sequence: dK and dV are +0.0, bit for bit, at every position after i
    of that sequence and everywhere in the other sequences. Exception (found by this law): dV = Pᵀ·dO (pacc,
    line 2484) multiplies P's zeros after i too, so an infinite or NaN dO[i, c] makes dV NaN at every later position
    in the column its key/value head takes c to (dK stays +0.0).
    Part 2, bit for bit: G read through dK (Q one-hot in one head of each group, zero in the others): G's positions
    after i are +0.0 in every row i, and its positions 0..i are the seed's (P (dP - s)) sc (ref_g; compared as
    numbers, since the dK sum turns -0 into +0)."""
    c, bi, i, row, first = prob
    r0 = bi * c.t
    # part 1
    dy = np.zeros_like(c.dy)
    dy[r0 + i] = row
    _, dk, dv = c.bwd(dy=dy)
    after = np.zeros(c.n, bool)
    after[r0 + i + 1:r0 + c.t] = True
    others = np.ones(c.n, bool)
    others[r0:r0 + c.t] = False
    assert np.all(dk[after | others].view(np.uint32) == 0)
    assert np.all(dv[others].view(np.uint32) == 0)
    want_nan = np.zeros(c.kvw, bool)
    for hi in range(c.kv * c.g):
        qc, kc = head_cols(hi, c.g, c.hd)
        want_nan[kc] |= ~np.isfinite(row[qc])
    assert np.all(np.isnan(dv[after][:, want_nan]))
    assert np.all(dv[after][:, ~want_nan].view(np.uint32) == 0)
    # part 2: G through dK
    q1 = np.zeros_like(c.q)
    for j in range(c.kv):
        qc, _ = head_cols(j * c.g + first, c.g, c.hd)
        for r in range(c.t):
            q1[r0 + r::c.t, qc.start + r] = F32(1.0)
    _, dk1, _ = c.bwd(q=q1)
    rows = slice(r0, r0 + c.t)
    for j in range(c.kv):
        hi = j * c.g + first
        qc, kc = head_cols(hi, c.g, c.hd)
        gm = ref_g(ref_probs(q1[rows, qc], c.k[rows, kc], c.sc), c.dy[rows, qc], c.v[rows, kc], c.sc)
        seen = dk1[rows, kc][:, :c.t].T  # seen[d, j] = G[d, j]
        upper = np.triu(np.ones((c.t, c.t), bool), 1)
        assert np.all(seen[upper].view(np.uint32) == 0), "G has a nonzero position after its query"
        assert np.array_equal(seen[~upper], gm[~upper])


@st.composite
def group_problems(draw: st.DrawFn) -> Case:
    return draw(cases(el=elems(1e3), max_b=2, max_t=5))


@law("attention", "kv_of_group", "bit for bit")
@given(group_problems())
def test_kv_of_group(c: Case) -> None:
    """`kv_of_group` (kv_of, main.bend lines 2214-2217: "the forward and the backward pass both pick it here (the
    law kv_of_group says which heads share one)"): query heads a and b share a key/value head exactly when
    a // g == b // g. Observed in both passes: with key/value head j's columns of K and V poisoned (NaN), the query
    heads whose O (forward) and dQ (backward) become all NaN are exactly those with hi // g == j; every other head's
    O and dQ, and every other key/value head's dK and dV, keep their bits."""
    h = c.kv * c.g
    assert [kv_of(a, c.g) for a in range(h)] == [a // c.g for a in range(h)]
    o0 = c.fwd()
    dq0, dk0, dv0 = c.bwd()
    for j in range(c.kv):
        k2, v2 = c.k.copy(), c.v.copy()
        k2[:, j * c.hd:(j + 1) * c.hd] = NAN
        v2[:, j * c.hd:(j + 1) * c.hd] = NAN
        o = c.fwd(k=k2, v=v2)
        dq, dk, dv = c.bwd(k=k2, v=v2)
        for hi in range(h):
            qc, _ = head_cols(hi, c.g, c.hd)
            if hi // c.g == j:
                assert np.all(np.isnan(o[:, qc])) and np.all(np.isnan(dq[:, qc]))
            else:
                assert same_bits(o[:, qc], o0[:, qc]) and same_bits(dq[:, qc], dq0[:, qc])
        for jj in range(c.kv):
            if jj != j:
                cols = slice(jj * c.hd, (jj + 1) * c.hd)
                assert same_bits(dk[:, cols], dk0[:, cols]) and same_bits(dv[:, cols], dv0[:, cols])


@st.composite
def col_problems(draw: Any) -> Any:
    c = draw(cases(max_b=2, max_t=5))
    return c, draw(st.integers(0, c.kv * c.g - 1))


@law("attention", "kv_cols", "bit for bit")
@given(col_problems())
def test_kv_cols(prob: Any) -> None:
    """`kv_cols` (head_cols, main.bend lines 2364-2372: "the columns query head hi reads: its own hd columns of q
    (hc) and those of its key/value head kv_of(hi, g) in k and v (kc); both passes take their columns from here"):
    head i reads its own hd columns of Q and the columns of its key/value head in K and V, in both passes. Every
    other column of Q, K, V and dO set to NaN leaves head i's O (forward) and dQ (backward) bit for bit; every column
    outside key/value head j's group (its g query heads in Q and dO, its own in K and V) set to NaN leaves its dK and
    dV bit for bit."""
    c, hi = prob
    qc, kc = head_cols(hi, c.g, c.hd)
    o0 = c.fwd()
    dq0, dk0, dv0 = c.bwd()

    def poison(a: Any, keep: slice) -> Any:
        z = np.full_like(a, NAN)
        z[:, keep] = a[:, keep]
        return z

    q2, k2, v2, d2 = poison(c.q, qc), poison(c.k, kc), poison(c.v, kc), poison(c.dy, qc)
    assert same_bits(c.fwd(q=q2, k=k2, v=v2)[:, qc], o0[:, qc])
    assert same_bits(c.bwd(q=q2, k=k2, v=v2, dy=d2)[0][:, qc], dq0[:, qc])
    j = hi // c.g
    grp = slice(j * c.g * c.hd, (j + 1) * c.g * c.hd)
    _, dk, dv = c.bwd(q=poison(c.q, grp), k=k2, v=v2, dy=poison(c.dy, grp))
    assert same_bits(dk[:, kc], dk0[:, kc]) and same_bits(dv[:, kc], dv0[:, kc])


def _threads(k: int) -> None:
    need_threads(k)
    numba.set_num_threads(k)


@st.composite
def par_problems(draw: st.DrawFn) -> Case:
    any_el = elems(1e3, allow_nan=True, allow_infinity=True)
    return draw(cases(el=st.one_of(any_el, elems(1e30)), max_b=9, max_t=4, max_kv=2, max_g=2, max_hd=3))


@law("attention", "attn_par_fwd", "bit for bit")
@given(par_problems())
def test_attn_par_fwd(c: Case) -> None:
    """`attn_par_fwd` (main.bend lines 2543, 2595-2603, 2692-2699: "the laws attn_par_fwd and attn_par_bwd show the
    tree gives the sequences in order, as one after another"): the parallel tree over sequences gives the same bits,
    in the same order, as the sequences one after another, for every b. Here: par=True on 1 and on 2 threads, par=None
    (impl's choice) and par=False give the same O, bit for bit (inf and NaN inputs included), and each sequence run on
    its own (b = 1) gives its rows of O in order."""
    ref = c.fwd(par=False)
    old = numba.get_num_threads()
    try:
        for nt in (1, 2):
            _threads(nt)
            assert same_bits(c.fwd(par=True), ref)
            assert same_bits(c.fwd(par=None), ref)
    finally:
        numba.set_num_threads(old)
    for bi in range(c.b):
        rs = slice(bi * c.t, (bi + 1) * c.t)
        one = replace(c, b=1, q=c.q[rs], k=c.k[rs], v=c.v[rs], dy=c.dy[rs])
        assert same_bits(one.fwd(par=False), ref[rs])


@law("attention", "attn_par_bwd", "bit for bit")
@given(par_problems())
def test_attn_par_bwd(c: Case) -> None:
    """`attn_par_bwd` (main.bend lines 2663-2670, 2708-2713): the backward pass's parallel tree over sequences gives
    the same dQ, dK, dV bits, in the same order, as the sequences one after another, for every b: par=True on 1 and 2
    threads, par=None and par=False agree bit for bit, and each sequence on its own gives its rows."""
    ref = c.bwd(par=False)
    old = numba.get_num_threads()
    try:
        for nt in (1, 2):
            _threads(nt)
            for par in (True, None):
                got = c.bwd(par=par)
                assert all(same_bits(a, b) for a, b in zip(got, ref))
    finally:
        numba.set_num_threads(old)
    for bi in range(c.b):
        rs = slice(bi * c.t, (bi + 1) * c.t)
        one = replace(c, b=1, q=c.q[rs], k=c.k[rs], v=c.v[rs], dy=c.dy[rs])
        assert all(same_bits(a, b[rs]) for a, b in zip(one.bwd(par=False), ref))
