"""impl's own float32 exp, log, tanh, sin, cos and pow: float32 arithmetic and integer operations only, so they give
the same bits on every machine, C library and operating system (the C library's expf, logf, ... differ between C
libraries and their releases, and the seed's F32 builtins are its runtime's, not fixed by its text).

Each function carries its result as an unevaluated pair of float32 numbers hi + lo (about 48 significant bits,
Knuth's two_sum and Dekker's two_prod with 12-bit halves cut by masking the low 12 bits, so every partial product is
exact) and rounds once at the end; the error before that last rounding is a few 2^-36 of the result or less, so the
result is the correctly rounded float32 except on inputs within that distance of a rounding boundary, and always
faithful (raw_exp32, raw_log32, ...). The exhaustive checker (reports/sweep.py) measures each function on all 2^32
inputs and lists those inputs, a few thousand a function; exp32, log32, tanh32, sin32 and cos32 return the correctly
rounded value there from an exception table (below), so they are correctly rounded on every input. pow32, a function
of two float32s (2^64 inputs, beyond any list), is the pair evaluation alone.

Tables (2^(j/64), log(1/c), sin(j/64), cos(j/64), ln 2, pi/2, the bits of 2/pi) are computed at import with Python's
exact integers (fixed-point series to 2^-200), then rounded to float32 pairs by integer rounding: no wider float is
involved anywhere. Every float32 literal is a module constant of type np.float32 (a bare 1.0 is wider in numba and
would promote the arithmetic), and no operation is fused (numba without fastmath never contracts).

    exp   x = (64 e + j) ln2/64 + r, |r| <= ln2/128 (ln2/64 in three parts, the first two exact in products);
          exp(x) = 2^e 2^(j/64) (1 + r + r^2/2 + r^3/6 + r^4/24), the product with the table pair exact; results
          below 2^-126 rounded once on the subnormal grid
    log   x = 2^e m, m in [sqrt(1/2), sqrt 2); c ~ 1/m from a 128-entry table (c = 1 around m = 1), r = m c - 1 exact;
          log x = e ln2 - log c + r - r^2/2 + r^3/3 - ..., the first four terms summed without error
    tanh  x + x^3 P(x^2) below 2^-5; otherwise E = exp(2|x|) as a pair, tanh = (E - 1) / (E + 1) as a pair
          quotient; +-1 beyond 9.1
    sin, cos  x = k pi/2 + r by Payne-Hanek (x's 24-bit significand times 96 bits of 2/pi, integers); r = j/64 + b,
          sin r = S_j cos b + C_j sin b, cos r = C_j cos b - S_j sin b with the table pairs S_j, C_j
    pow   exp(y log x) with log x and the product y log x as pairs (x > 0; the IEEE special cases around it)
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core.extending import intrinsic

F32 = np.float32
U32 = np.uint32


# ---------------------------------------------------------------------------------------------------------------
# tables, from exact integer arithmetic at import
# ---------------------------------------------------------------------------------------------------------------

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
EXP_INV_L = F32(92.33248)            # 64 / ln 2, rounded (it only picks k: any nearby value works)
EXP_HI = F32(88.8)                   # exp(x) > 2^128 beyond: +inf (and the scaling overflows exactly below it)
EXP_LO = F32(-104.0)                 # exp(x) < 2^-150 beyond: +0
EXP_TINY = F32(2.9802322e-08)        # 2^-25: exp(x) rounds to 1 below this |x|

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


# ---------------------------------------------------------------------------------------------------------------
# bits and the error-free transformations
# ---------------------------------------------------------------------------------------------------------------

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

_ZERO = F32(0.0)
_HALF = F32(0.5)
_ONE = F32(1.0)
_TWO = F32(2.0)
_THIRD = F32(0.3333333333333333)
_SIXTH = F32(0.16666666666666666)
_QUARTER = F32(0.25)
_FIFTH = F32(0.2)
_R24 = F32(0.041666666666666664)
_R120 = F32(0.008333333333333333)
_INF = F32(np.inf)
_NAN = F32(np.nan)
_SHIFTER = F32(12582912.0)   # 1.5 2^23: (t + S) - S rounds t to an integer, ties to even, for |t| < 2^22
_MASK12 = U32(0xFFFFF000)    # keeps a float32's sign, exponent and its 12 leading significant bits
_TINY_NORMAL = F32(1.1754944e-38)
_TWO23 = F32(8388608.0)
_TWO64 = F32(18446744073709551616.0)
_TWO_M64 = F32(5.421010862427522e-20)


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


# ---------------------------------------------------------------------------------------------------------------
# the exception tables: the inputs on which a pair evaluation misrounds, with their correctly rounded values
# ---------------------------------------------------------------------------------------------------------------
#
# raw_exp32, raw_log32, raw_tanh32, raw_sin32 and raw_cos32 misround where f(x) lies within their pair's error of a
# rounding boundary: a few thousand inputs each out of 2^32, all of them found by the exhaustive checker (CORE-MATH
# lists such inputs the same way). exp32, ..., cos32 look x up in the function's table and return its value there.
# A table is a perfect hash (hash and displace): h = fmix32(bits of x), the slot (h mod M) xor DISP[(h >> 16) mod
# NB], M and NB powers of two up to 2^16 (so the two index fields of h never overlap); a slot holds an input's bits
# and its correctly rounded bits, an empty slot the NaN 0xFFFFFFFF twice. No branch: LLVM vectorises the lookup in
# exp_array. The tables are built by `python -m bendtorch.reports.cr_tables` from the checker's lists and stored in
# cr_exceptions.npz; CR_TABLES_SHA256 below is their digest, checked at import, and numba's cache (keyed on this
# source file) never serves code compiled with other tables because changing them means changing that line.

CR_FUNCS = ("exp", "log", "tanh", "sin", "cos")
CR_TABLES_FILE = Path(__file__).with_name("cr_exceptions.npz")
CR_TABLES_SHA256 = "65aa3146472646c3f1024c116433e0cdda2eb4492ed563214b0cd60fd54aed45"
_EMPTY = 0xFFFFFFFF
_M32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, inline="always")
def fmix32(k: Any) -> Any:
    """MurmurHash3's 32-bit finaliser (a bijection of 32-bit words), on a uint64 holding a 32-bit word."""
    h = k ^ (k >> np.uint64(16))
    h = (h * np.uint64(0x85EBCA6B)) & _M32
    h = h ^ (h >> np.uint64(13))
    h = (h * np.uint64(0xC2B2AE35)) & _M32
    return h ^ (h >> np.uint64(16))


