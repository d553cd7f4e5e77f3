"""The erf function of the exhaustive checker (bendtorch.reports.sweep, an ordinary record of records/functions.py):
its exact reference on the erf's special patterns and hard cases, glibc's erf under it, the compiled ulp error it
counts with (oracle/ulp.py), the port of the erf inside PyTorch's GELU (reference/torch_erf.py), the sample mode with
the seed's claims, `bendtorch erf-sweep` as a name for `bendtorch sweep erf`, and a sweep killed by SIGKILL and
resumed giving the same figures as one run straight through."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import mpmath
import numba
import numpy as np
import pytest

from bendtorch.oracle.functions import ref_erf
from bendtorch.oracle.ulp import ulp32, ulp32_1, ulp_error, ulp_error1
from bendtorch.records.functions import ERF_PIECES
from bendtorch.reports import sweep as S
from bendtorch.reports.sweep import kernels as K
from bendtorch.reports.sweep.api import default_libraries
from bendtorch.reports.sweep.chunkpass import round32_mp
from tests.bitcheck import without_run_details
from tests.test_sweep import _reference

ROOT = Path(__file__).resolve().parent.parent


def _f32(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def _exact_round32(x: float, prec: int = 400) -> np.float32:
    """erf(x) rounded to float32 by brute force: mpmath at 400 bits, the nearest of three float32 candidates."""
    with mpmath.workprec(prec):
        y = mpmath.erf(mpmath.mpf(x))
        c = np.float32(float(y))
        cands = [np.nextafter(c, np.float32(-2)), c, np.nextafter(c, np.float32(2))]
        return min(cands, key=lambda z: abs(mpmath.mpf(float(z)) - y))


@pytest.fixture
def keep_threads() -> Iterator[None]:
    """A sweep run in this process sets numba and torch to one thread (its worker's setting): put them back."""
    import torch

    old = numba.get_num_threads(), torch.get_num_threads()
    yield
    numba.set_num_threads(old[0])
    torch.set_num_threads(old[1])


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


def test_reference_is_correctly_rounded_on_the_special_patterns() -> None:
    # the erf function's float64 + mpmath reference against brute-force mpmath at 400 bits, on spread inputs and every
    # special pattern of the sample mode (impl's piece boundaries and their neighbours included), both signs
    rng = np.random.default_rng(1)
    bits = np.concatenate([rng.integers(0, 0x7F800000, 300, dtype=np.int64).astype(np.uint32),
                           S.special_patterns()])
    xs = bits.view(np.float32)
    xs = np.concatenate([xs, -xs])
    for x, c in zip(xs, _reference("erf", xs)):
        if math.isnan(float(x)):
            assert math.isnan(float(c))
        elif math.isinf(float(x)):
            assert c == np.sign(x)
        else:
            assert c == _exact_round32(float(x)), x


def test_hard_cases_are_flagged_and_decided() -> None:
    # two inputs within 2^-46 relative of a float32 midpoint (found by a range sweep over [0x3f000000, 0x3f400000))
    bits = np.array([0x3F043A75, 0x3F22767A], dtype=np.uint32)
    n = bits.size
    y64, c32 = np.empty(2 * n), np.empty(2 * n, np.float32)
    hard, scale = np.empty(2 * n, dtype=np.int64), np.empty(2 * n)
    # erf is odd: the negatives mirror the positives and are not counted again
    assert K.ref_pass(ref_erf, bits, K.ODD, y64, c32, hard, scale) == 2 and list(hard[:2]) == [0, 1]
    for k, b in enumerate(bits):
        x = _f32(int(b))
        r, _ = round32_mp(mpmath.erf, x, float(scale[k]))
        assert r == _exact_round32(x)
        # and really close to the boundary: the midpoint on the exact value's side is within the margin
        with mpmath.workprec(200):
            y = mpmath.erf(mpmath.mpf(x))
            lo, hi = sorted([r, np.nextafter(r, np.float32(2) if y > mpmath.mpf(float(r)) else np.float32(-2))])
            m = (mpmath.mpf(float(lo)) + mpmath.mpf(float(hi))) / 2
            assert abs(y - m) <= 2 * K.REL_MARGIN * y


def test_numba_math_erf_is_the_c_librarys() -> None:
    # the erf function's float64 reference (oracle.functions.ref_erf) is numba's math.erf, which must be the C
    # library's (glibc's) erf
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.erf.restype = ctypes.c_double
    libm.erf.argtypes = [ctypes.c_double]
    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.standard_normal(3000) * 2, rng.uniform(-1e-5, 1e-5, 500), [0.0, -0.0, 6.0, 1e-300]])
    got = np.array([ref_erf(float(x))[0] for x in xs])
    want = np.array([libm.erf(float(x)) for x in xs])
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
def test_torch_gelu_port_is_bit_exact() -> None:
    # reference/torch_erf.py's GELU against torch's ATen gelu (oneDNN disabled) bit for bit: the evidence that its
    # erf_as (the erf function's torch_gelu_erf_aten library) is the erf inside that GELU
    import torch

    from bendtorch.reference.torch_erf import gelu_port_np, torch_gelu

    rng = np.random.default_rng(2)
    x = np.concatenate([rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        rng.uniform(-8, 8, 1 << 16).astype(np.float32),
                        np.linspace(-1e-3, 1e-3, 4096, dtype=np.float32)])
    with torch.backends.mkldnn.flags(enabled=False):
        t = torch_gelu(x)
    p = gelu_port_np(x)
    same = (t.view(np.uint32) == p.view(np.uint32)) | (np.isnan(t) & np.isnan(p))
    assert same.all(), x[~same][:5]


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
def test_sample_mode_and_the_seeds_claims(tmp_path: Path, keep_threads: None) -> None:
    rep = S.sample("erf", 4000, tmp_path)
    assert json.loads((tmp_path / "erf" / "sweep_sample.json").read_text())["libraries"].keys() == \
        rep["libraries"].keys() == set(default_libraries("erf"))
    imp = rep["libraries"]["impl"]
    assert imp["nan_in_nan_out"] and imp["odd_symmetric"] and imp["specials_right"] and imp["nan_inputs"] > 0
    assert set(imp["per_piece"]) == {f"{p} {s}" for p, s in enumerate(ERF_PIECES)}
    # the seed claims at most 0.93 ulp and at most one step from the correctly rounded value (main.bend 1119);
    # the fraction correctly rounded (97.1%) is a figure of all 2^32 inputs, not of this sample
    claims = imp["claims"]
    assert claims["max_ulp_at_most"]["holds"] and claims["within_one_ulp_fraction"]["holds"]
    assert claims["nan_in_nan_out"]["holds"] and imp["max_ulp"] <= 0.93
    assert rep["libraries"]["torch"]["max_ulp"] < 1.0  # torch.erf is faithful here (all 2^32 inputs: max ~0.99)



