"""The index arithmetic of the kernels, one small pure function per fact: which key/value head a query head reads,
the columns and rows a unit of attention touches, the keys a position sees, the split of the parallel units,
tree_sum's pairing, the packed BF16 layout and rounding, the dropout counter, the blocks of the matrix product and
the offsets of a pair of layers.

The kernels call these functions (numba compiles them into the kernels, and the same dispatchers are callable from
Python), and laws/proofs.py proves them for every size with z3 by running the SAME Python source on symbolic
integers (laws/symbolic.py): the proved function is the one that runs. So the source keeps to what the symbolic run
understands: integer operators, numpy's unsigned casts, and no Python branch on a value. A choice is `pick(c, a, b)`
(the seed's ph_pick, main.bend line 313), which evaluates both sides; `&` and `|` join two conditions. Integer
results follow numba's typing (an operation on uint32 words is computed in uint64, so each kernel casts back with
np.uint32 where the seed's U32 wraps), which the proofs model as it is.

numba's on-disk cache does not track a callee in another file: after changing a function here, the kernels that call
it are recompiled only when their own file changes (or their __pycache__ is cleared).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar, cast

import numba
import numpy as np

Fn = TypeVar("Fn", bound=Callable[..., Any])
T = TypeVar("T")


def _kernel(fn: Fn) -> Fn:
    """Compiled for the kernels (cached, inlined into its caller), callable from Python; `.py_func` is the source."""
    return cast(Fn, numba.njit(cache=True, inline="always")(fn))


def source(fn: Fn) -> Fn:
    """The Python function a kernel function was compiled from (for plain twins and for the proofs)."""
    out: Fn = getattr(fn, "py_func", fn)
    return out


@_kernel
def pick(c: Any, a: T, b: T) -> T:
    """a if c else b, both evaluated (the seed's ph_pick, main.bend line 313)."""
    return a if c else b


# ---------------------------------------------------------------------------------------------------------------
# Attention (main.bend lines 2199-2742): heads, columns, rows, causal visibility, the parallel units
# ---------------------------------------------------------------------------------------------------------------


@_kernel
def kv_of(hi: int, g: int) -> int:
    """The key/value head that query head hi reads, with g query heads per key/value head (kv_of, line 2216)."""
    return hi // g


@_kernel
def group_heads(j: int, g: int) -> tuple[int, int]:
    """[first, end) of the query heads that read key/value head j (bgroup's heads, line 2509)."""
    return j * g, j * g + g


@_kernel
def head_cols(hi: int, g: int, hd: int) -> tuple[int, int]:
    """(hc, kc): query head hi's first column in Q (and O, dQ) and its key/value head's first column in K and V (and
    dK, dV); each head owns hd columns from there (head_cols, line 2369; the law kv_cols)."""
    return hi * hd, kv_of(hi, g) * hd


@_kernel
def row_of(bi: int, i: int, t: int) -> int:
    """The row of position i of sequence bi, with t positions a sequence (rows_out, line 2578)."""
    return bi * t + i


@_kernel
def n_visible(i: int) -> int:
    """Position i reads positions 0 .. n_visible(i) - 1 of its own sequence (qrow, line 2246: i + 1 keys)."""
    return i + 1


@_kernel
def unit_of(u: int, h: int) -> tuple[int, int]:
    """Parallel unit u's (sequence, head) with h heads a sequence (u // h, u mod h): the forward pass's units are
    (sequence, query head), the backward pass's (sequence, key/value head)."""
    return u // h, u % h


# ---------------------------------------------------------------------------------------------------------------
# tree_sum's pairing (ts_pass / ts_go, main.bend lines 2791-2809)
# ---------------------------------------------------------------------------------------------------------------


@_kernel
def ts_pairs(m: int) -> int:
    """The pairs of a pass over m numbers: a[i] = a[2i] + a[2i+1] for i < m // 2."""
    return m // 2


@_kernel
def ts_pair(i: int) -> tuple[int, int]:
    """The two numbers that pair i adds, left then right."""
    return 2 * i, 2 * i + 1


@_kernel
def ts_carry(m: int) -> tuple[bool, int, int]:
    """(odd, from, to): an odd m carries its last number a[m - 1] to a[m // 2]."""
    return m % 2 == 1, m - 1, m // 2


@_kernel
def ts_next(m: int) -> int:
    """The numbers left after a pass over m: (m + 1) // 2."""
    return (m + 1) // 2


# ---------------------------------------------------------------------------------------------------------------
# Packed BF16 (main.bend lines 50-60, 297-345): two values a uint32 word, element 2k in the low half of word k
# ---------------------------------------------------------------------------------------------------------------

_ABS = np.uint32(0x7FFFFFFF)
_INF = np.uint32(0x7F800000)
_RND = np.uint32(0x7FFF)
_NAN16 = np.uint32(0xFFFF)
_LO = np.uint32(0xFFFF)
_HI = np.uint32(0xFFFF0000)
_S16 = np.uint32(16)
_ONE_U = np.uint32(1)
_M32 = np.uint64(0xFFFFFFFF)


@_kernel
def n_words(n: int) -> int:
    """The words of n packed values, ceil(n / 2) (ph_words, line 383)."""
    return (n + 1) // 2


@_kernel
def word_of(t: int) -> int:
    """The word that holds element t (t >> 1, line 364)."""
    return t >> 1


@_kernel
def is_high(t: int) -> bool:
    """Whether element t is in its word's high half (odd t, line 358)."""
    return (t & 1) == 1


@_kernel
def word_elems(k: int, n: int) -> tuple[int, int]:
    """[first, end) of the elements in word k of n packed values: 2k and, unless n is odd and k the last, 2k + 1."""
    return 2 * k, pick(2 * k + 2 < n, 2 * k + 2, n)


@_kernel
def half(odd: bool, w: np.uint32) -> np.uint32:
    """The half of word w that an element uses (odd: the high half) (ph_half, line 332)."""
    return pick(odd, w >> _S16, w & _LO)


@_kernel
def put(odd: bool, w: np.uint32, h: np.uint32) -> np.uint32:
    """Word w with that half replaced by the 16-bit h (ph_put, line 339)."""
    return pick(odd, (w & _LO) | np.uint32(h << _S16), (w & _HI) | h)


@_kernel
def bf16_of_bits(u: np.uint32) -> np.uint32:
    """F32 bits -> BF16 bits (ph_of_bits, line 321): add 0x7FFF plus the lowest kept bit, keep the top half (round
    to nearest, ties to even; the addition wraps mod 2^32 as U32 does); a NaN gives 0xFFFF."""
    return pick((u & _ABS) > _INF, _NAN16,
                np.uint32(np.uint32(np.uint32(u + _RND) + np.uint32((u >> _S16) & _ONE_U)) >> _S16))


@_kernel
def bf16_widen_bits(h: np.uint32) -> np.uint32:
    """BF16 bits -> the F32 bits of the same number (ph_to, line 328): h in the top half, zeros below."""
    return np.uint32(h << _S16)


# ---------------------------------------------------------------------------------------------------------------
# Dropout's counter (drop_k, main.bend line 1237)
# ---------------------------------------------------------------------------------------------------------------


@_kernel
def drop_counter(key: np.uint64, i: int) -> np.uint64:
    """The hash input of the number at flat index i: key + i taken mod 2^32 (U32 addition), computed in uint64."""
    return (key + np.uint64(i)) & _M32


# ---------------------------------------------------------------------------------------------------------------
# The matrix product's blocks over the summed dimension (impl.kernels.matmul)
# ---------------------------------------------------------------------------------------------------------------


@_kernel
def n_blocks(k: int, kb: int) -> int:
    """The blocks of kb over k summed indices, ceil(k / kb)."""
    return (k + kb - 1) // kb


@_kernel
def block_span(blk: int, kb: int, k: int) -> tuple[int, int]:
    """[first, end) of block blk: kb indices, the last block possibly shorter."""
    return blk * kb, pick((blk + 1) * kb < k, (blk + 1) * kb, k)


# ---------------------------------------------------------------------------------------------------------------
# A pair of layers' flat numbers (pair_dump / pair_load / pair_store, main.bend lines 811-835)
# ---------------------------------------------------------------------------------------------------------------


@_kernel
def pair_span(off: int, ca: int, cb: int) -> tuple[int, int, int]:
    """(a, b, end) for a pair whose parts hold ca and cb numbers, from offset off: the first part's numbers at
    [a, b), the second's at [b, end)."""
    return off, off + ca, off + ca + cb