@numba.njit(cache=True)
def _fmix32_each(k: Any) -> Any:
    h = np.empty(k.size, dtype=np.uint64)
    for i in range(k.size):
        h[i] = fmix32(np.uint64(k[i]))
    return h


def fmix32_np(k: Any) -> Any:
    """fmix32 of each word of an array of uint32 (the table builder's hash: the very function cr_fix calls)."""
    return _fmix32_each(np.ascontiguousarray(k, dtype=np.uint32).reshape(-1))


def build_cr_table(keys: Any, vals: Any) -> tuple[Any, Any, Any]:
    """The perfect hash of inputs `keys` (distinct float32 bits, no NaN) to `vals`: (KEYS, VALS, DISP), uint32.
    Deterministic: buckets in order of size (largest first), then index; each takes the least displacement that
    puts its inputs in free slots."""
    keys = np.asarray(keys, dtype=np.uint32)
    vals = np.asarray(vals, dtype=np.uint32)
    n = keys.size
    if np.unique(keys).size != n:
        raise ValueError("the table's inputs must be distinct")
    m = 1
    while m < 2 * n:             # load at most 1/2
        m *= 2
    nb = max(1, m // 4)          # buckets of about 2 inputs
    if m > 1 << 16:
        raise ValueError(f"{n} inputs: more than the 2^15 a table holds")
    h = fmix32_np(keys)
    base = (h & np.uint64(m - 1)).astype(np.int64)
    bucket = ((h >> np.uint64(16)) & np.uint64(nb - 1)).astype(np.int64)
    tk = np.full(m, _EMPTY, dtype=np.uint32)
    tv = np.full(m, _EMPTY, dtype=np.uint32)
    disp = np.zeros(nb, dtype=np.uint32)
    used = np.zeros(m, dtype=bool)
    members: dict[int, list[int]] = {}
    for i in np.argsort(bucket, kind="stable"):
        members.setdefault(int(bucket[i]), []).append(int(i))
    for b, idx in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        for d in range(m):
            slots = base[idx] ^ d
            if np.unique(slots).size == slots.size and not used[slots].any():
                used[slots] = True
                tk[slots] = keys[idx]
                tv[slots] = vals[idx]
                disp[b] = d
                break
        else:
            raise ValueError(f"bucket {b} found no free slots")
    return tk, tv, disp


def cr_tables_digest(tables: dict[str, Any]) -> str:
    """sha256 of the tables' contents (little-endian uint32, in CR_FUNCS order), independent of the file format."""
    hs = hashlib.sha256()
    for f in CR_FUNCS:
        for part in ("keys", "vals", "disp"):
            a = np.ascontiguousarray(tables[f"{f}_{part}"]).astype("<u4")
            hs.update(f"{f}_{part}:{a.size};".encode())
            hs.update(a.tobytes())
    return hs.hexdigest()


def load_cr_tables(path: Path = CR_TABLES_FILE) -> dict[str, Any]:
    """The tables in `path` (an .npz of plain uint32 arrays; nothing unpickled), their digest checked."""
    want = [f"{f}_{part}" for f in CR_FUNCS for part in ("keys", "vals", "disp")]
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in want if k not in z.files]
        if missing:
            raise RuntimeError(f"{path}: no array {missing[0]}")
        tables = {k: np.ascontiguousarray(z[k]).astype(np.uint32) for k in want}
    got = cr_tables_digest(tables)
    if got != CR_TABLES_SHA256:
        raise RuntimeError(f"{path}: its tables' sha256 is {got}, but impl/kernels/portable.py expects "
                           f"{CR_TABLES_SHA256} (CR_TABLES_SHA256): rebuild it or update that line")
    return tables


