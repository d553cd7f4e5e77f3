"""The float32 pair arithmetic of impl's portable functions: a float32's bits (LLVM bitcasts, as numba intrinsics),
the float32 constants the functions share, and the error-free transformations: Knuth's two_sum, Dekker's
fast_two_sum and two_prod (with 12-bit halves cut by masking the low 12 bits, so every partial product is exact).
A pair hi + lo carries about 48 significant bits.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core.extending import intrinsic

F32 = np.float32
U32 = np.uint32


def _f2u_t(typingctx: Any, x: Any) -> Any:
    sig = types.uint32(types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(32))
    return sig, codegen


def _u2f_t(typingctx: Any, u: Any) -> Any:
    sig = types.float32(types.uint32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())
    return sig, codegen


def _clz64_t(typingctx: Any, v: Any) -> Any:
    sig = types.int64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))   # defined at 0: 64
    return sig, codegen


f2u: Any = intrinsic(_f2u_t)   # the bits of a float32 (an LLVM bitcast)
u2f: Any = intrinsic(_u2f_t)   # the float32 of given bits
clz64: Any = intrinsic(_clz64_t)   # the leading zero bits of a uint64 (LLVM's ctlz; 64 for 0)

ZERO = F32(0.0)
HALF = F32(0.5)
ONE = F32(1.0)
SIXTH = F32(0.16666666666666666)
R24 = F32(0.041666666666666664)
INF = F32(np.inf)
NAN = F32(np.nan)
SHIFTER = F32(12582912.0)   # 1.5 2^23: (t + S) - S rounds t to an integer, ties to even, for |t| < 2^22
_MASK12 = U32(0xFFFFF000)    # keeps a float32's sign, exponent and its 12 leading significant bits
TWO23 = F32(8388608.0)
M32 = np.uint64(0xFFFFFFFF)  # the low 32 bits of a uint64


@numba.njit(cache=True, inline="always")
def pow2(e: int) -> Any:
    """2^e for -126 <= e <= 127, from its bits."""
    return u2f(U32((e + 127) << 23))


@numba.njit(cache=True, inline="always")
def two_sum(a: np.float32, b: np.float32) -> Any:
    """s + t = a + b exactly, s = fl(a + b) (Knuth)."""
    s = a + b
    bb = s - a
    t = (a - (s - bb)) + (b - bb)
    return s, t


@numba.njit(cache=True, inline="always")
def fast_two_sum(a: np.float32, b: np.float32) -> Any:
    """s + t = a + b exactly, for |a| >= |b| (Dekker)."""
    s = a + b
    return s, b - (s - a)


@numba.njit(cache=True, inline="always")
def split(a: np.float32) -> Any:
    """a = h + l exactly, h the leading 12 significant bits of a (a mask), l the rest (at most 12 bits)."""
    h = u2f(f2u(a) & _MASK12)
    return h, a - h


@numba.njit(cache=True, inline="always")
def two_prod(a: np.float32, b: np.float32) -> Any:
    """p + e = a b exactly, p = fl(a b) (Dekker; every partial product of 12-bit halves is exact)."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e
