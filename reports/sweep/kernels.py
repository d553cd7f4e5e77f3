"""The checker's compiled kernels: the reference pass (a function's float64 value, its float32 rounding, and whether
it is a hard case), the ties at x/2 decided by HALF_X_RULE, and one library's statistics pass against the reference.

The work is done on positive bit patterns (sign bit clear), each giving x and -x: an array of results holds
x = +pattern in its first half and x = -pattern in its second. The accumulators a statistics pass fills are a chunk
file's arrays (`new_acc`; bendtorch.reports.sweep.chunks seals them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bendtorch.impl.kernels.portable.eft import f2u, u2f
from bendtorch.oracle import ulp as _ulp
from bendtorch.oracle.ulp import ulp32_1, ulp_error1_u
from bendtorch.records.functions import ERROR_BOUND
from bendtorch.reports.sweep.bound import bound, njit_shared

REL_MARGIN = ERROR_BOUND  # the float64 error allowed for, relative to the reference's scale
OVERFLOW_EDGE = 2.0 ** 128 - 2.0 ** 103  # float32 rounding sends |y| >= this to infinity
XSHIFT = 18               # x bins for the plots: 2^18 consecutive patterns (32 bins per binade) per sign
NXB = 1 << (31 - XSHIFT)
NLIN, NLOG = 200, 1200    # ulp-error histogram: [k/100, (k+1)/100) for k < 200, then quarter octaves, last bin inf
NB = NLIN + NLOG + 1
C_N, C_CR, C_W1, C_FAITH = 0, 1, 2, 3
SP_INF, SP_ZERO, SP_SUB = 0, 1, 2
ODD, EVEN = 1, 2
SYMMETRY = {"none": 0, "odd": ODD, "even": EVEN}   # a record's symmetry as the kernels take it

# the checker's loops, cached apart from impl's libm (they call none of it), so both libm choices load one copy
# (bound.njit_shared); named by this file's source and oracle.ulp's, whose functions they call
_njit = njit_shared(__file__, str(_ulp.__file__))


@_njit
def _u2f(b: Any) -> Any:
    return u2f(np.uint32(b))


@_njit
def _f2u(x: Any) -> Any:
    return f2u(np.float32(x))


@_njit
def _ord(b: Any) -> Any:
    """float32 bits -> an integer that orders the floats (+0 and -0 both 0); adjacent floats differ by 1."""
    v = np.int64(b & np.uint32(0x7FFFFFFF))
    if b >= np.uint32(0x80000000):
        return -v
    return v


@_njit
def _hbin(e: float) -> Any:
    if e < 2.0:
        return int(e * 100.0)
    if not (e < math.inf):
        return NB - 1
    eb = np.float64(e).view(np.uint64)
    j: Any = 4 * (np.int64(eb >> np.uint64(52)) - 1024) + np.int64((eb >> np.uint64(50)) & np.uint64(3))
    return NLIN + min(j, NLOG - 1)


@_njit
def _mid32(y: float, c: float) -> float:
    """oracle.erf.mid_f32 read from the bits (frexp and ldexp are calls there): the float32 rounding boundary on
    y's side of c = float32(y), both >= 0 and c finite; c +- half the float32 spacing at c, exactly the same value."""
    cb = np.float64(c).view(np.uint64)
    e = np.int64(cb >> np.uint64(52)) - 1023            # c's binade (-1023 for c = 0)
    be = max(e, np.int64(-126))
    sp = np.uint64((be - 23 + 1023) << 52).view(np.float64)  # 2^(be - 23), a normal float64
    if y >= c:
        return c + 0.5 * sp
    if cb & np.uint64((1 << 52) - 1) == 0 and e > -126:  # c a power of two (not 0): the spacing below is half
        sp = 0.5 * sp
    return c - 0.5 * sp


# The boundary's distance from y in units of y's last float64 bit beyond which, when s <= 2|y|, no y is hard:
# REL_MARGIN s <= REL_MARGIN 2|y| < REL_MARGIN 2^(e + 2) = _FAR_UNITS 2^(e - 52) for y in [2^e, 2^(e + 1))
_FAR_UNITS = int(REL_MARGIN * 2.0 ** 54)
assert _FAR_UNITS >= 1 and _FAR_UNITS == REL_MARGIN * 2.0 ** 54
_LOW29 = np.uint64((1 << 29) - 1)   # the float64 bits below a float32's


