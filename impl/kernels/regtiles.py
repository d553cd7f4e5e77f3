"""The matrix products' register tiles (matmul's speed choices where the CPU's vector registers allow): a group of
four rows of C by a strip of columns, its running sums held in vector registers (impl.kernels.simd) for a whole block
of k, each step a product rounded and then added, so each sum is the same sequence of operations as a pass of
matmul._block4 and the bits are the same. `_tiles` (eight lanes, strips of 16 columns) runs where there are 16
vector registers (matmul.TILE), `_tiles16` (sixteen lanes, strips of 64) where there are 32 (matmul.TILE16);
matmul._mm_task_body calls them before _block4's passes do the ragged columns and rows."""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.simd import load8, load16, madd8, madd16, splat8, splat16, store8, store16, zero8, zero16

F = npt.NDArray[np.float32]


@numba.njit(inline="always")
def _tile4(af: F, ia: np.uint64, sr: np.uint64, sk: np.uint64, bb: F, p0: int, jb: np.uint64, k0: int, k1: int, s: F,
           r0: int, j: int) -> None:
    """s[r0 + r, j:j + 16] = the running sums, left to right from +0.0, of A[row r, k] * B[k, strip] over
    k0 <= k < k1 for the four rows r = 0..3, A[row r, k] being af[ia + r sr + k sk] (A's numbers as one flat array,
    its rows sr apart and its k sk apart) and B[k, strip] the 16 numbers bb[p0 + k - k0, jb:jb + 16] (B itself, or
    the strip packed by _tiles): a register tile, its eight vector sums (four rows by two vectors of eight columns)
    held in registers over the whole span, each step a product rounded and then added (simd.madd8). Per k it loads
    two vectors of B and four numbers of A for 64 multiply-adds, where a pass of _block4 also loads and stores each of
    its sums."""
    c00, c01, c10, c11 = zero8(), zero8(), zero8(), zero8()
    c20, c21, c30, c31 = zero8(), zero8(), zero8(), zero8()
    q0 = ia + np.uint64(k0) * sk
    q1, q2, q3 = q0 + sr, q0 + sr + sr, q0 + sr + sr + sr
    jb8 = jb + np.uint64(8)
    for k in range(k0, k1):
        p = p0 + k - k0
        b0, b1 = load8(bb, p, jb), load8(bb, p, jb8)
        x = splat8(af[q0])
        c00, c01 = madd8(c00, x, b0), madd8(c01, x, b1)
        x = splat8(af[q1])
        c10, c11 = madd8(c10, x, b0), madd8(c11, x, b1)
        x = splat8(af[q2])
        c20, c21 = madd8(c20, x, b0), madd8(c21, x, b1)
        x = splat8(af[q3])
        c30, c31 = madd8(c30, x, b0), madd8(c31, x, b1)
        q0, q1, q2, q3 = q0 + sk, q1 + sk, q2 + sk, q3 + sk
    store8(s, r0, j, c00)
    store8(s, r0, j + 8, c01)
    store8(s, r0 + 1, j, c10)
    store8(s, r0 + 1, j + 8, c11)
    store8(s, r0 + 2, j, c20)
    store8(s, r0 + 2, j + 8, c21)
    store8(s, r0 + 3, j, c30)
    store8(s, r0 + 3, j + 8, c31)


@numba.njit(inline="always")
def _packs(b: F) -> bool:
    """Whether _tiles packs B's strips: B's rows a multiple of 2 KiB apart (N a multiple of 512) fall in at most two
    of the L1 cache's 64 sets, and a strip's 16 rows evict one another; such a strip is first packed, a row of 16
    numbers per k (copies only)."""
    return b.shape[1] % 512 == 0  # type: ignore[no-any-return]


