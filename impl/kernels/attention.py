"""Causal grouped-query attention's loops (main.bend lines 2199-2742), float32, in the seed's order.

Shapes: rows are b sequences of t positions (n = b*t rows); Q is n x w with w = h*hd (h = kv*g query heads), K and V
are n x kvw with kvw = kv*hd. Query head hi reads key/value head `kv_of(hi, g) = hi // g` (line 2216), at the
columns `head_cols` gives (line 2369): the one place that picks columns, for both passes.

Forward, one (sequence, head) unit (`head_fwd`, line 2391), for each query position i in order:
  S[i, j] = (sum_d Q[i, hc+d] * K[j, kc+d]) * sc       j = 0..i only (qrow, line 2246); each dot left to right
                                                       from +0.0 (`sdot`, line 1304)
  P[i, 0..i] = softmax in place (psmc, line 1372): m = max from the first (pmax0, line 1326), e = expf(x - m)
               summed left to right from +0.0 (pexp, line 1334), then each e / sum (pdiv, line 1353);
               P[i, j > i] stay +0.0 (P starts as zeros)
  O[i, hc+d] = sum_{j=0..t-1} P[i, j] * V[j, kc+d]     over ALL t positions, left to right from +0.0 (pmul,
                                                       line 2311; the zeros after i are added too)
Backward, one (sequence, key/value head j) unit (`bgroup`, line 2525): for its g query heads hi = j*g .. j*g+g-1 in
order (bheads, line 2509): P again (probs), then row by row (grow, line 2464)
  dP[i, jj] = sum_d dO[i, hc+d] * V[jj, kc+d]          jj = 0..i only (drow), left to right from +0.0
  s        = sum_{jj=0..i} dP[i, jj] * P[i, jj]        from +0.0 (gr3, line 2450)
  G[i, jj] = (P[i, jj] * (dP[i, jj] - s)) * sc         jj = 0..i (gfix, line 2415); G[i, jj > i] stay +0.0
then dQ[i, hc+d] = sum_{jj=0..t-1} G[i, jj] * K[jj, kc+d]   (pmul, written, line 2495)
     dK[jj, kc+d] += sum_{i=0..t-1} G[i, jj] * Q[i, hc+d]   (pacc, line 2490: the sum from +0.0, then added into
                                                            the group's running sum, which starts at +0.0)
     dV[jj, kc+d] += sum_{i=0..t-1} P[i, jj] * dO[i, hc+d]  (pacc, line 2484)
every sum left to right over its index. The running sums are the output's own columns of the group (zeros first),
which no other unit touches.

Sequences are independent, and so are the heads of a sequence in the forward pass and the key/value groups in the
backward pass (each unit writes only its own rows and columns and reads only the inputs). The seed runs the sequences
in a tree of parallel lets when `attn_tree(b, t, w)` says so (line 2698), with the same bits as one after another
(the laws attn_par_fwd, attn_par_bwd). Here the parallel kernels `prange` over those units, each unit computed by the
same compiled function as in the sequential kernels, so the bits never depend on the thread count or on the choice;
`attn_parallel` decides, and the layer's `par` argument can force either way (tests check the law).

Speed (same bits): the four weighted sums over positions (O = P·V, dQ = G·K, dK += Gᵀ·Q, dV += Pᵀ·dO)
run through `_wsum`, the matrix product's register-blocked running sum (four output rows share each loaded row of
V, K, Q or dO), with Gᵀ and Pᵀ copied once per head so that every sum reads a row; each sum is still over all t
positions, left to right from +0.0, each product rounded before it is added.

Every literal inside the kernels is np.float32; exp is impl.kernels.libm.exp32 (impl's portable exp unless
BENDTORCH_LIBM=clib). The plain versions (`*_plain`) keep the same order with numpy float32 element-wise operations
(one rounding each) and impl.kernels.libm.expf (the same function).
"""

from __future__ import annotations


import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.index import group_heads, head_cols, kv_of, n_visible, row_of, source, unit_of
from bendtorch.impl.kernels.matmul import _block4
from bendtorch.impl.kernels.serial import called_and_inlined

F = npt.NDArray[np.float32]
F32 = np.float32
_ZERO = np.float32(0.0)


# ---------------------------------------------------------------------------------------------------------------
# The head's columns: the one place (shared by the kernels and the plain twins)
# ---------------------------------------------------------------------------------------------------------------


