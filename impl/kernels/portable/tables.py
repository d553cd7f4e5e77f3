"""The tables of impl's portable functions, computed at import with Python's exact integers (fixed-point series to
2^-400), then rounded to float32 pairs by integer rounding: no wider float is involved anywhere.

    exp       2^(j/64), j = 0..63, as pairs; ln2/64 in three parts, the first two of 10 significant bits
    log       c_j ~ 1/m on 128 intervals of the significand m (9 significant bits), -log(c_j) as pairs; ln 2 in two
              parts, the first of 15 bits
    sin, cos  sin(j/64), cos(j/64), j = 0..51, as pairs; pi/2 as a pair; the bits of 2/pi in 32-bit words
"""

from __future__ import annotations

import numpy as np

from bendtorch.impl.kernels.portable.eft import F32

_P = 400            # fixed point: an integer V stands for V / 2^_P
_ONE_FX = 1 << _P


def _fx_mul(a: int, b: int) -> int:
    return (a * b) >> _P


def _fx_atanh_frac(a: int, b: int) -> int:
    """atanh(a/b) for |a/b| <= 1/3: sum (a/b)^(2k+1) / (2k+1) in fixed point (odd: computed for |a|)."""
    if a < 0:
        return -_fx_atanh_frac(-a, b)
    p = (a << _P) // b
    q2 = _fx_mul(p, p)
    total, k = 0, 0
    while p:
        total += p // (2 * k + 1)
        p = _fx_mul(p, q2)
        k += 1
    return total


