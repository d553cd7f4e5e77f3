"""Row-wise kernels (main.bend lines 1290-1866): softmax, log-softmax, RMSNorm, LayerNorm, forward and backward,
over C-contiguous float32 matrices, each row on its own.

The orders, all the seed's (its row kernels, lines 1290-1385, keep the list version's bits, NOTES M6):
- a row's max (pmax0, line 1326): m = x[0], then m = max(m, x[j]) for j = 1.. in order, with Bend's
  F32.max(a, b) = (b if a < b else a): a NaN in the first place stays, a later NaN is passed over, and of
  two equal numbers (+0 and -0) the earlier stays;
- every sum runs left to right from +0.0, acc = acc + term (pexp, lsum, asum, sdot, ssq, csq, rmsb_dot, lnb_sums);
- every expression keeps the seed's grouping, each operation rounded once to float32 (no fused multiply-add);
- the parameter gradients dg, db (RMSNorm, LayerNorm) are summed row after row from zeros, dg[j] = dg[j] + v, and
  then added into the incoming gradient, g[j] = g[j] + dg[j] (Mat.sum2, line 1540).

Parallelism: rows under prange for the per-row outputs (y, dx); the column sums dg, db under prange over blocks of
columns, each column's sum still running over the rows in order. The plain twins (`*_plain`) compute the same
expressions with numpy float32 arrays: the rows at once, a loop over the columns for each sum (so the same order),
exp and log through `impl.kernels.libm`.

Every kernel is compiled with error_model="numpy": a float division by zero gives the IEEE infinity or NaN, as the
seed's F32 division does, instead of numba's default ZeroDivisionError (same bits otherwise).
"""

from __future__ import annotations

import math
from typing import cast

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import sized

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.elementwise import lib_map

F = npt.NDArray[np.float32]
F32 = np.float32

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
CB = 64   # columns per block in the column-sum loops (any value gives the same bits)


# ---------------------------------------------------------------------------------------------------------------
# softmax (psm, lines 1318-1376; sm_fwd, line 1404; sm_bwd, line 1435)
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def row_max(x: F, i: int) -> np.float32:
    """pmax0 (line 1326): the max of row i, from the first, F32.max(m, v) = v if m < v else m."""
    m = x[i, 0]
    for j in range(1, x.shape[1]):
        v = x[i, j]
        if m < v:
            m = v
    return np.float32(m)


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def softmax_fwd_into(x: F, y: F) -> None:
    """psm over each row (lines 1370-1376): m = row max; e[j] = exp(x[j] - m), s = ((0 + e[0]) + e[1]) + ...
    (pexp, line 1334); y[j] = e[j] / s (pdiv, line 1353)."""
    n, c = x.shape
    for i in numba.prange(n):
        m = row_max(x, i)
        for j in range(c):
            y[i, j] = x[i, j] - m
        libm.exp_array(y[i], y[i])
        s = _ZERO
        for j in range(c):
            s = s + y[i, j]
        for j in range(c):
            y[i, j] = y[i, j] / s


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def softmax_bwd_into(y: F, dy: F, dx: F) -> None:
    """smb_rows (line 1423): s = sdot(dy, y) = ((0 + dy[0]*y[0]) + dy[1]*y[1]) + ... (line 1304);
    dx[j] = y[j] * (dy[j] - s) (smb_fix, line 1410)."""
    n, c = y.shape
    for i in numba.prange(n):
        s = _ZERO
        for j in range(c):
            s = s + dy[i, j] * y[i, j]
        for j in range(c):
            dx[i, j] = y[i, j] * (dy[i, j] - s)


def softmax_fwd_plain(x: F) -> F:
    with np.errstate(all="ignore"):
        m = _row_max_plain(x)
        e = lib_map(libm.expf, x - m[:, None])
        s = _row_sum_plain(e)
        return e / s[:, None]


def softmax_bwd_plain(y: F, dy: F) -> F:
    with np.errstate(all="ignore"):
        s = _row_sum_plain(dy * y)
        return y * (dy - s[:, None])


