"""One chunk of a sweep: the reference on the chunk's patterns once (float64, its hard cases decided by mpmath or by
the x/2 rule), then each library's results and figures against it; and the merge of chunks' accumulators.

The reference, input by input: the function record's float64 reference gives y64 and a scale s with
|y64 - f(x)| <= 2^-46 s; c32 = y64 rounded to float32, unless y64 lies within 2^-46 s of a float32 rounding boundary
(a midpoint between two neighbours, or the overflow threshold 2^128 - 2^103): there c32 is decided by the record's
mpmath formula, its precision raised until the distance to the boundary is far above mpmath's error (the "hard
cases"). So c32 is the correctly rounded float32 of f(x) on every input, proved input by input. SiLU and the GELUs
are x/2 to float64's precision for tiny x, which sits exactly on a midpoint when it is subnormal (16M inputs): there
HALF_X_RULE decides, a proof from the function's form instead of mpmath.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from bendtorch.records.functions import SweepFunction
from bendtorch.records.libraries import LIBRARIES, SweepLibrary
from bendtorch.reports.sweep import kernels as K
from bendtorch.reports.sweep.chunks import MISS_CAP
from bendtorch.reports.sweep.libraries import resolve, resolve_ref

MP_START_PREC = 96
HARD_ROOM = 1 << 12       # hard cases a chunk's reference lists in one pass (about one in 2^22 inputs has one)
MISS_LISTED = 1 << 16     # misrounded inputs listed in all (an exception table's source: 2^15 at most)

Task = tuple[SweepFunction, tuple[SweepLibrary, ...], Any]   # function, libraries, patterns (array or (lo, hi))


def round32_mp(mpf_fn: Callable[[Any], Any], x: float, scale: float) -> tuple[np.float32, float]:
    """The correctly rounded float32 of f(x), f given in mpmath, decided against the float32 rounding boundary
    with room 2^16 times mpmath's error (taken as 2^-prec of the terms' scale); returns it and f(x) as a float."""
    import mpmath

    prec = MP_START_PREC
    f32max = np.float32(3.4028234663852886e38)
    while True:
        with mpmath.workprec(prec):
            y = mpf_fn(mpmath.mpf(x))
            yf = float(y)
            c = np.float32(yf) if abs(yf) < 3.5e38 else np.float32(math.copysign(math.inf, yf))
            if abs(c) == np.inf:
                c = np.float32(math.copysign(float(f32max), yf))
            with np.errstate(over="ignore"):  # the neighbour of the largest float is inf
                if mpmath.mpf(float(c)) <= y:
                    lo, hi = c, np.nextafter(c, np.float32(np.inf))
                else:
                    lo, hi = np.nextafter(c, np.float32(-np.inf)), c
            if abs(hi) == np.inf or abs(lo) == np.inf:
                edge = mpmath.mpf(K.OVERFLOW_EDGE)
                m = edge if y > 0 else -edge
            else:
                m = (mpmath.mpf(float(lo)) + mpmath.mpf(float(hi))) / 2  # exact: fits in prec bits
            d = y - m
            if abs(d) > mpmath.mpf(scale) * mpmath.mpf(2) ** (16 - prec):
                return (lo if d < 0 else hi), yf
        prec *= 2
        if prec > 4096:
            raise ArithmeticError(f"f({x!r}) not decided at 4096 bits")


@dataclass
class Reference:
    """The correctly rounded float32 of f on the patterns and their negatives (first half +, second half -), with
    the float64 value and how the hard cases were decided."""
    y64: Any
    c32: Any
    hard_bits: Any         # the inputs decided by mpmath (their bits)
    hard_flip: Any         # there, was the float64 rounding wrong?
    f64_err: float         # the largest float64 error seen at a hard case, in units of 2^-52 scale
    by_rule: Any           # HALF_X_RULE: [decided, float64 rounding wrong]


_WORK = threading.local()  # each thread's chunk buffers by use (a Dask worker may run tasks on several threads)


def work(use: str, size: int, dtype: Any, zero: bool = False) -> Any:
    """This thread's buffer for `use` (a chunk's arrays: fresh pages cost more than the pass that fills them, so
    each worker keeps one of each, the latest chunk's size), zeroed when made if `zero`."""
    bufs: dict[str, Any] = _WORK.__dict__.setdefault("bufs", {})
    a = bufs.get(use)
    if a is None or a.size != size or a.dtype != dtype:
        a = bufs[use] = np.zeros(size, dtype=dtype) if zero else np.empty(size, dtype=dtype)
    return a


