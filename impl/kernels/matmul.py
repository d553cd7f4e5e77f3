"""Matrix products (the seed's bend-ml-tensor-array, not included: matmul_nt, matmul_precise, matmul_tn_acc,
col_sums_acc, add_row; used by Linear, main.bend lines 598-721, and LinearNB, lines 1920-1940), all in float32 with
ONE order over the summed dimension, written once in the core kernel `_mm` and reused by every product here.

The order ("blocked tree"), for each output C[i, j] = sum_k A[i, k] B[k, j] over k = 0..K-1:
  1. split k into consecutive blocks of KB: [0, KB), [KB, 2 KB), ..., the last one possibly shorter;
  2. within a block, a running sum left to right from +0.0: s = s + A[i, k] * B[k, j], the product rounded to
     float32 and then added (two roundings, no fused multiply-add: numba without fastmath does not contract);
  3. the block partials p[0..nb-1] added as the seed's tree_sum (main.bend lines 2759-2809): each pass sets
     p[q] = p[2q] + p[2q+1], the odd last one carried to p[m // 2], until one is left. K <= KB is a plain
     left-to-right sum (sdot's order, main.bend line 1304); K = 0 gives +0.0.
The fast kernel keeps the pass tree as a binary-counter stack (block b's partial merges with the stack's top while
b's low bits are 1; at the end the stack is folded from its smallest level up): the same additions on the same
operands, checked bit for bit against `mm_plain`, which runs the passes literally.

Why this order and KB = 16: measured with `.venv/bin/python -m bench.matmul --kb 8,16,32` (ulps of each float32
result against the exact (double-precision) product of the same float32 inputs, oracle.ulp.ulp_error; standard
normal inputs, seed 0; torch 2.13 CPU with 2 threads, MKL sgemm):

    max / median ulps; [in brackets: max |err| / (2^-24 sum_k |A[i,k] B[k,j]|), the matmul error scale]
    shape                   | torch (MKL)            | KB = 8                | KB = 16 (chosen)
    (64x32)@(32x32)         | 4341 / 0.94 [2.75]     | 17072 / 0.76 [1.41]   | 17072 / 0.85 [1.72]
    (64x576)@(576x64)       | 6728 / 2.56 [1.19]     | 9040 / 1.10 [0.43]    | 4915 / 1.17 [0.45]
    (128x576)@(576x576)     | 292427 / 2.72 [2.06]   | 225289 / 1.08 [0.60]  | 165947 / 1.21 [0.60]
    (128x576)@(576x1536)    | 4193868 / 2.70 [2.36]  | 306764 / 1.08 [0.60]  | 67670 / 1.20 [0.75]
    (128x1536)@(1536x576)   | 58833 / 2.89 [0.88]    | 124369 / 1.13 [0.32]  | 58833 / 1.25 [0.36]
    (576x128)@(128x576)     | 290702 / 1.97 [4.88]   | 296391 / 0.94 [1.33]  | 361927 / 1.06 [1.32]
    (128x576)@(576x49152)   | 16931964 / 2.70 [2.57] | 2410887 / 1.09 [0.70] | 5088132 / 1.20 [1.01]
    (128x49152)@(49152x576) | 1034654 / 4.31 [0.34]  | 51614 / 1.35 [0.08]   | 34045 / 1.45 [0.07]

The median and the bracketed error are below torch's on every shape for every KB <= 16 (the median about half
of torch's). The max is not a stable figure: it is the error of the one output whose exact value cancels most
(|exact| tiny, so its ulp is tiny), a draw between two methods' errors on one element. Over 40 seeds impl's
(KB = 16) max was <= torch's on 31 seeds for (64x576)@(576x64), 11 of 40 for (64x32)@(32x32), 7 of 10 for
(576x128)@(128x576), 10 of 10 for (128x576)@(576x576), 4 of 6 for (128x1536)@(1536x576); the median won on
every seed. For tiny K the products' own roundings (which MKL's fused multiply-adds avoid and this order, without
FMA, keeps) are a large part of the error, so impl's max there is no better than a coin flip.

Within a block the error grows with KB (a running sum), across blocks with log2(K / KB) (the tree); MKL's sgemm
uses fused multiply-adds (one rounding per term instead of two) but long running sums, so its error grows with K.
KB = 32 (median 1.02-1.65 ulps, bracketed error up to 2.75) and KB = 64 (median 1.0-2.0) have a higher median
than KB = 16 on every reference shape. KB = 16 rather than 8: about the same accuracy (median 1.2 against 1.1
ulps, the bracketed error alike) at 60 rather than 49 GFLOP/s on (128x576)@(576x576).

Speed: numba @njit(cache=True, parallel=True), prange over blocks of MB output rows only (never over a sum); per
row block, tiles of JT columns; per K-block and row, an i-k-j loop over a contiguous accumulator of JT numbers, eight
k per pass (each element still adds its terms in order), which LLVM vectorizes without fastmath.
GFLOP/s (2 threads, `python -m bench.matmul`):
    (128x576)@(576x576) 75, (128x576)@(576x1536) 56, (128x1536)@(1536x576) 76, (576x128)@(128x576) 62,
    (128x576)@(576x49152) 44, (128x49152)@(49152x576) 43 (torch: 140-200), best of a few runs on a shared
    2-core AMD EPYC (AVX-512); repeated runs of the first shape give 55-75.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

F = npt.NDArray[np.float32]
F32 = np.float32

# the block length over the summed dimension (see the module's docstring for the measurement behind it)
KB = 16
# columns per tile of the fast kernel (a speed choice only: the order per element does not depend on it)
JT = 256
# output rows per parallel task (a speed choice only: each block of B is reused from cache by MB rows)
MB = 16
_ZERO = np.float32(0.0)


# ---------------------------------------------------------------------------------------------------------------
# The core kernel: C = A·B (+ C when acc), A M x K, B K x N, row-major, in the blocked-tree order
# ---------------------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _block(a: F, i: int, b: F, k0: int, k1: int, j0: int, jn: int, s: F) -> None:
    """s[j] = the running sum, left to right from +0.0, of A[i, k] * B[k, j0 + j] over k0 <= k < k1, for j < jn.
    Eight terms per pass over s; within a pass each s[j] still adds its terms one after the other, each product
    rounded before its addition."""
    for j in range(jn):
        s[j] = _ZERO
    kk = k0
    while kk + 8 <= k1:
        x0 = a[i, kk]
        x1 = a[i, kk + 1]
        x2 = a[i, kk + 2]
        x3 = a[i, kk + 3]
        x4 = a[i, kk + 4]
        x5 = a[i, kk + 5]
        x6 = a[i, kk + 6]
        x7 = a[i, kk + 7]
        b0 = b[kk, j0:j0 + jn]
        b1 = b[kk + 1, j0:j0 + jn]
        b2 = b[kk + 2, j0:j0 + jn]
        b3 = b[kk + 3, j0:j0 + jn]
        b4 = b[kk + 4, j0:j0 + jn]
        b5 = b[kk + 5, j0:j0 + jn]
        b6 = b[kk + 6, j0:j0 + jn]
        b7 = b[kk + 7, j0:j0 + jn]
        for j in range(jn):
            s[j] = (((((((s[j] + x0 * b0[j]) + x1 * b1[j]) + x2 * b2[j]) + x3 * b3[j]) + x4 * b4[j])
                     + x5 * b5[j]) + x6 * b6[j]) + x7 * b7[j]
        kk += 8
    while kk < k1:
        x0 = a[i, kk]
        b0 = b[kk, j0:j0 + jn]
        for j in range(jn):
            s[j] = s[j] + x0 * b0[j]
        kk += 1


@numba.njit(cache=True, parallel=True)
def _mm(a: F, b: F, c: F, kb: int, acc: bool) -> None:
    """C[i, j] = (C[i, j] + ) blocked_tree_k(A[i, k] * B[k, j]). prange over blocks of MB output rows (never over
    the sum); per row block, tiles of JT columns; per tile, the K-blocks in order, each computed for the MB rows
    in turn (so the block's KB x JT numbers of B are read from cache MB times) and merged into that row's stack."""
    m, k = a.shape
    n = b.shape[1]
    nb = (k + kb - 1) // kb
    nrb = (m + MB - 1) // MB
    nlev = 1  # the stack's levels: the bit length of nb (at least 1)
    while (nb >> nlev) > 0:
        nlev += 1
    for rb in numba.prange(nrb):
        i0 = rb * MB
        mr = min(MB, m - i0)
        stacks = np.empty((MB, nlev, JT), dtype=np.float32)
        ss = np.empty((MB, JT), dtype=np.float32)
        for j0 in range(0, n, JT):
            jn = min(JT, n - j0)
            for blk in range(nb):
                for r in range(mr):
                    s = ss[r]
                    stack = stacks[r]
                    _block(a, i0 + r, b, blk * kb, min(k, (blk + 1) * kb), j0, jn, s)
                    # block blk done: merge it with the complete subtrees on its left (tree_sum's pairs)
                    t = blk
                    lev = 0
                    while t & 1:
                        sl = stack[lev]
                        for j in range(jn):
                            s[j] = sl[j] + s[j]
                        t >>= 1
                        lev += 1
                    sl = stack[lev]
                    for j in range(jn):
                        sl[j] = s[j]
            for r in range(mr):
                s = ss[r]
                stack = stacks[r]
                # fold what is left, smallest level first (tree_sum's carried odd ones)
                if nb == 0:
                    for j in range(jn):
                        s[j] = _ZERO
                else:
                    lo = 0
                    while not (nb >> lo) & 1:
                        lo += 1
                    sl = stack[lo]
                    for j in range(jn):
                        s[j] = sl[j]
                    for lev in range(lo + 1, nlev):
                        if (nb >> lev) & 1:
                            sl = stack[lev]
                            for j in range(jn):
                                s[j] = sl[j] + s[j]
                ct = c[i0 + r, j0:j0 + jn]
                if acc:
                    for j in range(jn):
                        ct[j] = ct[j] + s[j]
                else:
                    for j in range(jn):
                        ct[j] = s[j]


def _f32c(x: F, name: str) -> F:
    if not isinstance(x, np.ndarray) or x.ndim != 2 or x.dtype != np.float32:
        raise ValueError(f"matmul: {name} must be a 2-D float32 array, got "
                         f"{getattr(x, 'shape', None)} {getattr(x, 'dtype', type(x).__name__)}")
    return np.ascontiguousarray(x)


def mm(a: F, b: F, kb: int = KB) -> F:
    """C = A·B, A M x K, B K x N, in the blocked-tree order (the core every product below reuses)."""
    a = _f32c(a, "A")
    b = _f32c(b, "B")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: A is {a.shape}, B is {b.shape}: inner sizes differ")
    c = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    _mm(a, b, c, kb, False)
    return c


def mm_acc(a: F, b: F, c: F, kb: int = KB) -> F:
    """C <- C + A·B in place, with the bits of computing A·B apart (mm) and then adding it to C."""
    a = _f32c(a, "A")
    b = _f32c(b, "B")
    if a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]) or c.dtype != np.float32:
        raise ValueError(f"matmul: A is {a.shape}, B is {b.shape}, C is {c.shape} {c.dtype}")
    if not c.flags.c_contiguous:
        raise ValueError("matmul: the accumulator C must be C-contiguous (it is written in place)")
    _mm(a, b, c, kb, True)
    return c


def mm_plain(a: F, b: F, kb: int = KB) -> F:
    """The same order as `mm`, literally, in numpy float32 (one rounding per ufunc): each block's running sum of
    rounded outer products from +0.0, then the seed's tree_sum passes over the block partials."""
    m, k = a.shape
    n = b.shape[1]
    nb = (k + kb - 1) // kb
    parts = []
    for blk in range(nb):
        s = np.zeros((m, n), dtype=np.float32)
        for kk in range(blk * kb, min(k, (blk + 1) * kb)):
            s = s + np.multiply.outer(a[:, kk], b[kk, :])
        parts.append(s)
    if not parts:
        return np.zeros((m, n), dtype=np.float32)
    while len(parts) > 1:  # tree_sum's passes (main.bend lines 2791-2806)
        q = len(parts) // 2
        nxt = [parts[2 * p] + parts[2 * p + 1] for p in range(q)]
        if len(parts) % 2 == 1:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]