_CR = load_cr_tables()
EXP_KEYS, EXP_VALS, EXP_DISP = _CR["exp_keys"], _CR["exp_vals"], _CR["exp_disp"]
LOG_KEYS, LOG_VALS, LOG_DISP = _CR["log_keys"], _CR["log_vals"], _CR["log_disp"]
TANH_KEYS, TANH_VALS, TANH_DISP = _CR["tanh_keys"], _CR["tanh_vals"], _CR["tanh_disp"]
SIN_KEYS, SIN_VALS, SIN_DISP = _CR["sin_keys"], _CR["sin_vals"], _CR["sin_disp"]
COS_KEYS, COS_VALS, COS_DISP = _CR["cos_keys"], _CR["cos_vals"], _CR["cos_disp"]


@numba.njit(cache=True, inline="always")
def cr_fix(keys: Any, vals: Any, disp: Any, x: np.float32, y: np.float32) -> Any:
    """y, or the table's correctly rounded value when x is one of its inputs (no branch)."""
    xb = f2u(x)
    h = fmix32(np.uint64(xb))
    s = (h & np.uint64(keys.size - 1)) ^ np.uint64(disp[(h >> np.uint64(16)) & np.uint64(disp.size - 1)])
    return u2f(vals[s]) if keys[s] == xb else y


# ---------------------------------------------------------------------------------------------------------------
# exp
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, inline="always")
def _exp_core(xh: np.float32, xl: np.float32) -> Any:
    """exp(xh + xl) = (u + w) 2^e with u + w in about [0.99, 2.02] accurate to a few 2^-37, |w| <= ulp(u);
    for |xh| <= 104."""
    t = xh * EXP_INV_L
    kf = (t + _SHIFTER) - _SHIFTER
    k = np.int64(kf)
    t1 = xh - kf * EXP_L1                      # exact (Sterbenz; kf EXP_L1 is exact)
    rh, rl = two_sum(t1, -(kf * EXP_L2))       # kf EXP_L2 exact
    rl = rl + (xl - kf * EXP_L3)
    rh, rl = fast_two_sum(rh, rl)
    r2 = rh * rh
    q = rl + rh * rl + r2 * (_HALF + rh * (_SIXTH + rh * _R24))
    j = k & 63
    e = k >> 6
    th = EXP_TH[j]
    tl = EXP_TL[j]
    p, pe = two_prod(th, rh)
    small = pe + (th * q + (tl + tl * rh))
    u, v = fast_two_sum(th, p)
    return u, v + small, e