def reference(fn: SweepFunction, bits: Any, reuse: bool = False) -> Reference:
    """The function's reference on the positive patterns `bits` (uint32, sign bit clear) and their negatives; with
    `reuse`, in this process's buffers (good until the next chunk's reference)."""
    sym = K.SYMMETRY[fn.symmetry]
    n = bits.size
    y64 = work("y64", 2 * n, np.float64) if reuse else np.empty(2 * n)
    c32 = work("c32", 2 * n, np.float32) if reuse else np.empty(2 * n, dtype=np.float32)
    ref = resolve_ref(fn.reference)
    hi, scale = np.empty(HARD_ROOM, dtype=np.int64), np.empty(HARD_ROOM)
    nh = K.ref_pass(ref, bits, sym, y64, c32, hi, scale)
    if nh > HARD_ROOM:  # the ties at x/2 of a chunk of subnormals: once more with room for every hard case
        hi, scale = np.empty(nh, dtype=np.int64), np.empty(nh)
        K.ref_pass(ref, bits, sym, y64, c32, hi, scale)
    hi, scale = hi[:nh], scale[:nh]
    by_rule = np.zeros(2, dtype=np.int64)
    if fn.half_x_ties:
        assert sym == 0
        by_rule, keep = K.half_x_ties(bits, y64, c32, hi)
        hi, scale = hi[keep], scale[keep]
    hard_x = np.empty(hi.size, dtype=np.int64)
    flips = np.zeros(hi.size, dtype=np.bool_)
    f64err = 0.0
    if hi.size:
        mpf = resolve_ref(fn.mpmath)
        for j, k in enumerate(hi):
            b = int(bits[k % n]) | (0x80000000 if k >= n else 0)
            x = float(np.array([b], dtype=np.uint32).view(np.float32)[0])
            r32, yf = round32_mp(mpf, x, float(scale[j]))
            hard_x[j] = b
            flips[j] = r32 != c32[k]
            c32[k] = r32
            if sym != 0 and k < n:
                c32[k + n] = -r32 if sym == K.ODD else r32
            f64err = max(f64err, abs(yf - float(y64[k])) / (2.0 ** -52 * float(scale[j])))
    return Reference(y64, c32, hard_x, flips, f64err, by_rule)


