"""impl's portable exp: x = (64 e + j) ln2/64 + r, |r| <= ln2/128 (ln2/64 in three parts, the first two exact in
products); exp(x) = 2^e 2^(j/64) (1 + r + r^2/2 + r^3/6 + r^4/24), the product with the table pair exact; results
below 2^-126 rounded once on the subnormal grid. exp_array is the same arithmetic over a row, the table reads
apart and the rest vectorised.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.cr_table import EXP_DISP, EXP_KEYS, EXP_VALS, cr_fix, cr_slot, fmix32
from bendtorch.impl.kernels.portable.eft import (F32, HALF, INF, ONE, R24, SHIFTER, SIXTH, U32, ZERO, f2u,
                                                 fast_two_sum, pow2, two_prod, two_sum, u2f)
from bendtorch.impl.kernels.portable.tables import EXP_L1, EXP_L2, EXP_L3, EXP_TH, EXP_TL
from bendtorch.impl.kernels.portable.target import has_avx512f

EXP_INV_L = F32(92.33248)            # 64 / ln 2, rounded (it only picks k: any nearby value works)
EXP_HI = F32(88.8)                   # exp(x) > 2^128 beyond: +inf (and the scaling overflows exactly below it)
EXP_LO = F32(-104.0)                 # exp(x) < 2^-150 beyond: +0
EXP_TINY = F32(2.9802322e-08)        # 2^-25: exp(x) rounds to 1 below this |x|
_TWO = F32(2.0)


@numba.njit(cache=True, inline="always")
def exp_k(xh: np.float32) -> Any:
    """The nearest integer kf (a float32) to xh 64 / ln 2, ties to even: x's table index is kf mod 64."""
    return (xh * EXP_INV_L + SHIFTER) - SHIFTER


@numba.njit(cache=True, inline="always")
def exp_reduce(xh: np.float32, xl: np.float32) -> Any:
    """xh + xl = kf ln2/64 + rh + (rl), |rh| <= ln2/128: kf (an integer, as a float32), rh, and the polynomial's
    part q of exp(rh + rl) - 1 - rh (rl folded in); for |xh| <= 104."""
    kf = exp_k(xh)
    t1 = xh - kf * EXP_L1                      # exact (Sterbenz; kf EXP_L1 is exact)
    rh, rl = two_sum(t1, -(kf * EXP_L2))       # kf EXP_L2 exact
    rl = rl + (xl - kf * EXP_L3)
    rh, rl = fast_two_sum(rh, rl)
    r2 = rh * rh
    q = rl + rh * rl + r2 * (HALF + rh * (SIXTH + rh * R24))
    return kf, rh, q


@numba.njit(cache=True, inline="always")
def exp_scale(th: np.float32, tl: np.float32, rh: np.float32, q: np.float32) -> Any:
    """2^(j/64) (1 + rh + q) = u + w, |w| <= ulp(u), for the table's pair th + tl = 2^(j/64) (the product with th
    exact)."""
    p, pe = two_prod(th, rh)
    small = pe + (th * q + (tl + tl * rh))
    u, v = fast_two_sum(th, p)
    return u, v + small


@numba.njit(cache=True, inline="always")
def exp_core(xh: np.float32, xl: np.float32) -> Any:
    """exp(xh + xl) = (u + w) 2^e with u + w in about [0.99, 2.02] accurate to a few 2^-37, |w| <= ulp(u);
    for |xh| <= 104."""
    kf, rh, q = exp_reduce(xh, xl)
    k = np.int64(kf)
    j = k & 63
    u, w = exp_scale(EXP_TH[j], EXP_TL[j], rh, q)
    return u, w, k >> 6


@numba.njit(cache=True, inline="always")
def scale_round(u: np.float32, w: np.float32, e: int) -> Any:
    """(u + w) 2^e rounded once to float32 (u + w about in [0.99, 2.02]; e >= -152), the subnormal grid
    included: below 2^-126 the sum is rounded to a multiple of 2^(-149 - e) before the exact scaling."""
    if e > -126 or (e == -126 and u >= ONE):
        y = u + w
        if e > 126:
            return (y * pow2(e - 1)) * _TWO   # overflows to inf exactly when the rounded value does
        return y * pow2(e)
    m = pow2(-149 - e) if -149 - e <= 127 else INF        # the grid's spacing, relative to u + w
    if m > F32(8.0):
        return ZERO
    hb = f2u(u)
    # u cut at the grid: clear the bits below m (u's exponent field minus m's gives the bits to keep)
    ue = np.int64((hb >> U32(23)) & U32(255))
    me = np.int64((f2u(m) >> U32(23)) & U32(255))
    drop = me - ue + 23
    if drop <= 0:
        uh = u
    elif drop >= 24:
        uh = ZERO
    else:
        uh = u2f(hb & U32((0xFFFFFFFF << drop) & 0xFFFFFFFF))
    t = (u - uh) + w
    c = SHIFTER * m
    tr = (t + c) - c
    z = uh + tr
    return (z * pow2(e + 64)) * pow2(-64)