@numba.njit(cache=True, inline="always")
def _scale_round(u: np.float32, w: np.float32, e: int) -> Any:
    """(u + w) 2^e rounded once to float32 (u + w about in [0.99, 2.02]; e >= -152), the subnormal grid
    included: below 2^-126 the sum is rounded to a multiple of 2^(-149 - e) before the exact scaling."""
    if e > -126 or (e == -126 and u >= _ONE):
        y = u + w
        if e > 126:
            return (y * pow2(e - 1)) * _TWO   # overflows to inf exactly when the rounded value does
        return y * pow2(e)
    m = pow2(-149 - e) if -149 - e <= 127 else _INF        # the grid's spacing, relative to u + w
    if m > F32(8.0):
        return _ZERO
    hb = f2u(u)
    # u cut at the grid: clear the bits below m (u's exponent field minus m's gives the bits to keep)
    ue = np.int64((hb >> U32(23)) & U32(255))
    me = np.int64((f2u(m) >> U32(23)) & U32(255))
    drop = me - ue + 23
    if drop <= 0:
        uh = u
    elif drop >= 24:
        uh = _ZERO
    else:
        uh = u2f(hb & U32((0xFFFFFFFF << drop) & 0xFFFFFFFF))
    t = (u - uh) + w
    c = _SHIFTER * m
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
        return _INF
    if x < EXP_LO:
        return _ZERO
    if abs(x) < EXP_TINY:
        return _ONE + x
    u, w, e = _exp_core(x, _ZERO)
    return _scale_round(u, w, e)


@numba.njit(cache=True)
def exp32(x: np.float32) -> Any:
    """exp(x) in float32, correctly rounded on every input: raw_exp32, corrected on its exception table's inputs."""
    return cr_fix(EXP_KEYS, EXP_VALS, EXP_DISP, x, raw_exp32(x))


_VEC_LO = F32(-87.0)   # exp(x) for x >= this is normal (2^e (u + w) with e >= -126, u >= 1 at e = -126)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _exp_lanes(x: np.float32) -> Any:
    """exp32(x) for x >= -87 without a branch (selects only), so that a loop of it vectorises (the table reads
    become gathers): raw_exp32's own path through _exp_core and _scale_round's normal case (tiny |x| needs no
    case of its own there: 1 + x and exp(x) both round to 1), then exp32's table lookup; NaN gives x + x and
    x > EXP_HI gives +inf as in exp32. An x below -87, whose result may be subnormal or zero, is returned as
    itself: a negative number, which no result is."""
    xc = min(max(x, _VEC_LO), EXP_HI)
    u, w, e = _exp_core(xc, _ZERO)
    big = e > 126
    a = pow2(e - 1 if big else e)
    y = ((u + w) * a) * (_TWO if big else _ONE)
    y = cr_fix(EXP_KEYS, EXP_VALS, EXP_DISP, x, y)
    y = _INF if x > EXP_HI else y
    y = x if x < _VEC_LO else y
    return x + x if x != x else y


@numba.njit(cache=True, error_model="numpy")
def exp_array(src: Any, dst: Any) -> None:
    """dst[i] = exp32(src[i]) for every i, the same bits (dst may be src; no other overlap). The first loop is
    _exp_lanes over the row, which LLVM vectorises; the second gives the numbers below -87 (left negative)
    exp32's answer. In place (the row kernels' usual call) the loop reads and writes one array: as two arrays
    that might overlap, LLVM would check at run time, find them equal and run the loop scalar (11.5 ns a number
    against 3)."""
    n = src.size
    if src.ctypes.data == dst.ctypes.data:
        for i in range(n):
            dst[i] = _exp_lanes(dst[i])
    else:
        for i in range(n):
            dst[i] = _exp_lanes(src[i])
    for i in range(n):
        if dst[i] < _ZERO:
            dst[i] = exp32(dst[i])