def one_thread() -> None:
    """torch on one thread, once something has imported it: its vectorised loops then never split a range (where a
    range splits decides which numbers its scalar tail computes, and the tail can give other bits). torch is not
    imported here: a sweep of other libraries would wait about 3 s for it."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _resolved(spec: str) -> Callable[[Any], Any]:
    """The library function `spec` names (resolve), with torch on one thread should resolving it have imported it."""
    f = resolve(spec)
    one_thread()
    return f


def process_bits(fn: SweepFunction, libs: tuple[SweepLibrary, ...], bits: Any) -> dict[str, dict[str, Any]]:
    """Every figure of each library for the function on the positive patterns `bits` (uint32, sign bit clear) and
    their negatives (the reference computed once for all of them), by library name."""
    import mpmath  # noqa: F401  (imported here so a worker fails early if it is missing)

    t0 = time.perf_counter()
    sym = K.SYMMETRY[fn.symmetry]
    bits = np.ascontiguousarray(bits, dtype=np.uint32)
    n = bits.size
    ref = reference(fn, bits, reuse=True)
    y64, c32 = ref.y64, ref.c32
    xb = work("xs", 2 * n, np.uint32)
    xb[:n] = bits
    np.bitwise_or(bits, np.uint32(0x80000000), out=xb[n:])
    xs = xb.view(np.float32)
    if fn.piece_of:
        pcs = work("pieces", n, np.int64)
        K.pieces(resolve_ref(fn.piece_of), bits, pcs)
    else:
        pcs = work("one_piece", n, np.int64, zero=True)  # never written: all inputs in piece 0
    t_ref = time.perf_counter() - t0
    res = {}
    for lib in libs:
        t1 = time.perf_counter()
        acc = K.new_acc(len(fn.pieces))
        miss = np.empty(MISS_CAP, dtype=np.int64)
        miss_want = np.empty(MISS_CAP, dtype=np.uint32)
        miss_n = np.zeros(1, dtype=np.int64)
        r = np.asarray(_resolved(lib.functions[fn.name])(xs))
        if r.dtype != np.float32 or r.shape != xs.shape:
            raise TypeError(f"library {lib.name}: {fn.name} gave a {r.dtype} array of shape {r.shape} for a float32 "
                            f"array of shape {xs.shape} (a float32 array of the same shape is wanted)")
        K.stats_pass(bits, r, y64, c32, pcs, sym, acc["cnt"], acc["maxu"], acc["argb"], acc["maxabs"],
                     acc["hist"], acc["bmax"], acc["nanst"], acc["symv"], acc["spn"], acc["spbad"], acc["submax"],
                     miss, miss_want, miss_n)
        k = int(min(miss_n[0], MISS_CAP))
        acc["miss"], acc["miss_want"], acc["miss_n"] = miss[:k].copy(), miss_want[:k].copy(), miss_n.copy()
        if lib.name in fn.twins:
            twin = LIBRARIES[fn.twins[lib.name]]
            acc["twin_diff"][0] = K.twin_diff(r, np.atleast_2d(_resolved(twin.functions[fn.name])(xs)))
        acc["hard_bits"] = ref.hard_bits
        acc["hard_flip"] = ref.hard_flip
        acc["hard_f64_err"] = np.array([ref.f64_err])
        if fn.half_x_ties:
            acc["half_x_ties"] = ref.by_rule
        acc["n_patterns"] = np.array([n], dtype=np.int64)
        acc["seconds"] = np.array([t_ref / len(libs) + time.perf_counter() - t1])
        res[lib.name] = acc
    return res


def libm_mode() -> str:
    from bendtorch.impl.kernels import libm
    return str(libm.MODE)


def run_task(task: Task) -> dict[str, dict[str, Any]]:
    """One task (function, libraries, positive patterns: an array or a (lo, hi) range) -> each library's
    accumulators. An impl library checks that this process's impl.kernels.libm runs the functions it names."""
    fn, libs, pats = task
    for lib in libs:
        if lib.libm is not None and libm_mode() != lib.libm:
            raise RuntimeError(f"library {lib.name} needs a worker started with BENDTORCH_LIBM={lib.libm} "
                               f"(this one runs {libm_mode()})")
    bits = np.arange(pats[0], pats[1], dtype=np.uint32) if isinstance(pats, tuple) else pats
    return process_bits(fn, libs, bits)


_SUMS = ("cnt", "hist", "nanst", "symv", "spn", "spbad", "n_patterns", "seconds", "twin_diff", "half_x_ties")


def merge(total: dict[str, Any] | None, acc: dict[str, Any]) -> dict[str, Any]:
    """Fold one chunk's accumulators into the running total (sums, maxima; the first maximum keeps its input)."""
    if total is None:
        return {k: v.copy() for k, v in acc.items()}
    for k in _SUMS:
        if k in acc:
            total[k] = total[k] + acc[k]
    upd = acc["maxu"] > total["maxu"]
    total["maxu"] = np.where(upd, acc["maxu"], total["maxu"])
    total["argb"] = np.where(upd, acc["argb"], total["argb"])
    for k in ("maxabs", "bmax", "submax", "hard_f64_err"):
        total[k] = np.maximum(total[k], acc[k])
    for k in ("hard_bits", "hard_flip"):
        total[k] = np.concatenate([total[k], acc[k]])
    total["miss_n"] = total["miss_n"] + acc["miss_n"]
    if total["miss"].size < MISS_LISTED:  # past that, a list is no one's use and only slows the merge
        total["miss"] = np.concatenate([total["miss"], acc["miss"]])[:MISS_LISTED]
        total["miss_want"] = np.concatenate([total["miss_want"], acc["miss_want"]])[:MISS_LISTED]
    return total