@numba.njit(cache=True)
def raw_exp32(x: np.float32) -> Any:
    """exp(x) from the float32 pair alone: correctly rounded except within a few 2^-37 of a rounding boundary;
    exact specials (NaN -> NaN, +inf -> +inf, -inf -> +0)."""
    if x != x:
        return x + x
    if x > EXP_HI:
        return INF
    if x < EXP_LO:
        return ZERO
    if abs(x) < EXP_TINY:
        return ONE + x
    u, w, e = exp_core(x, ZERO)
    return scale_round(u, w, e)


@numba.njit(cache=True)
def exp32(x: np.float32) -> Any:
    """exp(x) in float32, correctly rounded on every input: raw_exp32, corrected on its exception table's inputs."""
    return cr_fix(EXP_KEYS, EXP_VALS, EXP_DISP, x, raw_exp32(x))


_VEC_LO = F32(-87.0)   # exp(x) for x >= this is normal (2^e (u + w) with e >= -126, u >= 1 at e = -126)
_NO_FIX = U32(0xFFFFFFFF)  # no exception table entry (a NaN's bits: no correctly rounded exp is NaN)
ROW_BLOCK = 512        # numbers of a row exp_array_blocks takes through its three loops at a time
SHORT_ROW = 32         # rows shorter than this are exp32 number by number (no buffers to allocate)


# whether exp_array is the one loop with gathers (numba's target has AVX-512F) or the three loops without
GATHERS = has_avx512f()


@numba.njit(cache=True, inline="always")
def _lanes_x(x: np.float32) -> Any:
    """x clamped to [-87, EXP_HI], and 0 for |x| < EXP_TINY: the argument the vectorised loops evaluate (their
    results outside are selected apart). Below EXP_TINY exp(x) rounds to 1, as exp(0) does, exactly (raw_exp32's
    1 + x there); evaluated on x itself, such a lane's reduction and polynomial make numbers in the subnormal range,
    which an Intel core computes through a microcode assist: the exp entry's twin (exp_array apart and in place) took
    80 ns a number on the subnormal inputs against 7 elsewhere (Intel Xeon, family 6, model 167; an AMD core takes no
    such assist)."""
    x = ZERO if abs(x) < EXP_TINY else x
    return min(max(x, _VEC_LO), EXP_HI)


@numba.njit(cache=True, inline="always")
def _lane_j(x: np.float32) -> Any:
    """x's table index j: exp_reduce's kf mod 64, of x clamped to [-87, EXP_HI]."""
    return np.int32(exp_k(_lanes_x(x))) & np.int32(63)


@numba.njit(cache=True, inline="always")
def _lane_fix(x: np.float32, h: Any) -> Any:
    """The exception table's correctly rounded result for x (its bits), _NO_FIX where x is not in the table; h is
    the hash of x's bits (cr_table.fmix32), as cr_fix reads the table."""
    s = cr_slot(EXP_KEYS, EXP_DISP, np.uint64(h))
    return EXP_VALS[s] if EXP_KEYS[s] == f2u(x) else _NO_FIX


@numba.njit(cache=True, inline="always")
def _lane(xt: np.float32, th: np.float32, tl: np.float32, fix: Any) -> Any:
    """exp32(xt) for xt >= -87 without a branch (selects only), from the table pair th + tl = 2^(j/64) and the
    exception table's result fix: raw_exp32's path through exp_core and scale_round's normal case (tiny |x| needs
    no case of its own there: 1 + x and exp(x) both round to 1), then exp32's table result; NaN gives x + x and
    x > EXP_HI gives +inf as in exp32. An x below -87, whose result may be subnormal or zero, is returned as
    itself: a negative number, which no result is."""
    kf, rh, q = exp_reduce(_lanes_x(xt), ZERO)
    e = np.int32(kf) >> np.int32(6)
    u, w = exp_scale(th, tl, rh, q)
    big = e > 126
    a = pow2(int(e - 1 if big else e))
    y = ((u + w) * a) * (_TWO if big else ONE)
    y = u2f(fix) if fix != _NO_FIX else y
    y = INF if xt > EXP_HI else y
    y = xt if xt < _VEC_LO else y
    return xt + xt if xt != xt else y