# 512 small chunks of four libraries: a wide window to kill the sweep in
LO, HI, CHUNK = 0x3F000000, 0x3F000000 + (1 << 20), 1 << 11
LIBS = ["impl", "torch", "torch_gelu_erf_aten", "clib"]


@pytest.mark.filterwarnings("ignore:TF32 acceleration")
def test_range_killed_and_resumed_gives_the_same_result(tmp_path: Path, keep_threads: None) -> None:
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    want = S.sweep("erf", LIBS, straight, lo=LO, hi=HI, chunk=CHUNK, workers=1, plot=False, progress=False)
    assert want["libraries"]["impl"]["finite_inputs"] == 2 * (HI - LO)

    cmd = [sys.executable, "-m", "bendtorch.cli", "sweep", "erf", "--lo", hex(LO), "--hi", hex(HI), "--chunk",
           str(CHUNK), "--workers", "1", "--no-plots", "--quiet", "--out", str(resumed)]
    cmd += [a for lib in LIBS for a in ("--lib", lib)]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    chunks = resumed / "erf" / "chunks"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if chunks.exists() and len(list(chunks.glob("*/chunk_*.npz"))) >= 3:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_done = len(list(chunks.glob("*/chunk_*.npz")))
    assert 3 <= n_done < len(LIBS) * (HI - LO) // CHUNK  # killed part way
    assert not list((resumed / "erf").glob("sweep_*.json"))
    got = S.sweep("erf", LIBS, resumed, lo=LO, hi=HI, chunk=CHUNK, workers=1, plot=False, progress=False)
    assert without_run_details(got) == without_run_details(want)


def test_erf_sweep_is_a_name_for_sweep_erf(tmp_path: Path, keep_threads: None) -> None:
    from bendtorch.cli import main

    args = ["--sample", "64", "--lib", "impl", "--workers", "1", "--no-plots", "--quiet", "--out"]
    assert main(["erf-sweep", *args, str(tmp_path / "a")]) == 0
    assert main(["sweep", "erf", *args, str(tmp_path / "b")]) == 0
    a, b = (json.loads((tmp_path / d / "erf" / "sweep_sample.json").read_text()) for d in "ab")
    assert without_run_details(a) == without_run_details(b) and a["libraries"]["impl"]["claims"]
