"""The generic exhaustive checker (bendtorch.reports.sweep): its reference is the correctly rounded float32 on spread
and special inputs of every function record (against brute-force mpmath), every record resolves, the committed full
erf sweep's figures come again (impl's on any machine; another library's only on the machine that committed them,
else "not compared"), a broken library and a broken symmetry are caught, a sweep resumed from part of its chunks
gives the same figures, a later run on another machine keeps both columns, the command line refuses bad numbers with
exit code 2, the JSON it writes validates, the committed JSONs are in the current layout, and a Dask LocalCluster
gives the same JSON as the local pool."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest

from bendtorch.records.functions import FUNCTIONS
from bendtorch.records.libraries import LIBRARIES, providers
from bendtorch.records.machine import machine
from bendtorch.records.schemas import validate
from bendtorch.reports import sweep as S
from bendtorch.reports.sweep import kernels as K
from bendtorch.reports.sweep.bound import bound
from bendtorch.reports.sweep.chunkpass import reference, round32_mp
from bendtorch.reports.sweep.libraries import resolve, resolve_ref
from tests.bitcheck import without_run_details

ROOT = Path(__file__).resolve().parent.parent


def _f32(bits: int) -> np.float32:
    f: np.float32 = np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]
    return f


def _mp(func: str) -> Any:
    return resolve_ref(FUNCTIONS[func].mpmath)


def _brute_cr(f: Any, x: float) -> np.float32:
    """f(x) rounded to float32 by brute force: mpmath at 300 bits, the nearest of the neighbours (inf past the
    overflow threshold)."""
    with mpmath.workprec(300):
        y = f(mpmath.mpf(x))
        if abs(y) >= mpmath.mpf(K.OVERFLOW_EDGE):
            return np.float32(math.copysign(math.inf, float(y)))
        with np.errstate(over="ignore"):
            c = np.float32(float(y))
        if not np.isfinite(c):
            c = np.float32(math.copysign(3.4028235e38, float(y)))
        with np.errstate(over="ignore"):
            cands = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
        return min((z for z in cands if np.isfinite(z)), key=lambda z: abs(mpmath.mpf(float(z)) - y))


def _reference(func: str, xs: Any) -> Any:
    """The checker's c32 for inputs xs (any sign), hard cases decided, as a chunk does it."""
    bits = np.ascontiguousarray(xs, dtype=np.float32).view(np.uint32) & np.uint32(0x7FFFFFFF)
    c32 = reference(FUNCTIONS[func], bits).c32
    neg = np.ascontiguousarray(xs, dtype=np.float32).view(np.uint32) >> np.uint32(31)
    return np.where(neg == 1, c32[bits.size:], c32[:bits.size])


# inputs where the float64 formulas are weakest: zeros of the derivatives, the tails, underflow and overflow
_NEAR = {"dsilu": [-2.399357, 4194305.0, 30.0], "dgelu_erf": [-0.7517915, 7.0, 3000.0],
         "gelu_erf": [-13.0, -9.0, 6.0, 3000.0], "gelu_tanh": [-9.0, -5.0, 40.0, 5000.0],
         "dgelu_tanh": [-3.0, -0.8, 9.0, 700.0], "exp": [88.72283, -103.972, -87.33], "sigmoid": [-88.0, -103.0],
         "silu": [-100.0, -20.0], "log": [1.0], "cos": [1.5707964, 4.712389], "pow": [9.632959, -11.27, 0.5, 1e-8]}


@pytest.mark.parametrize("func", list(FUNCTIONS))
def test_reference_is_correctly_rounded(func: str) -> None:
    rng = np.random.default_rng(abs(hash(func)) % 2**32)
    xs = list(rng.integers(0, 0x7F800000, 60, dtype=np.int64).astype(np.uint32).view(np.float32))
    xs += list(rng.uniform(-12, 12, 60).astype(np.float32))
    for c in _NEAR.get(func, []):
        x0 = np.float32(c)
        xs += [x0 + np.float32(k) * np.spacing(x0) for k in range(-20, 21)]
    xs += [np.float32(v) for v in (0.0, 1e-40, 1.0, 0.5, 3.0, 100.0)]
    xs_a = np.array(xs + [-x for x in xs], dtype=np.float32)
    got = _reference(func, xs_a)
    mpf = _mp(func)
    for x, c in zip(xs_a, got):
        xf = float(x)
        with mpmath.workprec(60):
            v = mpf(mpmath.mpf(xf)) if xf != 0.0 else None
        if v is not None and (not isinstance(v, mpmath.mpf) or mpmath.isnan(v)):
            assert np.isnan(c), (func, x)  # log, sqrt of a negative number: NaN
            continue
        if xf == 0.0:
            continue  # the sign of zero is checked by the specials test
        want = _brute_cr(mpf, xf)
        assert c == want, (func, x, c, want)