@numba.njit(cache=True, error_model="numpy")
def _exp_keys(x: Any, jj: Any, hs: Any) -> None:
    """The first loop of exp_array_blocks' block (vectorised): each number's table index and the hash of its
    bits."""
    for t in range(x.size):
        jj[t] = _lane_j(x[t])
        hs[t] = U32(fmix32(np.uint64(f2u(x[t]))))


@numba.njit(cache=True, error_model="numpy")
def _exp_reads(x: Any, jj: Any, hs: Any, th: Any, tl: Any, fix: Any) -> None:
    """The second loop (one number at a time): the table pair 2^(j/64) = th + tl and the exception table's
    result."""
    for t in range(x.size):
        j = jj[t]
        th[t] = EXP_TH[j]
        tl[t] = EXP_TL[j]
        fix[t] = _lane_fix(x[t], hs[t])


@numba.njit(cache=True, error_model="numpy")
def _exp_lanes(x: Any, th: Any, tl: Any, fix: Any) -> None:
    """The third loop (vectorised, in place): _lane from the pairs and results the second read."""
    for t in range(x.size):
        x[t] = _lane(x[t], th[t], tl[t], fix[t])


@numba.njit(cache=True, inline="always")
def _exp_start(src: Any, dst: Any) -> bool:
    """exp_array's first step: a row under SHORT_ROW numbers is exp32's, number by number (True: done); a longer
    one is copied into dst (unless dst is src), where the loops run in place: as two arrays that might overlap,
    LLVM would check at run time, find them equal and run the loop scalar."""
    n = src.size
    if n < SHORT_ROW:
        for i in range(n):
            dst[i] = exp32(src[i])
        return True
    if src.ctypes.data != dst.ctypes.data:
        for i in range(n):
            dst[i] = src[i]
    return False


@numba.njit(cache=True, inline="always")
def _exp_finish(dst: Any) -> None:
    """exp_array's last step: the numbers below -87 (left negative by _lane) get exp32's answer."""
    for i in range(dst.size):
        if dst[i] < ZERO:
            dst[i] = exp32(dst[i])


@numba.njit(cache=True, error_model="numpy")
def exp_array_gathers(src: Any, dst: Any) -> None:
    """exp_array in one loop over the row, the table reads in it: with AVX-512 LLVM vectorises it with gathers
    (4.1-4.3 ns a number against 4.5-6.1 for exp_array_blocks, AMD EPYC family 25 model 17; 3.7 on an Intel
    Xeon with AVX-512), and it is one loop less to compile. Without gathers it runs number by number (12.1-12.3
    ns, AMD EPYC family 25 model 1)."""
    if _exp_start(src, dst):
        return
    for t in range(dst.size):
        xt = dst[t]
        j = _lane_j(xt)
        dst[t] = _lane(xt, EXP_TH[j], EXP_TL[j], _lane_fix(xt, U32(fmix32(np.uint64(f2u(xt))))))
    _exp_finish(dst)


@numba.njit(cache=True, error_model="numpy")
def exp_array_blocks(src: Any, dst: Any) -> None:
    """exp_array ROW_BLOCK numbers at a time through three loops: the table indices and hashes (vectorised), the
    table reads (one number at a time), the arithmetic (vectorised, in place). Without gathers (AVX2 on AMD),
    this is 4.4-4.6 ns a number against exp_array_gathers' 12.1-12.3 (AMD EPYC, family 25, model 1)."""
    if _exp_start(src, dst):
        return
    n = dst.size
    m = min(n, ROW_BLOCK)
    buf = np.empty((5, m), dtype=np.uint32)   # one allocation: j, hash, th, tl, the table's result
    jj, hs, fix = buf[0].view(np.int32), buf[1], buf[4]
    th, tl = buf[2].view(np.float32), buf[3].view(np.float32)
    for i0 in range(0, n, m):
        x = dst[i0:min(n, i0 + m)]
        k = x.size
        _exp_keys(x, jj[:k], hs[:k])
        _exp_reads(x, jj[:k], hs[:k], th[:k], tl[:k], fix[:k])
        _exp_lanes(x, th[:k], tl[:k], fix[:k])
    _exp_finish(dst)


# dst[i] = exp32(src[i]) for every i, the same bits (dst may be src; no other overlap): the form that is faster
# where numba compiles (both give the same bits, each tested on every machine).
exp_array = exp_array_gathers if GATHERS else exp_array_blocks