# ---------------------------------------------------------------------------------------------------------------
# log-softmax (lines 1444-1522)
# ---------------------------------------------------------------------------------------------------------------

@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def logsoftmax_fwd_into(x: F, y: F) -> None:
    """lsm_row (line 1472): m = row max; s = sum of exp(x[j] - m) from +0.0 in order (lsum, line 1447);
    l = log(s); y[j] = (x[j] - m) - l (lw, line 1455)."""
    n, c = x.shape
    for i in numba.prange(n):
        m = row_max(x, i)
        for j in range(c):
            y[i, j] = x[i, j] - m
        libm.exp_array(y[i], y[i])             # y's row holds exp(x - m) until the last loop
        s = _ZERO
        for j in range(c):
            s = s + y[i, j]
        lg = libm.log32(s)
        for j in range(c):
            y[i, j] = (x[i, j] - m) - lg


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def logsoftmax_bwd_into(y: F, dy: F, dx: F) -> None:
    """lsmb_rows (line 1509): s = sum of dy from +0.0 in order (asum, line 1488); dx[j] = dy[j] - exp(y[j]) * s
    (lsmb_fix, line 1496)."""
    n, c = y.shape
    for i in numba.prange(n):
        s = _ZERO
        for j in range(c):
            s = s + dy[i, j]
        libm.exp_array(y[i], dx[i])             # dx's row holds exp(y) until the last loop
        for j in range(c):
            dx[i, j] = dy[i, j] - dx[i, j] * s


def logsoftmax_fwd_plain(x: F) -> F:
    with np.errstate(all="ignore"):
        m = _row_max_plain(x)
        s = _row_sum_plain(lib_map(libm.expf, x - m[:, None]))
        lg = lib_map(libm.logf, s)
        return (x - m[:, None]) - lg[:, None]


def logsoftmax_bwd_plain(y: F, dy: F) -> F:
    with np.errstate(all="ignore"):
        s = _row_sum_plain(dy)
        return dy - lib_map(libm.expf, y) * s[:, None]


# ---------------------------------------------------------------------------------------------------------------
# RMSNorm (lines 1524-1680): y = g * (x * r), r = 1 / sqrt(mean(x^2) + eps)
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def rms_inv_row(x: F, i: int, df: np.float32, eps: np.float32) -> np.float32:
    """ssq (line 1562): s = ((0 + x[0]*x[0]) + x[1]*x[1]) + ...; rms_inv (line 1570): 1 / sqrt((s / df) + eps)."""
    s = _ZERO
    for j in range(x.shape[1]):
        s = s + x[i, j] * x[i, j]
    return _ONE / math.sqrt(s / df + eps)


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def rms_fwd_into(x: F, g: F, eps: np.float32, y: F) -> None:
    """rmsf_row (line 1589): r = rms_inv(ssq(x)); y[j] = g[j] * (x[j] * r) (rms_w, line 1577)."""
    n, d = x.shape
    df = np.float32(d)
    for i in numba.prange(n):
        r = rms_inv_row(x, i, df, eps)
        for j in range(d):
            y[i, j] = g[0, j] * (x[i, j] * r)


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def rms_bwd_into(x: F, g: F, dy: F, eps: np.float32, dx: F, gacc: F) -> None:
    """rmsb_row (line 1653), per row: r = rms_inv(ssq(x)); s = sum of (dy[j]*g[j]) * (x[j]*r) from +0.0 in order
    (rmsb_dot, line 1620); m = s / df; dx[j] = ((dy[j]*g[j]) - (x[j]*r)*m) * r (rmsb_w, line 1633).
    Then dg[j] = sum over the rows in order, from +0.0, of dy[i, j] * (x[i, j]*r[i]) (dg_add, line 1627), and
    gacc[j] = gacc[j] + dg[j] (rms_b2, line 1668)."""
    n, d = x.shape
    df = np.float32(d)
    rr = np.empty(n, dtype=np.float32)
    for i in numba.prange(n):
        r = rms_inv_row(x, i, df, eps)
        rr[i] = r
        s = _ZERO
        for j in range(d):
            s = s + (dy[i, j] * g[0, j]) * (x[i, j] * r)
        m = s / df
        for j in range(d):
            dx[i, j] = ((dy[i, j] * g[0, j]) - (x[i, j] * r) * m) * r
    nb = (d + CB - 1) // CB
    for b in numba.prange(nb):
        j0 = b * CB
        j1 = min(d, j0 + CB)
        acc = np.zeros(j1 - j0, dtype=np.float32)
        u0 = np.uint64(j0)  # columns as unsigned indices (signed ones are read with gathers: FINDINGS)
        for i in range(n):
            r = rr[i]
            for jj in range(j1 - j0):
                ju = u0 + np.uint64(jj)
                acc[jj] = acc[jj] + dy[i, ju] * (x[i, ju] * r)
        for jj in range(j1 - j0):
            ju = u0 + np.uint64(jj)
            gacc[0, ju] = gacc[0, ju] + acc[jj]