@numba.njit(inline="always")
def _tiles(a: F, at: bool, i0: int, ng: int, b: F, k0: int, k1: int, j0: int, jn: int, s: F, pb: F) -> int:
    """The rows i0 .. i0 + 4 ng - 1 (ng groups of four) by the columns in whole strips of 16, in register tiles
    (_tile4; s's rows 4 g .. 4 g + 3 for group g): strip by strip, each strip's numbers of B (the block's k by 16)
    read from the L1 cache by every group. Returns the columns done (jn rounded down to 16); _block4's passes do the
    rest. Where there are 16 vector registers (TILE): a pass of four k keeps 16 values of A, four sums and B's
    values in flight and reloads A's broadcasts from the stack, where a tile keeps its eight sums in registers for
    the whole block. On an AMD EPYC (family 25, model 1; AVX2), 2 cores, tiles against passes alone, both compiled in
    one process, the median of 7 interleaved rounds, two runs: the LM head's forward 1.20 / 1.23x (49.1 against 41.0
    GF/s), 128 x 576 by 576 x 576 1.07 / 1.06x, the tiny model's 64 x 32 by 32 x 32 1.17 / 1.17x, 576 x 128 by
    128 x 576 1.09 / 1.01x, 128 x 1536 by 1536 x 576 1.01 / 1.06x, 128 x 576 by 576 x 1536 1.01 / 0.91x, 128 x 576
    by 576 x 49152 0.95 / 0.95x, and the head's dX (all 128 rows a task, B streamed once) 0.83 / 0.88x. Without the
    packing of B's strips, that wide product ran at 0.70x (its B's rows 192 KiB apart), the others alike; packed
    always, the products that need no packing lost up to a tenth. The cold `train --model tiny` took the same time
    within the noise (15.3-17.5 s against 15.7-16.5)."""
    af = a.reshape(a.size)  # a view: A's numbers by flat index, unsigned (no wraparound test)
    wa = np.uint64(a.shape[1])
    sr, sk = (np.uint64(1), wa) if at else (wa, np.uint64(1))
    u0 = np.uint64(j0)
    jt = jn - jn % 16
    nk = k1 - k0
    pack = _packs(b)
    for j in range(0, jt, 16):
        jb = u0 + np.uint64(j)
        if pack:
            p0 = (j // 16) * nk
            for q in range(nk):
                store8(pb, p0 + q, 0, load8(b, k0 + q, jb))
                store8(pb, p0 + q, 8, load8(b, k0 + q, jb + np.uint64(8)))
            for g in range(ng):
                _tile4(af, np.uint64(i0 + 4 * g) * sr, sr, sk, pb, p0, np.uint64(0), k0, k1, s, 4 * g, j)
        else:
            for g in range(ng):
                _tile4(af, np.uint64(i0 + 4 * g) * sr, sr, sk, b, k0, jb, k0, k1, s, 4 * g, j)
    return jt


@numba.njit(inline="always")
def _tile16(af: F, ia: np.uint64, sr: np.uint64, sk: np.uint64, b: F, jb: np.uint64, k0: int, k1: int, s: F, r0: int,
            j: int) -> None:
    """_tile4 in sixteen lanes (AVX-512's zmm registers): s[r0 + r, j:j + 64] = the running sums, left to right from
    +0.0, of A[row r, k] * B[k, jb:jb + 64] over k0 <= k < k1 for the four rows r = 0..3 (A's numbers as in
    _tile4), sixteen vector sums (four rows by four vectors of sixteen columns) held in registers over the whole span,
    each step a product rounded and then added (simd.madd16). Per k it loads four vectors of B and four numbers of A for
    256 multiply-adds; the sums, B's four vectors and a broadcast take 21 of the 32 registers. _block4's pass of eight,
    which the CPU ran here before, loads and stores each of its four sums per eight k and keeps its 32 values of A
    spilled in part to the stack. The tiles against the passes alone (mm on standard normal inputs, two threads, the
    best of 7, two runs of each in turn; AMD EPYC, family 25, model 17): 128 x 576 by 576 x 576 108-110 -> 142-145 GF/s,
    128 x 1536 by 1536 x 576 116-122 -> 141-143, 576 x 128 by 128 x 576 109-118 -> 142-144, the LM head's forward 96-97
    -> 117, the head's dX 88-92 -> 84-91 (the same). Only the parallel product has them: see matmul._mm_task_inline."""
    c00, c01, c02, c03 = zero16(), zero16(), zero16(), zero16()
    c10, c11, c12, c13 = zero16(), zero16(), zero16(), zero16()
    c20, c21, c22, c23 = zero16(), zero16(), zero16(), zero16()
    c30, c31, c32, c33 = zero16(), zero16(), zero16(), zero16()
    q0 = ia + np.uint64(k0) * sk
    q1, q2, q3 = q0 + sr, q0 + sr + sr, q0 + sr + sr + sr
    j1, j2, j3 = jb + np.uint64(16), jb + np.uint64(32), jb + np.uint64(48)
    for k in range(k0, k1):
        b0, b1, b2, b3 = load16(b, k, jb), load16(b, k, j1), load16(b, k, j2), load16(b, k, j3)
        x = splat16(af[q0])
        c00, c01, c02, c03 = madd16(c00, x, b0), madd16(c01, x, b1), madd16(c02, x, b2), madd16(c03, x, b3)
        x = splat16(af[q1])
        c10, c11, c12, c13 = madd16(c10, x, b0), madd16(c11, x, b1), madd16(c12, x, b2), madd16(c13, x, b3)
        x = splat16(af[q2])
        c20, c21, c22, c23 = madd16(c20, x, b0), madd16(c21, x, b1), madd16(c22, x, b2), madd16(c23, x, b3)
        x = splat16(af[q3])
        c30, c31, c32, c33 = madd16(c30, x, b0), madd16(c31, x, b1), madd16(c32, x, b2), madd16(c33, x, b3)
        q0, q1, q2, q3 = q0 + sk, q1 + sk, q2 + sk, q3 + sk
    store16(s, r0, j, c00)
    store16(s, r0, j + 16, c01)
    store16(s, r0, j + 32, c02)
    store16(s, r0, j + 48, c03)
    store16(s, r0 + 1, j, c10)
    store16(s, r0 + 1, j + 16, c11)
    store16(s, r0 + 1, j + 32, c12)
    store16(s, r0 + 1, j + 48, c13)
    store16(s, r0 + 2, j, c20)
    store16(s, r0 + 2, j + 16, c21)
    store16(s, r0 + 2, j + 32, c22)
    store16(s, r0 + 2, j + 48, c23)
    store16(s, r0 + 3, j, c30)
    store16(s, r0 + 3, j + 16, c31)
    store16(s, r0 + 3, j + 32, c32)
    store16(s, r0 + 3, j + 48, c33)


@numba.njit(inline="always")
def _tiles16(a: F, at: bool, i0: int, ng: int, b: F, k0: int, k1: int, j0: int, jn: int, s: F) -> int:
    """_tiles with sixteen-lane tiles (_tile16) on strips of 64 columns, where there are 32 vector registers
    (AVX-512), B read where it is: packing the strips of a B whose rows are a multiple of 2 KiB apart, as _tiles
    does, made those products slower here (the LM head's forward 117 -> 99 GF/s, 128 x 576 by 576 x 1536 141 -> 117;
    AMD EPYC, family 25, model 17, 2 threads). Returns the columns done (jn rounded down to 64)."""
    af = a.reshape(a.size)  # a view: A's numbers by flat index, unsigned (no wraparound test)
    wa = np.uint64(a.shape[1])
    sr, sk = (np.uint64(1), wa) if at else (wa, np.uint64(1))
    u0 = np.uint64(j0)
    jt = jn - jn % 64
    for j in range(0, jt, 64):
        for g in range(ng):
            _tile16(af, np.uint64(i0 + 4 * g) * sr, sr, sk, b, u0 + np.uint64(j), k0, k1, s, 4 * g, j)
    return jt
