"""impl's portable float32 functions (impl/kernels/portable/) and the switch between them and the C library's
(impl/kernels/libm.py): the tables against mpmath, each function within one float32 step of the correctly rounded
value on spread inputs (and correctly rounded on nearly all) without their exception tables and correctly rounded
with them, the tables (a perfect hash; the committed ones against mpmath; another digest refused), exact special
values and symmetry, no wider float in their compiled code, and BENDTORCH_LIBM selecting the functions (a bad value
refused). The exhaustive figures are the checker's (reports/sweep.py), not a test's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import mpmath
import numpy as np
import pytest

from bendtorch.impl.kernels import portable as P
from bendtorch.impl.kernels.portable import cr_table as H
from bendtorch.impl.kernels.portable import eft as E
from bendtorch.impl.kernels.portable import tables as T

ROOT = Path(__file__).resolve().parent.parent
F32 = np.float32


def _cr(f: Callable[[Any], Any], x: float) -> np.float32:
    """f(x) correctly rounded to float32 by brute force (mpmath at 200 bits; inf past the overflow threshold)."""
    with mpmath.workprec(200):
        y = f(mpmath.mpf(x))
        if abs(y) >= mpmath.mpf(2) ** 128 - mpmath.mpf(2) ** 103:
            return F32(np.inf) if y > 0 else F32(-np.inf)
        with np.errstate(over="ignore"):
            c = F32(float(y))
            if not np.isfinite(c):
                c = F32(np.copysign(np.float32(3.4028235e38), float(y)))
            cands = [np.nextafter(c, F32(-np.inf)), c, np.nextafter(c, F32(np.inf))]
        return min((z for z in cands if np.isfinite(z)), key=lambda z: abs(mpmath.mpf(float(z)) - y))


def _steps(a: np.float32, b: np.float32) -> int:
    ia, ib = int(F32(a).view(np.int32)), int(F32(b).view(np.int32))
    ia = ia if ia >= 0 else -(ia & 0x7FFFFFFF)
    ib = ib if ib >= 0 else -(ib & 0x7FFFFFFF)
    return abs(ia - ib)


def _inputs(kind: str, n: int, rng: Any) -> Any:
    if kind == "exp":
        xs = rng.uniform(-104, 88.8, n)
    elif kind == "log":
        xs = np.exp(rng.uniform(-103, 88, n))
    elif kind == "tanh":
        xs = rng.uniform(-10, 10, n) * rng.choice([1, 1e-2, 1e-5], n)
    else:
        xs = np.exp(rng.uniform(-10, 87, n)) * rng.choice([-1, 1], n)
    patterns = rng.integers(0, 2**32, n // 4, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        return np.concatenate([xs.astype(np.float32), patterns[np.isfinite(patterns)]])


FUNCS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "exp": (P.exp32, mpmath.exp), "log": (P.log32, mpmath.log), "tanh": (P.tanh32, mpmath.tanh),
    "sin": (P.sin32, mpmath.sin), "cos": (P.cos32, mpmath.cos),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_correctly_rounded_and_the_pair_alone_within_one_step(name: str) -> None:
    f, mf = FUNCS[name]
    raw = getattr(P, f"raw_{name}32")
    rng = np.random.default_rng(7)
    xs = _inputs(name, 1500, rng)
    wrong = []
    for x in xs:
        if name == "log" and x < 0:
            continue
        c = _cr(mf, float(x))
        assert f(x) == c, (name, x, f(x), c)  # with its exception table: correctly rounded on every input
        r = raw(x)
        assert _steps(r, c) <= 1, (name, x, r, c)  # the pair alone: faithful, never more than one step away
        if r != c:
            wrong.append(x)
    # the pair arithmetic leaves a few 2^-36 of the result before the last rounding: a wrong rounding needs the
    # exact value within that distance of a boundary, about 1 input in 10^4 (the sweep lists them all: the table)
    assert len(wrong) <= 2, (name, wrong)


def test_the_check_fails_on_a_plain_float32_formula() -> None:
    # the same check catches a function evaluated in plain float32 (tanh = (e^2x - 1)/(e^2x + 1), one rounding
    # per operation): many inputs not correctly rounded, some more than one step away
    rng = np.random.default_rng(7)
    xs = rng.uniform(0.05, 3, 300).astype(np.float32)
    naive = [F32((P.exp32(F32(2) * x) - F32(1)) / (P.exp32(F32(2) * x) + F32(1))) for x in xs]
    bad = [_steps(r, _cr(mpmath.tanh, float(x))) for x, r in zip(xs, naive)]
    assert sum(b > 0 for b in bad) > 30


def test_special_values() -> None:

    def b(v: Any) -> int:
        return int(F32(v).view(np.uint32))
    inf, nan = F32(np.inf), F32(np.nan)
    z, nz, sub = F32(0.0), F32(-0.0), F32(1e-45)
    cases: dict[str, list[tuple[Any, Any]]] = {
        "exp": [(z, 1), (nz, 1), (inf, inf), (-inf, 0.0), (sub, 1), (F32(89), inf), (F32(-104), 0.0)],
        "log": [(z, -inf), (nz, -inf), (inf, inf), (F32(1), 0.0), (F32(-1), nan), (-inf, nan), (sub, _cr(mpmath.log, float(sub)))],
        "tanh": [(z, 0.0), (nz, -0.0), (inf, 1), (-inf, -1), (sub, sub), (-sub, -sub)],
        "sin": [(z, 0.0), (nz, -0.0), (inf, nan), (-inf, nan), (sub, sub), (-sub, -sub)],
        "cos": [(z, 1), (nz, 1), (inf, nan), (-inf, nan), (sub, 1)],
    }
    for name, cs in cases.items():
        f = FUNCS[name][0]
        for x, want in cs:
            r = f(F32(x))
            if np.isnan(F32(want)):
                assert np.isnan(r), (name, x, r)
            else:
                assert b(r) == b(want), (name, x, r, want)
        assert np.isnan(f(nan)) and np.isnan(f(F32(-np.nan)))


def test_tiny_inputs_are_given_their_correctly_rounded_result_at_once() -> None:
    # below 2^-13 tanh rounds to x, below 2^-12 sin to x, below 2^-13 cos to 1, and raw_* return those without the
    # table evaluation (whose terms there are subnormal: an Intel core's microcode assists). Correctly rounded, and
    # the result the shortcut gives, on a spread of each band (subnormals included), its top and the neighbours;
    # the claim fails higher up, so the check can fail (FINDINGS records the comparison with the evaluation on every
    # input of the bands)
    from bendtorch.impl.kernels.portable import sincos as PS
    from bendtorch.impl.kernels.portable import tanh as PT
    mp = {"tanh": mpmath.tanh, "sin": mpmath.sin, "cos": mpmath.cos}
    for name, top in (("tanh", PT._TANH_TINY), ("sin", PS._SIN_TINY), ("cos", PS._COS_TINY)):
        raw = getattr(P, f"raw_{name}32")
        band = np.linspace(1, int(F32(top).view(np.uint32)) - 1, 300).astype(np.uint32).view(F32)
        xs = np.concatenate([band, [np.nextafter(F32(top), F32(0)), F32(top), np.nextafter(F32(top), F32(1))]])
        for x in np.concatenate([xs, -xs]):
            c = _cr(mp[name], float(x))
            assert F32(raw(x)).view(np.uint32) == c.view(np.uint32), (name, x)
            if abs(x) < top:
                assert c.view(np.uint32) == (F32(1) if name == "cos" else x).view(np.uint32), (name, x)
        up = np.linspace(int(F32(4 * top).view(np.uint32)), int(F32(16 * top).view(np.uint32)), 50).astype(
            np.uint32).view(F32)
        assert any(_cr(mp[name], float(x)) != (F32(1) if name == "cos" else x) for x in up), name


def test_symmetry_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    xs = rng.integers(0, 0x7F800000, 3000, dtype=np.int64).astype(np.uint32).view(np.float32)
    for x in xs:
        assert F32(P.tanh32(-x)).view(np.uint32) == F32(-P.tanh32(x)).view(np.uint32), x
        assert F32(P.sin32(-x)).view(np.uint32) == F32(-P.sin32(x)).view(np.uint32), x
        assert F32(P.cos32(-x)).view(np.uint32) == F32(P.cos32(x)).view(np.uint32), x


def test_pow_on_ropes_table_and_its_special_cases() -> None:
    base = F32(10000.0)
    for half in (4, 16, 64):
        for c in range(half):
            e = F32(F32(c + c) / F32(half + half))
            r = P.pow32(base, e)
            want = _cr(lambda x: mpmath.power(10000, x), float(e))
            assert _steps(r, want) <= 1, (half, c, r, want)
    inf, nan = F32(np.inf), F32(np.nan)
    assert P.pow32(nan, F32(0)) == 1 and P.pow32(F32(1), nan) == 1
    assert P.pow32(F32(-2), F32(3)) == -8 and P.pow32(F32(-2), F32(2)) == 4 and np.isnan(P.pow32(F32(-2), F32(0.5)))
    assert P.pow32(F32(0), F32(-1)) == inf and P.pow32(F32(2), -inf) == 0 and P.pow32(F32(0.5), -inf) == inf
    assert P.pow32(F32(2), F32(0.5)) == _cr(mpmath.sqrt, 2.0)


def test_pow_with_a_huge_exponent_overflows_and_underflows_cleanly() -> None:
    # y log x near the float32 limit: the exact product's partial products would overflow (the exhaustive sweep
    # of 10000^y found it: NaN instead of inf), so the rounded product decides first
    base = F32(10000.0)
    for y in (F32(3.7226889e37), F32(3.4028235e38), F32(1e30), F32(1e10)):
        assert P.pow32(base, y) == np.inf and P.pow32(base, -y) == 0, y
        assert P.pow32(F32(0.5), y) == 0 and P.pow32(F32(0.5), -y) == np.inf, y
    assert P.pow32(F32(-2), F32(3.4028235e38)) == np.inf  # an even integer power of a negative number
    assert P.pow32(F32(1.0000001), F32(1e10)) == _cr(lambda y: mpmath.power(mpmath.mpf(float(F32(1.0000001))), y),
                                                      1e10)


@pytest.mark.parametrize("form", ["exp_array_gathers", "exp_array_blocks"])
def test_exp_array_gives_exp32s_bits_in_place_or_not(form: str) -> None:
    # exp_array is the vectorised loop the row kernels call, in the form faster on the machine (P.exp_array is one
    # of the two): both forms give exp32's bits on every kind of input, here on every machine (the exhaustive
    # sweep compares exp_array and exp32 on all 2^32 inputs); an input below -87 takes the scalar pass
    from bendtorch.impl.kernels.portable import exp as E
    exp_array = getattr(E, form)
    assert P.exp_array in (E.exp_array_gathers, E.exp_array_blocks)
    rng = np.random.default_rng(5)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -87.0, -87.00001, -86.99999, 88.0, 88.72283, 88.72284, 88.8,
                88.80001, -103.97208, -104.0, 1e-30, -1e-30, 2.9802322e-08, -2.9802322e-08, 1e-45, -1e-45,
                2.980232e-08, -2.980232e-08, 2.9802326e-08, -2.9802326e-08, 4e-22, -4e-22, 1e-38, -1e-38]
    xs = np.concatenate([np.array(specials, dtype=F32), rng.uniform(-110, 95, 200_000).astype(F32),
                         rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(F32)])
    want = np.array([P.exp32(x) for x in xs[:2000]], dtype=F32)
    out = np.empty_like(xs)
    exp_array(xs, out)
    assert out[:2000].view(np.uint32).tolist() == want.view(np.uint32).tolist()
    inplace = xs.copy()
    exp_array(inplace, inplace)
    assert inplace.view(np.uint32).tolist() == out.view(np.uint32).tolist()
    # the rest against the scalar function compiled in a loop
    assert np.array_equal(out.view(np.uint32), _exp32_loop(xs).view(np.uint32))
    # short rows, and rows of a matrix in place as the row kernels pass them, each starting below -87
    for n in (0, 1, 3, 7, 8, 9, 16, 33):
        part = np.concatenate([np.array([-100.0], dtype=F32), xs[2000:2000 + n]])[:n].copy()
        got = part.copy()
        exp_array(got, got)
        assert got.view(np.uint32).tolist() == _exp32_loop(part).view(np.uint32).tolist(), n
    m = np.concatenate([np.full(7, -100.0, dtype=F32), xs[:5 * 37 - 7]]).reshape(5, 37)
    rows = m.copy()
    for i in range(5):
        exp_array(rows[i, :30], rows[i, :30])
    assert rows[:, :30].view(np.uint32).tolist() == _exp32_loop(m[:, :30].ravel()).reshape(5, 30).view(
        np.uint32).tolist()
    assert rows[:, 30:].view(np.uint32).tolist() == m[:, 30:].view(np.uint32).tolist()   # the rest untouched


def _exp32_loop(xs: Any) -> Any:
    import numba

    @numba.njit
    def loop(a: Any) -> Any:
        o = np.empty_like(a)
        for i in range(a.size):
            o[i] = P.exp32(a[i])
        return o
    return loop(xs)


def test_tables_against_mpmath() -> None:
    with mpmath.workprec(200):
        for j in range(64):
            t = mpmath.mpf(2) ** (mpmath.mpf(j) / 64)
            assert abs(mpmath.mpf(float(T.EXP_TH[j])) + mpmath.mpf(float(T.EXP_TL[j])) - t) < t * mpmath.mpf(2) ** -47
        l64 = mpmath.log(2) / 64
        assert abs(sum(mpmath.mpf(float(v)) for v in (T.EXP_L1, T.EXP_L2, T.EXP_L3)) - l64) < l64 * mpmath.mpf(2) ** -43
        for j in range(len(T.LOG_C)):
            t = -mpmath.log(mpmath.mpf(float(T.LOG_C[j])))
            assert abs(mpmath.mpf(float(T.LOG_TH[j])) + mpmath.mpf(float(T.LOG_TL[j])) - t) <= abs(t) * mpmath.mpf(2) ** -47
        for j in range(len(T.SIN_TH)):
            s, c = mpmath.sin(mpmath.mpf(j) / 64), mpmath.cos(mpmath.mpf(j) / 64)
            assert abs(mpmath.mpf(float(T.SIN_TH[j])) + mpmath.mpf(float(T.SIN_TL[j])) - s) <= s * mpmath.mpf(2) ** -47
            assert abs(mpmath.mpf(float(T.COS_TH[j])) + mpmath.mpf(float(T.COS_TL[j])) - c) <= c * mpmath.mpf(2) ** -47
    with mpmath.workprec(400):
        words = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** 288))
        assert [int(w) for w in T.TWO_OVER_PI[:9]] == [(words >> (32 * (8 - i))) & 0xFFFFFFFF for i in range(9)]


_IR_SCAN = r"""
import re, numpy as np, numba
WIDE = re.compile(r"\b(double|fp128|x86_fp80|ppc_fp128)\b")
def wide_lines(f):
    out = []
    for ir in f.inspect_llvm().values():
        for m in re.finditer(r"^define [^\n]*?@\"?([^\"(\s]+)\"?\(.*?^}", ir, re.S | re.M):
            if "cpython" in m.group(1) or "cfunc" in m.group(1):
                continue  # the Python wrapper boxes the result as a Python float: not the function itself
            out += [l.strip() for l in m.group(0).splitlines() if WIDE.search(l)]
    return out