@pytest.mark.parametrize("func", [f for f, e in FUNCTIONS.items() if e.half_x_ties])
def test_the_half_x_rule_agrees_with_mpmath(func: str) -> None:
    """HALF_X_RULE decides the ties at x/2 (x/2 subnormal) of SiLU and the GELUs; on a spread of them, both signs,
    it gives mpmath's rounding, and the float64 rounding it replaces (to even) is wrong on about half: the rule is
    what makes those right."""
    rng = np.random.default_rng(7)
    odd = rng.integers(0, 1 << 23, 150, dtype=np.int64) | 1  # subnormal x with the last bit set: x/2 a midpoint
    odd = np.concatenate([odd, (1 << 23) | odd[:50], [1, (1 << 24) - 1]]).astype(np.uint32)  # and [2^-126, 2^-125)
    xs = np.concatenate([odd, odd | np.uint32(0x80000000)]).view(np.float32)
    ref = reference(FUNCTIONS[func], np.ascontiguousarray(odd))
    assert ref.hard_bits.size == 0 and ref.by_rule[0] == xs.size
    want = np.array([_brute_cr(_mp(func), float(x)) for x in xs], dtype=np.float32)
    assert (ref.c32.view(np.uint32) == want.view(np.uint32)).all()
    to_even = (xs.astype(np.float64) / 2).astype(np.float32)
    wrong = int((to_even.view(np.uint32) != want.view(np.uint32)).sum())
    assert wrong == ref.by_rule[1] and 0.3 * xs.size < wrong < 0.7 * xs.size


def test_the_midpoint_from_the_bits_is_mid_f32() -> None:
    """The hard-case test's rounding boundary, read from the bits, is oracle.erf.mid_f32's on float32 values of
    every binade (subnormals, powers of two, zero) and y on either side."""
    from bendtorch.oracle.erf import mid_f32

    rng = np.random.default_rng(11)
    cb = np.concatenate([rng.integers(0, 0x7F800000, 20000), [0, 1, 0x007FFFFF, 0x00800000, 0x00800001, 0x01000000,
                                                            0x3F800000, 0x7F000000, 0x7F7FFFFF]]).astype(np.uint32)
    for c in cb.view(np.float32).astype(np.float64):
        for y in (c, np.nextafter(c, 0.0), np.nextafter(c, math.inf)):
            if y >= 0.0:
                assert K._mid32(y, c) == mid_f32(y, c), (y, c)


def test_the_hard_case_test_settles_early_only_where_the_boundary_agrees() -> None:
    """is_hard's early answer (False from y's low bits) is near_boundary's on y at every distance from the boundary
    around the early test's threshold, in every float32 binade and at its ends, with scales from 0 to far above |y|;
    and the threshold is tight: at one unit less, some of these y are hard, so a lower one would drop hard cases."""
    rng = np.random.default_rng(5)
    far = K._FAR_UNITS
    deltas = np.concatenate([np.arange(-far - 3, -far + 4), np.arange(far - 3, far + 4), [0, 1, -1],
                             rng.integers(-(1 << 28), 1 << 28, 40)])
    exps = np.concatenate([[-127, -126, -125, -1, 0, 1, 126, 127, 128], rng.integers(-126, 127, 12)])
    tight = 0
    for e in exps:
        for top in (0, (1 << 23) - 1, int(rng.integers(0, 1 << 23))):
            for d in deltas:
                low = (1 << 28) + int(d)
                if not 0 <= low < (1 << 29):
                    continue
                yb = ((int(e) + 1023) << 52) | (top << 29) | low
                y = float(np.array([yb], dtype=np.uint64).view(np.float64)[0])
                for sign in (1.0, -1.0):
                    ys = sign * y
                    c = float(np.float32(ys)) if abs(ys) < 3.4e38 else math.copysign(math.inf, ys)
                    for f in (0.0, 0.5, 1.0, 1.5, 2.0, 2.0000001, 4.0, 1e6):
                        want = K.near_boundary(ys, c, f * y)
                        assert K.is_hard(ys, c, f * y) == want, (hex(yb), sign, f)
                        tight += int(want and abs(int(d)) == far - 1 and f <= 2.0 and -126 <= e < 127)
    assert tight > 0


