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

Why this order and KB = 16: measured with `bendtorch study matmul --kb 8 16 32` (ulps of each float32 result against
the oracle's exact product of the same float32 inputs, oracle.ulp.ulp_error; standard normal inputs, seed 0; torch
2.13 CPU with 2 threads, MKL sgemm):

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
ulps, the bracketed error alike) at a higher speed (the study's GFLOP/s, each result with its machine record).

Speed (the order above is untouched, tests/test_speed_bits.py pins the bits of whole training runs and compares every
driver with mm_plain): numba @njit(cache=True, parallel=True), prange over tasks of independent outputs only (never over
a sum). A task is MB output rows by one tile of columns (tiles of equal widths, at most JT = 1024, column tile outermost
so the threads share one K x JT tile of B from the L2 cache); per K-block in order, the task's rows four at a time
(`_block4`: each loaded B[k, j] serves four rows' running sums, eight or four k per pass; and before them register tiles
that keep their sums in registers over the block: on CPUs with 16 vector registers `regtiles._tiles`, 4 x 16 in eight
lanes, and with 32 (AVX-512) `regtiles._tiles16`, 4 x 64 in sixteen), each row's partial merged into its stack. Products
below SERIAL_BELOW multiply-adds run the same task code on the calling thread (no thread pool; without the sixteen-lane
tiles, see _mm_task_inline). When B is bigger than the caches and A has few rows (the tied head's dX, 128 x 49152 by
49152 x 576) a task takes all rows and a share of the columns, so B is streamed once. A's elements are read one at a
time and C's written once, so either may be the transpose of the array given: matmul_tn_acc reads dYᵀ from dY, and
matmul_nt does not copy a big W (the 49152 x 576 head): it computes W·xᵀ and writes it transposed, a run of a task's
rows at a time. The copies these avoid (dYᵀ, and the head's 49152 x 128 result transposed) took 0.10 s of a 1.9 s smol
step (cProfile, AMD EPYC, 2 cores); with them the head's forward took 177 ms, without 130, and with the transposed
result written a run of rows at a time instead of a number at a time 55 ms (AMD EPYC, family 26, model 2).
`bendtorch study matmul` measures the drivers' GFLOP/s beside PyTorch's.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.index import block_span, n_blocks
from bendtorch.impl.kernels.portable.target import has_avx512f
from bendtorch.impl.kernels.serial import called_and_inlined
from bendtorch.impl.kernels.regtiles import _packs, _tiles, _tiles16

F = npt.NDArray[np.float32]
F32 = np.float32

# the block length over the summed dimension (see the module's docstring for the measurement behind it)
KB = 16
# columns per tile of the fast kernel (a speed choice only: the order per element does not depend on it); a tile of B
# (K x JT) stays in the L2 cache while every row block reads it
JT = 1024
# output rows per task (a speed choice only)
MB = 16
# rows whose running sums share each load of B (register blocking; a speed choice only)
RB = 4


def vector_registers() -> int:
    """The vector registers the code numba emits may use: 32 where it targets AVX-512 (zmm0-31), 16 otherwise (AVX2's
    and SSE's ymm/xmm0-15, a generic x86-64, the other architectures numba's speed choices here were not measured
    on). It follows numba's own choice of target features (NUMBA_CPU_FEATURES, else the host's; NUMBA_CPU_NAME=generic
    sets none), which is part of the key of numba's cache, so a cached kernel always matches KP below."""
    return 32 if has_avx512f() else 16


# k per pass of _block4 (a speed choice only: within a pass each running sum adds its terms one after the other, so
# either gives the same bits): eight where there are 32 vector registers (AVX-512: most of the four rows' 32 values
# of A stay in them, ten of the vector loop's multiplies read theirs from the stack on an AMD EPYC, family 25, model
# 17), four where there are 16 (AVX2: with eight, A's values are spilled to the stack and reloaded in the vector
# loop). See _block4 for the measurements.
KP = 8 if vector_registers() >= 32 else 4
# register tiles for the whole strips of the full groups of four rows (a speed choice only: a tile's sums add their
# terms in the same order as a pass's): of eight lanes on strips of 16 columns where there are 16 vector registers
# (TILE, _tiles), of sixteen lanes on strips of 64 where there are 32 (TILE16, _tiles16); _block4's passes do the
# rest. See impl.kernels.regtiles (_tiles, _tile16) for the measurements.
TILE = vector_registers() < 32
TILE16 = not TILE
# below this many multiply-adds (M K N) a product runs on the calling thread (the serial driver): waking numba's
# thread pool costs more than it saves, and much more on a loaded machine (same bits: the same task code runs)
SERIAL_BELOW = 1 << 21
# the size (numbers) of a column tile of B (K x min(N, JT)) from which B is streamed once (all rows per task; see
# _run): a tile that big does not stay in the caches while the row blocks read it
BIG_B = 1 << 22
# W's size (numbers) from which matmul_nt does not copy Wᵀ (see there)
BIG_W = 1 << 18
_ZERO = np.float32(0.0)


# ---------------------------------------------------------------------------------------------------------------
# The core kernel: C = A·B (+ C when acc), A M x K, B K x N, row-major, in the blocked-tree order
# ---------------------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _el(a: F, at: bool, i: int, k: int) -> np.float32:
    """A[i, k], where A is the array a itself or, when at, its transpose (a holds Aᵀ row-major: A[i, k] = a[k, i]).
    A's elements are only read one at a time (each is broadcast against a row of B), so a transposed A costs no
    copy and no vector loads."""
    return np.float32(a[k, i] if at else a[i, k])  # already float32: the cast only names the type


@numba.njit(inline="always")
def _add4(t: np.float32, x0: np.float32, x1: np.float32, x2: np.float32, x3: np.float32, c0: np.float32,
          c1: np.float32, c2: np.float32, c3: np.float32) -> np.float32:
    """(((t + x0 c0) + x1 c1) + x2 c2) + x3 c3: four steps of a running sum, each product rounded to float32 before
    its addition (a pass's step for one s[r, j]; inlined, so the loop over j around it is still vectorised)."""
    return (((t + x0 * c0) + x1 * c1) + x2 * c2) + x3 * c3


@numba.njit(cache=True)
def _block4(a: F, at: bool, i: int, nr: int, b: F, k0: int, k1: int, j0: int, jt: int, jn: int, s: F,
            r0: int) -> None:
    """For the nr (1..4) rows i, i+1, ...: s[r0 + r, j] = the running sum, left to right from +0.0, of A[i + r, k] *
    B[k, j0 + j] over k0 <= k < k1, for jt <= j < jn (rows r >= nr repeat row i and are discarded, so s has rows
    r0..r0+3; A = a, or aᵀ when at: see _el; the columns before jt are the register tiles', see _tiles). KP (eight or
    four) k per pass over the four rows of s (then one at a time for the rest of the span), each loaded B[k, j] used by
    the four rows (register blocking) and each s[r, j] loaded and stored once per pass; within a pass each s[r, j] still
    adds its terms one after the other, each product rounded before its addition. Eight rather than four where the
    vector registers hold the pass's 32 values of A (AVX-512): the passes' loads and stores of s are halved (the LM
    head's forward 117 -> 149 GF/s on an AMD EPYC, family 26, model 2, 2 cores); sixteen spill the 64 A values and run
    slower (93). Four where there are 16 registers (AVX2): eight spill A's values, and four k per pass ran 9-21% faster
    on every product measured (the median of 7 interleaved runs on an AMD EPYC, family 25, model 1, 2 cores: the LM
    head's forward 51 -> 62 GF/s, 128 x 576 by 576 x 576 59 -> 67, the tiny model's 64 x 32 by 32 x 32 8.9 -> 9.7). Only
    the CPU's pass length is compiled (the other's loop is dead code for LLVM); no pass of four after the eights: every
    span here is a multiple of eight but a ragged last block (K mod 16), and each vectorised loop costs compile time at
    a cold start. B and s are indexed directly, not through a slice per row of B or of s, and their columns are unsigned
    indices: a signed one (j0 + j, or j from jt) has numba test it for a negative (Python's wraparound), which kept the
    loop over j from being vectorised (the product 3x slower). A pass costs about 35 ns whatever its width (the 32 reads
    of A and their broadcasts, the vector loop's set-up) and 3.7 ns more per 16 columns
    (AMD EPYC, family 26, model 2)."""
    i1 = i + 1 if nr > 1 else i
    i2 = i + 2 if nr > 2 else i
    i3 = i + 3 if nr > 3 else i
    r1, r2, r3 = r0 + 1, r0 + 2, r0 + 3
    u0 = np.uint64(j0)
    if jt == jn:
        return
    for j in range(jt, jn):
        js = np.uint64(j)
        s[r0, js] = _ZERO
        s[r1, js] = _ZERO
        s[r2, js] = _ZERO
        s[r3, js] = _ZERO
    kk = k0
    while KP == 8 and kk + 8 <= k1:
        k4 = kk + 4
        x00, x01, x02, x03 = _el(a, at, i, kk), _el(a, at, i, kk + 1), _el(a, at, i, kk + 2), _el(a, at, i, kk + 3)
        y00, y01, y02, y03 = _el(a, at, i, k4), _el(a, at, i, k4 + 1), _el(a, at, i, k4 + 2), _el(a, at, i, k4 + 3)
        x10, x11, x12, x13 = _el(a, at, i1, kk), _el(a, at, i1, kk + 1), _el(a, at, i1, kk + 2), _el(a, at, i1, kk + 3)
        y10, y11, y12, y13 = _el(a, at, i1, k4), _el(a, at, i1, k4 + 1), _el(a, at, i1, k4 + 2), _el(a, at, i1, k4 + 3)
        x20, x21, x22, x23 = _el(a, at, i2, kk), _el(a, at, i2, kk + 1), _el(a, at, i2, kk + 2), _el(a, at, i2, kk + 3)
        y20, y21, y22, y23 = _el(a, at, i2, k4), _el(a, at, i2, k4 + 1), _el(a, at, i2, k4 + 2), _el(a, at, i2, k4 + 3)
        x30, x31, x32, x33 = _el(a, at, i3, kk), _el(a, at, i3, kk + 1), _el(a, at, i3, kk + 2), _el(a, at, i3, kk + 3)
        y30, y31, y32, y33 = _el(a, at, i3, k4), _el(a, at, i3, k4 + 1), _el(a, at, i3, k4 + 2), _el(a, at, i3, k4 + 3)
        for j in range(jt, jn):
            js = np.uint64(j)
            jb = u0 + js
            c0, c1, c2, c3 = b[kk, jb], b[kk + 1, jb], b[kk + 2, jb], b[kk + 3, jb]
            c4, c5, c6, c7 = b[k4, jb], b[k4 + 1, jb], b[k4 + 2, jb], b[k4 + 3, jb]
            s[r0, js] = _add4(_add4(s[r0, js], x00, x01, x02, x03, c0, c1, c2, c3), y00, y01, y02, y03, c4, c5, c6, c7)
            s[r1, js] = _add4(_add4(s[r1, js], x10, x11, x12, x13, c0, c1, c2, c3), y10, y11, y12, y13, c4, c5, c6, c7)
            s[r2, js] = _add4(_add4(s[r2, js], x20, x21, x22, x23, c0, c1, c2, c3), y20, y21, y22, y23, c4, c5, c6, c7)
            s[r3, js] = _add4(_add4(s[r3, js], x30, x31, x32, x33, c0, c1, c2, c3), y30, y31, y32, y33, c4, c5, c6, c7)
        kk += 8
    while KP == 4 and kk + 4 <= k1:
        x00, x01, x02, x03 = _el(a, at, i, kk), _el(a, at, i, kk + 1), _el(a, at, i, kk + 2), _el(a, at, i, kk + 3)
        x10, x11, x12, x13 = _el(a, at, i1, kk), _el(a, at, i1, kk + 1), _el(a, at, i1, kk + 2), _el(a, at, i1, kk + 3)
        x20, x21, x22, x23 = _el(a, at, i2, kk), _el(a, at, i2, kk + 1), _el(a, at, i2, kk + 2), _el(a, at, i2, kk + 3)
        x30, x31, x32, x33 = _el(a, at, i3, kk), _el(a, at, i3, kk + 1), _el(a, at, i3, kk + 2), _el(a, at, i3, kk + 3)
        for j in range(jt, jn):
            js = np.uint64(j)
            jb = u0 + js
            c0, c1, c2, c3 = b[kk, jb], b[kk + 1, jb], b[kk + 2, jb], b[kk + 3, jb]
            s[r0, js] = _add4(s[r0, js], x00, x01, x02, x03, c0, c1, c2, c3)
            s[r1, js] = _add4(s[r1, js], x10, x11, x12, x13, c0, c1, c2, c3)
            s[r2, js] = _add4(s[r2, js], x20, x21, x22, x23, c0, c1, c2, c3)
            s[r3, js] = _add4(s[r3, js], x30, x31, x32, x33, c0, c1, c2, c3)
        kk += 4
    while kk < k1:
        x00 = _el(a, at, i, kk)
        x10 = _el(a, at, i1, kk)
        x20 = _el(a, at, i2, kk)
        x30 = _el(a, at, i3, kk)
        for j in range(jt, jn):
            js = np.uint64(j)
            c0 = b[kk, u0 + js]
            s[r0, js] = s[r0, js] + x00 * c0
            s[r1, js] = s[r1, js] + x10 * c0
            s[r2, js] = s[r2, js] + x20 * c0
            s[r3, js] = s[r3, js] + x30 * c0
        kk += 1


@numba.njit(inline="always")
def _merge(st: F, lev: int, row: int, jn: int) -> None:
    """A block's partial, computed in place at its row's stack level lev (the number of trailing 1 bits of the
    block's index: the level it lands at), merged with the complete subtrees on its left (tree_sum's pairs): for
    l = 0, 1, ..., lev - 1 in turn, st[lev, row] = st[l, row] + st[lev, row]. Level lev is free when the block
    arrives (the levels in use are the set bits of the block's index), so the partial needs no buffer of its own and
    no copy. Inlined into the task, as _fold is (numba's inline="always"): a call that passes arrays costs two atomic
    reference-count updates per array, which took most of a small product's time (64 x 32 by 32 x 32, the tiny
    model's: 13.0 -> 7.4 us on an AMD EPYC, family 26, model 2; the bits are the same)."""
    for lo in range(lev):
        for j in range(jn):
            st[lev, row, j] = st[lo, row, j] + st[lev, row, j]


@numba.njit(inline="always")
def _fold(out: F, q: int, st: F, row: int, nb: int, nlev: int, jn: int) -> None:
    """out[q] = what is left on row's stack folded, smallest level first (tree_sum's carried odd ones): the row's
    sums. The levels in use are the set bits of nb, the number of blocks."""
    if nb == 0:
        for j in range(jn):
            out[q, j] = _ZERO
    else:
        lo = 0
        while not (nb >> lo) & 1:
            lo += 1
        for j in range(jn):
            out[q, j] = st[lo, row, j]
        for lev in range(lo + 1, nlev):
            if (nb >> lev) & 1:
                for j in range(jn):
                    out[q, j] = st[lev, row, j] + out[q, j]


def _mm_task_body(a: F, at: bool, b: F, c: F, ct: bool, kb: int, acc: bool, task: int, nrb: int, nlev: int, mb: int,
                  jtw: int) -> None:
    """One task of the product: the output rows [i0, i0 + mb) by columns [j0, j0 + jtw) (task = column tile *
    nrb + row block); per K-block in order, the rows four at a time (_block4), each row's partial computed at its
    level of the row's stack and merged there (_merge); then each row's stack folded (_fold) and written into C (= or
    +=; A = a or aᵀ, C = c or cᵀ, as at and ct say). C = cᵀ is written after the whole tile is folded, a run of the
    task's rows along each row of c: written row by row, each number would land on a line (and a page) of its own
    (the LM head's forward, 49152 x 576 by 576 x 128 written into 128 x 49152: 71 -> 115 GF/s on an AMD EPYC, family
    26, model 2)."""
    m, k = (a.shape[1], a.shape[0]) if at else (a.shape[0], a.shape[1])
    n = b.shape[1]
    nb = n_blocks(k, kb)
    jt = task // nrb
    rb = task - jt * nrb
    i0 = rb * mb
    mr = min(mb, m - i0)
    j0 = jt * jtw
    jn = min(jtw, n - j0)
    # the rows' stacks, level by level (three rows more: _block4's scratch rows for a last group of fewer than four)
    stacks = np.empty((nlev, mb + RB - 1, jtw), dtype=np.float32)
    # TILE and TILE16 are constants: numba prunes the branches on a False one before inlining, so that kind of tile is
    # not compiled at all (a bool expression on it, `TILE and ...`, is not pruned)
    npb = 0
    if TILE:
        npb = (jtw // 16) * kb if _packs(b) else 0
    pb = np.empty((npb, 16), dtype=np.float32)  # _tiles' packed strips
    for blk in range(nb):
        k0, k1 = block_span(blk, kb, k)
        lev = 0
        while (blk >> lev) & 1:
            lev += 1
        ng = 0
        tiled = jn - jn  # the columns the tiles did: 0 as a run-time int, not a literal (one _block4, as _wsum's)
        if TILE:
            ng = mr // RB if jn >= 16 else 0
            if ng > 0:
                tiled = _tiles(a, at, i0, ng, b, k0, k1, j0, jn, stacks[lev], pb)
        if TILE16:
            ng = mr // RB if jn >= 64 else 0
            if ng > 0:
                tiled = _tiles16(a, at, i0, ng, b, k0, k1, j0, jn, stacks[lev])
        for r in range(0, mr, RB):
            _block4(a, at, i0 + r, min(RB, mr - r), b, k0, k1, j0, tiled if r < ng * RB else 0, jn, stacks[lev], r)
        if lev > 0:
            for r in range(mr):
                _merge(stacks, lev, r, jn)
    if ct:
        tile = np.empty((mr, jtw), dtype=np.float32)
        for r in range(mr):
            _fold(tile, r, stacks, r, nb, nlev, jn)
        u0 = np.uint64(i0)
        for j in range(jn):
            cj = j0 + j
            if acc:
                for r in range(mr):
                    c[cj, u0 + np.uint64(r)] = c[cj, u0 + np.uint64(r)] + tile[r, j]
            else:
                for r in range(mr):
                    c[cj, u0 + np.uint64(r)] = tile[r, j]
    else:
        row = np.empty((1, jtw), dtype=np.float32)
        u0 = np.uint64(j0)
        for r in range(mr):
            _fold(row, 0, stacks, r, nb, nlev, jn)
            ci = i0 + r
            if acc:
                for j in range(jn):
                    c[ci, u0 + np.uint64(j)] = c[ci, u0 + np.uint64(j)] + row[0, j]
            else:
                for j in range(jn):
                    c[ci, u0 + np.uint64(j)] = row[0, j]


# the task compiled for the parallel product's loop and inlined into the serial one (a command whose products are all
# small, the tiny model's train, compiles no level for it), the serial copy without the sixteen-lane tiles: they cost
# a cold `train --model tiny` 1.3 s more of compiling the serial product (3.1 -> 4.4 s, 7.2-8.0 -> 8.1-8.3 s in all),
# on the command's critical path, and the tiny model's step was the same within the noise with and without them
_mm_task, _mm_task_inline = called_and_inlined(_mm_task_body, TILE16=False)


@numba.njit(cache=True, parallel=True)
def _mm(a: F, at: bool, b: F, c: F, ct: bool, kb: int, acc: bool, mb: int, jtw: int) -> None:
    """C[i, j] = (C[i, j] + ) blocked_tree_k(A[i, k] * B[k, j]), A = a or aᵀ (at), C = c or cᵀ (ct). prange over
    tasks (column tile, row block) of independent outputs (never over a sum), column tile outermost so that the
    threads share one tile of B."""
    m, k = (a.shape[1], a.shape[0]) if at else (a.shape[0], a.shape[1])
    n = b.shape[1]
    nb = n_blocks(k, kb)
    nrb = (m + mb - 1) // mb
    njt = (n + jtw - 1) // jtw
    nlev = 1  # the stack's levels: the bit length of nb (at least 1)
    while (nb >> nlev) > 0:
        nlev += 1
    for task in numba.prange(nrb * njt):
        # prange's index is unsigned: handed over as int64, the task has the argument types the serial loop gives
        # its inlined copy, and its index arithmetic stays in integers (numba does not keep uint64 with int64 one)
        _mm_task(a, at, b, c, ct, kb, acc, np.int64(task), nrb, nlev, mb, jtw)


@numba.njit(cache=True)
def _mm_serial(a: F, at: bool, b: F, c: F, ct: bool, kb: int, acc: bool, mb: int, jtw: int) -> None:
    """_mm's tasks in a plain loop on the calling thread (for small products; the same bits)."""
    m, k = (a.shape[1], a.shape[0]) if at else (a.shape[0], a.shape[1])
    n = b.shape[1]
    nb = n_blocks(k, kb)
    nrb = (m + mb - 1) // mb
    njt = (n + jtw - 1) // jtw
    nlev = 1
    while (nb >> nlev) > 0:
        nlev += 1
    for task in range(nrb * njt):
        _mm_task_inline(a, at, b, c, ct, kb, acc, task, nrb, nlev, mb, jtw)


def _run(a: F, b: F, c: F, kb: int, acc: bool, at: bool = False, ct: bool = False) -> None:
    """The product's driver, C = (C +) A·B with A = a (or aᵀ when at) and C = c (or cᵀ when ct), every array
    C-contiguous: serial for small products; otherwise tasks of MB rows x JT columns, except when a column tile of
    B is too big for the caches and A has few rows (the tied head's dX = dY·W, 128 x 49152 by 49152 x 576): then each
    task takes all the rows and a share of the columns, so B is streamed from memory once instead of once per row
    block. A wide B of short columns (the head's forward, 128 x 576 by 576 x 49152) keeps the tiles: each 576 x 1024
    tile stays in the caches for every row block, and the tasks' stacks stay small (149 GF/s against 65 with all
    rows per task on an AMD EPYC, family 26, model 2). A small product with fewer columns than rows runs as
    Cᵀ = Bᵀ·Aᵀ (b a = a b exactly, each sum in the same order): each pass of _block4 has a fixed cost (A's 32 values
    read and broadcast, the vector loop's set-up: about 105 ns on an AMD EPYC, family 25, model 1, as much as 24
    columns' work), paid over fewer, wider passes (the tiny model's step 3.1-3.4 -> 2.8-3.1 ms there, the best of
    7 x 100 steps, interleaved runs). The tiling and the transposes never change the bits (each output's order is
    fixed by kb alone)."""
    m, k = (a.shape[1], a.shape[0]) if at else (a.shape[0], a.shape[1])
    n = b.shape[1]
    if kb < 1:  # the blocks tile [0, k) for kb >= 1 (laws/proofs.py, matmul_blocks)
        raise ValueError(f"matmul: the block length kb must be at least 1, got {kb}")
    if m * k * n < SERIAL_BELOW:
        if n < m:  # Cᵀ = Bᵀ·Aᵀ: the long side along the vector loop (_block4's passes fewer, each wider)
            _mm_serial(b, True, a if at else np.ascontiguousarray(a.T), c, not ct, kb, acc, MB, _tile_width(m))
        else:
            _mm_serial(a, at, b, c, ct, kb, acc, MB, _tile_width(n))
    elif k * min(n, JT) >= BIG_B and m <= 256:
        # each thread's share of the columns, rounded up to whole strips of the register tiles: the head's dX shared
        # as 320 + 256 columns rather than 288 + 288, whose last 32 _block4's passes did, ran at 85-102 against 58-68
        # GF/s (AMD EPYC, family 25, model 17, 2 threads, three runs in turn)
        share = -(-n // max(1, numba.get_num_threads()))
        strip = 64 if TILE16 else 16
        _mm(a, at, b, c, ct, kb, acc, max(1, m), max(strip, -(-share // strip) * strip))
    else:
        _mm(a, at, b, c, ct, kb, acc, MB, _tile_width(n))


def _tile_width(n: int) -> int:
    """The width of the column tiles of n columns: at most JT, all equal (so the tasks are even), rounded up to 16.
    A task's stack rows are this far apart: a narrow product with JT-wide tiles had them 4 KiB apart, on the same
    sets of the L1 cache (the tiny model's 32 x 32 by 32 x 64 6.6 -> 5.7 us, 32 x 256 by 256 x 64 46 -> 39 us on an
    AMD EPYC, family 25, model 17; the bits are the same, each output's order being fixed by kb alone)."""
    njt = -(-n // JT)
    return max(16, -(-(-(-n // njt)) // 16) * 16)


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
    _run(a, b, c, kb, False)
    return c


def mm_acc(a: F, b: F, c: F, kb: int = KB) -> F:
    """C <- C + A·B in place, with the bits of computing A·B apart (mm) and then adding it to C."""
    a = _f32c(a, "A")
    b = _f32c(b, "B")
    if a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]) or c.dtype != np.float32:
        raise ValueError(f"matmul: A is {a.shape}, B is {b.shape}, C is {c.shape} {c.dtype}")
    if not c.flags.c_contiguous:
        raise ValueError("matmul: the accumulator C must be C-contiguous (it is written in place)")
    _run(a, b, c, kb, True)
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
    blocked-tree order. The core gets x and a row-major copy of Wᵀ (i x o); or, when W is big (o i >= BIG_W numbers:
    the 49152 x 576 LM head, smol's 1536 x 576 and 576 x 1536 MLP weights and its 576 x 576 projections), it computes
    W·xᵀ (o x n) from W as it is and a copy of xᵀ and writes it transposed into y: the same products (a b = b a
    exactly in floating point) summed in the same order, so the same bits, without copying W or the result. Measured
    with 128 tokens on an AMD EPYC (family 26, model 2), 2 cores, copy form against W·xᵀ: 576 x 1536 2.52 against
    2.06 ms, 1536 x 576 1.94 against 1.87, 576 x 576 0.69 against 0.70, 192 x 576 0.23 against 0.25; the head's
    forward 55 ms, against 40 for the product from a copy of Wᵀ and 47 for the copy. With the sixteen-lane tiles on an
    AMD EPYC (family 25, model 17), each W one of 30 (so not in the caches, as in a step), five rounds in turn: 576 x
    576 1.35-1.45 against 1.24 ms (hence BIG_W = 2^18 rather than 2^19), 192 x 576 0.46-0.47 against 0.45-0.46,
    1536 x 576 3.92-4.03 against 3.24-3.30, 576 x 1536 4.53-4.89 against 2.97-3.00."""
    x = _f32c(x, "x")
    w = _f32c(w, "W")
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"matmul: x is {x.shape}, W is {w.shape}: inner sizes differ")
    y = np.empty((x.shape[0], w.shape[0]), dtype=np.float32)
    if w.size >= BIG_W:
        _run(w, np.ascontiguousarray(x.T), y, KB, False, ct=True)
    else:
        _run(x, np.ascontiguousarray(w.T), y, KB, False)
    return y


def matmul_precise(dy: F, w: F) -> F:
    """dX = dY·W (Linear's backward, main.bend line 640): dY n x o, W o x i, dX n x i; sums over o."""
    return mm(dy, w)


def matmul_tn_acc(dy: F, x: F, g: F) -> F:
    """g <- g + dYᵀ·X in place (main.bend lines 633-636): dY n x o, X n x i, g o x i; the product sums over the n
    rows in the blocked-tree order and is then added to g ("computed apart then added"). The core reads dYᵀ's
    elements from dY itself (one at a time, see _el), so nothing is copied."""
    dy = _f32c(dy, "dY")
    x = _f32c(x, "X")
    if dy.shape[0] != x.shape[0] or g.shape != (dy.shape[1], x.shape[1]) or g.dtype != np.float32:
        raise ValueError(f"matmul: dY is {dy.shape}, X is {x.shape}, g is {g.shape} {g.dtype}")
    if not g.flags.c_contiguous:
        raise ValueError("matmul: the accumulator g must be C-contiguous (it is written in place)")
    _run(dy, x, g, KB, True, at=True)
    return g


def col_sums_acc(dy: F, gb: F) -> F:
    """gb <- gb + the column sums of dY in place (main.bend line 628): dY n x o, gb 1 x o. The order is the blocked
    tree over the rows: the core's product ones(1 x n)·dY, whose products 1 * dY[r, c] are exact."""
    return mm_acc(np.ones((1, dy.shape[0]), dtype=np.float32), dy, gb)


def add_row(y: F, b: F) -> F:
    """y <- y + b in place, b (1 x o) added to every row of y (n x o) (main.bend line 613): one rounding each."""
    y += b
    return y
