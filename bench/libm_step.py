"""The cost of impl's portable float32 functions: one training step (tiny, and a 2-layer smol) with
BENDTORCH_LIBM=portable against BENDTORCH_LIBM=clib, each in its own process, the two alternated over several rounds
so that a busy machine slows both alike (the ratio of the medians, and the median and range of the per-round ratios);
and each function alone (nanoseconds per call over 2^20 inputs; exp_array: per number of a whole array, apart and in
place as the row kernels call it), and cross-entropy over smol's 128 x 49,152 logits (milliseconds).

    bendtorch study libm_step [--rounds 3] [--repeats 10]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

_STEP = """
import json, statistics, time, numpy as np
from bendtorch.impl import llama
from bendtorch.impl.kernels import libm
from bendtorch.impl.train import train_step

out = {"mode": libm.MODE}
for name, b, changes in (("tiny", 4, {}), ("smol", 1, {"layers": 2})):
    r = llama.fixed_run(name, b, **changes)
    model, ocfg, tr, x, y = r.model, r.cfg, r.train, r.x, r.y
    for _ in range(2):
        tr = train_step(model.layer, model.loss, ocfg, tr, x, y)
    ts = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        tr = train_step(model.layer, model.loss, ocfg, tr, x, y)
        ts.append(time.perf_counter() - t0)
    out[name] = statistics.median(ts)
fx = np.random.default_rng(1).uniform(-20, 20, 1 << 20).astype(np.float32)
import numba

@numba.njit
def loop(f, xs):
    s = np.float32(0)
    for i in range(xs.size):
        s += f(xs[i])
    return s

for fname in ("exp32", "log32", "tanh32", "sin32", "cos32"):
    f = getattr(libm, fname)
    xs = np.abs(fx) + np.float32(1e-3) if fname == "log32" else fx
    loop(f, xs[:64])
    ts = []
    for _ in range(5):
        t0 = time.perf_counter(); loop(f, xs); ts.append(time.perf_counter() - t0)
    out[fname + "_ns"] = min(ts) / xs.size * 1e9
dst = np.empty_like(fx)
libm.exp_array(fx[:64], dst[:64])
ts = []
for _ in range(5):
    t0 = time.perf_counter(); libm.exp_array(fx, dst); ts.append(time.perf_counter() - t0)
out["exp_array_ns"] = min(ts) / fx.size * 1e9
ts = []
for _ in range(5):
    dst[:] = fx
    t0 = time.perf_counter(); libm.exp_array(dst, dst); ts.append(time.perf_counter() - t0)
out["exp_array_inplace_ns"] = min(ts) / fx.size * 1e9
from bendtorch.impl.kernels import losses
z = (np.random.default_rng(2).standard_normal((128, 49152)) * np.float32(0.5)).astype(np.float32)
lab = np.random.default_rng(3).integers(0, 49152, 128).astype(np.int64)
dz = np.empty_like(z)
losses.ce_into(z, lab, dz)
ts = []
for _ in range(REPEATS):
    t0 = time.perf_counter(); losses.ce_into(z, lab, dz); ts.append(time.perf_counter() - t0)
out["cross_entropy_ms"] = statistics.median(ts) * 1e3
print(json.dumps(out))
"""


def measure(rounds: int = 3, repeats: int = 10) -> dict[str, Any]:
    """Median step seconds and per-call nanoseconds per mode, over `rounds` alternated processes."""
    runs: dict[str, list[dict[str, Any]]] = {"portable": [], "clib": []}
    root = Path(__file__).resolve().parent.parent
    for _ in range(rounds):
        for mode in ("portable", "clib"):
            env = dict(os.environ, BENDTORCH_LIBM=mode)
            p = subprocess.run([sys.executable, "-c", _STEP.replace("REPEATS", str(repeats))], cwd=root, env=env,
                               capture_output=True, text=True, check=True)
            runs[mode].append(json.loads(p.stdout.strip().splitlines()[-1]))
    res: dict[str, Any] = {"rounds": rounds, "repeats": repeats, "cpus": os.cpu_count()}
    for mode, rs in runs.items():
        res[mode] = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "mode"}
    for k in ("tiny", "smol"):
        res[f"{k}_step_ratio_portable_over_clib"] = res["portable"][k] / res["clib"][k]
        per_round = [p[k] / c[k] for p, c in zip(runs["portable"], runs["clib"])]
        res[f"{k}_step_ratio_per_round"] = {"median": statistics.median(per_round), "min": min(per_round),
                                            "max": max(per_round)}
    return res


def text(r: dict[str, Any]) -> str:
    """The figures, as JSON."""
    return json.dumps(r, indent=1)
