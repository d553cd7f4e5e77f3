"""The checker's statistics pass (reports.sweep.kernels.stats_pass) against a plain numpy statement of each figure,
input by input: the counts per sign and piece, the largest error and the first input to reach it, the largest
absolute error of a misrounded result, the histogram, the x bins' maxima, NaN, symmetry, the special inputs and the
list of misrounded inputs. The pass settles most inputs in blocks (sums, a histogram in parts, maxima over the
block); the statement here takes one input at a time, so the chunks below hold every case that splits a block: a
result off by an ulp, NaN where a number belongs, a number where NaN belongs, infinities, x = +-0, subnormal x, x
NaN, a block spanning two pieces or two x bins, patterns out of order, and a chunk shorter than a block. And
kernels.twin_diff, the count of a twin's differing inputs, against its numpy statement."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bendtorch.records.functions import FUNCTIONS
from bendtorch.reports.sweep import kernels as K
from bendtorch.reports.sweep.chunkpass import reference
from bendtorch.reports.sweep.chunks import MISS_CAP
from bendtorch.reports.sweep.libraries import resolve_ref

SIGN = np.uint32(0x80000000)


def _ulp32(y: Any) -> Any:
    """oracle.ulp.ulp32_1 of each float64: 2^(e - 23) in y's binade, 2^-149 below 2^-126, inf for inf and NaN."""
    ay = np.abs(y)
    _, e = np.frexp(np.where(np.isfinite(ay), ay, 1.0))
    u = np.ldexp(1.0, e - 1 - 23)
    return np.where(~np.isfinite(ay), np.inf, np.where(ay < 2.0 ** -126, 2.0 ** -149, u))


