"""The erf sweep (reports/erf_sweep.py), its exact reference (oracle/erf.py), the compiled ulp error (oracle/ulp.py)
and the port of the erf inside PyTorch's GELU (reports/torch_erf.py): sample mode, a small range, and a sweep killed
and resumed giving the same figures as one run straight through."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest

from bendtorch.oracle.erf import REL_MARGIN, erf_cr32, ref_pass, round32_mp
from bendtorch.oracle.ulp import ulp32, ulp32_1, ulp_error, ulp_error1
from bendtorch.reports import erf_sweep as S

ROOT = Path(__file__).resolve().parent.parent


def _f32(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def _exact_round32(x: float, prec: int = 400) -> np.float32:
    """erf(x) rounded to float32 by brute force: mpmath at 400 bits, the nearest of three float32 candidates."""
    with mpmath.workprec(prec):
        y = mpmath.erf(mpmath.mpf(x))
        c = np.float32(float(y))
        cands = [np.nextafter(c, np.float32(-2)), c, np.nextafter(c, np.float32(2))]
        return min(cands, key=lambda z: abs(mpmath.mpf(float(z)) - y))


def test_compiled_ulp_error_is_the_numpy_definition() -> None:
    rng = np.random.default_rng(0)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        x = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)
        e = x * (1 + rng.standard_normal(x.size) * 1e-7)
    sx = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 2.0**-126, 2.0**-127, 1.0, 3.0, np.nan])
    se = np.array([np.nan, 0.0, np.inf, np.inf, np.nan, 0.0, 2.0**-126, 2.0**-126, 1 - 1e-17, -np.inf, 1.0])
    x, e = np.concatenate([x, sx]), np.concatenate([e, se])
    want = ulp_error(x, e)
    got = np.array([ulp_error1(a, b) for a, b in zip(x, e)])
    assert np.array_equal(want, got)  # the same numbers, specials included
    assert np.array_equal(ulp32(e), np.array([ulp32_1(b) for b in e]))


def test_reference_is_correctly_rounded() -> None:
    # the float64 + mpmath reference against brute-force mpmath at 400 bits, on spread and special inputs
    rng = np.random.default_rng(1)
    bits = np.concatenate([rng.integers(0, 0x7F800000, 300, dtype=np.int64).astype(np.uint32),
                           S.special_patterns()])
    xs = bits.view(np.float32)
    xs = np.concatenate([xs, -xs])
    cr, y64, _ = erf_cr32(xs)
    for x, c in zip(xs, cr):
        if math.isnan(float(x)):
            assert math.isnan(float(c))
        elif math.isinf(float(x)):
            assert c == np.sign(x)
        else:
            assert c == _exact_round32(float(x)), x


def test_hard_cases_are_flagged_and_decided() -> None:
    # two inputs the range sweep [0x3f000000, 0x3f400000) found within 2^-46 relative of a float32 midpoint
    bits = np.array([0x3F043A75, 0x3F22767A], dtype=np.uint32)
    y64 = np.empty(2)
    c32 = np.empty(2, dtype=np.float32)
    hard = np.empty(2, dtype=np.bool_)
    assert ref_pass(bits, y64, c32, hard) == 2 and hard.all()
    for b in bits:
        x = float(_f32(int(b)))
        r, prec = round32_mp(x)
        assert r == _exact_round32(x) and prec >= 96
        # and really close to the boundary: the midpoint on the float64 value's side is within the margin
        with mpmath.workprec(200):
            y = mpmath.erf(mpmath.mpf(x))
            lo, hi = sorted([r, np.nextafter(r, np.float32(2) if y > mpmath.mpf(float(r)) else np.float32(-2))])
            m = (mpmath.mpf(float(lo)) + mpmath.mpf(float(hi))) / 2
            assert abs(y - m) <= 2 * REL_MARGIN * y


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
def test_torch_gelu_port_is_bit_exact() -> None:
    # reports/torch_erf.py's GELU against torch's ATen gelu (oneDNN disabled) bit for bit: the evidence that its
    # erf_as is the erf inside that GELU
    import torch

    from bendtorch.reports.torch_erf import gelu_port_np, torch_gelu

    rng = np.random.default_rng(2)
    x = np.concatenate([rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        rng.uniform(-8, 8, 1 << 16).astype(np.float32),
                        np.linspace(-1e-3, 1e-3, 4096, dtype=np.float32)])
    with torch.backends.mkldnn.flags(enabled=False):
        t = torch_gelu(x)
    p = gelu_port_np(x)
    same = (t.view(np.uint32) == p.view(np.uint32)) | (np.isnan(t) & np.isnan(p))
    assert same.all(), x[~same][:5]


def _run(args: list[str]) -> dict[str, Any]:
    assert S.main(args) == 0
    out = Path(args[args.index("--out") + 1])
    d: dict[str, Any] = json.loads((out / "erf_sweep.json").read_text())
    return d


def test_sample_mode(tmp_path: Path) -> None:
    rep = _run(["--sample", "4000", "--out", str(tmp_path)])
    for key in ("inputs", "finite_inputs", "max_ulp", "correctly_rounded_fraction", "within_one_ulp_fraction",
                "hard_cases", "nan_in_nan_out", "odd_symmetric", "seconds"):
        assert key in rep, key
    for name in S.FUNCS:
        f = rep["functions"][name]
        assert set(f) >= {"inputs", "finite_inputs", "max_ulp", "correctly_rounded_fraction",
                          "within_one_ulp_fraction", "nan_in_nan_out", "per_piece"}
    imp = rep["functions"]["impl"]
    assert imp["nan_in_nan_out"] and imp["odd_symmetric"] and imp["infinities_ok"]
    # the seed claims at most 0.93 ulp and at most one step from the correctly rounded value (main.bend 1119)
    assert imp["max_ulp"] <= 0.93 and imp["within_one_ulp_fraction"] == 1.0
    assert rep["functions"]["torch_erf"]["max_ulp"] < 1.0  # torch.erf is faithful here (measured max ~0.71)
    assert rep["gelu_port_check"]["port_vs_torch_aten_gelu_mismatches"] == 0
    assert rep["nan_inputs"] > 0 and rep["finite_inputs"] + rep["nan_inputs"] + 2 <= rep["inputs"]
    for png in ("erf_max_ulp_vs_x.png", "erf_ulp_histogram.png", "erf_per_piece.png"):
        assert (tmp_path / png).stat().st_size > 1000


def _strip(d: Any) -> Any:
    """The report without its timings and command line (everything that must not depend on interruptions)."""
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items() if "seconds" not in k and k not in ("command", "machine")}
    if isinstance(d, list):
        return [_strip(v) for v in d]
    return d


LO, HI, CHUNK = 0x3F000000, 0x3F000000 + (1 << 19), 1 << 11  # 256 small chunks: a wide window to kill it in


def test_range_killed_and_resumed_gives_the_same_result(tmp_path: Path) -> None:
    straight = tmp_path / "straight"
    resumed = tmp_path / "resumed"
    common = ["--lo", hex(LO), "--hi", hex(HI), "--chunk", str(CHUNK), "--workers", "1", "--no-plots", "--quiet"]
    want = _run(common + ["--out", str(straight)])
    assert want["functions"]["impl"]["finite_inputs"] == 2 * (HI - LO)

    cmd = [sys.executable, "-m", "bendtorch.reports.erf_sweep", "--out", str(resumed)] + common
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    chunks = resumed / "chunks"
    deadline = time.time() + 120
    n_done = 0
    while time.time() < deadline and proc.poll() is None:
        n_done = len(list(chunks.glob("chunk_*.npz"))) if chunks.exists() else 0
        if n_done >= 3:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_done = len(list(chunks.glob("chunk_*.npz")))
    assert 3 <= n_done < (HI - LO) // CHUNK  # killed part way
    assert not (resumed / "erf_sweep.json").exists()
    got = _run(common + ["--out", str(resumed)])
    assert _strip(got) == _strip(want)


def test_range_refuses_other_chunks(tmp_path: Path) -> None:
    _run(["--lo", hex(LO), "--hi", hex(LO + 4096), "--chunk", "1024", "--workers", "1", "--no-plots", "--quiet",
          "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        S.main(["--lo", hex(LO), "--hi", hex(LO + 4096), "--chunk", "2048", "--workers", "1", "--no-plots",
                "--quiet", "--out", str(tmp_path)])


def test_numba_math_erf_is_the_c_librarys() -> None:
    # oracle/erf.py's float64 reference is numba's math.erf, which must be the C library's (glibc's) erf
    import ctypes
    import ctypes.util

    import numba

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.erf.restype = ctypes.c_double
    libm.erf.argtypes = [ctypes.c_double]

    @numba.njit
    def erf_all(xs: np.ndarray) -> np.ndarray:
        out = np.empty_like(xs)
        for i in range(xs.size):
            out[i] = math.erf(xs[i])
        return out

    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.standard_normal(3000) * 2, rng.uniform(-1e-5, 1e-5, 500), [0.0, -0.0, 6.0, 1e-300]])
    got = erf_all(xs)
    want = np.array([libm.erf(float(x)) for x in xs])
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