# ---------------------------------------------------------------------------------------------------------------
# log
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, inline="always")
def _log_core(x: np.float32) -> Any:
    """log(x) as a pair s + t (|t| <= ulp(s)), for finite x > 0, accurate to a few 2^-45 relative."""
    e = np.int64(0)
    if x < _TINY_NORMAL:
        x = x * _TWO23
        e = np.int64(-23)
    b = f2u(x)
    e += np.int64(b >> U32(23)) - 127
    mb = b & U32(0x7FFFFF)
    if mb > U32(0x3504F3):                     # m > sqrt 2: take m/2, one more power of two
        m = u2f(mb | U32(0x3F000000))
        e += 1
        j = 64 + np.int64(mb >> U32(17))
    else:
        m = u2f(mb | U32(0x3F800000))
        j = np.int64(mb >> U32(16))
    c = LOG_C[j]
    mh, ml = split(m)
    rh, rl = two_sum(mh * c - _ONE, ml * c)    # m c - 1 exactly: mh c and ml c exact, mh c - 1 exact
    p, pe = two_prod(rh, rh)
    ph = p * _HALF
    pl = pe * _HALF                            # r^2/2 = ph + pl exactly
    r3 = p * rh
    poly = r3 * (_THIRD - rh * (_QUARTER - rh * (_FIFTH - rh * _SIXTH)))
    ef = F32(e)
    a = ef * LN2_H                             # exact: 15-bit ln2_h, |e| < 2^8
    s, t1 = two_sum(a, LOG_TH[j])
    s, t2 = two_sum(s, rh)
    s, t3 = two_sum(s, -ph)
    small = ((t1 + t2) + t3) + ((ef * LN2_L + LOG_TL[j]) + ((rl - rh * rl) - pl + poly))
    return fast_two_sum(s, small)


@numba.njit(cache=True)
def raw_log32(x: np.float32) -> Any:
    """log(x) from the float32 pair alone: correctly rounded except within a few 2^-45 of a rounding boundary; NaN
    for x < 0 and NaN, -inf for +-0, +inf for +inf."""
    if x != x:
        return x + x
    if x < _ZERO:
        return _NAN
    if x == _ZERO:
        return -_INF
    if x == _INF:
        return x
    s, t = _log_core(x)
    return s + t


@numba.njit(cache=True)
def log32(x: np.float32) -> Any:
    """log(x) in float32, correctly rounded on every input: raw_log32, corrected on its exception table's inputs."""
    return cr_fix(LOG_KEYS, LOG_VALS, LOG_DISP, x, raw_log32(x))


# ---------------------------------------------------------------------------------------------------------------
# tanh
# ---------------------------------------------------------------------------------------------------------------

_T3 = F32(-0.3333333333333333)
_T5 = F32(0.13333333333333333)
_T7 = F32(-0.05396825396825397)
_T9 = F32(0.021869488536155203)
_TANH_SMALL = F32(0.03125)
_TANH_BIG = F32(9.1)


@numba.njit(cache=True)
def raw_tanh32(x: np.float32) -> Any:
    """tanh(x) from the float32 pair alone (odd bit for bit): correctly rounded except near rounding boundaries;
    NaN -> NaN, +-inf -> +-1, +-0 -> +-0."""
    if x != x:
        return x + x
    a = abs(x)
    neg = x < _ZERO
    if a >= _TANH_BIG:
        return -_ONE if neg else _ONE
    if a < _TANH_SMALL:
        if a == _ZERO:
            return x
        z = a * a
        y = a + a * (z * (_T3 + z * (_T5 + z * (_T7 + z * _T9))))
        return -y if neg else y
    u, w, e = _exp_core(a + a, _ZERO)          # 2a exact; e <= 26
    sc = pow2(e)
    eh, el = fast_two_sum(u * sc, w * sc)
    nh, nl = two_sum(eh, -_ONE)                # E - 1
    nl = nl + el
    nh, nl = fast_two_sum(nh, nl)
    dh, dl = two_sum(eh, _ONE)                 # E + 1
    dl = dl + el
    dh, dl = fast_two_sum(dh, dl)
    q1 = nh / dh
    p, pe = two_prod(q1, dh)
    rem = (((nh - p) - pe) + nl) - q1 * dl     # nh - p exact (Sterbenz)
    y = q1 + rem / dh
    return -y if neg else y


@numba.njit(cache=True)
def tanh32(x: np.float32) -> Any:
    """tanh(x) in float32, correctly rounded on every input: raw_tanh32, corrected on its exception table's
    inputs."""
    return cr_fix(TANH_KEYS, TANH_VALS, TANH_DISP, x, raw_tanh32(x))


# ---------------------------------------------------------------------------------------------------------------
# sin, cos
# ---------------------------------------------------------------------------------------------------------------