@_njit
def near_boundary(y: float, c: float, s: float) -> bool:
    """y (float64, error <= REL_MARGIN s) too close to the float32 rounding boundary on its side of c = f32(y)?"""
    ay = abs(y)
    if not (ay < math.inf) or s == 0.0:
        return False
    ac = abs(c)
    mid = OVERFLOW_EDGE if ac == math.inf else _mid32(ay, ac)
    return abs(ay - mid) <= REL_MARGIN * s


@_njit
def is_hard(y: float, c: float, s: float) -> bool:
    """near_boundary(y, c, s), after a test that settles almost every input without the boundary: one branch, taken
    the same way nearly always, where the boundary's (y above or below c) goes either way at random. For 2^-126 <=
    |y| < 2^127 (c normal and finite) the boundary is where y's 29 float64 bits below float32's read 2^28, in y's
    binade (_mid32's c + or - half the spacing, the spacing below a power of two included): |low29 - 2^28| units of
    y's last bit away; with s <= 2|y| the margin is under _FAR_UNITS of them. The test says False only where
    near_boundary would."""
    ay = abs(y)
    d = np.int64(np.float64(ay).view(np.uint64) & _LOW29) - (1 << 28)
    if (abs(d) >= _FAR_UNITS) & (ay >= 2.0 ** -126) & (ay < 2.0 ** 127) & (s <= 2.0 * ay):
        return False
    return near_boundary(y, c, s)


def _ref_pass(bits: Any, sym: int, y64: Any, c32: Any, hard: Any, hscale: Any) -> int:
    """The reference _F (bound by `bound`) for x = +pattern (first half) and -pattern (second half); an odd or even
    function's second half is the first's mirror (the float32 rounding is symmetric). Lists the hard cases (their
    indices, ascending, and the reference's scale there: the only inputs whose scale is wanted) in `hard` and
    `hscale` as far as they hold; returns how many there are (more than they hold: run it again with room for
    all)."""
    n = bits.size
    nh = 0
    for h in range(2):
        if h == 1 and sym != 0:
            sg = -1.0 if sym == ODD else 1.0
            sg32 = np.float32(sg)
            for i in range(n):
                y64[n + i] = sg * y64[i]
                c32[n + i] = sg32 * c32[i]
            break
        sbit = np.uint32(0x80000000) if h == 1 else np.uint32(0)
        for i in range(n):
            k = h * n + i
            x = np.float64(_u2f(bits[i] | sbit))
            y, s = _F(x)
            c = np.float32(y)
            y64[k] = y
            c32[k] = c
            if is_hard(y, np.float64(c), s):
                if nh < hard.size:
                    hard[nh] = k
                    hscale[nh] = s
                nh += 1
    return nh


HALF_X_RULE = ("f(x) = (x/2)(1 + g(x)) with g odd, of the sign of x and |g(x)| <= 2|x|: where the float64 "
               "reference is exactly x/2 on a float32 midpoint (x/2 subnormal, |x| < 2^-125), f(x) exceeds x/2 by "
               "(x/2) g(x) > 0, at most x^2 < 2^-250, far inside the 2^-150 to either neighbouring rounding boundary, "
               "so f(x) rounds to the float32 above x/2")
F32_TINY = np.float32(2.0 ** -149)  # the float32 spacing below 2^-126


@_njit
def half_x_ties(bits: Any, y64: Any, c32: Any, hard: Any) -> tuple[Any, Any]:
    """HALF_X_RULE on the hard cases (indices, ascending) of a function f(x) = (x/2)(1 + g(x)) with no symmetry.
    Returns [decided, of them where the float64 rounding (to even) was wrong] and the mask of the hard cases it
    left undecided."""
    n = bits.size
    got = np.zeros(2, dtype=np.int64)
    keep = np.ones(hard.size, dtype=np.bool_)
    for j in range(hard.size):
        k = hard[j]
        x = np.float64(_u2f(bits[k % n] | (np.uint32(0x80000000) if k >= n else np.uint32(0))))
        y = y64[k]
        if y != 0.5 * x or not abs(x) < 2.0 ** -125:
            continue
        c = np.float32(y)
        if np.float64(c) == y:
            continue
        up = c if np.float64(c) > y else c + F32_TINY  # subnormal: the spacing is 2^-149 and the sum exact
        got[0] += 1
        if up != c:
            got[1] += 1
        c32[k] = up
        keep[j] = False
    return got, keep


