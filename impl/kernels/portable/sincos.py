"""impl's portable sin and cos: x = k pi/2 + r by Payne-Hanek (x's 24-bit significand times 96 bits of 2/pi,
integers); r = j/64 + b, sin r = S_j cos b + C_j sin b, cos r = C_j cos b - S_j sin b with the table pairs S_j, C_j.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.cr_table import (COS_DISP, COS_KEYS, COS_VALS, SIN_DISP, SIN_KEYS, SIN_VALS,
                                                      cr_fix)
from bendtorch.impl.kernels.portable.eft import (F32, HALF, INF, M32, NAN, ONE, R24, SHIFTER, SIXTH, U32, ZERO, clz64,
                                                 f2u, fast_two_sum, pow2, two_prod, two_sum)
from bendtorch.impl.kernels.portable.tables import COS_TH, COS_TL, PIO2_H, PIO2_L, SIN_TH, SIN_TL, TWO_OVER_PI

_R120 = F32(0.008333333333333333)
_PIO4 = F32(0.7853981)        # below pi/4: no reduction
# below these sin(x) rounds to x (x^3/6 under half the float32 spacing below x) and cos(x) to 1 (x^2/2 under half
# the spacing below 1), and so do the table evaluations: given at once, without the evaluation's terms in the
# subnormal range, which an Intel core computes through microcode assists (sin 120-160 ns a number at |x| near
# 1e-36 and 4e-22 against 10 elsewhere, Intel Xeon, family 6, model 167)
_SIN_TINY = F32(2.0 ** -12)
_COS_TINY = F32(2.0 ** -13)


@numba.njit(cache=True, inline="always")
def _word_at(k: Any, sh: Any) -> Any:
    """The 32 bits of 2/pi from bit 32 k + sh + 1 on (words k and k + 1 of TWO_OVER_PI, shifted by sh)."""
    hi = TWO_OVER_PI[k]
    lo = TWO_OVER_PI[k + 1]
    return ((hi << np.uint64(sh)) | (lo >> np.uint64(32 - sh))) & M32 if sh else hi


@numba.njit(cache=True)
def _reduce(a: np.float32) -> Any:
    """a (finite, >= pi/4) = k pi/2 + (rh + rl), |rh + rl| <= pi/4 (a little more), returns rh, rl, k mod 4.
    Payne-Hanek: a = m 2^q (m < 2^24 an integer); a 2/pi mod 4 from m times the 96 bits of 2/pi that matter."""
    b = f2u(a)
    m = np.uint64((b & U32(0x7FFFFF)) | U32(0x800000))
    q = np.int64(b >> U32(23)) - 150
    i0 = q - 1 if q - 1 > 1 else 1             # first bit of 2/pi that can reach the 2^1 place
    # 96 bits of 2/pi from bit i0 (bit 1 = the 2^-1 place), from the 32-bit words
    wpos = (i0 - 1) >> 5
    sh = (i0 - 1) & 31
    w0 = _word_at(wpos, sh)
    w1 = _word_at(wpos + 1, sh)
    w2 = _word_at(wpos + 2, sh)
    p2 = m * w2
    l2 = p2 & M32
    p1 = m * w1 + (p2 >> np.uint64(32))
    l1 = p1 & M32
    p0 = m * w0 + (p1 >> np.uint64(32))       # the product = p0 2^64 + l1 2^32 + l2
    lo64 = (l1 << np.uint64(32)) | l2
    s = i0 + 95 - q                             # fraction bits of the product, in [94, 120]
    t = s - 64
    quad = np.int64((p0 >> np.uint64(t)) & np.uint64(3))
    fh = (p0 << np.uint64(64 - t)) | (lo64 >> np.uint64(t))
    fl = lo64 << np.uint64(64 - t)
    neg = False
    if fh >= np.uint64(1) << np.uint64(63):    # fraction >= 1/2: take fraction - 1, one more quadrant
        quad = (quad + 1) & 3
        fh = ~fh
        fl = ~fl
        fl = fl + np.uint64(1)
        if fl == np.uint64(0):
            fh = fh + np.uint64(1)
        neg = True
    if fh == np.uint64(0):                    # never for a float32 input (its fraction is far above 2^-64)
        fh, fl = fl, np.uint64(0)
    n = clz64(fh)
    if n > 0:
        fh = (fh << np.uint64(n)) | (fl >> np.uint64(64 - n))
        fl = fl << np.uint64(n)
    # the fraction = (fh + fl 2^-64) 2^(-64 - n); its leading 24 bits and the next 24, exact in float32
    hi24 = F32(np.int64(fh >> np.uint64(40)))
    lo24 = F32(np.int64((fh >> np.uint64(16)) & np.uint64(0xFFFFFF)))
    sc = pow2(-24 - n) if n < 100 else ZERO
    fhi = hi24 * sc                            # exact: n stays far from the subnormal range for float32 input
    flo = lo24 * (sc * pow2(-24))
    ph, pe = two_prod(fhi, PIO2_H)
    pl = pe + (fhi * PIO2_L + flo * PIO2_H)
    rh, rl = fast_two_sum(ph, pl)
    if neg:
        rh, rl = -rh, -rl
    return rh, rl, quad


_SC_INV = F32(64.0)
_SC_STEP = F32(0.015625)


@numba.njit(cache=True, inline="always")
def _sincos_r(rh: np.float32, rl: np.float32, want_sin: bool) -> Any:
    """sin(r) or cos(r) for r = rh + rl, |r| <= pi/4 + a little, rounded once."""
    neg = rh < ZERO
    if neg:
        rh, rl = -rh, -rl
    jf = (rh * _SC_INV + SHIFTER) - SHIFTER
    j = np.int64(jf)
    bh, bl = fast_two_sum(rh - jf * _SC_STEP, rl)   # rh - j/64 exact (Sterbenz, or j = 0)
    b2 = bh * bh
    ss = bl - bh * b2 * (SIXTH - b2 * _R120)        # sin b = bh + ss
    cs = -(b2 * HALF) - bh * bl + b2 * b2 * R24    # cos b = 1 + cs
    sh, sl, ch, cl = SIN_TH[j], SIN_TL[j], COS_TH[j], COS_TL[j]
    if want_sin:
        p, pe = two_prod(ch, bh)
        s, t = two_sum(sh, p)
        small = t + (pe + (sl + (sh * cs + (ch * ss + cl * bh))))
        y = s + small
        return -y if neg else y
    p, pe = two_prod(sh, bh)
    s, t = two_sum(ch, -p)
    small = t + (-pe + (cl + (ch * cs - (sh * ss + sl * bh))))
    return s + small


@numba.njit(cache=True)
def raw_sin32(x: np.float32) -> Any:
    """sin(x) from the float32 pair alone (odd bit for bit), any finite x: correctly rounded except near rounding
    boundaries; NaN and +-inf -> NaN, +-0 -> +-0."""
    if x != x or abs(x) == INF:
        return NAN if x == x else x + x
    a = abs(x)
    if a < _SIN_TINY:                          # +-0 and the tiny: x
        return x
    if a < _PIO4:
        y = _sincos_r(a, ZERO, True)
    else:
        rh, rl, k = _reduce(a)
        if k & 1:
            y = _sincos_r(rh, rl, False)
        else:
            y = _sincos_r(rh, rl, True)
        if k & 2:
            y = -y
    return -y if x < ZERO else y


@numba.njit(cache=True)
def sin32(x: np.float32) -> Any:
    """sin(x) in float32, correctly rounded on every input: raw_sin32, corrected on its exception table's inputs."""
    return cr_fix(SIN_KEYS, SIN_VALS, SIN_DISP, x, raw_sin32(x))


@numba.njit(cache=True)
def raw_cos32(x: np.float32) -> Any:
    """cos(x) from the float32 pair alone (even bit for bit), any finite x: correctly rounded except near rounding
    boundaries; NaN and +-inf -> NaN, cos(+-0) = 1."""
    if x != x or abs(x) == INF:
        return NAN if x == x else x + x
    a = abs(x)
    if a < _COS_TINY:
        return ONE
    if a < _PIO4:
        return _sincos_r(a, ZERO, False)
    rh, rl, k = _reduce(a)
    if k & 1:
        y = _sincos_r(rh, rl, True)
    else:
        y = _sincos_r(rh, rl, False)
    if (k + 1) & 2:
        y = -y
    return y


@numba.njit(cache=True)
def cos32(x: np.float32) -> Any:
    """cos(x) in float32, correctly rounded on every input: raw_cos32, corrected on its exception table's inputs."""
    return cr_fix(COS_KEYS, COS_VALS, COS_DISP, x, raw_cos32(x))
