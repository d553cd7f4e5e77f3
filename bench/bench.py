"""`bendtorch bench`: one training step (forward, cross-entropy, backward, AdamW) of impl's Llama and of the same
Llama in PyTorch (reference/torch_llama.py, float32), timed in the same process: 2 warm-up steps, then the median of
--repeats (>= 5) steps, for `tiny` (batch 4 x 16) and `smol` (batch 1 x 128, all 30 layers).

Peak memory: the process's resident high-water mark (VmHWM) over each library's training steps (warm-ups and timed
steps), reset once the library's model and optimizer are built and the other library's objects are freed (Linux's
/proc/self/clear_refs "5"): each figure holds the model, its gradients, optimizer state and everything a step
allocates, plus what both share (the interpreter, numpy, numba, torch). Before issue 8 the reset came before the
build, and impl's figure also held a copy of the initial weights kept for PyTorch (540 MB for smol). Where VmHWM is
not available, ru_maxrss (then cumulative: the second library's figure includes the first's).

Also measured (issue 8's table): the time to the first training step of `tiny` in a fresh process, with a cold
numba cache (an empty NUMBA_CACHE_DIR, so every kernel compiles) and then warm (the same directory again), as the
wall time of the whole process (imports, compile or cache load, build, one step) and the time from the start of the
build to the end of the first step; the full erf sweep's wall time, read from reports/results/erf/erf_sweep.json
when it exists (the sweep is not rerun); with --laws, the wall time of `bendtorch laws --profile ci` (a subprocess).

    bendtorch bench                       both models
    bendtorch bench --models tiny --json bench.json
    bendtorch bench --laws --state-bytes --json reports/results/bench.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import platform
import resource
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", nargs="+", choices=("tiny", "smol"), default=["tiny", "smol"],
                   help="which models (default: tiny smol)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed steps after the 2 warm-ups (>= 5; default 25 for tiny, whose steps take "
                        "milliseconds and meet the noise of a shared machine, 5 for smol)")
    p.add_argument("--layers", type=int, default=None, help="override smol's layer count (default: all 30)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for both libraries (numba and torch; default: each library's default)")
    p.add_argument("--json", type=pathlib.Path, default=None, metavar="FILE", help="write the figures as JSON")
    p.add_argument("--laws", action="store_true",
                   help="also time `bendtorch laws --profile ci` in a subprocess (minutes)")
    p.add_argument("--no-startup", action="store_true", help="skip the fresh-process first-step timings")
    p.add_argument("--state-bytes", action="store_true",
                   help="also measure the optimizer state's bytes after one smol step: F32 AdamW against packed "
                        "BF16 moments (bench/state_bytes.py)")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_mib() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _time(step: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    for _ in range(2):
        step()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


def bench_model(name: str, repeats: int, layers: int | None) -> dict[str, Any]:
    import torch

    from bendtorch import impl
    from bendtorch.train_cmd import complement
    from bendtorch.impl import llama, optim
    from bendtorch.impl.train import train_new, train_step
    from bendtorch.reference.torch_llama import TorchLlama

    changes = {"layers": layers} if (layers is not None and name == "smol") else {}
    cfg = llama.config(name, **changes)
    b = 4 if name == "tiny" else 1
    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 0.01
    ocfg = optim.CAdamW(np.float32(lr), np.float32(b1), np.float32(b2), np.float32(eps), np.float32(wd),
                        np.float32(complement(b1)), np.float32(complement(b2)))
    rng = np.random.default_rng(0)
    x, y = llama.batch_at(rng.integers(0, cfg.vocab, size=10 * cfg.t), b, cfg.t, rng)
    out: dict[str, Any] = {"model": name, "batch": b, "t": cfg.t, "layers": cfg.layers, "repeats": repeats}

    # impl
    model = llama.build(impl, cfg, b)
    p = model.init(0)
    tr = [train_new(model.layer, ocfg, p)]
    out["parameters"] = model.layer.count()

    def impl_step() -> None:
        tr[0] = train_step(model.layer, model.loss, ocfg, tr[0], x, y)

    gc.collect()
    _reset_peak()
    med, ts = _time(impl_step, repeats)
    out["impl"] = {"median_s": med, "times_s": ts, "peak_rss_mib": _peak_mib(), "loss": float(tr[0].loss)}
    del tr, p

    # PyTorch, from the same initial weights (initialised again from the same seed, so that impl's peak does not
    # include a copy of them kept for PyTorch, nor PyTorch's the impl model)
    weights = llama.named(model.names, model.init(0))
    del model
    tm = TorchLlama(cfg, weights, torch.float32)
    del weights
    opt = torch.optim.AdamW(tm.params(), lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    last = [0.0]

    def torch_step() -> None:
        opt.zero_grad(set_to_none=False)
        loss, _ = tm.loss(x, y, b)
        loss.backward()
        opt.step()
        last[0] = float(loss.detach())

    gc.collect()
    _reset_peak()
    med, ts = _time(torch_step, repeats)
    out["torch"] = {"median_s": med, "times_s": ts, "peak_rss_mib": _peak_mib(), "loss": last[0],
                    "threads": torch.get_num_threads()}
    out["ratio_impl_over_torch"] = out["impl"]["median_s"] / out["torch"]["median_s"]
    out["ratio_peak_rss_impl_over_torch"] = out["impl"]["peak_rss_mib"] / out["torch"]["peak_rss_mib"]
    out["tokens_per_step"] = b * cfg.t
    del tm, opt
    return out


_ROOT = pathlib.Path(__file__).resolve().parent.parent

# a fresh process: imports, one tiny training step; prints the seconds from the build's start to the step's end
_FIRST_STEP = """
import time, numpy as np
from bendtorch import impl
from bendtorch.impl import llama, optim
from bendtorch.impl.train import train_new, train_step
t0 = time.perf_counter()
cfg = llama.config("tiny")
ocfg = optim.CAdamW(*(np.float32(v) for v in (1e-3, 0.9, 0.999, 1e-8, 0.01, 0.1, 0.001)))
rng = np.random.default_rng(0)
x, y = llama.batch_at(rng.integers(0, cfg.vocab, size=10 * cfg.t), 4, cfg.t, rng)
model = llama.build(impl, cfg, 4)
tr = train_step(model.layer, model.loss, ocfg, train_new(model.layer, ocfg, model.init(0)), x, y)
print(time.perf_counter() - t0)
"""


def first_step_times() -> dict[str, Any]:
    """Wall time of a fresh process that runs one tiny training step, with a cold numba cache (an empty
    NUMBA_CACHE_DIR: every kernel compiles) and warm (the same directory, now filled). The user's own cache
    (impl/**/__pycache__) is neither read nor deleted, so other processes using it are not disturbed."""
    import subprocess
    import tempfile

    out: dict[str, Any] = {"model": "tiny", "batch": 4}
    with tempfile.TemporaryDirectory(prefix="bench-numba-cache-") as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        for kind in ("cold", "warm"):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", _FIRST_STEP], cwd=_ROOT, env=env, capture_output=True,
                               text=True, check=True)
            out[f"{kind}_cache_process_s"] = time.perf_counter() - t0
            out[f"{kind}_cache_build_to_first_step_s"] = float(r.stdout.strip().splitlines()[-1])
    return out


def erf_sweep_time() -> dict[str, Any] | None:
    """The full erf sweep's wall time, from its saved result (not rerun)."""
    f = _ROOT / "reports" / "results" / "erf" / "erf_sweep.json"
    if not f.exists():
        return None
    d = json.loads(f.read_text())
    return {"file": str(f.relative_to(_ROOT)), "mode": d.get("mode"), "inputs": d.get("inputs"),
            "seconds": d.get("seconds"), "seconds_total_with_report": d.get("seconds_total_with_report")}