def _rms_inv_plain(x: F, eps: np.float32) -> F:
    df = F32(x.shape[1])
    s = _row_sum_plain(x * x)
    return cast(F, _ONE / np.sqrt(s / df + F32(eps)))


def rms_fwd_plain(x: F, g: F, eps: np.float32) -> F:
    with np.errstate(all="ignore"):
        r = _rms_inv_plain(x, eps)
        return g * (x * r[:, None])


def rms_bwd_plain(x: F, g: F, dy: F, eps: np.float32, gacc: F) -> tuple[F, F]:
    """(dx, gacc + dg), gacc not written."""
    with np.errstate(all="ignore"):
        df = F32(x.shape[1])
        r = _rms_inv_plain(x, eps)[:, None]
        xh = x * r
        dxh = dy * g
        m = _row_sum_plain(dxh * xh) / df
        dx = (dxh - xh * m[:, None]) * r
        dg = _col_sum_plain(dy * xh)
        return dx, gacc + dg


# ---------------------------------------------------------------------------------------------------------------
# LayerNorm (lines 1682-1866): y = ((x - mu) * r) * g + b, r = 1 / sqrt(var + eps), var biased
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def ln_mr_row(x: F, i: int, df: np.float32, eps: np.float32) -> tuple[np.float32, np.float32]:
    """ln_mr (line 1709): mu = asum(x) / df (sum from +0.0 in order, line 1488); v = sum of (x[j] - mu)*(x[j] - mu)
    from +0.0 in order (csq, line 1688); r = 1 / sqrt((v / df) + eps) (ln_mr2, line 1698)."""
    d = x.shape[1]
    s = _ZERO
    for j in range(d):
        s = s + x[i, j]
    mu = s / df
    v = _ZERO
    for j in range(d):
        v = v + (x[i, j] - mu) * (x[i, j] - mu)
    return mu, _ONE / math.sqrt(v / df + eps)


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def ln_fwd_into(x: F, g: F, b: F, eps: np.float32, y: F) -> None:
    """lnf_row (line 1728): y[j] = (((x[j] - mu) * r) * g[j]) + b[j] (lnf_w, line 1716)."""
    n, d = x.shape
    df = np.float32(d)
    for i in numba.prange(n):
        mu, r = ln_mr_row(x, i, df, eps)
        for j in range(d):
            y[i, j] = ((x[i, j] - mu) * r) * g[0, j] + b[0, j]


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def ln_bwd_into(x: F, g: F, dy: F, eps: np.float32, dx: F, gg: F, gb: F) -> None:
    """lnb_row (line 1790), per row: mu, r as ln_mr; sa = sum of dy[j]*g[j], sb = sum of (dy[j]*g[j]) *
    ((x[j] - mu)*r), each from +0.0 in order (lnb_sums, line 1755); ma = sa / df, mb = sb / df;
    xh = (x[j] - mu) * r; dx[j] = (((dy[j]*g[j]) - ma) - xh*mb) * r (lnb_w, line 1771).
    Then dg[j], db[j] = sums over the rows in order, from +0.0, of dy[i, j]*xh[i, j] and dy[i, j] (ln_dw,
    line 1762), and gg[j] = gg[j] + dg[j], gb[j] = gb[j] + db[j] (ln_b2, line 1802)."""
    n, d = x.shape
    df = np.float32(d)
    mus = np.empty(n, dtype=np.float32)
    rr = np.empty(n, dtype=np.float32)
    for i in numba.prange(n):
        mu, r = ln_mr_row(x, i, df, eps)
        mus[i] = mu
        rr[i] = r
        sa = _ZERO
        sb = _ZERO
        for j in range(d):
            dxh = dy[i, j] * g[0, j]
            sa = sa + dxh
            sb = sb + dxh * ((x[i, j] - mu) * r)
        ma = sa / df
        mb = sb / df
        for j in range(d):
            xh = (x[i, j] - mu) * r
            dx[i, j] = (((dy[i, j] * g[0, j]) - ma) - xh * mb) * r
    nb = (d + CB - 1) // CB
    for bk in numba.prange(nb):
        j0 = bk * CB
        j1 = min(d, j0 + CB)
        ag = np.zeros(j1 - j0, dtype=np.float32)
        ab = np.zeros(j1 - j0, dtype=np.float32)
        u0 = np.uint64(j0)  # columns as unsigned indices (signed ones are read with gathers: FINDINGS)
        for i in range(n):
            mu = mus[i]
            r = rr[i]
            for jj in range(j1 - j0):
                ju = u0 + np.uint64(jj)
                ag[jj] = ag[jj] + dy[i, ju] * ((x[i, ju] - mu) * r)
                ab[jj] = ab[jj] + dy[i, ju]
        for jj in range(j1 - j0):
            ju = u0 + np.uint64(jj)
            gg[0, ju] = gg[0, ju] + ag[jj]
            gb[0, ju] = gb[0, ju] + ab[jj]


