"""The losses' loops (main.bend lines 2745-2956): tree_sum, cross-entropy, MSE, NLL, in float32.

tree_sum (ts_pass / ts_go, lines 2759-2809): the sum of a[0..m-1] as a balanced tree, in place: while more than one
number is left, one pass sets a[i] = a[2i] + a[2i+1] for i = 0 .. m//2 - 1 in order and, when m is odd, carries the
last one, a[m//2] = a[m-1]; then m = (m + 1) // 2. m <= 1 gives a[0] (m = 0 here gives +0.0: the seed's zero-size
array is one leaf holding 0.0, zeros_a, line 1039).

Cross-entropy (CrossEntropy, line 2894), per row of z with label y, nf = float32(n):
    m = row max (pmax0, line 1326);  e[j] = exp(z[j] - m) (pexp, line 1334; its running sum is not used);
    s = tree_sum(copy of e) (cesm3, line 2821);  p[j] = e[j] / s (pdiv);  ls = log(s)
    y < c:   term = (z[y] - m) - ls, z[y] read before the row is overwritten (ce_pick3, line 2854)
    y >= c:  term = log(max(0.0, 1e-12)) = log(1e-12) (ce_bad, line 2859), and no class is hit
    dz[j] = (p[j] - [j == y]) / nf (ce_g, line 2840)
and loss = 0.0, then loss = loss - term row after row (ce_pick2, line 2849); the result is loss / nf (ce_fin).
The rows' softmaxes run under prange (each row on its own); the loss is summed afterwards, in row order, from the
per-row terms, which are exactly the numbers the seed subtracts.

MSE (line 2918): d = y - t; q = d*d; dy = d * kk with kk = 2 / float32(n*c) rounded once (mse_l, line 2904);
loss = tree_sum(q) / float32(n*c) (mse_fin, line 2911).

NLL (line 2953): v = -(1 / float32(n)); acc = 0.0, then row after row acc = acc + lp[i, y] (or acc + 0.0 for a label
past the last class, whose gradient row stays zero); g[i, y] = v; loss = -(acc / float32(n)) (nll_fin, line 2947).

Labels reach these kernels as int64, a label >= c standing for "past the last class" (impl.losses clamps them to
c first, so huge labels do not overflow).

Every kernel is compiled with error_model="numpy": a float division by zero gives the IEEE infinity or NaN, as the
seed's F32 division does, instead of numba's default ZeroDivisionError (same bits otherwise).
"""

from __future__ import annotations


import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import sized

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.elementwise import lib_map
from bendtorch.impl.kernels.index import ts_carry, ts_next, ts_pair, ts_pairs
from bendtorch.impl.kernels.rows import row_max

F = npt.NDArray[np.float32]
I = npt.NDArray[np.int64]
F32 = np.float32

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_TINY = np.float32(0.000000000001)   # ce_bad's 1e-12, line 2862; F32.max(0.0, 1e-12) picks it


# ---------------------------------------------------------------------------------------------------------------
# tree_sum
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def tree_sum_inplace(a: F, m: int) -> np.float32:
    """tree_sum(m, a) (line 2808), over the first m numbers of the flat a, in place (a is scratch)."""
    if m == 0:
        return _ZERO
    while m > 1:  # the pairing is impl.kernels.index's ts_* (proved for every m by laws/proofs.py)
        for i in range(ts_pairs(m)):
            left, right = ts_pair(i)
            a[i] = a[left] + a[right]
        odd, src, dst = ts_carry(m)
        if odd:
            a[dst] = a[src]
        m = ts_next(m)
    return np.float32(a[0])


def tree_sum(a: F) -> np.float32:
    """tree_sum over every number of a (any shape), on a copy."""
    sc = np.array(a, dtype=F32, copy=True).reshape(-1)
    return F32(tree_sum_inplace(sc, sc.size))