def laws_ci_time() -> dict[str, Any]:
    """Wall time of `bendtorch laws --profile ci` in a subprocess."""
    import subprocess

    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "bendtorch.cli", "laws", "--profile", "ci"], cwd=_ROOT,
                       capture_output=True, text=True)
    return {"seconds": time.perf_counter() - t0, "returncode": r.returncode,
            "tail": r.stdout.strip().splitlines()[-3:]}


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 8's table: each goal, the figure measured in this run, and whether it is met."""
    rows: list[dict[str, Any]] = []
    for r in res["results"]:
        if r["model"] == "tiny":
            rows.append({"work": "tiny step", "goal": "impl/torch time <= 1.0", "value": r["ratio_impl_over_torch"],
                         "met": r["ratio_impl_over_torch"] <= 1.0})
        elif r["model"] == "smol":
            rows.append({"work": f"smol step ({r['layers']} layers)", "goal": "impl/torch time <= 2.0",
                         "value": r["ratio_impl_over_torch"], "met": r["ratio_impl_over_torch"] <= 2.0})
            rows.append({"work": f"smol peak RSS ({r['layers']} layers)", "goal": "impl/torch peak RSS <= 1.0",
                         "value": r["ratio_peak_rss_impl_over_torch"],
                         "met": r["ratio_peak_rss_impl_over_torch"] <= 1.0})
    if res.get("erf_sweep") and res["erf_sweep"].get("seconds") is not None:
        v = res["erf_sweep"]["seconds"]
        rows.append({"work": "full erf sweep (saved run)", "goal": "wall < 180 s", "value": v, "met": v < 180})
    if res.get("laws_ci"):
        v = res["laws_ci"]["seconds"]
        rows.append({"work": "ci law profile", "goal": "wall < 300 s", "value": v,
                     "met": v < 300 and res["laws_ci"]["returncode"] == 0})
    return rows