# kv_of, head_cols, row_of, n_visible, group_heads and unit_of live in impl.kernels.index (proved for every size by
# laws/proofs.py); the plain twins call their Python source.
_kv_of_py = source(kv_of)
_head_cols_py = source(head_cols)


def attn_tree(b: int, t: int, w: int) -> bool:
    """The seed's rule for running the sequences in parallel (attn_tree, main.bend line 2698): from 8 sequences on,
    or from 2 when each sequence is big (t*w >= 4096, counted in U32 as the seed does). The answer never changes the
    result."""
    tw = (t * w) & 0xFFFFFFFF
    return b >= 8 or (b >= 2 and tw >= 4096)


def attn_parallel(b: int, t: int, w: int) -> bool:
    """Whether impl runs the (sequence, head) units in parallel: the seed's attn_tree, and also a single sequence
    that is big (t*w >= 4096, e.g. SmolLM2's 128 x 576 at batch 1), whose heads are independent units here (the seed
    keeps one sequence on one thread; numba's threads are cheap enough to split it). Never changes the bits."""
    return attn_tree(b, t, w) or t * w >= 4096


# ---------------------------------------------------------------------------------------------------------------
# Compiled kernels
# ---------------------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _fmax(a: np.float32, b: np.float32) -> np.float32:
    """F32.max (pmax, line 1322): the larger; a NaN on one side gives the other (IEEE maxNum)."""
    if b > a or a != a:
        return b
    return a


@numba.njit(cache=True)
def _cols_t(a: F, r0: int, t: int, c0: int, hd: int) -> F:
    """The head's block a[r0..r0+t, c0..c0+hd] transposed (hd x t), so that the dots of one row against
    consecutive rows run as independent sums side by side (each still over d in order from +0.0)."""
    bt = np.empty((hd, t), dtype=np.float32)
    for j in range(t):
        for d in range(hd):
            bt[d, j] = a[r0 + j, c0 + d]
    return bt


@numba.njit(cache=True)
def _dots(a: F, ai: int, ac: int, bt: F, hd: int, m: int, out: F) -> None:
    """out[j] = a[ai, ac+0]*bt[0, j] + a[ai, ac+1]*bt[1, j] + ... (hd terms, left to right from +0.0) for
    j = 0..m-1: the seed's drow (line 2232) of row ai against m consecutive rows, one sdot each (line 1304)."""
    for j in range(m):
        out[j] = _ZERO
    for d in range(hd):
        x = a[ai, ac + d]
        for j in range(m):
            out[j] += x * bt[d, j]


