"""`bendtorch erf-sweep`: the seed's erf (impl.kernels.erf, main.bend lines 1104-1199) against the exact erf rounded to
float32, on every one of the 2^32 float32 bit patterns (or a spread sample, or a range), with PyTorch beside it.

The work is done on the 2^31 patterns with the sign bit clear; each gives the two inputs x and -x, which share the
exact value up to sign (erf is odd). For each pattern:
- the reference: y64 = glibc's double erf, c32 = y64 rounded to float32, and, when y64 lies within 2^-46 |y64| of a
  float32 rounding boundary, c32 decided by mpmath instead (oracle/erf.py): so c32 is the correctly rounded float32
  of erf(x), proved input by input; the inputs that needed mpmath are the "hard cases";
- the functions compared (ERF_FUNCS): impl's erf; torch.erf (float32 tensor, this machine's CPU kernel); and
  "torch_gelu_erf_aten", the erf inside PyTorch's exact GELU on its ATen vectorized path (Vectorized<float>::erf,
  Abramowitz-Stegun 7.1.26 with SLEEF's expf), ported op by op in reports/torch_erf.py; the port's GELU is checked bit
  for bit against torch.nn.functional.gelu with oneDNN disabled on every input swept (field gelu_port_check);
- GELU itself (GELU_FUNCS), against a float64 reference 0.5 x erfc(-x/sqrt 2) rounded to float32 (no mpmath step
  here, so "correctly rounded" for these is as decided by float64): impl's GELUErf forward as the seed writes it
  (main.bend line 1209), torch's default gelu (on this machine the oneDNN kernel, which has no separate erf), and
  torch's ATen gelu (oneDNN disabled).
Figures per function: ulp error (oracle.ulp's definition, against y64), whether the result is the correctly rounded
c32, its distance from c32 in float32 steps (+0 and -0 the same), faithful (error < 1 ulp), NaN in NaN out, odd
symmetry bit for bit (erf functions), the images of +-inf, the largest absolute error; per impl piece
(impl.kernels.erf.erf_piece), per sign, binned over the float32 line, and as a histogram.

Parallel: one process per core, each single-threaded (torch too: with one thread its vectorized loops never split a
range, so every element of a chunk that is a multiple of 32 long takes the vector path). Resumable: each finished
chunk is written to OUT/chunks/ as a temp file then renamed; a restarted sweep with the same range skips them, and the
final figures are computed from the chunk files alone, so they do not depend on interruptions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, cast

import numba
import numpy as np

from bendtorch.impl.kernels.erf import erf32, erf_piece32
from bendtorch.oracle.erf import REL_MARGIN, check_float64_error, ref_pass, round32_mp
from bendtorch.oracle.ulp import ulp32_1, ulp_error1_u
from bendtorch.reports.torch_erf import erf_as, f2u, gelu_erf_port, u2f

VERSION = 1
ERF_FUNCS = ("impl", "torch_erf", "torch_gelu_erf_aten")
GELU_FUNCS = ("impl_gelu_erf", "torch_gelu", "torch_gelu_aten")
FUNCS = ERF_FUNCS + GELU_FUNCS
NF = len(FUNCS)
NE = len(ERF_FUNCS)
NP = 8
PIECES = ("[0, 0.84375)", "[0.84375, 1.25)", "[1.25, 1.75)", "[1.75, 2.25)", "[2.25, 2.75)", "[2.75, 3.25)",
          "[3.25, 3.92)", "[3.92, inf]")
XSHIFT = 18  # x bins: 2^18 consecutive patterns (32 bins per binade), 8192 per sign
NXB = 1 << (31 - XSHIFT)
# histogram of ulp errors: [k/100, (k+1)/100) for k < 200, then quarter octaves from 2 up, bin j starting at
# 2^(1 + j//4) (1 + (j%4)/4) (j < 1200, past 2^277, the largest finite error), the last bin takes inf
NLIN = 200
NLOG = 1200
NB = NLIN + NLOG + 1
FULL_HI = 1 << 31
C_N, C_CR, C_W1, C_FAITH = 0, 1, 2, 3
HALF = np.float32(0.5)
ONE = np.float32(1.0)
SQRT1_2F = np.float32(0.7071067811865476)  # main.bend line 1210 and PyTorch's float(M_SQRT1_2)
INV_SQRT2 = 0.7071067811865476


def hist_edges() -> Any:
    """The left edges of the ulp-error histogram's bins (the last bin is open and takes inf)."""
    lin = np.arange(NLIN) / 100.0
    j = np.arange(NLOG)
    log = np.ldexp(1.0 + (j % 4) / 4.0, 1 + j // 4)
    return np.concatenate([lin, log, [np.inf]])


@numba.njit(cache=True)
def _hbin(e: float) -> Any:
    if e < 2.0:
        return int(e * 100.0)
    if not (e < math.inf):
        return NB - 1
    eb = np.float64(e).view(np.uint64)
    j: Any = 4 * (np.int64(eb >> np.uint64(52)) - 1024) + np.int64((eb >> np.uint64(50)) & np.uint64(3))
    return NLIN + min(j, NLOG - 1)


@numba.njit(cache=True)
def _ord(b: np.uint32) -> Any:
    """float32 bits -> an integer that orders the floats (+0 and -0 both 0); adjacent floats differ by 1."""
    v = np.int64(b & np.uint32(0x7FFFFFFF))
    if b >= np.uint32(0x80000000):
        return -v
    return v


@numba.njit(cache=True)
def _bits(x: np.float32) -> Any:
    return f2u(np.float32(x))


@numba.njit(cache=True)
def _gelu64(x: float) -> float:
    """GELU in float64: x/2 * erfc(-x/sqrt 2) (erfc keeps the relative accuracy where 1 + erf cancels)."""
    return 0.5 * x * math.erfc(-x * INV_SQRT2)


@numba.njit(cache=True)
def _impl_gelu(x: np.float32) -> np.float32:
    """gelu_erf_v, main.bend line 1209: (x * 0.5) * (1 + erf(x * 0.70710677))."""
    return (x * HALF) * (ONE + erf32(x * SQRT1_2F))


@numba.njit(cache=True)
def record_pass(r: Any, exact: Any, u: Any, cr: Any, neg: bool, pcs: Any, bits: Any, valid: Any, cnt: Any,
                maxu: Any, argb: Any, maxabs: Any, hist: Any, bmax: Any, nanst: Any) -> None:
    """One function on one sign over a chunk: for each finite input i (valid[i]), the result r[i] against the
    exact value (exact[i], negated when neg) with u[i] = ulp32(exact[i]) and the correctly rounded cr[i] (negated
    when neg): count it in its piece pcs[i] (n, correctly rounded, within one float32 step of it, faithful), keep
    the largest ulp error with its input, the largest absolute error, the histogram and the per-x-bin maxima.
    The accumulators are this function's (and sign's) slices."""
    sg = -1.0 if neg else 1.0
    sbit = np.uint32(0x80000000) if neg else np.uint32(0)
    for i in range(r.size):
        if not valid[i]:
            continue
        ri = r[i]
        if ri != ri:
            nanst[2] += 1  # a number gave NaN
        ex = sg * exact[i]
        e = ulp_error1_u(np.float64(ri), ex, u[i])
        c = cr[i]
        if neg:
            c = -c
        d = abs(_ord(_bits(ri)) - _ord(_bits(c)))
        pc = pcs[i]
        cnt[pc, C_N] += 1
        if d == 0:
            cnt[pc, C_CR] += 1
        if d <= 1:
            cnt[pc, C_W1] += 1
        if e < 1.0:
            cnt[pc, C_FAITH] += 1
        if e > maxu[pc]:
            maxu[pc] = e
            argb[pc] = np.int64(np.uint32(bits[i] | sbit))
        a = abs(np.float64(ri) - ex)
        if a > maxabs[0] or a != a:
            maxabs[0] = a if a == a else math.inf
        hist[_hbin(e)] += 1
        xb = int(bits[i] >> np.uint32(XSHIFT))
        if e > bmax[xb]:
            bmax[xb] = e


@numba.njit(cache=True)
def prep_pass(bits: Any, y64: Any, c32: Any, te_p: Any, te_n: Any, tg_p: Any, tg_n: Any, ta_p: Any, ta_n: Any,
              R: Any, pc: Any, pg: Any, gex: Any, gu: Any, gcr: Any, u: Any, valid: Any, nanst: Any, oddv: Any,
              infbad: Any, misc: Any, gelu_bad: Any, gelu: bool) -> None:
    """The results of every function on x and -x for each positive pattern (R[f, sign, i]), the pieces (pc for
    erf, pg = the piece of x * 0.70710677 for GELU), the GELU references (gex, its ulp gu, rounded gcr, per sign),
    the erf reference's ulp u; and the figures of the special inputs: NaN in (nanst[:, :2]), +-inf (infbad), odd
    symmetry (oddv), the GELU port against torch's ATen gelu and torch's default gelu against it (misc[0:2],
    first port mismatches in gelu_bad), input counts (misc[2:5]: NaN, +-inf, finite). valid[i]: x finite.
    Without `gelu`, GELU's own figures (functions NE..NF-1) are skipped: only the bit-for-bit checks run."""
    nf = NF if gelu else NE
    for i in range(bits.size):
        b = np.uint32(bits[i])
        bn = np.uint32(b | np.uint32(0x80000000))
        x = u2f(b)
        xn = u2f(bn)
        R[0, 0, i] = erf32(x)
        R[0, 1, i] = erf32(xn)
        R[1, 0, i] = te_p[i]
        R[1, 1, i] = te_n[i]
        R[2, 0, i] = erf_as(x)
        R[2, 1, i] = erf_as(xn)
        if gelu:
            R[3, 0, i] = _impl_gelu(x)
            R[3, 1, i] = _impl_gelu(xn)
        R[4, 0, i] = tg_p[i]
        R[4, 1, i] = tg_n[i]
        R[5, 0, i] = ta_p[i]
        R[5, 1, i] = ta_n[i]
        for s in range(2):
            xs = x if s == 0 else xn
            ta = R[5, s, i]
            tg = R[4, s, i]
            gp = gelu_erf_port(xs)
            if _bits(gp) != _bits(ta) and not (gp != gp and ta != ta):
                if misc[0] < gelu_bad.size:
                    gelu_bad[misc[0]] = _bits(xs)
                misc[0] += 1
            if _bits(tg) != _bits(ta) and not (tg != tg and ta != ta):
                misc[1] += 1
        valid[i] = False
        if x != x:
            misc[2] += 2
            for f in range(nf):
                for s in range(2):
                    if R[f, s, i] != R[f, s, i]:
                        nanst[f, 0] += 1
                    else:
                        nanst[f, 1] += 1
            continue
        for f in range(NE):  # odd symmetry: erf(-x) has the bits of -erf(x)
            rp = R[f, 0, i]
            rn = R[f, 1, i]
            if _bits(rn) != (_bits(rp) ^ np.uint32(0x80000000)) and not (rn != rn and rp != rp):
                oddv[f] += 1
        if x == np.inf:
            misc[3] += 2
            for f in range(NE):
                if R[f, 0, i] != ONE:
                    infbad[f] += 1
                if R[f, 1, i] != -ONE:
                    infbad[f] += 1
            for f in range(NE, nf):
                if R[f, 0, i] != np.inf:
                    infbad[f] += 1
                if not (R[f, 1, i] == 0.0 or R[f, 1, i] != R[f, 1, i]):  # -inf: 0 (or NaN from -inf * 0)
                    infbad[f] += 1
            continue
        misc[4] += 2
        valid[i] = True
        pc[i] = erf_piece32(x)
        pg[i] = erf_piece32(x * SQRT1_2F)
        u[i] = ulp32_1(y64[i])  # one ulp for both signs: the exact values differ only in sign
        if not gelu:
            continue
        xd = np.float64(x)
        for s in range(2):
            g = _gelu64(xd if s == 0 else -xd)
            gex[s, i] = g
            gu[s, i] = ulp32_1(g)
            gcr[s, i] = np.float32(g)


_BUFFERS: dict[tuple[str, tuple[int, ...]], Any] = {}


def _buf(name: str, shape: tuple[int, ...], dtype: Any) -> Any:
    """A scratch array kept for the next chunk of the same size (fresh pages on every chunk cost ~15% in page
    faults); every entry that is read is written first by the pass using it."""
    key = (name, shape)
    if key not in _BUFFERS:
        if len(_BUFFERS) > 64:
            _BUFFERS.clear()
        _BUFFERS[key] = np.empty(shape, dtype=dtype)
    return _BUFFERS[key]


def stats_pass(bits: Any, y64: Any, c32: Any, outs: tuple[Any, ...], acc: dict[str, Any], gelu: bool) -> None:
    """Every figure for the positive patterns `bits` and their negatives, added into acc (see new_acc)."""
    n = bits.size
    R = _buf("R", (NF, 2, n), np.float32)
    pc = _buf("pc", (n,), np.int64)
    pg = _buf("pg", (n,), np.int64)
    gex = _buf("gex", (2, n), np.float64)
    gu = _buf("gu", (2, n), np.float64)
    gcr = _buf("gcr", (2, n), np.float32)
    u = _buf("u", (n,), np.float64)
    valid = _buf("valid", (n,), np.bool_)
    cast(Any, prep_pass)(bits, y64, c32, *outs, R, pc, pg, gex, gu, gcr, u, valid, acc["nanst"], acc["oddv"], acc["infbad"],
              acc["misc"], acc["gelu_bad"], gelu)
    for f in range(NF if gelu else NE):
        for s in range(2):
            if f < NE:
                ex, uu, cr, neg, pcs = y64, u, c32, s == 1, pc
            else:
                ex, uu, cr, neg, pcs = gex[s], gu[s], gcr[s], False, pg
            record_pass(R[f, s], ex, uu, cr, neg, pcs, bits, valid, acc["cnt"][f, s], acc["maxu"][f, s],
                        acc["argb"][f, s], acc["maxabs"][f:f + 1], acc["hist"][f], acc["bmax"][f, s],
                        acc["nanst"][f])


def new_acc() -> dict[str, Any]:
    """Empty accumulators (the chunk file's arrays)."""
    return {
        "cnt": np.zeros((NF, 2, NP, 4), dtype=np.int64),
        "maxu": np.full((NF, 2, NP), -1.0),
        "argb": np.zeros((NF, 2, NP), dtype=np.int64),
        "maxabs": np.zeros(NF),
        "hist": np.zeros((NF, NB), dtype=np.int64),
        "bmax": np.full((NF, 2, NXB), -1.0),
        "nanst": np.zeros((NF, 3), dtype=np.int64),
        "oddv": np.zeros(NF, dtype=np.int64),
        "infbad": np.zeros(NF, dtype=np.int64),
        "misc": np.zeros(5, dtype=np.int64),
        "gelu_bad": np.zeros(16, dtype=np.int64),
    }


def _torch_outputs(xp: Any, xn: Any, default_gelu: bool = True) -> tuple[Any, ...]:
    """torch.erf on x and -x, torch's default gelu (oneDNN here; only with default_gelu, else the ATen one stands
    in) and its ATen gelu (oneDNN disabled), each on x and -x."""
    import torch

    from bendtorch.reports.torch_erf import torch_gelu

    import warnings

    warnings.filterwarnings("ignore", message=".*TF32 acceleration on top of oneDNN.*")
    with torch.no_grad():
        te_p = torch.erf(torch.from_numpy(xp)).numpy()
        te_n = torch.erf(torch.from_numpy(xn)).numpy()
    with torch.backends.mkldnn.flags(enabled=False):
        ta_p, ta_n = torch_gelu(xp), torch_gelu(xn)
    tg_p, tg_n = (torch_gelu(xp), torch_gelu(xn)) if default_gelu else (ta_p, ta_n)
    return te_p, te_n, tg_p, tg_n, ta_p, ta_n


def process_bits(bits: Any, gelu: bool = True) -> dict[str, Any]:
    """Every figure for the positive patterns `bits` (uint32, sign bit clear) and their negatives."""
    t0 = time.perf_counter()
    bits = np.ascontiguousarray(bits, dtype=np.uint32)
    n = bits.size
    y64 = _buf("y64", (n,), np.float64)
    c32 = _buf("c32", (n,), np.float32)
    hard = _buf("hard", (n,), np.bool_)
    ref_pass(bits, y64, c32, hard)
    hi = np.flatnonzero(hard)
    hard_bits = bits[hi].astype(np.int64)
    hard_flip = np.zeros(hi.size, dtype=np.bool_)
    for k, i in enumerate(hi):
        r, _ = round32_mp(float(bits[i:i + 1].view(np.float32)[0]))
        hard_flip[k] = r != c32[i]
        c32[i] = r
    xp = bits.view(np.float32)
    xn = (bits | np.uint32(0x80000000)).view(np.float32)
    outs = _torch_outputs(xp, xn, gelu)
    acc = new_acc()
    stats_pass(bits, y64, c32, outs, acc, gelu)
    acc["gelu_stats"] = np.array([int(gelu)], dtype=np.int64)
    acc["hard_bits"] = hard_bits
    acc["hard_flip"] = hard_flip
    acc["hard_f64_ulps"] = np.array([check_float64_error(bits[hi].view(np.float32))]) if hi.size else np.zeros(1)
    acc["n_patterns"] = np.array([n], dtype=np.int64)
    acc["seconds"] = np.array([time.perf_counter() - t0])
    return acc


def merge(total: dict[str, Any] | None, acc: dict[str, Any]) -> dict[str, Any]:
    """Fold one chunk's accumulators into the running total (sums, maxima; the first maximum keeps its input)."""
    if total is None:
        return {k: v.copy() for k, v in acc.items()}
    for k in ("cnt", "hist", "nanst", "oddv", "infbad", "n_patterns", "seconds", "gelu_stats"):
        total[k] = total[k] + acc[k]
    upd = acc["maxu"] > total["maxu"]
    total["maxu"] = np.where(upd, acc["maxu"], total["maxu"])
    total["argb"] = np.where(upd, acc["argb"], total["argb"])
    total["maxabs"] = np.maximum(total["maxabs"], acc["maxabs"])
    total["bmax"] = np.maximum(total["bmax"], acc["bmax"])
    nb = int(total["misc"][0])
    room = max(0, 16 - nb)
    take = min(room, int(acc["misc"][0]))
    total["gelu_bad"][nb:nb + take] = acc["gelu_bad"][:take]
    total["misc"] = total["misc"] + acc["misc"]
    for k in ("hard_bits", "hard_flip"):
        total[k] = np.concatenate([total[k], acc[k]])
    total["hard_f64_ulps"] = np.maximum(total["hard_f64_ulps"], acc["hard_f64_ulps"])
    return total


# ------------------------------------------------------------------------------------------------------------------
# chunks, workers, resume
# ------------------------------------------------------------------------------------------------------------------

def _chunk_path(d: Path, lo: int) -> Path:
    return d / f"chunk_{lo:08x}.npz"


def _save_atomic(path: Path, acc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, **acc)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _load(path: Path) -> dict[str, Any]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _worker_init() -> None:
    import torch

    torch.set_num_threads(1)
    numba.set_num_threads(1)


def _work(task: tuple[int, int, str, bool]) -> tuple[int, float]:
    lo, hi, d, gelu = task
    acc = process_bits(np.arange(lo, hi, dtype=np.uint32), gelu)
    _save_atomic(_chunk_path(Path(d), lo), acc)
    return hi - lo, float(acc["seconds"][0])


def sweep_range(out: Path, lo: int, hi: int, chunk: int, workers: int, progress: bool = True,
                gelu: bool = False) -> dict[str, Any]:
    """Sweep the positive patterns [lo, hi) (and their negatives) in chunks, skipping chunks already on disk;
    returns the merged accumulators of every chunk file in the range."""
    import multiprocessing as mp

    from tqdm import tqdm  # type: ignore[import-untyped]

    d = out / "chunks"
    d.mkdir(parents=True, exist_ok=True)
    manifest = {"version": VERSION, "lo": lo, "hi": hi, "chunk": chunk, "gelu_stats": gelu}
    mpath = d / "manifest.json"
    if mpath.exists():
        old = json.loads(mpath.read_text())
        if old != manifest:
            raise SystemExit(f"{d} holds chunks of another sweep ({old}); use --fresh or another --out")
    else:
        mpath.write_text(json.dumps(manifest))
    for tmp in d.glob(".chunk_*.tmp"):
        tmp.unlink()
    starts = list(range(lo, hi, chunk))
    todo = [(s, min(s + chunk, hi), str(d), gelu) for s in starts if not _chunk_path(d, s).exists()]
    done_patterns = (hi - lo) - sum(t[1] - t[0] for t in todo)
    if todo:
        bar = tqdm(total=2 * (hi - lo), initial=2 * done_patterns, unit="in", unit_scale=True, smoothing=0.05,
                   desc="erf sweep", disable=not progress, file=sys.stderr)
        if workers <= 1:
            _worker_init()
            for t in todo:
                n, _ = _work(t)
                bar.update(2 * n)
        else:
            ctx = mp.get_context("spawn")
            with ctx.Pool(workers, initializer=_worker_init) as pool:
                for n, _ in pool.imap_unordered(_work, todo):
                    bar.update(2 * n)
        bar.close()
    total: dict[str, Any] | None = None
    for s in starts:
        total = merge(total, _load(_chunk_path(d, s)))
    assert total is not None
    return total


# ------------------------------------------------------------------------------------------------------------------
# sample mode
# ------------------------------------------------------------------------------------------------------------------

def special_patterns() -> Any:
    """The positive bit patterns of every special value: zeros, subnormal ends, the normal range's ends, the
    piece boundaries and two float32 neighbours each way, the centres, where erf rounds to 1, inf and NaNs with
    payloads (each also swept negated)."""
    from bendtorch.impl.kernels.erf import BOUNDS

    vals = [0.0, 1e-45, 2.8e-45, 1e-40, 1.1754942e-38, 1.17549435e-38, 1e-30, 2.0 ** -12, 1e-3, 0.1, 0.5,
            1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 3.9192, 3.9193, 4.0, 6.0, 10.0, 1e30, 3.4028235e38, np.inf]
    fs = [np.float32(v) for v in vals]
    for b in BOUNDS:
        x = np.float32(b)
        fs += [x, np.nextafter(x, np.float32(0)), np.nextafter(np.nextafter(x, np.float32(0)), np.float32(0)),
               np.nextafter(x, np.float32(9)), np.nextafter(np.nextafter(x, np.float32(9)), np.float32(9))]
    bits = np.array(fs, dtype=np.float32).view(np.uint32)
    nans = np.array([0x7F800001, 0x7FBFFFFF, 0x7FC00000, 0x7FC12345, 0x7FFFFFFF], dtype=np.uint32)
    # every 32 patterns from 0x7f7fffe0 covers the largest floats; pad the total to a multiple of 32
    allb = np.unique(np.concatenate([bits, nans]))
    return allb


def sample_patterns(n: int) -> Any:
    """n spread inputs: n/2 positive patterns evenly spaced over [0, 2^31), plus every special value; the count
    padded with further spread patterns to a multiple of 32 (torch's whole-vector loops)."""
    m = max(1, n // 2)
    spread = np.unique((np.arange(m, dtype=np.float64) * (FULL_HI / m)).astype(np.int64)).astype(np.uint32)
    allb = np.unique(np.concatenate([spread, special_patterns()]))
    pad = (-allb.size) % 32
    k = 1
    while pad:
        extra = np.setdiff1d(np.arange(k * 7919, (k + 1) * 7919 * 64, 7919 * 2, dtype=np.uint32), allb)[:pad]
        allb = np.unique(np.concatenate([allb, extra]))
        pad = (-allb.size) % 32
        k += 1
    return allb


# ------------------------------------------------------------------------------------------------------------------
# figures, JSON and plots
# ------------------------------------------------------------------------------------------------------------------

def _f32(bits: int) -> float:
    return float(np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0])


def _figures(tot: dict[str, Any], f: int, piece: int | None = None) -> dict[str, Any]:
    cnt = tot["cnt"][f] if piece is None else tot["cnt"][f][:, piece:piece + 1]
    c = cnt.sum(axis=(0, 1))
    maxu = tot["maxu"][f] if piece is None else tot["maxu"][f][:, piece:piece + 1]
    k = np.unravel_index(int(np.argmax(maxu)), maxu.shape)
    argb = (tot["argb"][f] if piece is None else tot["argb"][f][:, piece:piece + 1])[k]
    n = int(c[C_N])
    out: dict[str, Any] = {
        "finite_inputs": n,
        "max_ulp": float(maxu[k]) if n else 0.0,
        "max_ulp_at": _f32(int(argb)) if n else None,
        "max_ulp_at_bits": f"0x{int(argb) & 0xFFFFFFFF:08x}" if n else None,
        "correctly_rounded": int(c[C_CR]),
        "correctly_rounded_fraction": c[C_CR] / n if n else 1.0,
        "within_one_ulp": int(c[C_W1]),
        "within_one_ulp_fraction": c[C_W1] / n if n else 1.0,
        "faithful_fraction": c[C_FAITH] / n if n else 1.0,
    }
    if piece is None:
        nan_in = int(tot["misc"][2])
        out.update({
            "inputs": 2 * int(tot["n_patterns"][0]),
            "nan_inputs": nan_in,
            "nan_in_nan_out": bool(tot["nanst"][f, 1] == 0),
            "nan_inputs_giving_a_number": int(tot["nanst"][f, 1]),
            "numbers_giving_nan": int(tot["nanst"][f, 2]),
            "infinities_ok": bool(tot["infbad"][f] == 0),
            "max_abs_error": float(tot["maxabs"][f]),
            "per_sign": {s: {"correctly_rounded_fraction": (cnt[i].sum(axis=0)[C_CR] / max(1, cnt[i].sum(axis=0)[C_N])),
                             "max_ulp": float(maxu[i].max())} for i, s in enumerate(("positive", "negative"))},
        })
        if f < NE:
            out["odd_symmetric"] = bool(tot["oddv"][f] == 0)
            out["odd_symmetry_violations"] = int(tot["oddv"][f])
        out["steps_from_correctly_rounded"] = {"0": int(c[C_CR]), "1": int(c[C_W1] - c[C_CR]),
                                               "more": int(n - c[C_W1])}
    return out


def build_report(tot: dict[str, Any], mode: str, seconds: float, command: str, workers: int) -> dict[str, Any]:
    nf = NF if int(tot["gelu_stats"][0]) else NE
    funcs = {name: _figures(tot, f) for f, name in enumerate(FUNCS[:nf])}
    for f, name in enumerate(FUNCS[:nf]):
        funcs[name]["per_piece"] = {f"{p} {PIECES[p]}": _figures(tot, f, p) for p in range(NP)}
        funcs[name]["reference"] = ("exact erf rounded to float32 (glibc double + mpmath on hard cases)" if f < NE
                                    else "float64 0.5 x erfc(-x/sqrt 2) rounded to float32 (no mpmath step)")
    imp = funcs["impl"]
    hb = tot["hard_bits"]
    flips = tot["hard_flip"]
    rep: dict[str, Any] = {
        "mode": mode,
        "command": command,
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "workers": workers, "python": platform.python_version()},
        "inputs": imp["inputs"],
        "finite_inputs": imp["finite_inputs"],
        "nan_inputs": imp["nan_inputs"],
        "max_ulp": imp["max_ulp"],
        "max_ulp_at": imp["max_ulp_at"],
        "correctly_rounded_fraction": imp["correctly_rounded_fraction"],
        "within_one_ulp_fraction": imp["within_one_ulp_fraction"],
        "faithful_fraction": imp["faithful_fraction"],
        "fractions_are_of": "finite inputs (NaN and +-inf are checked separately)",
        "nan_in_nan_out": imp["nan_in_nan_out"],
        "odd_symmetric": imp["odd_symmetric"],
        "hard_cases": {
            "count_patterns": int(hb.size), "count_inputs": 2 * int(hb.size),
            "margin_relative": REL_MARGIN,
            "float64_rounding_was_wrong": int(flips.sum()),
            "largest_glibc_error_on_hard_cases_ulp64": float(tot["hard_f64_ulps"][0]),
            "first": [{"x": _f32(int(b)), "bits": f"0x{int(b):08x}", "float64_rounding_wrong": bool(fl)}
                      for b, fl in list(zip(hb, flips))[:40]],
        },
        "seconds": seconds,
        "chunk_seconds_total": float(tot["seconds"][0]),
        "functions": funcs,
        "gelu_port_check": {
            "inputs": imp["inputs"],
            "port_vs_torch_aten_gelu_mismatches": int(tot["misc"][0]),
            "first_mismatches": [f"0x{int(b) & 0xFFFFFFFF:08x}" for b in tot["gelu_bad"][:min(16, int(tot["misc"][0]))]],
            "torch_default_gelu_vs_aten_gelu_differences": (int(tot["misc"][1]) if int(tot["gelu_stats"][0])
                                                             else None),
            "note": ("port = reports/torch_erf.py (ATen Vectorized<float>::erf + SLEEF expf u10, fused "
                     "multiply-adds); NaN results count as equal whatever their payload"),
        },
    }
    return rep