def run(a: argparse.Namespace) -> int:
    if a.repeats is not None and a.repeats < 5:
        print("bendtorch bench: error: --repeats must be >= 5", file=sys.stderr)
        return 2
    import numba
    import torch

    if a.threads is not None:
        if a.threads < 1:
            print("bendtorch bench: error: --threads must be >= 1", file=sys.stderr)
            return 2
        numba.set_num_threads(min(a.threads, numba.config.NUMBA_NUM_THREADS))
        torch.set_num_threads(a.threads)
    res: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(),
                    "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                    "numpy": np.__version__, "numba": numba.__version__},
        "load_average_at_start": list(os.getloadavg()),
        "peak_rss_kind": "VmHWM per library" if _reset_peak() else "ru_maxrss (cumulative)",
        "results": []}
    print(f"{'model':6} {'impl s/step':>12} {'torch s/step':>13} {'ratio':>7} {'impl MiB':>9} {'torch MiB':>10}")
    for name in a.models:
        reps = a.repeats if a.repeats is not None else (25 if name == "tiny" else 5)
        r = bench_model(name, reps, a.layers)
        res["results"].append(r)
        print(f"{name:6} {r['impl']['median_s']:12.4f} {r['torch']['median_s']:13.4f} "
              f"{r['ratio_impl_over_torch']:7.2f} {r['impl']['peak_rss_mib']:9.0f} {r['torch']['peak_rss_mib']:10.0f}",
              flush=True)
    print(f"(median of the timed steps (tiny 25, smol 5 unless --repeats) after 2 warm-ups: forward, cross-entropy, backward, AdamW; "
          f"peak RSS: {res['peak_rss_kind']})")
    if not a.no_startup:
        fs = first_step_times()
        res["first_step_fresh_process"] = fs
        print(f"first tiny step in a fresh process: cold cache {fs['cold_cache_process_s']:.1f} s "
              f"(build to step {fs['cold_cache_build_to_first_step_s']:.1f} s), warm cache "
              f"{fs['warm_cache_process_s']:.1f} s (build to step {fs['warm_cache_build_to_first_step_s']:.2f} s)",
              flush=True)
    res["erf_sweep"] = erf_sweep_time()
    if res["erf_sweep"] is not None:
        print(f"full erf sweep (saved run, {res['erf_sweep']['file']}): {res['erf_sweep']['seconds']:.0f} s")
    if a.laws:
        res["laws_ci"] = laws_ci_time()
        print(f"bendtorch laws --profile ci: {res['laws_ci']['seconds']:.0f} s (exit {res['laws_ci']['returncode']})",
              flush=True)
    if a.state_bytes:
        from bendtorch.bench.state_bytes import measure
        sb = measure("smol", a.layers)
        res["optimizer_state_bytes"] = sb
        print(f"optimizer state after one smol step: F32 AdamW {sb['adamw_f32']:,} bytes, packed BF16 m "
              f"{sb['adamw_bf16_m']:,} ({sb['bf16_m_over_f32']:.3f}x), packed BF16 m and v {sb['adamw_bf16_mv']:,} "
              f"({sb['bf16_mv_over_f32']:.3f}x)", flush=True)
    res["load_average_at_end"] = list(os.getloadavg())
    res["goals"] = goals(res)
    for g in res["goals"]:
        print(f"  {g['work']:28} {g['goal']:28} {g['value']:9.3f}  {'met' if g['met'] else 'NOT met'}")
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=1))
        print(f"wrote {a.json}")
    return 0