@numba.njit(cache=True)
def _probs(q: F, k: F, p: F, r0: int, t: int, hd: int, hc: int, kc: int, sc: np.float32) -> None:
    """One head's P (t x t) of the sequence at rows r0.. (probs, line 2303): rows 0..t-1 in order, positions 0..i
    written, the rest left as they are (zeros: p is created zero and only ever written at j <= i). Every row's
    shifted scores x - m are gathered row after row (row i's i + 1 of them) and go through one exp_array call, then
    each row is summed and divided in order: exp_array gives exp32's bits number by number however it is called, so
    the bits are those of a call per row, but a row under exp_array's SHORT_ROW numbers runs exp32 one number at a
    time (about 17 ns each in the tiny model's attention, 16 positions: 2,176 calls a forward pass), and all rows
    together run its vector loop (the tiny model's forward 71-77 -> 44-48 us, backward 119-126 -> 102-107 us;
    Intel Xeon, family 6, model 167)."""
    kt = _cols_t(k, r0, t, kc, hd)
    srow = np.empty(t, dtype=np.float32)
    tri = np.empty(t * (t + 1) // 2, dtype=np.float32)
    off = 0
    for i in range(t):
        nv = n_visible(i)
        _dots(q, r0 + i, hc, kt, hd, nv, srow)
        for j in range(nv):
            srow[j] = srow[j] * sc
        m = srow[0]
        for j in range(1, nv):
            m = _fmax(m, srow[j])
        for j in range(nv):
            tri[off + j] = srow[j] - m
        off += nv
    libm.exp_array(tri, tri)
    off = 0
    for i in range(t):
        nv = n_visible(i)
        acc = _ZERO
        for j in range(nv):
            acc += tri[off + j]
        for j in range(nv):
            p[i, j] = tri[off + j] / acc
        off += nv


@numba.njit(inline="always")
def _wsum(wm: F, src: F, c0: int, hd: int, res: F) -> None:
    """res[i, d] = sum over jj = 0..t-1, left to right from +0.0, of wm[i, jj] * src[jj, c0 + d] (t = wm's size),
    each product rounded before its addition (pmul / pacc's sums, lines 2311, 2484-2495). Computed by the matrix
    product's register-blocked running sum (matmul._block4: four rows of wm share each load of src's row; the
    product src * wm is the same float32 number as wm * src), one block over all t positions. res has t + 3 rows
    (the last three are scratch for a last group of fewer than four rows). Inlined into the units that call it
    (numba's inline="always"): compiled as a function of its own, it was one more level whose code LLVM optimised
    and emitted again inside each caller, part of a cold start's compiling."""
    t = wm.shape[0]
    # not-transposed and k (and the columns, jt) from 0 as run-time values: literal False and 0 would have numba
    # compile a second specialisation of _block4 beside the matrix product's (about 0.9 s more of a cold start)
    at, k0 = t < 0, t - t
    for i in range(0, t, 4):
        nr = min(4, t - i)
        _block4(wm, at, i, nr, src, k0, t, c0, k0, hd, res, i)


@numba.njit(cache=True)
def _transpose(a: F, out: F) -> None:
    """out = aᵀ (square t x t; copies only)."""
    t = a.shape[0]
    for i in range(t):
        for j in range(t):
            out[j, i] = a[i, j]


def _fwd_unit_body(q: F, k: F, v: F, o: F, bi: int, hi: int, t: int, g: int, hd: int, sc: np.float32) -> None:
    """Sequence bi, query head hi: O's rows bi*t.. at the head's columns (head_fwd, line 2391)."""
    r0 = row_of(bi, 0, t)
    hc, kc = head_cols(hi, g, hd)
    p = np.zeros((t, t), dtype=np.float32)
    _probs(q, k, p, r0, t, hd, hc, kc, sc)
    res = np.empty((t + 3, hd), dtype=np.float32)
    _wsum(p, v[r0:r0 + t], kc, hd, res)
    for i in range(t):
        for d in range(hd):
            o[r0 + i, hc + d] = res[i, d]


def _bwd_unit_body(q: F, k: F, v: F, dd: F, dq: F, dk: F, dv: F, bi: int, j: int, t: int, g: int, hd: int,
                   sc: np.float32) -> None:
    """Sequence bi, key/value head j: its g query heads in head order (bgroup, line 2525); dK and dV of the group
    summed into dk and dv's columns of head j (zero on entry)."""
    r0 = row_of(bi, 0, t)
    p = np.zeros((t, t), dtype=np.float32)
    gm = np.zeros((t, t), dtype=np.float32)
    res = np.empty((t + 3, hd), dtype=np.float32)
    wt = np.empty((t, t), dtype=np.float32)
    srow = np.empty(t, dtype=np.float32)
    h0, h1 = group_heads(j, g)
    for hi in range(h0, h1):
        hc, kc = head_cols(hi, g, hd)
        _probs(q, k, p, r0, t, hd, hc, kc, sc)
        # G row by row (grow, line 2464)
        vt = _cols_t(v, r0, t, kc, hd)
        for i in range(t):
            nv = n_visible(i)
            _dots(dd, r0 + i, hc, vt, hd, nv, srow)
            for jj in range(nv):
                gm[i, jj] = srow[jj]
            s = _ZERO
            for jj in range(nv):
                s += gm[i, jj] * p[i, jj]
            for jj in range(nv):
                gm[i, jj] = (p[i, jj] * (gm[i, jj] - s)) * sc
        # dQ = G·K into the head's columns (pmul, line 2495)
        _wsum(gm, k[r0:r0 + t], kc, hd, res)
        for i in range(t):
            for d in range(hd):
                dq[r0 + i, hc + d] = res[i, d]
        # dK += Gᵀ·Q (pacc, line 2490): each sum over i from +0.0, then added
        _transpose(gm, wt)
        _wsum(wt, q[r0:r0 + t], hc, hd, res)
        for jj in range(t):
            for d in range(hd):
                dk[r0 + jj, kc + d] = dk[r0 + jj, kc + d] + res[jj, d]
        # dV += Pᵀ·dO (pacc, line 2484)
        _transpose(p, wt)
        _wsum(wt, dd[r0:r0 + t], hc, hd, res)
        for jj in range(t):
            for d in range(hd):
                dv[r0 + jj, kc + d] = dv[r0 + jj, kc + d] + res[jj, d]


# each unit compiled for the parallel loops and inlined into the sequential ones (the tiny model's train runs only
# those, and so compiles no level for the units)
_fwd_unit, _fwd_unit_inline = called_and_inlined(_fwd_unit_body)
_bwd_unit, _bwd_unit_inline = called_and_inlined(_bwd_unit_body)


@numba.njit(cache=True)
def _fwd_seq(q: F, k: F, v: F, o: F, b: int, t: int, kv: int, g: int, hd: int, sc: np.float32) -> None:
    """Every sequence, then every head, one after another (fleaf, line 2588)."""
    h = kv * g
    for bi in range(b):
        for hi in range(h):
            _fwd_unit_inline(q, k, v, o, bi, hi, t, g, hd, sc)


@numba.njit(cache=True, parallel=True)
def _fwd_par(q: F, k: F, v: F, o: F, b: int, t: int, kv: int, g: int, hd: int, sc: np.float32) -> None:
    """The same units as _fwd_seq, over threads: unit u is sequence u // h, head u mod h; each writes its own rows
    and columns of o (fpar, line 2596)."""
    h = kv * g
    for u in numba.prange(b * h):
        bi, hi = unit_of(u, h)
        _fwd_unit(q, k, v, o, bi, hi, t, g, hd, sc)


@numba.njit(cache=True)
def _bwd_seq(q: F, k: F, v: F, dd: F, dq: F, dk: F, dv: F, b: int, t: int, kv: int, g: int, hd: int,
             sc: np.float32) -> None:
    """Every sequence, then every key/value head in order (bleaf, line 2656)."""
    for bi in range(b):
        for j in range(kv):
            _bwd_unit_inline(q, k, v, dd, dq, dk, dv, bi, j, t, g, hd, sc)


@numba.njit(cache=True, parallel=True)
def _bwd_par(q: F, k: F, v: F, dd: F, dq: F, dk: F, dv: F, b: int, t: int, kv: int, g: int, hd: int,
             sc: np.float32) -> None:
    """The same units as _bwd_seq over threads: unit u is sequence u // kv, key/value head u mod kv (bpar,
    line 2663); a unit writes its g heads' columns of dq and its head's columns of dk and dv, rows of its sequence."""
    for u in numba.prange(b * kv):
        bi, j = unit_of(u, kv)
        _bwd_unit(q, k, v, dd, dq, dk, dv, bi, j, t, g, hd, sc)


def _check(q: F, k: F, v: F, b: int, t: int, kv: int, g: int, hd: int) -> None:
    n, w, kvw = b * t, kv * g * hd, kv * hd
    if q.shape != (n, w) or k.shape != (n, kvw) or v.shape != (n, kvw):
        raise ValueError(f"attention: Q {q.shape}, K {k.shape}, V {v.shape} do not fit b={b} t={t} kv={kv} "
                         f"g={g} hd={hd} (Q {n} x {w}, K and V {n} x {kvw})")


def _c(a: F) -> F:
    return np.ascontiguousarray(a, dtype=np.float32)


def attn_fwd(q: F, k: F, v: F, b: int, t: int, kv: int, g: int, hd: int, sc: np.float32,
             par: bool | None = None) -> F:
    """O (n x w) of causal grouped-query attention; par None lets `attn_parallel` decide, True / False force it."""
    _check(q, k, v, b, t, kv, g, hd)
    o = np.zeros((b * t, kv * g * hd), dtype=np.float32)
    use = attn_parallel(b, t, kv * g * hd) if par is None else par
    (_fwd_par if use else _fwd_seq)(_c(q), _c(k), _c(v), o, b, t, kv, g, hd, F32(sc))
    return o


def attn_bwd(q: F, k: F, v: F, dy: F, b: int, t: int, kv: int, g: int, hd: int, sc: np.float32,
             par: bool | None = None) -> tuple[F, F, F]:
    """(dQ, dK, dV) from the saved Q, K, V and dO = dy (attn_bwd, line 2735)."""
    _check(q, k, v, b, t, kv, g, hd)
    if dy.shape != q.shape:
        raise ValueError(f"attention: dy {dy.shape} must have Q's shape {q.shape}")
    dq = np.zeros(q.shape, dtype=np.float32)
    dk = np.zeros(k.shape, dtype=np.float32)
    dv = np.zeros(v.shape, dtype=np.float32)
    use = attn_parallel(b, t, kv * g * hd) if par is None else par
    (_bwd_par if use else _bwd_seq)(_c(q), _c(k), _c(v), _c(dy), dq, dk, dv, b, t, kv, g, hd, F32(sc))
    return dq, dk, dv


# ---------------------------------------------------------------------------------------------------------------
# Plain twins: the same order, numpy float32 element-wise operations looping over each sum's index
# ---------------------------------------------------------------------------------------------------------------


def _fmax_plain(a: np.float32, b: np.float32) -> np.float32:
    return b if (b > a or a != a) else a


def _probs_plain(qs: F, ks: F, t: int, hd: int, hc: int, kc: int, sc: np.float32) -> F:
    """P of one head of one sequence (qs, ks: the sequence's t rows). All scores are computed, those at j <= i are
    used; each dot accumulates over d left to right from +0.0."""
    s = np.zeros((t, t), dtype=np.float32)
    for d in range(hd):
        s = s + np.multiply.outer(qs[:, hc + d], ks[:, kc + d])
    s = s * F32(sc)
    p = np.zeros((t, t), dtype=np.float32)
    for i in range(t):
        m = s[i, 0]
        for j in range(1, i + 1):
            m = _fmax_plain(m, s[i, j])
        acc = F32(0.0)
        for j in range(i + 1):
            e = libm.expf(F32(s[i, j] - m))
            p[i, j] = e
            acc = F32(acc + e)
        p[i, :i + 1] = p[i, :i + 1] / acc
    return p


def _pv_plain(p: F, vs: F, kc: int, hd: int) -> F:
    """sum over all t positions j, left to right from +0.0, of p[i, j] * vs[j, kc + d]: t x hd."""
    t = p.shape[0]
    acc = np.zeros((p.shape[0], hd), dtype=np.float32)
    for j in range(t):
        acc = acc + p[:, j:j + 1] * vs[j:j + 1, kc:kc + hd]
    return acc


def attn_fwd_plain(q: F, k: F, v: F, b: int, t: int, kv: int, g: int, hd: int, sc: np.float32) -> F:
    _check(q, k, v, b, t, kv, g, hd)
    o = np.zeros(q.shape, dtype=np.float32)
    for bi in range(b):
        rs = slice(bi * t, bi * t + t)
        for hi in range(kv * g):
            hc, kc = _head_cols_py(hi, g, hd)
            p = _probs_plain(q[rs], k[rs], t, hd, hc, kc, F32(sc))
            o[rs, hc:hc + hd] = _pv_plain(p, v[rs], kc, hd)
    return o


def attn_bwd_plain(q: F, k: F, v: F, dy: F, b: int, t: int, kv: int, g: int, hd: int,
                   sc: np.float32) -> tuple[F, F, F]:
    _check(q, k, v, b, t, kv, g, hd)
    sc = F32(sc)
    dq = np.zeros(q.shape, dtype=np.float32)
    dk = np.zeros(k.shape, dtype=np.float32)
    dv = np.zeros(v.shape, dtype=np.float32)
    for bi in range(b):
        rs = slice(bi * t, bi * t + t)
        qs, ks, vs, ds = q[rs], k[rs], v[rs], dy[rs]
        for j in range(kv):
            dka = np.zeros((t, hd), dtype=np.float32)
            dva = np.zeros((t, hd), dtype=np.float32)
            for hi in range(j * g, j * g + g):
                hc, kc = _head_cols_py(hi, g, hd)
                p = _probs_plain(qs, ks, t, hd, hc, kc, sc)
                dp = np.zeros((t, t), dtype=np.float32)
                for d in range(hd):
                    dp = dp + np.multiply.outer(ds[:, hc + d], vs[:, kc + d])
                gm = np.zeros((t, t), dtype=np.float32)
                for i in range(t):
                    s = F32(0.0)
                    for jj in range(i + 1):
                        s = F32(s + F32(dp[i, jj] * p[i, jj]))
                    gm[i, :i + 1] = (p[i, :i + 1] * (dp[i, :i + 1] - s)) * sc
                dq[rs, hc:hc + hd] = _pv_plain(gm, ks, kc, hd)
                dka = dka + _pv_plain(np.ascontiguousarray(gm.T), qs, hc, hd)
                dva = dva + _pv_plain(np.ascontiguousarray(p.T), ds, hc, hd)
            dk[rs, j * hd:j * hd + hd] = dka
            dv[rs, j * hd:j * hd + hd] = dva
    return dq, dk, dv