def seed_claims(rep: dict[str, Any]) -> dict[str, Any]:
    """The seed's claims (main.bend lines 1118-1120) against the figures."""
    imp = rep["functions"]["impl"]
    n = rep["finite_inputs"]
    cr = imp["correctly_rounded"]
    return {
        "max_ulp_at_most_0.93": {"claim": 0.93, "measured": imp["max_ulp"], "holds": imp["max_ulp"] <= 0.93},
        "correctly_rounded_97.1_percent": {
            "claim": 0.971, "measured_of_finite": cr / n if n else None,
            "measured_of_all_inputs": cr / rep["inputs"] if rep["inputs"] else None,
            "holds_to_0.1_percent": abs(cr / n - 0.971) < 0.0005 if n else None},
        "one_ulp_from_it_on_the_rest": {"claim": 1.0, "measured_within_one_step": imp["within_one_ulp_fraction"],
                                        "holds": imp["within_one_ulp_fraction"] == 1.0},
        "nan_for_every_nan": {"holds": imp["nan_in_nan_out"], "nan_inputs": imp["nan_inputs"]},
    }


def plots(tot: dict[str, Any], out: Path, title: str) -> list[str]:
    """max ulp error against x (binned over the float32 line, both signs), the ulp-error histogram, the figures
    per piece; returns the PNG names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    # bins: their lower edge |x| (pattern xb << XSHIFT); only finite non-NaN bins that saw inputs
    lows = np.arange(NXB, dtype=np.int64) << XSHIFT
    with np.errstate(invalid="ignore"):  # the NaN patterns' bins
        xl = lows.astype(np.uint32).view(np.float32).astype(np.float64)
    fig, grid = plt.subplots(2, 2, figsize=(14, 9))
    for s in range(2):
        ax = grid[0, s]
        for f in (2, 1, 0):  # impl drawn last, on top
            y = tot["bmax"][f, s]
            ok = (y >= 0) & np.isfinite(xl) & (xl > 0)
            ax.step(xl[ok], np.maximum(y[ok], 1e-3), where="post", label=FUNCS[f], lw=1.2 if f == 0 else 0.9,
                    color=f"C{f}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(0.5, color="grey", ls=":", lw=0.8)
        ax.axhline(1.0, color="grey", ls="--", lw=0.8)
        ax.set_xlabel("|x|, x > 0" if s == 0 else "|x|, x < 0")
        ax.set_title("all functions (0 drawn at 1e-3)", fontsize=9)
        ax.grid(alpha=0.3)
        # zoom: impl and torch.erf where the polynomial pieces are, linear error scale
        ax = grid[1, s]
        for f in (1, 0):
            y = tot["bmax"][f, s]
            ok = (y >= 0) & (xl >= 1e-3) & (xl <= 4.5)
            ax.step(xl[ok], y[ok], where="post", label=FUNCS[f], lw=1.2 if f == 0 else 0.9, color=f"C{f}")
        for bnd in (0.84375, 1.25, 1.75, 2.25, 2.75, 3.25, 3.92):
            ax.axvline(bnd, color="grey", lw=0.5, alpha=0.6)
        ax.axhline(0.93, color="red", ls="--", lw=0.8, label="seed's claim 0.93")
        ax.axhline(0.5, color="grey", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.0)
        ax.set_xlabel("|x| in [1e-3, 4.5] (grey lines: impl's piece boundaries)")
        ax.grid(alpha=0.3)
    grid[0, 0].set_ylabel("largest ulp error in the bin (2^18 inputs, 1/32 binade)")
    grid[1, 0].set_ylabel("largest ulp error in the bin")
    grid[0, 0].legend(fontsize=8)
    grid[1, 0].legend(fontsize=8)
    fig.suptitle(f"erf: largest ulp error against x ({title})")
    fig.tight_layout()
    fig.savefig(out / "erf_max_ulp_vs_x.png", dpi=110)
    plt.close(fig)
    names.append("erf_max_ulp_vs_x.png")

    edges = hist_edges()
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    xs = edges.copy()
    xs[-1] = 2.0 * edges[-2]  # the inf bin, drawn past the last finite edge
    for f in range(NE):
        h = tot["hist"][f]
        axes[0].step(edges[:NLIN + 1], np.append(h[:NLIN], h[NLIN - 1]), where="post", label=FUNCS[f], lw=1)
        nz = h > 0
        axes[1].plot(np.maximum(xs[nz], 1e-3), h[nz], ".-", label=FUNCS[f], lw=0.8, ms=3)
    axes[0].set_xlabel("ulp error (bins of 0.01, 0 to 2)")
    axes[0].set_yscale("log")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("ulp error (all bins, log scale; last bin holds inf)")
    for ax in axes:
        ax.set_ylabel("inputs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"histogram of ulp errors ({title})")
    fig.tight_layout()
    fig.savefig(out / "erf_ulp_histogram.png", dpi=110)
    plt.close(fig)
    names.append("erf_ulp_histogram.png")

    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    w = 0.8 / NE
    for f in range(NE):
        c = tot["cnt"][f].sum(axis=0)
        n = np.maximum(c[:, C_N], 1)
        mx = tot["maxu"][f].max(axis=0)
        pos = np.arange(NP) + (f - (NE - 1) / 2) * w
        axes[0].bar(pos, np.maximum(mx, 1e-3), w, label=FUNCS[f])
        axes[1].bar(pos, 100 * c[:, C_CR] / n, w, label=FUNCS[f])
    axes[0].set_yscale("log")
    axes[0].axhline(0.93, color="red", ls="--", lw=0.8, label="seed's claim 0.93")
    axes[0].set_ylabel("max ulp error")
    axes[1].set_ylabel("% correctly rounded")
    axes[1].set_ylim(0, 100)
    for ax in axes:
        ax.set_xticks(range(NP))
        ax.set_xticklabels([f"{p}\n{PIECES[p]}" for p in range(NP)], fontsize=7)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"erf by impl's polynomial piece ({title})")
    fig.tight_layout()
    fig.savefig(out / "erf_per_piece.png", dpi=110)
    plt.close(fig)
    names.append("erf_per_piece.png")
    return names


# ------------------------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------------------------

def _json_default(o: Any) -> Any:
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    raise TypeError(f"not JSON: {type(o)}")


def _int(s: str) -> int:
    return int(s, 0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("reports/out/erf"), help="output directory")
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help="check N spread inputs plus every special value (seconds), not the full sweep")
    parser.add_argument("--lo", type=_int, default=0, help="first positive bit pattern (default 0)")
    parser.add_argument("--hi", type=_int, default=FULL_HI, help="end of the positive bit patterns (default 2^31)")
    parser.add_argument("--chunk", type=_int, default=1 << 21, help="positive patterns per chunk (a multiple of 32)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every core)")
    parser.add_argument("--fresh", action="store_true", help="discard chunks of an earlier run in --out")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--gelu-stats", action="store_true",
                        help="also GELU's own ulp figures (impl, torch default, torch ATen) against a float64 GELU "
                             "(always on with --sample; off by default in a full or range sweep, for speed)")


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    command = "bendtorch erf-sweep " + " ".join(a for a in sys.argv[1:] if a != "erf-sweep")
    if args.sample is not None:
        _worker_init()
        tot = process_bits(sample_patterns(args.sample), gelu=True)
        mode = f"sample ({2 * int(tot['n_patterns'][0])} inputs: {args.sample} spread plus the special values)"
        workers = 1
    else:
        if args.chunk % 32 or not (0 <= args.lo < args.hi <= FULL_HI):
            raise SystemExit("--chunk must be a multiple of 32 and 0 <= --lo < --hi <= 2^31")
        if args.fresh and (out / "chunks").exists():
            for p in (out / "chunks").iterdir():
                p.unlink()
        tot = sweep_range(out, args.lo, args.hi, args.chunk, args.workers, progress=not args.quiet,
                          gelu=args.gelu_stats)
        full = args.lo == 0 and args.hi == FULL_HI
        mode = "full (all 2^32 bit patterns)" if full else f"range [0x{args.lo:08x}, 0x{args.hi:08x}) and negatives"
        workers = args.workers
    seconds = time.perf_counter() - t0
    rep = build_report(tot, mode, seconds, command, workers)
    rep["seed_claims"] = seed_claims(rep)
    # a spot check of glibc's float64 erf against mpmath, on spread inputs (the margin's evidence)
    rng = np.random.default_rng(0)
    spot = rng.integers(0, FULL_HI, 2000, dtype=np.int64).astype(np.uint32).view(np.float32)
    spot = spot[np.isfinite(spot)]
    rep["hard_cases"]["largest_glibc_error_on_2000_random_ulp64"] = check_float64_error(spot)
    if not args.no_plots:
        rep["plots"] = plots(tot, out, mode.split(" (")[0])
    rep["seconds_total_with_report"] = time.perf_counter() - t0
    tmp = out / ".erf_sweep.json.tmp"
    tmp.write_text(json.dumps(rep, indent=1, default=_json_default))
    os.replace(tmp, out / "erf_sweep.json")
    imp = rep["functions"]["impl"]
    print(f"{mode}: impl max {imp['max_ulp']:.4f} ulp, correctly rounded {100 * imp['correctly_rounded_fraction']:.3f}%,"
          f" within one step {100 * imp['within_one_ulp_fraction']:.4f}%, NaN in NaN out {imp['nan_in_nan_out']},"
          f" odd {imp['odd_symmetric']}; hard cases {rep['hard_cases']['count_patterns']}; {seconds:.1f} s"
          f" -> {out / 'erf_sweep.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m bendtorch.reports.erf_sweep ...`: the same as `bendtorch erf-sweep ...`."""
    parser = argparse.ArgumentParser(prog="bendtorch erf-sweep", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