"""


def _scan(body: str, tmp_path: Path) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))  # compiled fresh: cached code cannot be inspected
    p = subprocess.run([sys.executable, "-c", _IR_SCAN + body], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_no_wider_float_in_the_compiled_functions(tmp_path: Path) -> None:
    # numba's LLVM IR of every function: no 64-bit or wider float anywhere in the functions themselves (a bare
    # Python float literal or an int/uint mix, which numba widens, would show up here)
    out = _scan("from bendtorch.impl.kernels import portable as P\n"
                "x = np.float32(1.5)\n"
                "from bendtorch.impl.kernels.portable import exp as E\n"
                "fs = [P.exp32, P.log32, P.tanh32, P.sin32, P.cos32]\n"
                "rows = [E.exp_array_gathers, E.exp_array_blocks]\n"
                "[f(x) for f in fs]; P.pow32(x, x)\n"
                "[r(np.ones(40, np.float32), np.ones(40, np.float32)) for r in rows]\n"
                "print(sum(len(wide_lines(f)) for f in fs + [P.pow32] + rows),"
                " [wide_lines(f)[:2] for f in fs])\n",
                tmp_path)
    assert out.startswith("0 "), out


def test_the_ir_scan_finds_a_wider_float(tmp_path: Path) -> None:
    out = _scan("@numba.njit\ndef g(x):\n    return np.float32(x * 0.1)\n"
                "g(np.float32(1))\nprint(len(wide_lines(g)))\n", tmp_path)
    assert int(out.split()[-1]) > 0


_SWITCH = r"""
import numpy as np
from bendtorch.impl.kernels import libm, portable
xs = np.linspace(-20, 20, 4001, dtype=np.float32)
same_c = all(libm.expf(x) == libm.clib_expf(x) and libm.tanhf(x) == libm.clib_tanhf(x) for x in xs)
same_p = all(libm.expf(x) == portable.exp32(x) and libm.tanhf(x) == portable.tanh32(x) for x in xs)
import numba
print(libm.MODE, same_c, same_p, numba.config.CACHE_DIR)
"""


def test_the_switch_selects_the_functions(tmp_path: Path) -> None:
    out = {}
    for mode in ("portable", "clib"):
        env = dict(os.environ, BENDTORCH_LIBM=mode, NUMBA_CACHE_DIR=str(tmp_path))
        p = subprocess.run([sys.executable, "-c", _SWITCH], cwd=ROOT, capture_output=True, text=True, env=env,
                           timeout=600)
        assert p.returncode == 0, p.stderr
        out[mode] = p.stdout.split()
    assert out["portable"][:3] == ["portable", "False", "True"]
    assert out["clib"][:3] == ["clib", "True", "False"]
    assert out["clib"][3] != out["portable"][3]  # the C library's kernels are cached apart
    p = subprocess.run([sys.executable, "-c", "import bendtorch.impl.kernels.libm"], cwd=ROOT, capture_output=True,
                       text=True, env=dict(os.environ, BENDTORCH_LIBM="fast"), timeout=300)
    assert p.returncode != 0 and "BENDTORCH_LIBM" in p.stderr
    assert re.search(r"portable, clib", p.stderr)


# ---------------------------------------------------------------------------------------------------------------
# the exception tables
# ---------------------------------------------------------------------------------------------------------------

def _look(tk: Any, tv: Any, td: Any, xs: Any, y: np.float32) -> Any:
    return np.array([H.cr_fix(tk, tv, td, x, y) for x in xs], dtype=np.float32)


def test_a_perfect_hash_gives_each_input_its_value_and_leaves_the_rest() -> None:
    rng = np.random.default_rng(3)
    keys = np.unique(rng.integers(0, 0x7F800000, 3000, dtype=np.int64)).astype(np.uint32)
    vals = rng.integers(0, 0x7F800000, keys.size, dtype=np.int64).astype(np.uint32)
    tk, tv, td = H.build_cr_table(keys, vals)
    assert tk.size == 8192 and td.size == 2048
    got = _look(tk, tv, td, keys.view(np.float32), F32(-1))
    assert (got.view(np.uint32) == vals).all()
    others = np.setdiff1d(rng.integers(0, 2**32, 5000, dtype=np.int64).astype(np.uint32), keys)
    assert (_look(tk, tv, td, others.view(np.float32), F32(-1)) == F32(-1)).all()
    # the same table with every displacement off by one finds (nearly) none of them: the lookup depends on them
    lost = _look(tk, tv, td ^ np.uint32(1), keys.view(np.float32), F32(-1))
    assert (lost.view(np.uint32) != vals).mean() > 0.99
    empty = H.build_cr_table(np.zeros(0, np.uint32), np.zeros(0, np.uint32))
    assert _look(*empty, keys[:50].view(np.float32), F32(2))[0] == F32(2)


def test_the_hash_is_murmurhash3s_finaliser() -> None:
    # the builder and the lookup share fmix32; against MurmurHash3's fmix32 written out in Python integers
    def fmix(h: int) -> int:
        h ^= h >> 16
        h = (h * 0x85EBCA6B) & 0xFFFFFFFF
        h ^= h >> 13
        h = (h * 0xC2B2AE35) & 0xFFFFFFFF
        return h ^ (h >> 16)
    ks = np.array([0, 1, 2, 0x7F800000, 0xFFFFFFFF, 0x12345678], dtype=np.uint32)
    assert H.fmix32_np(ks).tolist() == [fmix(int(k)) for k in ks]
    assert H.fmix32_np(ks[1:2]).tolist() != [1]


def test_clz64_counts_the_leading_zero_bits() -> None:
    import numba

    @numba.njit
    def each(vs: Any) -> Any:
        out = np.empty(vs.size, dtype=np.int64)
        for i in range(vs.size):
            out[i] = E.clz64(vs[i])
        return out

    vs = [0, 1, 2, 3, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
    vs += [int(v) for v in np.random.default_rng(4).integers(0, 2**63, 200, dtype=np.int64) >> np.arange(200) % 63]
    assert each(np.array(vs, dtype=np.uint64)).tolist() == [64 - v.bit_length() for v in vs]


def test_the_committed_tables_hold_the_correctly_rounded_values() -> None:
    # a spread of each table's inputs, against mpmath directly (not the checker that found them): the value is the
    # correctly rounded one, the pair evaluation alone misrounds there, and the public function returns the value
    rng = np.random.default_rng(11)
    mfs = {"exp": mpmath.exp, "log": mpmath.log, "tanh": mpmath.tanh, "sin": mpmath.sin, "cos": mpmath.cos}
    for name, mf in mfs.items():
        tk, tv = getattr(H, f"{name.upper()}_KEYS"), getattr(H, f"{name.upper()}_VALS")
        full = tk != np.uint32(0xFFFFFFFF)
        assert full.sum() > 100, name
        pick = rng.choice(np.flatnonzero(full), 25, replace=False)
        raw, pub = getattr(P, f"raw_{name}32"), getattr(P, f"{name}32")
        for i in pick:
            x = np.array([tk[i]], np.uint32).view(np.float32)[0]
            want = np.array([tv[i]], np.uint32).view(np.float32)[0]
            assert want == _cr(mf, float(x)), (name, x)
            assert raw(x) != want and _steps(raw(x), want) == 1, (name, x)
            assert pub(x) == want, (name, x)
        if name == "exp":  # every input of the table, and so through exp_array's blocks (a short row is exp32's)
            from bendtorch.impl.kernels.portable import exp as E
            xs = tk[full].view(np.float32)
            for form in (E.exp_array_gathers, E.exp_array_blocks):
                out = np.empty_like(xs)
                form(xs, out)
                assert xs.size >= 1000 and out.view(np.uint32).tolist() == tv[full].tolist(), form


def test_tables_of_another_digest_are_refused(tmp_path: Path) -> None:
    with np.load(H.CR_TABLES_FILE, allow_pickle=False) as z:
        t = {k: z[k].copy() for k in z.files}
    t["sin_vals"][0] ^= np.uint32(1)
    bad = tmp_path / "cr.npz"
    np.savez(bad, **t)
    with pytest.raises(RuntimeError, match="cr.npz: its tables' sha256 is"):
        H.load_cr_tables(bad)
    del t["cos_disp"]
    np.savez(bad, **t)
    with pytest.raises(RuntimeError, match="no array cos_disp"):
        H.load_cr_tables(bad)
    assert H.cr_tables_digest(H.load_cr_tables()) == H.CR_TABLES_SHA256