def _ln_mr_plain(x: F, eps: np.float32) -> tuple[F, F]:
    df = F32(x.shape[1])
    mu = _row_sum_plain(x) / df
    xc = x - mu[:, None]
    v = _row_sum_plain(xc * xc)
    return mu, _ONE / np.sqrt(v / df + F32(eps))


def ln_fwd_plain(x: F, g: F, b: F, eps: np.float32) -> F:
    with np.errstate(all="ignore"):
        mu, r = _ln_mr_plain(x, eps)
        return ((x - mu[:, None]) * r[:, None]) * g + b


def ln_bwd_plain(x: F, g: F, dy: F, eps: np.float32, gg: F, gb: F) -> tuple[F, F, F]:
    """(dx, gg + dg, gb + db), gg and gb not written."""
    with np.errstate(all="ignore"):
        df = F32(x.shape[1])
        mu, r = _ln_mr_plain(x, eps)
        xh = (x - mu[:, None]) * r[:, None]
        dxh = dy * g
        ma = _row_sum_plain(dxh) / df
        mb = _row_sum_plain(dxh * xh) / df
        dx = ((dxh - ma[:, None]) - xh * mb[:, None]) * r[:, None]
        return dx, gg + _col_sum_plain(dy * xh), gb + _col_sum_plain(dy)


# ---------------------------------------------------------------------------------------------------------------
# the plain twins' reductions, in the seed's orders
# ---------------------------------------------------------------------------------------------------------------

def _row_max_plain(x: F) -> F:
    """pmax0 for every row at once: a loop over the columns, m = where(m < v, v, m)."""
    m = x[:, 0].copy()
    for j in range(1, x.shape[1]):
        m = np.where(m < x[:, j], x[:, j], m)
    return m


def _row_sum_plain(a: F) -> F:
    """Each row's sum, left to right from +0.0 (a loop over the columns, every row at once)."""
    s = np.zeros(a.shape[0], dtype=F32)
    for j in range(a.shape[1]):
        s = s + a[:, j]
    return s


def _col_sum_plain(a: F) -> F:
    """Each column's sum as a 1 x c matrix, row after row from +0.0."""
    s = np.zeros((1, a.shape[1]), dtype=F32)
    for i in range(a.shape[0]):
        s = s + a[i:i + 1, :]
    return s