@_njit
def _inv_ulp32(y: float) -> float:
    """1 / ulp32_1(y) for a finite y, built from its bits: a power of two, so |d| * it is |d| / ulp32_1(y) exactly."""
    ay = abs(y)
    if ay < 2.0 ** -126:
        return 2.0 ** 149
    e = np.int64((np.float64(ay).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF))  # biased: e - 1023
    return np.uint64((2046 - e + 23) << 52).view(np.float64)


BLOCK = 1024   # inputs of one sign a statistics pass takes at a time


@_njit
def stats_pass(bits: Any, r: Any, y64: Any, c32: Any, pcs: Any, sym: int, cnt: Any, maxu: Any,
               argb: Any, maxabs: Any, hist: Any, bmax: Any, nanst: Any, symv: Any, spn: Any, spbad: Any,
               submax: Any, miss: Any, miss_want: Any, miss_n: Any) -> None:
    """One library's results r (x = +pattern then -pattern) against the reference: counts per sign and piece
    (n, correctly rounded, within one float32 step of it, faithful), the largest ulp error with its input, the
    largest absolute error, the histogram, the per-x-bin maxima, NaN, symmetry and the special inputs.

    BLOCK inputs of one sign at a time. A first loop, without a branch (LLVM vectorises it), computes every input's
    error and settles the common input (x a number, not 0 nor infinite; the result the reference's bits with an
    error below 2, or NaN where the reference is NaN: the inputs the long path finds correctly rounded with an error
    below 2, or 0): it is counted with the block's sums, binned in the histogram by a short loop, and its error kept
    for the maxima.
    Every other input takes the long path, one at a time, and leaves its error (or -1, where it has none) beside the
    others. The maxima are taken over the block last: the largest error and, where it is a new maximum, the first
    input to reach it, the input a loop over the inputs in order keeps. A block whose inputs span two pieces or two
    x bins takes the long path throughout. So the figures are those of one loop over the inputs: tests/
    test_sweep_stats.py holds the pass to a numpy statement of each figure, input by input, on chunks that split
    blocks in every way (and the earlier pass, that one loop, agreed with it). For a library that rounds correctly,
    4.6-4.8 ns an input against 6.1-7.2 ns for that loop (one chunk near x = 2, the best of 15 runs taken in turn; AMD
    EPYC, family 25, model 1). The long path has no short branch of its own for a correctly rounded input (the
    first loop settles those): with one, the pass ran 4.1-4.3 ns in the same runs, and took 0.4 s longer to compile.
    The first loop reads its arrays at unsigned indices: at a signed one (h n + i) numba tests for a negative
    (Python's wraparound), and LLVM, unable to see consecutive addresses, read r, c32 and y64 with gathers (AVX-512)
    or one number at a time: 6.0 -> 2.4 ns an input on an AMD EPYC, family 25, model 17, compiled for it or for
    AVX2 alike (one chunk near x = 0.5, exp's correct results)."""
    n = bits.size
    eb = np.empty(BLOCK)  # a block's errors (-1: an input that has none: x NaN or infinite)
    qb = np.empty(BLOCK, dtype=np.int32)  # a common input's histogram bin, NB for any other (a bin left unread)
    hb = np.zeros((4, NB + 1), dtype=np.int64)  # the common inputs' histogram in four parts: no count waits on the last
    for h in range(2):
        sbit = np.uint32(0x80000000) if h == 1 else np.uint32(0)
        chk = sym != 0 and h == 1
        hn = np.uint64(h * n)
        for i0 in range(0, n, BLOCK):
            i1 = min(n, i0 + BLOCK)
            p0 = pcs[i0]
            xb0 = bits[i0] >> np.uint32(XSHIFT)
            nc = 0  # the common inputs
            ncf = 0  # of them, the faithful
            nsv = 0  # of them, the symmetry's violations
            same = 0  # the inputs of piece p0 and x bin xb0
            nsub = 0  # the common inputs of subnormal x
            msub = np.int64(-1)  # their largest error's bits (a float64 >= 0 orders as its bits do)
            for i in range(i0, i1):
                iu = np.uint64(i)
                k = hn + iu
                ab = bits[iu]
                ri = r[k]
                ci = c32[k]
                rb = _f2u(ri)
                eq = rb == _f2u(ci)
                nan2 = (ri != ri) & (ci != ci)
                ex = y64[k]
                e = abs(np.float64(ri) - ex) * _inv_ulp32(ex)
                e = 0.0 if nan2 | (eq & (abs(ci) == np.inf)) else e  # the long path's error 0 of both
                common = (ab != np.uint32(0)) & (ab < np.uint32(0x7F800000)) & ((eq & (e < 2.0)) | nan2)
                sub = common & (ab < np.uint32(0x00800000))
                nsub += sub
                msub = max(msub, np.float64(e).view(np.int64) if sub else np.int64(-1))
                eb[i - i0] = e
                qb[i - i0] = np.int32(e * 100.0) if common else np.int32(NB)  # _hbin(e) below 2
                nc += common
                ncf += common & (e < 1.0)
                rp = r[iu]
                want = _f2u(rp) ^ np.uint32(0x80000000) if sym == ODD else _f2u(rp)
                nsv += common & chk & (rb != want) & ~((ri != ri) & (rp != rp))
                same += (pcs[iu] == p0) & ((ab >> np.uint32(XSHIFT)) == xb0)
            one = same == i1 - i0  # one piece and one x bin: the common inputs are summed
            if one:
                symv[0] += nsv
                if nsub:
                    spn[SP_SUB] += nsub
                    submax[0] = max(submax[0], np.int64(msub).view(np.float64))
                cnt[h, p0, C_N] += nc
                cnt[h, p0, C_CR] += nc
                cnt[h, p0, C_W1] += nc
                cnt[h, p0, C_FAITH] += ncf
                for j in range(i1 - i0):
                    hb[j & 3, qb[j]] += 1
            if not one or nc < i1 - i0:
                for i in range(i0, i1):
                    if one and qb[i - i0] != NB:
                        continue
                    k = h * n + i
                    b = bits[i] | sbit
                    ri = r[k]
                    ci = c32[k]
                    eb[i - i0] = -1.0
                    x = _u2f(b)
                    if x != x:
                        if ri != ri:
                            nanst[0] += 1
                        else:
                            nanst[1] += 1
                        continue
                    rb = _f2u(ri)
                    cb = _f2u(ci)
                    both_nan = ri != ri and ci != ci
                    if chk:
                        rp = r[i]
                        want = _f2u(rp) ^ np.uint32(0x80000000) if sym == ODD else _f2u(rp)
                        if rb != want and not (ri != ri and rp != rp):
                            symv[0] += 1
                    ax = abs(x)
                    if ax == np.inf or x == 0:
                        cls = SP_INF if ax == np.inf else SP_ZERO
                        spn[cls] += 1
                        if rb != cb and not both_nan:
                            spbad[cls] += 1
                        if cls == SP_INF:
                            continue
                    if ri != ri and ci == ci:
                        nanst[2] += 1
                    ex = y64[k]
                    if both_nan or (ri == ci and abs(ci) == np.inf):
                        e = 0.0
                    else:
                        e = ulp_error1_u(np.float64(ri), ex, ulp32_1(ex))  # recomputed: cheaper than an array of it
                    if both_nan:
                        d = 0
                    elif ri != ri or ci != ci:
                        d = 2
                    else:
                        d = abs(_ord(rb) - _ord(cb))
                    if ax < np.float32(1.1754944e-38) and x != 0:
                        spn[SP_SUB] += 1
                        if d != 0:
                            spbad[SP_SUB] += 1
                        if e > submax[0]:
                            submax[0] = e
                    pc = pcs[i]
                    cnt[h, pc, C_N] += 1
                    if d == 0:
                        cnt[h, pc, C_CR] += 1
                    if d <= 1:
                        cnt[h, pc, C_W1] += 1
                    if e < 1.0:
                        cnt[h, pc, C_FAITH] += 1
                    if d != 0:
                        if miss_n[0] < miss.size:
                            miss[miss_n[0]] = np.int64(b)
                            miss_want[miss_n[0]] = cb
                        miss_n[0] += 1
                        a = abs(np.float64(ri) - ex)
                        if not (a <= maxabs[0]):
                            maxabs[0] = a if a == a else math.inf
                    eb[i - i0] = e
                    hist[_hbin(e)] += 1
            # the maxima: an error >= 0 orders as its float64 bits do (and -1, no error, below them all)
            if one:
                mx = np.int64(-1)
                for j in range(i1 - i0):
                    mx = max(mx, np.float64(eb[j]).view(np.int64))
                m = np.int64(mx).view(np.float64) if mx >= 0 else -1.0
                if m > maxu[h, p0]:
                    j = 0
                    while eb[j] != m:
                        j += 1
                    maxu[h, p0] = m
                    argb[h, p0] = np.int64(bits[i0 + j] | sbit)
                if m > bmax[h, xb0]:
                    bmax[h, xb0] = m
            else:
                for i in range(i0, i1):
                    e = eb[i - i0]
                    pc = pcs[i]
                    if e > maxu[h, pc]:
                        maxu[h, pc] = e
                        argb[h, pc] = np.int64(bits[i] | sbit)
                    xb = int(bits[i] >> np.uint32(XSHIFT))
                    if e > bmax[h, xb]:
                        bmax[h, xb] = e
    for q in range(4):
        for j in range(NB):
            hist[j] += hb[q, j]