def test_a_chunk_with_more_hard_cases_than_one_pass_lists() -> None:
    """More hard cases than the reference's first pass has room for (SiLU's ties at x/2 on subnormals): the pass
    runs again with room for all, and the reference is the one a pass with room to spare gives."""
    from bendtorch.reports.sweep import chunkpass as CP

    bits = np.arange(1, 3 * CP.HARD_ROOM, dtype=np.uint32)
    got = reference(FUNCTIONS["silu"], bits)
    assert got.by_rule[0] > CP.HARD_ROOM
    old = CP.HARD_ROOM
    try:
        CP.HARD_ROOM = 8 * old
        want = reference(FUNCTIONS["silu"], bits)
    finally:
        CP.HARD_ROOM = old
    assert (got.c32.view(np.uint32) == want.c32.view(np.uint32)).all() and (got.by_rule == want.by_rule).all()
    assert np.array_equal(got.hard_bits, want.hard_bits)


def test_chunks_on_two_threads_give_the_figures_of_one() -> None:
    """Each thread has its own chunk buffers: two chunks run at once on two threads (a Dask worker's) give what
    they give one after the other."""
    import threading

    from bendtorch.reports.sweep import chunkpass as CP

    fn, lib = FUNCTIONS["tanh"], LIBRARIES["numpy"]
    ranges = [(0x3E000000, 0x3E000000 + (1 << 16)), (0x40000000, 0x40000000 + (1 << 17))]
    want = [CP.run_task((fn, (lib,), r))["numpy"] for r in ranges]
    for _ in range(3):
        got: dict[int, Any] = {}
        ts = [threading.Thread(target=lambda j=j: got.__setitem__(j, CP.run_task((fn, (lib,), ranges[j]))["numpy"]))
              for j in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for j in range(2):
            assert all(np.array_equal(got[j][k], want[j][k], equal_nan=True) for k in want[j] if k != "seconds")


def test_specials_of_the_reference() -> None:
    ref = {f: _reference(f, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32)) for f in FUNCTIONS}
    bits = {f: [int(np.float32(v).view(np.uint32)) for v in r[:4]] for f, r in ref.items()}

    def b(v: Any) -> int:
        return int(np.float32(v).view(np.uint32))
    assert bits["exp"] == [b(1), b(1), b(np.inf), b(0.0)]
    assert bits["pow"] == [b(1), b(1), b(np.inf), b(0.0)]
    assert bits["log"] == [b(-np.inf), b(-np.inf), b(np.inf), bits["log"][3]] and np.isnan(ref["log"][3])
    assert bits["tanh"] == [b(0.0), b(-0.0), b(1), b(-1)]
    assert bits["sin"][:2] == [b(0.0), b(-0.0)] and np.isnan(ref["sin"][2:4]).all()
    assert bits["silu"] == [b(0.0), b(-0.0), b(np.inf), b(-0.0)]
    assert bits["rsqrt"][:3] == [b(np.inf), b(-np.inf), b(0.0)]
    assert all(np.isnan(r[4]) for r in ref.values())


def test_every_record_resolves_and_each_library_is_stated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # every function names a compiled reference, an mpmath formula and (erf) a piece classifier that exist; every
    # library's strings resolve to functions that give a float32 array of the input's shape; twins are libraries;
    # a function's libraries are derived from the library records
    for f in FUNCTIONS.values():
        assert resolve_ref(f.reference)(0.5)[1] >= 0 and _mp(f.name)(mpmath.mpf(0.5)) is not None
        assert f.piece_of is None or len(f.pieces) > 1
        assert all(t in LIBRARIES and f.name in LIBRARIES[t].functions and LIBRARIES[t].twin for t in f.twins.values())
        assert providers(f.name) and all(f.name in LIBRARIES[n].functions for n in providers(f.name))
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    # a GPU's library runs the same path with the CPU standing in where no GPU is present (tests/test_sweep_gpu.py)
    monkeypatch.setenv("BENDTORCH_SWEEP_GPU", "cpu")
    for lib in LIBRARIES.values():
        assert lib.functions and set(lib.functions) <= set(FUNCTIONS), lib.name
        for name, spec in lib.functions.items():
            if lib.libm == "clib":
                continue  # a kernel of this process's libm mode: the same function as impl's
            y = np.asarray(resolve(spec)(x.copy()))
            assert y.dtype == np.float32 and y.shape[-1] == x.size, (lib.name, name)


