"""Pins the bits of whole training runs: the sha256 of the dump of a tiny Llama's parameters after 3 AdamW steps from
a fixed seed, and of a 2-layer smol's after 1 step at t = 32, with impl's portable exp, log, tanh, sin, cos, pow (the
default of impl.kernels.libm). Speed work must leave them unchanged; and since every function impl calls is its own
float32 code, they do not depend on the machine: the same bits under numba's generic CPU target and the host's, with
1 and 2 threads (checked in subprocesses)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bendtorch.impl import llama
from bendtorch.impl.train import train_step

TINY_3_STEPS = "37f00174c106198bd0f7a423b9a82cfe5f541452b958327b863e03dd5d8a2307"
SMOL_2L_T32_1_STEP = "d11c203c7f753b4c8f616abd0b2e81cc8cddcddfba02f08f95ea69a9165a0d18"
# The same runs with the C library's functions (BENDTORCH_LIBM=clib) on glibc 2.36, x86-64: the pins from before impl
# had its own functions. They still hold, so every change to the code since then has kept the bits, except the
# functions themselves; on another C library they differ (which is why impl has its own).
CLIB_GLIBC = "2.36"
CLIB_TINY_3_STEPS = "73922818d81a872ab726f773e0f1f83660876ad1bd6cf8634bd0239f239d225e"
CLIB_SMOL_2L_T32_1_STEP = "b8619f157722531ae52bbf3ad828110fde4724aead93fe5f77414accefb2a936"


def _run(name: str, steps: int, b: int, **changes: Any) -> str:
    r = llama.fixed_run(name, b, **changes)
    tr = r.train
    for _ in range(steps):
        tr = train_step(r.model.layer, r.model.loss, r.cfg, tr, r.x, r.y)
    dump = np.ascontiguousarray(r.model.layer.dump(tr.p), dtype=np.float32)
    return hashlib.sha256(dump.tobytes()).hexdigest()


ROOT = Path(__file__).resolve().parent.parent


def test_tiny_three_adamw_steps_keep_their_bits() -> None:
    assert _run("tiny", 3, 4) == TINY_3_STEPS


def test_smol_two_layers_one_step_keeps_its_bits() -> None:
    assert _run("smol", 1, 1, layers=2, t=32) == SMOL_2L_T32_1_STEP


_BITS_SCRIPT = """
import numba
from tests.test_speed_bits import _run
out = []
for threads in (1, 2):
    numba.set_num_threads(threads)
    out += [_run("tiny", 3, 4), _run("smol", 1, 1, layers=2, t=32)]