def _hbin(e: Any) -> Any:
    """kernels._hbin of each error: hundredths below 2, then quarter octaves, the last bin for inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        lin = np.floor(np.where(e < 2.0, e, 0.0) * 100.0).astype(np.int64)
        m, ex = np.frexp(np.where(np.isfinite(e) & (e >= 2.0), e, 2.0))   # e = m 2^ex, m in [0.5, 1)
        j = 4 * (ex - 2) + np.floor((2.0 * m - 1.0) * 4.0).astype(np.int64)
    return np.where(e < 2.0, lin, np.where(np.isfinite(e), K.NLIN + np.minimum(j, K.NLOG - 1), K.NB - 1))


def _ord(b: Any) -> Any:
    v = (b & np.uint32(0x7FFFFFFF)).astype(np.int64)
    return np.where(b >= SIGN, -v, v)


def statement(bits: Any, r: Any, y64: Any, c32: Any, pcs: Any, sym: int, npieces: int) -> dict[str, Any]:
    """Every figure of the statistics pass, from per-input arrays (x = +pattern, then -pattern)."""
    n = bits.size
    acc = K.new_acc(npieces)
    b = np.concatenate([bits, bits | SIGN])
    h = np.repeat([0, 1], n)
    with np.errstate(invalid="ignore"):
        x = b.view(np.float32).astype(np.float64)
    pc = np.concatenate([pcs, pcs])
    rb, cb = r.view(np.uint32), c32.view(np.uint32)
    rn, cn = np.isnan(r), np.isnan(c32)
    xnan = np.isnan(x)
    acc["nanst"][0] = np.sum(xnan & rn)
    acc["nanst"][1] = np.sum(xnan & ~rn)
    live = ~xnan
    if sym:
        rp = r[:n]
        want = rp.view(np.uint32) ^ SIGN if sym == K.ODD else rp.view(np.uint32)
        acc["symv"][0] = np.sum((rb[n:] != want) & ~(rn[n:] & np.isnan(rp)) & live[n:])
    both = rn & cn
    ax = np.abs(x)
    for cls, where in ((K.SP_INF, np.isinf(ax)), (K.SP_ZERO, x == 0)):
        acc["spn"][cls] = np.sum(where & live)
        acc["spbad"][cls] = np.sum(where & live & (rb != cb) & ~both)
    live &= ~np.isinf(ax)
    acc["nanst"][2] = np.sum(live & rn & ~cn)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(r.astype(np.float64) - y64)
        e = np.where(rn | np.isnan(y64), np.inf, a / _ulp32(y64))
        e = np.where(np.isinf(r) | np.isinf(y64), np.where(r == y64, 0.0, np.inf), e)
    e = np.where(both | ((r == c32) & np.isinf(c32)), 0.0, e)
    d = np.where(both, 0, np.where(rn | cn, 2, np.abs(_ord(rb) - _ord(cb))))
    sub = live & (ax < 2.0 ** -126) & (x != 0)
    acc["spn"][K.SP_SUB] = np.sum(sub)
    acc["spbad"][K.SP_SUB] = np.sum(sub & (d != 0))
    if sub.any():
        acc["submax"][0] = max(-1.0, float(e[sub].max()))
    for hh in range(2):
        for p in range(npieces):
            g = live & (h == hh) & (pc == p)
            acc["cnt"][hh, p] = [g.sum(), (g & (d == 0)).sum(), (g & (d <= 1)).sum(), (g & (e < 1.0)).sum()]
            if g.any():
                first = int(np.flatnonzero(g)[np.argmax(e[g])])   # argmax: the first of equal maxima
                acc["maxu"][hh, p], acc["argb"][hh, p] = e[first], int(b[first])
    bad = live & (d != 0)
    acc["miss_n"] = np.array([bad.sum()])
    acc["miss"], acc["miss_want"] = b[bad][:MISS_CAP].astype(np.int64), cb[bad][:MISS_CAP]
    if bad.any():
        m = a[bad].max() if not np.isnan(a[bad]).any() else np.inf
        acc["maxabs"][0] = max(0.0, m)
    np.add.at(acc["hist"], _hbin(e[live]), 1)
    np.maximum.at(acc["bmax"], (h[live], (b[live] & np.uint32(0x7FFFFFFF)) >> np.uint32(K.XSHIFT)), e[live])
    return acc


def measured(bits: Any, r: Any, y64: Any, c32: Any, pcs: Any, sym: int, npieces: int) -> dict[str, Any]:
    acc = K.new_acc(npieces)
    miss = np.empty(MISS_CAP, dtype=np.int64)
    want = np.empty(MISS_CAP, dtype=np.uint32)
    n = np.zeros(1, dtype=np.int64)
    K.stats_pass(bits, r, y64, c32, pcs, sym, acc["cnt"], acc["maxu"], acc["argb"], acc["maxabs"], acc["hist"],
                 acc["bmax"], acc["nanst"], acc["symv"], acc["spn"], acc["spbad"], acc["submax"], miss, want, n)
    k = int(min(n[0], MISS_CAP))
    acc["miss"], acc["miss_want"], acc["miss_n"] = miss[:k], want[:k], n
    return acc


def _chunks(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "zero and subnormal x": np.arange(0, 3000, dtype=np.uint32),
        "the normal edge": np.arange(0x007FF000, 0x00800C00, dtype=np.uint32),
        "two x bins": np.arange((3 << 27) - 1500, (3 << 27) + 1500, dtype=np.uint32),
        "near 1": np.arange(0x3F7F0000, 0x3F7F0000 + 5 * K.BLOCK + 7, dtype=np.uint32),
        "the overflow edge, inf and NaN x": np.arange(0x7F7FF800, 0x7F800800, dtype=np.uint32),
        "scattered, in order": np.sort(rng.integers(0, 1 << 31, 4000)).astype(np.uint32),
        "scattered, out of order": rng.integers(0, 1 << 31, 3000).astype(np.uint32),
        "shorter than a block": np.arange(0x40000000, 0x40000000 + 100, dtype=np.uint32),
    }


def _odd_reference(y64: Any, c32: Any, rng: np.random.Generator) -> tuple[Any, Any]:
    """The reference made NaN at some x and -x, and its float64 value moved 1.5 and 3 float32 ulps off its float32
    rounding at others (no record's reference is either: made here so that the symmetry count meets NaN results on
    both sides, and a result with the reference's bits has an error of 1 or more)."""
    n = c32.size // 2
    y64, c32 = y64.copy(), c32.copy()
    i = rng.choice(n, size=min(n, 40), replace=False)
    y64[i], y64[n + i], c32[i], c32[n + i] = np.nan, np.nan, np.nan, np.nan
    j = rng.choice(2 * n, size=min(n, 80), replace=False)
    j = j[np.isfinite(c32[j]) & (np.abs(c32[j]) < 1e37)]
    y64[j] += np.where(np.arange(j.size) % 2 == 0, 1.5, 3.0) * _ulp32(y64[j])
    return y64, c32


def _results(c32: Any, kind: str, rng: np.random.Generator) -> Any:
    """A library's results: correctly rounded, with every kind of departure scattered through them, or (where the
    reference is NaN at x and -x) NaN of other bits at -x than at x, and a number at x where -x gives NaN."""
    r = c32.copy()
    if kind == "an odd reference":
        n = r.size // 2
        i = np.flatnonzero(np.isnan(r[:n]) & np.isnan(r[n:]))
        r[n + i[::2]] = np.uint32(0x7FC00001).view(np.float32)
        r[i[1::4]] = np.float32(2.0)
    if kind == "departures":
        m = r.size
        up = rng.integers(0, m, m // 50)
        r[up] = np.nextafter(r[up], np.float32(np.inf))
        r[rng.integers(0, m, 5)] = np.nan
        r[rng.integers(0, m, 5)] = np.float32(np.inf)
        r[rng.integers(0, m, 5)] = -r[rng.integers(0, m, 5)]
        r[rng.integers(0, m, 5)] = np.float32(0.0)
        r[np.flatnonzero(np.isnan(c32))[:3]] = np.float32(1.5)
    return r


@pytest.mark.parametrize("func", ["exp", "tanh", "erf", "log", "rsqrt", "dsilu"])
def test_the_statistics_pass_gives_each_figure_as_one_input_at_a_time_does(func: str) -> None:
    # exp (overflow to inf, no symmetry), tanh (odd), erf (odd, pieces), log and rsqrt (NaN for x < 0), dsilu
    fn = FUNCTIONS[func]
    rng = np.random.default_rng(7)
    sym = K.SYMMETRY[fn.symmetry]
    for name, bits in _chunks(rng).items():
        ref = reference(fn, bits)
        pcs = np.zeros(bits.size, dtype=np.int64)
        if fn.piece_of:
            K.pieces(resolve_ref(fn.piece_of), bits, pcs)
        for kind in ("correctly rounded", "departures", "an odd reference"):
            y64, c32 = (ref.y64, ref.c32) if kind != "an odd reference" else _odd_reference(ref.y64, ref.c32, rng)
            r = _results(c32, kind, rng)
            args = (bits, r, y64, c32, pcs, sym, len(fn.pieces))
            got, want = measured(*args), statement(*args)
            for k in want:
                assert np.array_equal(got[k], want[k]), (func, name, kind, k, got[k], want[k])


def test_the_statement_sees_a_misplaced_maximum() -> None:
    # the comparison above can fail: the pass's figures with the largest error's input moved are not the statement's
    fn = FUNCTIONS["exp"]
    bits = np.arange(0x3F800000, 0x3F800000 + 3 * K.BLOCK, dtype=np.uint32)
    ref = reference(fn, bits)
    args = (bits, ref.c32.copy(), ref.y64, ref.c32, np.zeros(bits.size, dtype=np.int64), 0, 1)
    got = measured(*args)
    assert np.array_equal(got["argb"], statement(*args)["argb"])
    got["argb"][0, 0] += 1
    assert not np.array_equal(got["argb"], statement(*args)["argb"])


def _twin_statement(a: Any, b: Any) -> int:
    """kernels.twin_diff as numpy says it: the inputs where some row of b has other bits than a (NaN = NaN)."""
    au, bu = a.view(np.uint32), b.view(np.uint32)
    nan_a, nan_b = (au & 0x7FFFFFFF) > 0x7F800000, (bu & 0x7FFFFFFF) > 0x7F800000
    return int(np.any((bu != au) & ~(nan_a & nan_b), axis=0).sum())


@pytest.mark.parametrize("n", [0, 1, 5, 1023, 3089])
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_twin_diff_counts_the_inputs_where_some_row_differs(n: int, rows: int) -> None:
    # rows that differ from a in their own places (a last bit, a sign), NaN against NaN of another payload (no
    # difference) and against a number (a difference); a count one off fails
    rng = np.random.default_rng(n * 3 + rows)
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = np.tile(a, (rows, 1))
    for j in range(rows if n else 0):
        b[j, rng.integers(0, n, n // 7 + 1)] ^= np.uint32(1 << (31 * (j % 2)))
    if n:
        k = rng.integers(0, n, n // 5 + 1)
        a[k] = 0x7FC00000
        b[rows - 1, k] = np.where(rng.random(k.size) < 0.5, 0xFFC00001, 0x3F800000).astype(np.uint32)
    got = K.twin_diff(a.view(np.float32), b.view(np.float32))
    assert got == _twin_statement(a.view(np.float32), b.view(np.float32))
    same = np.flatnonzero(np.all(b == a, axis=0))
    if same.size:  # one more input that differs, in the last row only, is one more in the count
        b[rows - 1, same[-1]] ^= np.uint32(1)
        assert K.twin_diff(a.view(np.float32), b.view(np.float32)) == got + 1