def _committed_columns() -> list[str]:
    path = S.results_json("erf")
    if not path.is_file():
        return ["(none)"]
    return list(json.loads(path.read_text())["libraries"])


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
@pytest.mark.parametrize("column", _committed_columns())
def test_erf_entry_gives_the_committed_full_sweeps_figures(column: str) -> None:
    # the committed full sweep (`bendtorch sweep erf`, reports/results/atlas/erf/sweep_full.json) against the checker
    # re-run on a window around the column's largest error: the same error found at the same input. impl's figures
    # are facts everywhere; another library's are compared only on the machine that committed them
    path = S.results_json("erf")
    if not path.is_file():
        pytest.skip(f"not run: no committed full erf sweep at {path}")
    full = json.loads(path.read_text())
    assert full["mode"].startswith("full") and {"impl", "torch"} <= {c["library_name"] for c in
                                                                      full["libraries"].values()}
    f = full["libraries"][column]
    lib = f["library_name"]
    from bendtorch.records.libraries import LIBRARIES, installed
    if lib in LIBRARIES and not installed(lib):
        pytest.skip(f"not run: {lib}'s extra is not installed")
    dist = LIBRARIES[lib].distribution if lib in LIBRARIES else None
    here = machine(["torch", "numpy", "clib", *([dist] if dist else [])])
    note = S.comparable(f, here)
    if note is not None:
        assert not f["same_everywhere"] and note.startswith("not compared: committed "), note
        pytest.skip(note)
    b = int(f["max_ulp_at_bits"], 16) & 0x7FFFFFFF
    window = np.arange(b & ~0xFFF, (b & ~0xFFF) + 0x1000, dtype=np.uint32)
    got = S.figures(S.sweep_patterns("erf", [lib], window, workers=1, progress=False)[lib])
    assert (got["max_ulp"], got["max_ulp_at_bits"]) == (f["max_ulp"], f["max_ulp_at_bits"]), lib


def test_the_committed_erf_sweeps_hard_cases_are_flagged_again() -> None:
    # the hard cases the committed full sweep lists: flagged again, the float64 rounding right or wrong as recorded
    path = S.results_json("erf")
    if not path.is_file():
        pytest.skip(f"not run: no committed full erf sweep at {path}")
    first = json.loads(path.read_text())["hard_cases"]["first"]
    bits = np.array([int(h["bits"], 16) for h in first], dtype=np.uint32)
    n = bits.size
    y64, c32 = np.empty(2 * n), np.empty(2 * n, np.float32)
    hard, sc = np.empty(2 * n, dtype=np.int64), np.empty(2 * n)
    assert K.ref_pass(resolve_ref(FUNCTIONS["erf"].reference), bits, K.ODD, y64, c32, hard, sc) == n
    assert list(hard[:n]) == list(range(n))
    for k, h in enumerate(first):
        r32 = round32_mp(_mp("erf"), float(_f32(int(bits[k]))), float(sc[k]))[0]
        assert bool(r32 != c32[k]) == h["float64_rounding_wrong"], h


def _verdicts(committed: dict[str, Any], here: dict[str, Any], fresh: dict[str, Any]) -> dict[str, str]:
    """Each committed column against this run's column of its library: "same", "differs", or "not compared: ..."."""
    out = {}
    for cid, col in committed["libraries"].items():
        note = S.comparable(col, here)
        if note is not None:
            out[cid] = note
            continue
        new = fresh["libraries"][col["library_name"]]
        keep = ("max_ulp", "max_ulp_at_bits", "correctly_rounded", "within_one_ulp", "specials_right")
        out[cid] = "same" if all(col[k] == new[k] for k in keep) else "differs"
    return out