_PIO4 = F32(0.7853981)        # below pi/4: no reduction
_M32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, inline="always")
def _word_at(k: Any, sh: Any) -> Any:
    """The 32 bits of 2/pi from bit 32 k + sh + 1 on (words k and k + 1 of TWO_OVER_PI, shifted by sh)."""
    hi = TWO_OVER_PI[k]
    lo = TWO_OVER_PI[k + 1]
    return ((hi << np.uint64(sh)) | (lo >> np.uint64(32 - sh))) & _M32 if sh else hi


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
    l2 = p2 & _M32
    p1 = m * w1 + (p2 >> np.uint64(32))
    l1 = p1 & _M32
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
    sc = pow2(-24 - n) if n < 100 else _ZERO
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
    neg = rh < _ZERO
    if neg:
        rh, rl = -rh, -rl
    jf = (rh * _SC_INV + _SHIFTER) - _SHIFTER
    j = np.int64(jf)
    bh, bl = fast_two_sum(rh - jf * _SC_STEP, rl)   # rh - j/64 exact (Sterbenz, or j = 0)
    b2 = bh * bh
    ss = bl - bh * b2 * (_SIXTH - b2 * _R120)        # sin b = bh + ss
    cs = -(b2 * _HALF) - bh * bl + b2 * b2 * _R24    # cos b = 1 + cs
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
    if x != x or abs(x) == _INF:
        return _NAN if x == x else x + x
    if x == _ZERO:
        return x
    a = abs(x)
    if a < _PIO4:
        y = _sincos_r(a, _ZERO, True)
    else:
        rh, rl, k = _reduce(a)
        if k & 1:
            y = _sincos_r(rh, rl, False)
        else:
            y = _sincos_r(rh, rl, True)
        if k & 2:
            y = -y
    return -y if x < _ZERO else y


@numba.njit(cache=True)
def sin32(x: np.float32) -> Any:
    """sin(x) in float32, correctly rounded on every input: raw_sin32, corrected on its exception table's inputs."""
    return cr_fix(SIN_KEYS, SIN_VALS, SIN_DISP, x, raw_sin32(x))


@numba.njit(cache=True)
def raw_cos32(x: np.float32) -> Any:
    """cos(x) from the float32 pair alone (even bit for bit), any finite x: correctly rounded except near rounding
    boundaries; NaN and +-inf -> NaN, cos(+-0) = 1."""
    if x != x or abs(x) == _INF:
        return _NAN if x == x else x + x
    a = abs(x)
    if a < _PIO4:
        return _sincos_r(a, _ZERO, False)
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


# ---------------------------------------------------------------------------------------------------------------
# pow
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _is_int(y: np.float32) -> Any:
    return y == (y + _SHIFTER) - _SHIFTER if abs(y) < _TWO23 else True


@numba.njit(cache=True)
def _is_odd_int(y: np.float32) -> Any:
    if abs(y) >= F32(16777216.0) or not _is_int(y):
        return False
    return (np.int64(y) & 1) == 1


@numba.njit(cache=True)
def pow32(x: np.float32, y: np.float32) -> Any:
    """x^y in float32 as exp(y log x) with both in pairs; the C99 special cases (pow(x, +-0) = 1, pow(1, y) = 1,
    a negative x to an integer power, zeros and infinities)."""
    if y == _ZERO or x == _ONE:
        return _ONE
    if x != x or y != y:
        return x + y
    neg = False
    if x < _ZERO:
        if abs(y) != _INF and not _is_int(y):
            return _NAN
        neg = _is_odd_int(y)
        x = -x
    if abs(y) == _INF:
        if x == _ONE:
            return _ONE
        return _INF if (x > _ONE) == (y > _ZERO) else _ZERO
    if x == _ZERO or x == _INF:
        if f2u(x) >> U32(31):                  # -0 to an odd integer power keeps its sign
            neg = _is_odd_int(y)
        big = (x == _INF) == (y > _ZERO)
        r = _INF if big else _ZERO
        return -r if neg else r
    lh, ll = _log_core(x)
    zp = y * lh
    # decided by the rounded product alone when it is far out (its error is far below the margins of EXP_HI and
    # EXP_LO), before two_prod, whose partial products overflow for |y log x| near the float32 limit
    if zp > EXP_HI:
        return -_INF if neg else _INF
    if zp < EXP_LO:
        return -_ZERO if neg else _ZERO
    zh, ze = two_prod(y, lh)
    zl = ze + y * ll
    zh, zl = fast_two_sum(zh, zl)
    if zh > EXP_HI:
        r = _INF
    elif zh < EXP_LO:
        r = _ZERO
    else:
        u, w, e = _exp_core(zh, zl)
        r = _scale_round(u, w, e)
    return -r if neg else r