# ---------------------------------------------------------------------------------------------------------------
# The products of bend-ml-tensor-array, each an arrangement of its operands for the core
# ---------------------------------------------------------------------------------------------------------------


def matmul_nt(x: F, w: F) -> F:
    """y = x·Wᵀ (Linear's forward, main.bend line 618): x n x i, W o x i, y n x o; y[r, c] sums over i in the
    blocked-tree order. Wᵀ is copied row-major (i x o) for the core."""
    return mm(x, np.ascontiguousarray(w.T))


def matmul_precise(dy: F, w: F) -> F:
    """dX = dY·W (Linear's backward, main.bend line 640): dY n x o, W o x i, dX n x i; sums over o."""
    return mm(dy, w)


def matmul_tn_acc(dy: F, x: F, g: F) -> F:
    """g <- g + dYᵀ·X in place (main.bend lines 633-636): dY n x o, X n x i, g o x i; the product sums over the n
    rows in the blocked-tree order and is then added to g ("computed apart then added"). dYᵀ is copied row-major."""
    return mm_acc(np.ascontiguousarray(dy.T), x, g)


def col_sums_acc(dy: F, gb: F) -> F:
    """gb <- gb + the column sums of dY in place (main.bend line 628): dY n x o, gb 1 x o. The order is the blocked
    tree over the rows: the core's product ones(1 x n)·dY, whose products 1 * dY[r, c] are exact."""
    return mm_acc(np.ones((1, dy.shape[0]), dtype=np.float32), dy, gb)


def add_row(y: F, b: F) -> F:
    """y <- y + b in place, b (1 x o) added to every row of y (n x o) (main.bend line 613): one rounding each."""
    y += b
    return y


def matmul_plain(a: F, b: F) -> F:
    """mm_plain with the module's KB (for tests)."""
    return mm_plain(a, b, KB)