def test_a_result_committed_on_another_cpu_checks_impl_and_does_not_compare_the_rest(tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(lo=0x3F800000, hi=0x3F800000 + (1 << 12), chunk=1 << 11, workers=1, plot=False,
                              progress=False)
    fresh = S.sweep("exp", ["impl", "torch"], tmp_path / "a", **kw)
    here = fresh["machine"]
    assert _verdicts(fresh, here, fresh) == {"impl": "same", "torch": "same"}
    other = copy.deepcopy(fresh)
    for col in other["libraries"].values():
        col["machine"]["cpu"].update(model="Intel Xeon (AVX-512)", vendor="GenuineIntel", family=None,
                                     model_number=None)
    v = _verdicts(other, here, fresh)
    assert v["impl"] == "same"
    assert v["torch"] == f"not compared: committed on Intel Xeon (AVX-512), this is {_cpu(here)}"
    other["libraries"]["impl"]["correctly_rounded"] -= 1     # impl's figures are still checked: a change is caught
    assert _verdicts(other, here, fresh)["impl"] == "differs"
    same = copy.deepcopy(fresh)
    same["libraries"]["torch"]["max_ulp_at_bits"] = "0x3f800001"  # and a same-machine column is compared
    assert _verdicts(same, here, fresh)["torch"] == "differs"


def _cpu(m: dict[str, Any]) -> str:
    from bendtorch.records.machine import cpu_name
    return cpu_name(m)


def test_a_broken_library_and_a_broken_symmetry_are_caught() -> None:
    good = resolve(LIBRARIES["torch"].functions["tanh"])

    def one_step_up(x: Any) -> Any:
        return np.nextafter(good(x), np.float32(np.inf))
    rep = S.sweep("tanh", ["torch", one_step_up], None, sample=4000, workers=1, progress=False)
    ok, bad = rep["libraries"]["torch"], rep["libraries"]["one_step_up"]
    assert ok["odd_symmetric"] and ok["specials_right"] and ok["within_one_ulp_fraction"] == 1.0
    assert bad["correctly_rounded_fraction"] < 0.6 and not bad["odd_symmetric"] and not bad["specials_right"]
    assert bad["max_ulp"] >= 0.5 and not bad["same_everywhere"] and bad["key"]["library"]["code"]["<local>"]


def test_resume_from_part_of_the_chunks_gives_the_same_figures(tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(lo=0x3F800000, hi=0x3F800000 + (1 << 14), chunk=1 << 11, workers=1, plot=False,
                              progress=False)
    a = S.sweep("exp", ["impl", "torch"], tmp_path / "a", **kw)
    chunks = sorted((tmp_path / "a" / "exp" / "chunks" / "torch").glob("chunk_*.npz"))
    assert len(chunks) == 8
    for p in chunks[::3]:
        p.unlink()
    b = S.sweep("exp", ["impl", "torch"], tmp_path / "a", **kw)
    assert b["runs"][-1]["chunks"] == {"reused": 8 + 5, "computed": 3, "recomputed_after_a_failed_check": 0,
                                       "failed_checks": [], "notes": []}
    assert without_run_details(a["libraries"]) == without_run_details(b["libraries"])
    with pytest.raises(S.SweepError, match="holds chunks of another sweep"):
        S.sweep("exp", ["impl"], tmp_path / "a", **dict(kw, chunk=1 << 12))


@pytest.mark.parametrize("broken", ["apart", "in place"])
def test_the_exp_array_twin_counts_a_wrong_call(broken: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the exp function's twin checks libm.exp_array both ways the kernels call it: a copy wrong in one way only
    # (the last bit of every result flipped) is counted on every input
    from bendtorch.impl.kernels import libm
    good = libm.exp_array

    def wrong(src: Any, dst: Any) -> None:
        is_inplace = src.ctypes.data == dst.ctypes.data
        good(src, dst)
        if is_inplace == (broken == "in place"):
            dst.view(np.uint32)[:] ^= np.uint32(1)
    kw: dict[str, Any] = dict(lo=0x3F800000, hi=0x3F800000 + (1 << 11), chunk=1 << 11, workers=1, plot=False,
                              progress=False)
    ok = S.sweep("exp", ["impl"], tmp_path / "ok", **kw)
    assert ok["libraries"]["impl"]["twin"]["bit_differences"] == 0
    monkeypatch.setattr(libm, "exp_array", wrong)
    bad = S.sweep("exp", ["impl"], tmp_path / "bad", **kw)
    assert bad["libraries"]["impl"]["twin"]["bit_differences"] == bad["libraries"]["impl"]["inputs"]


def test_a_later_run_merges_its_libraries_in_the_atlas_order_and_keeps_the_plots(tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(lo=0x3F800000, hi=0x3F800000 + (1 << 12), chunk=1 << 11, workers=1, progress=False)
    first = S.sweep("exp", ["torch", "numpy"], tmp_path, **kw)
    assert first["plots"] and all((tmp_path / "exp" / n).exists() for n in first["plots"])
    later = S.sweep("exp", ["impl"], tmp_path, plot=False, **kw)
    saved = json.loads(Path(later["json"]).read_text())
    assert list(saved["libraries"]) == ["impl", "torch", "numpy"]            # the records' order, not the runs'
    assert saved["plots"] == first["plots"]
    assert saved["libraries"]["torch"] == json.loads(json.dumps(first["libraries"]["torch"]))
    assert [r["libraries"] for r in saved["runs"]] == [["torch", "numpy"], ["impl"]]


def test_a_later_run_on_another_machine_keeps_both_columns(tmp_path: Path) -> None:
    # a column committed on another CPU stays beside this machine's column of the same library; impl's column (the
    # same bits everywhere) is replaced; the atlas shows each row with the CPU it was measured on
    kw: dict[str, Any] = dict(sample=2000, workers=1, plot=False, progress=False)
    first = S.sweep("exp", ["impl", "torch"], tmp_path, **kw)
    path = Path(first["json"])
    doc = json.loads(path.read_text())
    for col in doc["libraries"].values():
        col["machine"]["cpu"].update(model="Intel Xeon (AVX-512)", vendor="GenuineIntel", family=None,
                                     model_number=None)
    path.write_text(json.dumps(doc))
    again = S.sweep("exp", ["impl", "torch"], tmp_path, **kw)
    cols = again["libraries"]
    torch_cols = [c for c, f in cols.items() if f["library_name"] == "torch"]
    assert len(cols) == 3 and cols["impl"]["machine"]["cpu"]["model"] == _cpu_model()
    assert torch_cols[0] == "torch" and torch_cols[1].startswith("torch@")
    assert cols["torch"]["machine"]["cpu"]["model"] == "Intel Xeon (AVX-512)"
    assert cols[torch_cols[1]]["machine"]["cpu"]["model"] == _cpu_model()
    validate(json.loads(path.read_text()), "sweep")
    rows = [r for r in S.atlas_markdown(tmp_path).splitlines() if r.startswith("| exp(x) |")]
    here = _cpu(again["machine"])
    assert [r.split(" | ")[1] for r in rows] == ["impl", "torch", "torch"]
    assert rows[0].endswith(f"| {here} (the same bits on any) |") and rows[1].endswith("| Intel Xeon (AVX-512) |")
    assert rows[2].endswith(f"| {here} |")
    summary = S.summary_line(again)
    assert f"{torch_cols[1]}: max" in summary and "impl: max" in summary and summary.count("\n  ") == 2


def _cpu_model() -> str:
    from bendtorch.records.machine import cpu
    return str(cpu()["model"])


@pytest.mark.parametrize("args", [["--sample", "0"], ["--sample", "-5"], ["--workers", "0"], ["--chunk", "0"],
                                  ["--chunk", "48"], ["--lib", "numpy"], ["--lo", "5", "--hi", "5"]])
def test_bad_numbers_are_usage_errors(args: list[str], tmp_path: Path) -> None:
    func = "erf" if "numpy" in args else "exp"
    p = subprocess.run([sys.executable, "-m", "bendtorch.cli", "sweep", func, "--out", str(tmp_path)] + args,
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_command_line_sample_and_the_atlas_table(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "bendtorch.cli", "sweep", "log", "--sample", "2000", "--lib", "impl",
                        "--lib", "numpy", "--workers", "1", "--out", str(tmp_path), "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    rep = json.loads((tmp_path / "log" / "sweep_sample.json").read_text())
    validate(rep, "sweep")
    assert rep["mode"].startswith("sample") and set(rep["libraries"]) == {"impl", "numpy"}
    assert rep["libraries"]["impl"]["within_one_ulp_fraction"] == 1.0
    assert rep["libraries"]["numpy"]["key"]["library"]["distribution"]["name"] == "numpy"
    assert "cpu" in rep["libraries"]["numpy"]["key"]["library"] and "cpu" not in rep["libraries"]["impl"]["key"]
    assert (tmp_path / "log" / "log_ulp_sample.png").stat().st_size > 1000
    md = S.atlas_markdown(tmp_path, "atlas")
    rows = [line for line in md.splitlines() if line.startswith("| log(x) |")]
    cpu = _cpu(rep["machine"])
    assert len(rows) == 2 and all("| sample " in r for r in rows), md
    assert rows[0].endswith(f"| {cpu} (the same bits on any) |") and rows[1].endswith(f"| {cpu} |"), rows
    assert "![log/log_ulp_sample.png](atlas/log/log_ulp_sample.png)" in md
    # the sweep rewrote OUT/ATLAS.md with the same table, its plots linked beside it
    assert (tmp_path / "ATLAS.md").read_text() == S.atlas_markdown(tmp_path, ".")


def test_the_committed_sweeps_are_in_the_current_layout_and_validate() -> None:
    paths = sorted(S.RESULTS.glob("*/sweep_*.json"))
    if not paths:
        pytest.skip(f"not run: no committed sweeps under {S.RESULTS}")
    for p in paths:
        doc = json.loads(p.read_text())
        validate(doc, "sweep")
        for cid, col in doc["libraries"].items():
            m = col["machine"]
            assert col["library_name"] == cid.partition("@")[0]
            assert col["same_everywhere"] == LIBRARIES[col["library_name"]].everywhere
            if "original" in m:  # recorded after the run: the CPU named, the run's own fields kept
                assert m["cpu"]["model"] and m["recorded_after_the_run"] and m["original"]["platform"]


def test_an_earlier_layout_is_upgraded_with_its_fields_kept() -> None:
    from bendtorch.reports.sweep.legacy import upgrade

    old = {"function": "exp", "title": "exp(x)", "mode": "sample (64 inputs)", "command": "c",
           "machine": {"platform": "Linux-x86_64", "processor": "x86_64", "cpus": 2, "python": "3.11.7",
                       "c_library": "glibc 2.36", "torch": "2.13.0+cpu"},
           "hard_cases": {"count": 0}, "libraries": {"impl": {"inputs": 64, "max_ulp": 0.5,
                                                               "correctly_rounded_fraction": 1.0,
                                                               "within_one_ulp_fraction": 1.0,
                                                               "specials_right": True}}}
    unknown = upgrade(old)
    validate(unknown, "sweep")
    note = S.comparable({**unknown["libraries"]["impl"], "same_everywhere": False}, machine())
    assert note is not None and note.startswith("not compared: committed on an unrecorded CPU (x86_64), this is ")
    known = upgrade(old, {"model": "Intel Xeon (AVX-512)", "vendor": "GenuineIntel"}, "the project's notes")
    validate(known, "sweep")
    m = known["libraries"]["impl"]["machine"]
    assert m["cpu"]["model"] == "Intel Xeon (AVX-512)" and m["original"] == old["machine"]
    assert "the project's notes" in m["recorded_after_the_run"] and m["libraries"]["torch"]["version"] == "2.13.0+cpu"


def test_dask_local_cluster_gives_the_pools_json(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed", reason="not run: dask[distributed] is not installed (optional extra)")
    kw: dict[str, Any] = dict(lo=0x40000000, hi=0x40000000 + (1 << 13), chunk=1 << 11, plot=False, progress=False)
    pool = S.sweep("sin", ["impl", "numpy"], tmp_path / "pool", workers=2, **kw)
    dask = S.sweep("sin", ["impl", "numpy"], tmp_path / "dask", dask="local", **kw)
    assert without_run_details(pool) == without_run_details(dask)
    assert pool["libraries"]["impl"]["finite_inputs"] == 2 * (1 << 13)


def test_each_reference_pass_runs_its_own_reference_and_is_cached_apart() -> None:
    # reports.sweep.bound compiles a copy of the pass per reference: a copy that ran another reference (one cache file
    # serving two, the failure a shared name would cause) gives that reference's values, caught here
    bits = np.array([0x3F000000, 0x40000000, 0x3C000000], dtype=np.uint32)   # 0.5, 2, 2^-7
    n = bits.size
    for name in ("exp", "log", "tanh"):
        ref = resolve_ref(FUNCTIONS[name].reference)
        y64, c32 = np.empty(2 * n), np.empty(2 * n, np.float32)
        hard, sc = np.empty(2 * n, dtype=np.int64), np.empty(2 * n)
        K.ref_pass(ref, bits, K.SYMMETRY["none"], y64, c32, hard, sc)
        for i in range(n):
            assert y64[i] == ref(float(_f32(int(bits[i]))))[0], (name, i)
    copies = {bound(K._ref_pass, _F=resolve_ref(FUNCTIONS[f].reference)) for f in ("exp", "log", "tanh")}
    assert len(copies) == 3 and bound(K._ref_pass, _F=resolve_ref(FUNCTIONS["exp"].reference)) in copies
    folders = {c._cache._cache_path for c in copies}
    names = {c.py_func.__qualname__ for c in copies}
    assert len(folders) == 3 and len(names) == 3   # a folder by the reference's code digest, a name by its own


# a process that sweeps exp on a small sample with the libraries its lines name, recording what numba compiles
_SWEEP_CODE = ("import sys\n"
               "import bendtorch.impl.kernels.warm  # records the compilations (BENDTORCH_WARM_RECORD)\n"
               "from bendtorch.reports.sweep import sweep_patterns\n"
               "from bendtorch.reports.sweep.patterns import sample_patterns\n")


def _compiled_by(tmp_path: Path, k: int, code: str, **extra: str) -> tuple[list[str], str]:
    """Run _SWEEP_CODE + code in a fresh process on the cache tmp_path/cache, with the environment variables
    `extra` set: the qualified names numba compiled, in order, and what the process printed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "BENDTORCH_WARM_RECORD": str(tmp_path / f"events{k}.json"), **extra}
    r = subprocess.run([sys.executable, "-c", _SWEEP_CODE + code], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return [q for _, q, _ in json.loads((tmp_path / f"events{k}.json").read_text())["every"]], r.stdout


def test_the_checker_compiled_for_one_libm_choice_serves_the_other(tmp_path: Path) -> None:
    # the checker's loops (statistics pass, reference pass) call none of impl's libm and are cached apart from it
    # (reports.sweep.bound.njit_shared): what a BENDTORCH_LIBM=clib worker compiled, a portable process loads, while
    # the column of impl's own exp, which does call the libm, is compiled for each choice
    sweep = "sweep_patterns('exp', [{!r}], sample_patterns(256), workers=1, progress=False)\n"
    clib = set(_compiled_by(tmp_path, 0, sweep.format("impl_clib"), BENDTORCH_LIBM="clib")[0])
    portable = set(_compiled_by(tmp_path, 1, sweep.format("impl"), BENDTORCH_LIBM="portable")[0])
    checker = {"stats_pass", "_ref_pass_bendtorch_oracle_functions_ref_exp"}
    assert checker <= clib
    assert not checker & portable, f"the portable process compiled the checker again: {sorted(checker & portable)}"
    assert "_map1_bendtorch_impl_kernels_portable_exp_exp32" in portable
    assert {f.name for f in (tmp_path / "cache").iterdir() if f.name.startswith("numba-checker-")}


def test_a_second_sweep_process_loads_the_reference_pass_from_the_cache(tmp_path: Path) -> None:
    # the passes bound to a reference or a library's function are cached on disk (compiled once, not once per
    # process): the second process compiles nothing; torch is not imported for libraries that do not use it, and
    # runs on one thread once one that does has imported it (where a range splits moves which numbers its scalar
    # tail computes)
    code = ("sweep_patterns('exp', ['numpy', 'impl'], sample_patterns(256), workers=1, progress=False)\n"
            "print('torch' in sys.modules)\n"
            "sweep_patterns('exp', ['torch'], sample_patterns(256), workers=1, progress=False)\n"
            "print(sys.modules['torch'].get_num_threads())\n")
    runs = []
    for k in range(2):
        names, out = _compiled_by(tmp_path, k, code)
        runs.append(names)
        assert out.split()[-2:] == ["False", "1"], "torch imported for numpy and impl, or run on 2 threads"
    assert "_ref_pass_bendtorch_oracle_functions_ref_exp" in runs[0]
    assert "_map1_bendtorch_impl_kernels_portable_exp_exp32" in runs[0]
    assert runs[1] == [], f"the second process compiled {runs[1]}"