def tree_sum_plain(a: F) -> np.float32:
    """ts_go / ts_pass (lines 2791-2809) literally, on a Python list of float32 scalars."""
    xs = [F32(v) for v in np.asarray(a, dtype=F32).reshape(-1)]
    m = len(xs)
    if m == 0:
        return _ZERO
    while m > 1:
        for i in range(m // 2):
            xs[i] = F32(xs[2 * i] + xs[2 * i + 1])
        if m % 2 == 1:
            xs[m // 2] = xs[m - 1]
        m = (m + 1) // 2
    return xs[0]


# ---------------------------------------------------------------------------------------------------------------
# cross-entropy
# ---------------------------------------------------------------------------------------------------------------

@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def ce_into(z: F, lab: I, dz: F) -> np.float32:
    """Cross-entropy's loss (returned) and gradient (into dz), as the module docstring says."""
    n, c = z.shape
    nf = np.float32(n)
    terms = np.empty(n, dtype=np.float32)
    bad = libm.log32(_TINY)
    for i in numba.prange(n):
        m = row_max(z, i)
        for j in range(c):
            dz[i, j] = z[i, j] - m
        libm.exp_array(dz[i], dz[i])
        sc = dz[i].copy()
        s = tree_sum_inplace(sc, c)
        y = lab[i]
        if y < c:
            terms[i] = (z[i, y] - m) - libm.log32(s)
        else:
            terms[i] = bad
        for j in range(c):
            h = _ONE if j == y else _ZERO
            dz[i, j] = (dz[i, j] / s - h) / nf
    loss = _ZERO
    for i in range(n):
        loss = loss - terms[i]
    return loss / nf


def ce_plain(z: F, lab: I) -> tuple[np.float32, F]:
    """Cross-entropy with numpy float32 rows and Python loops over the rows, in the seed's order."""
    n, c = z.shape
    nf = F32(n)
    dz = np.empty_like(z)
    loss = _ZERO
    with np.errstate(all="ignore"):
        for i in range(n):
            row = z[i]
            m = row[0]
            for v in row[1:]:
                m = v if m < v else m
            e = lib_map(libm.expf, row - m)
            s = tree_sum_plain(e)
            y = int(lab[i])
            if y < c:
                xy = row[y]
                loss = F32(loss - F32(F32(xy - m) - libm.logf(s)))
            else:
                loss = F32(loss - libm.logf(_TINY))
            hit = (np.arange(c) == y).astype(F32)
            dz[i] = (e / s - hit) / nf
        return F32(loss / nf), dz


# ---------------------------------------------------------------------------------------------------------------
# MSE
# ---------------------------------------------------------------------------------------------------------------

@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def mse_into(y: F, t: F, dy: F) -> np.float32:
    """MSE over flat arrays: d = y - t; dy = d * kk, kk = 2 / float32(m); loss = tree_sum(d*d) / float32(m)."""
    m = y.size
    mf = np.float32(m)
    kk = _TWO / mf
    q = np.empty(m, dtype=np.float32)
    for k in numba.prange(m):
        d = y[k] - t[k]
        q[k] = d * d
        dy[k] = d * kk
    return tree_sum_inplace(q, m) / mf


def mse_plain(y: F, t: F) -> tuple[np.float32, F]:
    with np.errstate(all="ignore"):
        mf = F32(y.size)
        kk = F32(_TWO / mf)
        d = y - t
        return F32(tree_sum_plain(d * d) / mf), d * kk


# ---------------------------------------------------------------------------------------------------------------
# NLL
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def nll_into(lp: F, lab: I, g: F) -> np.float32:
    """NLL's loss (returned) and gradient (into g, which must be zero): in row order (nll_rows, line 2940)."""
    n, c = lp.shape
    nf = np.float32(n)
    v = -(_ONE / nf)
    acc = _ZERO
    for i in range(n):
        y = lab[i]
        if y < c:
            g[i, y] = v
            acc = acc + lp[i, y]
        else:
            acc = acc + _ZERO
    return -(acc / nf)


def nll_plain(lp: F, lab: I) -> tuple[np.float32, F]:
    n, c = lp.shape
    with np.errstate(all="ignore"):
        nf = F32(n)
        v = F32(-F32(_ONE / nf))
        g = np.zeros_like(lp)
        acc = _ZERO
        for i in range(n):
            y = int(lab[i])
            if y < c:
                g[i, y] = v
                acc = F32(acc + lp[i, y])
            else:
                acc = F32(acc + _ZERO)
        return F32(-F32(acc / nf)), g