def _fx_atan_inv(n: int) -> int:
    """atan(1/n), alternating series."""
    total, k, p, sign = 0, 0, _ONE_FX // n, 1
    while p:
        total += sign * (p // (2 * k + 1))
        p //= n * n
        k += 1
        sign = -sign
    return total


_LN2_FX = 2 * _fx_atanh_frac(1, 3)                              # ln 2 = 2 atanh(1/3)
_PI_FX = 16 * _fx_atan_inv(5) - 4 * _fx_atan_inv(239)           # Machin


def _fx_exp(v: int) -> int:
    """exp(v) for |v| <= 1, Taylor series."""
    total, term, k = _ONE_FX, _ONE_FX, 1
    while term:
        term = _fx_mul(term, v) // k
        total += term
        k += 1
    return total


def _fx_ln(num: int, den: int) -> int:
    """ln(num/den) for num/den near 1: 2 atanh((num - den)/(num + den))."""
    return 2 * _fx_atanh_frac(num - den, num + den)


def _fx_sincos(v: int) -> tuple[int, int]:
    """(sin v, cos v) for |v| <= 1, Taylor series."""
    s, c, term, k = 0, 0, _ONE_FX, 0
    while term:
        if k % 4 == 0:
            c += term
        elif k % 4 == 1:
            s += term
        elif k % 4 == 2:
            c -= term
        else:
            s -= term
        k += 1
        term = _fx_mul(term, v) // k
    return s, c


def _f32_of(bits: int) -> np.float32:
    f: np.float32 = np.array([bits], dtype=np.uint32).view(np.float32)[0]
    return f


def _round24(num: int, shift: int) -> tuple[np.float32, int, int]:
    """The float32 nearest num / 2^shift (num > 0, ties to even, normal range), and that float as an exact
    fraction m / 2^sh (m an integer)."""
    drop = num.bit_length() - 24
    if drop > 0:
        m = num >> drop
        rem = num - (m << drop)
        half = 1 << (drop - 1)
        if rem > half or (rem == half and m & 1):
            m += 1
    else:
        m = num << -drop
    if m == 1 << 24:
        m >>= 1
        drop += 1
    e2 = drop - shift                  # the value is m 2^e2, 2^23 <= m < 2^24
    field = e2 + 23 + 127
    assert 0 < field < 255, "table value out of float32's normal range"
    return _f32_of((field << 23) | (m & 0x7FFFFF)), m, e2


def _pair(v: int, shift: int = _P) -> tuple[np.float32, np.float32]:
    """v / 2^shift (any sign) as a float32 pair hi + lo, each the nearest float32 of what it stands for."""
    if v == 0:
        return F32(0.0), F32(0.0)
    sg = F32(-1.0) if v < 0 else F32(1.0)
    a = abs(v)
    hi, m, e2 = _round24(a, shift)
    # the remainder a / 2^shift - m 2^e2, over the common denominator 2^(shift + up)
    up = max(0, -(e2 + shift))
    rest = (a << up) - (m << (e2 + shift + up))
    if rest == 0:
        return sg * hi, F32(0.0)
    lo, _, _ = _round24(abs(rest), shift + up)
    return sg * hi, sg * (lo if rest > 0 else -lo)


def _leading(v: int, shift: int, keep: int) -> tuple[np.float32, int]:
    """v / 2^shift (v > 0) cut to its `keep` leading bits (toward zero): the float32 and its integer numerator
    over 2^shift."""
    drop = max(0, v.bit_length() - keep)
    n = (v >> drop) << drop
    f, _, _ = _round24(n, shift)        # exact: n has at most `keep` <= 24 significant bits
    return f, n


# exp: 2^(j/64), j = 0..63, as pairs; ln2/64 in three parts, the first two of 10 significant bits (k times them
# is exact for |k| < 2^14)
_EXP_N = 64
_T2 = [_pair(_fx_exp(j * _LN2_FX // _EXP_N)) for j in range(_EXP_N)]
EXP_TH = np.array([t[0] for t in _T2], dtype=np.float32)
EXP_TL = np.array([t[1] for t in _T2], dtype=np.float32)
_L64 = _LN2_FX // _EXP_N
EXP_L1, _n1 = _leading(_L64, _P, 10)
EXP_L2, _n2 = _leading(_L64 - _n1, _P, 10)
EXP_L3 = _pair(_L64 - _n1 - _n2)[0]

# log: m in [1 + j/128, 1 + (j+1)/128) for j < 64 (m <= sqrt 2), m/2 in [1/2 + i/128, 1/2 + (i+1)/128) for
# j = 64 + i (m > sqrt 2); c_j = 1/(the interval's middle) cut to 9 significant bits (so m c is exact on 12-bit
# halves of m), c = 1 on the two intervals next to 1 (no cancellation there); T_j = -log(c_j) as a pair
_LOG_N = 128
_log_c, _log_t = [], []
for _j in range(_LOG_N):
    if _j in (0, _LOG_N - 1):
        _log_c.append(F32(1.0))
        _log_t.append((F32(0.0), F32(0.0)))
        continue
    _mid_num, _mid_den = (256 + 2 * _j + 1, 256) if _j < 64 else (128 + 2 * (_j - 64) + 1, 256)
    _c9, _cn = _leading((_mid_den << _P) // _mid_num, _P, 9)
    _log_c.append(_c9)
    _log_t.append(_pair(-_fx_ln(_cn, _ONE_FX)))
LOG_C = np.array(_log_c, dtype=np.float32)
LOG_TH = np.array([t[0] for t in _log_t], dtype=np.float32)
LOG_TL = np.array([t[1] for t in _log_t], dtype=np.float32)
LN2_H, _nl = _leading(_LN2_FX, _P, 15)          # e ln2_h exact for |e| < 2^9
LN2_L = _pair(_LN2_FX - _nl)[0]

# sin/cos: S_j = sin(j/64), C_j = cos(j/64) for j = 0..51 as pairs; pi/2 as a pair; 2/pi in 32-bit words
_SC_N = 52
_SC = [_fx_sincos((j << _P) // 64) for j in range(_SC_N)]
SIN_TH = np.array([_pair(s)[0] for s, _ in _SC], dtype=np.float32)
SIN_TL = np.array([_pair(s)[1] for s, _ in _SC], dtype=np.float32)
COS_TH = np.array([_pair(c)[0] for _, c in _SC], dtype=np.float32)
COS_TL = np.array([_pair(c)[1] for _, c in _SC], dtype=np.float32)
PIO2_H, PIO2_L = _pair(_PI_FX // 2)
_2PI_WORDS = 9                                   # 288 bits: a float32's largest exponent needs bits up to ~200
_2PI_INT = (2 << (_P + 32 * _2PI_WORDS)) // _PI_FX   # floor(2/pi 2^288) (pi to 2^-400: every bit right)
TWO_OVER_PI = np.array([(_2PI_INT >> (32 * (_2PI_WORDS - 1 - i))) & 0xFFFFFFFF for i in range(_2PI_WORDS)]
                       + [0], dtype=np.uint64)