def _pieces(bits: Any, out: Any) -> None:
    """out[i] = the piece _F (a classifier bound by `bound`) gives x = +bits[i] (0 for NaN and inf)."""
    for i in range(bits.size):
        x = _u2f(bits[i])
        out[i] = _F(x) if x == x and x != np.inf else 0


_F: Any = None   # the compiled function a copy of _ref_pass or _pieces calls (each copy binds its own: bound)


def ref_pass(ref: Any, bits: Any, sym: int, y64: Any, c32: Any, hard: Any, hscale: Any) -> int:
    """_ref_pass with the reference `ref` (a compiled float64 x -> (value, scale))."""
    return int(bound(_ref_pass, shared=True, _F=ref)(bits, sym, y64, c32, hard, hscale))


def pieces(piece_of: Any, bits: Any, out: Any) -> None:
    """_pieces with the classifier `piece_of` (a compiled float32 x -> piece index)."""
    bound(_pieces, _F=piece_of)(bits, out)


@_njit
def twin_diff(a: Any, b: Any) -> int:
    """The inputs i where some row of b (one per call of the twin) has other bits than a[i] (NaN = NaN). One loop
    over the inputs, asking each row in turn: 2.8 ns an input for exp's twin (two rows). A form that LLVM vectorises
    (a block's differing inputs marked row by row, then counted) ran 0.7 ns but took 0.5 s more to compile, which a
    first `sweep exp --sample 100000` pays on its critical path (9.2-9.5 s against 8.6-9.2 on an empty cache, three
    runs each in turn; Intel Xeon, family 6, model 167): not kept."""
    nd = 0
    for i in range(a.size):
        for j in range(b.shape[0]):
            if _f2u(a[i]) != _f2u(b[j, i]) and not (a[i] != a[i] and b[j, i] != b[j, i]):
                nd += 1
                break
    return nd


def new_acc(npieces: int) -> dict[str, Any]:
    """Empty accumulators of one library on one chunk (the statistics pass fills them)."""
    return {
        "cnt": np.zeros((2, npieces, 4), dtype=np.int64),
        "maxu": np.full((2, npieces), -1.0),
        "argb": np.zeros((2, npieces), dtype=np.int64),
        "maxabs": np.zeros(1),
        "hist": np.zeros(NB, dtype=np.int64),
        "bmax": np.full((2, NXB), -1.0),
        "nanst": np.zeros(3, dtype=np.int64),
        "symv": np.zeros(1, dtype=np.int64),
        "spn": np.zeros(3, dtype=np.int64),
        "spbad": np.zeros(3, dtype=np.int64),
        "submax": np.full(1, -1.0),
        "twin_diff": np.zeros(1, dtype=np.int64),
    }