print(numba.config.CPU_NAME or "host", " ".join(out))
"""


def test_bits_do_not_depend_on_the_cpu_target_or_the_threads() -> None:
    # numba compiles for the host CPU (AVX-512 here) or for a generic x86-64 (no vector extensions beyond SSE2, no
    # FMA): impl's kernels and functions are float32 operations in a fixed order, so the bits must not change
    # the two processes run at once: each spends most of its time compiling, on one core
    procs = {cpu: subprocess.Popen([sys.executable, "-c", _BITS_SCRIPT], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   env=dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_NUM_THREADS="2",
                                            BENDTORCH_LIBM="portable"))
             for cpu in ("generic", "host")}
    got = {}
    for cpu, proc in procs.items():
        out, err = proc.communicate(timeout=3000)
        assert proc.returncode == 0, err[-2000:]
        name, *shas = out.split()
        assert name == cpu
        got[cpu] = shas
    want = [TINY_3_STEPS, SMOL_2L_T32_1_STEP] * 2
    assert got["generic"] == want, got
    assert got["host"] == want, got


def test_the_c_library_mode_keeps_the_earlier_pins() -> None:
    import platform
    lib, ver = platform.libc_ver()
    if (lib, ver, platform.machine()) != ("glibc", CLIB_GLIBC, "x86_64"):
        import pytest
        pytest.skip(f"not run: the C library pins are for glibc {CLIB_GLIBC} on x86-64, this is {lib} {ver} on "
                    f"{platform.machine()}")
    script = "from tests.test_speed_bits import _run; print(_run('tiny', 3, 4), _run('smol', 1, 1, layers=2, t=32))"
    env = dict(os.environ, BENDTORCH_LIBM="clib")
    p = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=3000)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == [CLIB_TINY_3_STEPS, CLIB_SMOL_2L_T32_1_STEP]


def test_every_matmul_driver_gives_the_plain_order_bits() -> None:
    """The serial driver (small products), the parallel one (MB x JT tasks) and the big-B one (all rows per task,
    the tied head's dX) each against mm_plain, bit for bit, on odd sizes (ragged blocks, tiles and row groups), with
    A read as it is or from its transpose's buffer and C written (or added to) as it is or transposed;
    and the products built on them (matmul_nt, matmul_tn_acc) on the same sizes."""
    from bendtorch.impl.bits import same_bits
    from bendtorch.impl.kernels import matmul as M

    rng = np.random.default_rng(8)
    for m, k, n in [(5, 37, 19), (37, 93, 1100), (9, (M.BIG_B // 257) + 11, 257)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c0 = rng.standard_normal((m, n), dtype=np.float32)
        want = M.mm_plain(a, b)
        assert same_bits(M.mm(a, b), want), (m, k, n)
        assert same_bits(M.mm_acc(a, b, c0.copy()), c0 + want), (m, k, n)
        a_t = np.ascontiguousarray(a.T)
        for drv in (M._mm, M._mm_serial):
            for mb, jt in [(M.MB, M.JT), (m, 64), (3, 16)]:
                for at in (False, True):
                    for ct in (False, True):
                        for acc in (False, True):
                            c = np.ascontiguousarray(c0.T) if ct else c0.copy()
                            drv(a_t if at else a, at, b, c, ct, M.KB, acc, mb, jt)
                            assert same_bits(c.T if ct else c, c0 + want if acc else want), \
                                (m, k, n, drv, mb, jt, at, ct, acc)
        # y = x·Wᵀ with x = a and W = bᵀ; g + dYᵀ·X with dY = aᵀ and X = b
        assert same_bits(M.matmul_nt(a, np.ascontiguousarray(b.T)), want), (m, k, n)
        assert same_bits(M.matmul_tn_acc(a_t, b, c0.copy()), c0 + want), (m, k, n)


def test_serial_twins_give_the_parallel_kernels_bits() -> None:
    """Each kernel wrapped by impl.kernels.serial.sized: its serial twin (small arrays) and the parallel kernel
    (big arrays) on the same inputs, with NaN, infinities and signed zeros mixed in, give the same bits in every
    output array and the same returned value."""
    from bendtorch.impl.kernels import elementwise as E
    from bendtorch.impl.kernels import losses as LS
    from bendtorch.impl.kernels import optim as O
    from bendtorch.impl.kernels import rope as R
    from bendtorch.impl.kernels import rows as RW

    rng = np.random.default_rng(9)
    f32 = np.float32

    def mat(r: int, c: int) -> Any:
        x = rng.standard_normal((r, c), dtype=np.float32) * f32(3)
        flat = x.reshape(-1)
        flat[:4] = [np.nan, np.inf, -0.0, 0.0]
        return x

    n, d = 37, 91
    x, dy, g = mat(n, d), mat(n, d), mat(1, d)
    pos = np.abs(mat(n, d)) + f32(0.5)
    lab = rng.integers(0, d + 2, size=n).astype(np.int64)
    cs, sn = R.rope_table(n, 4, f32(10000.0))
    cases: list[tuple[Any, tuple[Any, ...]]] = []
    for a in E.ACTS:
        cases.append((a.fwd_into, (x.reshape(-1), np.empty(n * d, np.float32))))
        cases.append((a.bwd_into, (dy.reshape(-1), x.reshape(-1), np.empty(n * d, np.float32))))
    cases += [
        (RW.softmax_fwd_into, (x, np.empty_like(x))),
        (RW.softmax_bwd_into, (pos, dy, np.empty_like(x))),
        (RW.logsoftmax_fwd_into, (x, np.empty_like(x))),
        (RW.logsoftmax_bwd_into, (x, dy, np.empty_like(x))),
        (RW.rms_fwd_into, (x, g, f32(1e-5), np.empty_like(x))),
        (RW.rms_bwd_into, (x, g, dy, f32(1e-5), np.empty_like(x), mat(1, d))),
        (RW.ln_fwd_into, (x, g, mat(1, d), f32(1e-5), np.empty_like(x))),
        (RW.ln_bwd_into, (x, g, dy, f32(1e-5), np.empty_like(x), mat(1, d), mat(1, d))),
        (O.sgd, (x.reshape(-1).copy(), dy.reshape(-1).copy(), f32(1e-3))),
        (O.momentum, (x.reshape(-1).copy(), dy.reshape(-1).copy(), mat(n, d).reshape(-1), f32(1e-3), f32(0.9))),
        (O.adam, (x.reshape(-1).copy(), dy.reshape(-1).copy(), mat(n, d).reshape(-1), pos.reshape(-1).copy(),
                  f32(1e-3), f32(0.1), f32(0.999), f32(0.001), f32(1e-8), f32(0.01), True, f32(1e-3), f32(0.03))),
        (LS.ce_into, (x, lab, np.empty_like(x))),
        (LS.mse_into, (x.reshape(-1), dy.reshape(-1), np.empty(n * d, np.float32))),
        (R.rope_apply, (mat(n, 16), cs, sn, n, 2, 4, True)),
        (R.rope_apply, (mat(n, 16), cs, sn, n, 2, 4, False)),
    ]
    for k, args in cases:
        outs = []
        for f in (k.serial, k.parallel):
            a2 = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
            r = f(*a2)
            outs.append(([a.view(np.uint32).tobytes() if a.dtype == np.float32 else a.tobytes()
                          for a in a2 if isinstance(a, np.ndarray)],
                         np.asarray(r, dtype=np.float32).view(np.uint32).tobytes() if r is not None else None))
        assert outs[0] == outs[1], k.__name__
