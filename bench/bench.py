"""`bendtorch bench`: one training step (forward, cross-entropy, backward, AdamW) of impl's Llama and of the same
Llama in PyTorch (reference/torch_llama.py, float32), timed in the same process: 2 warm-up steps, then the median of
--repeats (>= 5) steps, for `tiny` (batch 4 x 16) and `smol` (batch 1 x 128, all 30 layers).

Peak memory: the process's resident high-water mark (VmHWM) over each library's steps, reset before each library
(Linux's /proc/self/clear_refs "5"); where that is not available, ru_maxrss (then cumulative: the second library's
figure includes the first's).

    bendtorch bench                       both models
    bendtorch bench --models tiny --json bench.json
"""

from __future__ import annotations

import argparse
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

    import impl
    from bendtorch.train_cmd import complement
    from impl import llama, optim
    from impl.train import train_new, train_step
    from reference.torch_llama import TorchLlama

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
    _reset_peak()
    model = llama.build(impl, cfg, b)
    p = model.init(0)
    weights = {k: v.copy() for k, v in llama.named(model.names, p).items()}
    tr = [train_new(model.layer, ocfg, p)]
    out["parameters"] = model.layer.count()

    def impl_step() -> None:
        tr[0] = train_step(model.layer, model.loss, ocfg, tr[0], x, y)

    med, ts = _time(impl_step, repeats)
    out["impl"] = {"median_s": med, "times_s": ts, "peak_rss_mib": _peak_mib(), "loss": float(tr[0].loss)}
    del tr, model, p

    # PyTorch
    _reset_peak()
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

    med, ts = _time(torch_step, repeats)
    out["torch"] = {"median_s": med, "times_s": ts, "peak_rss_mib": _peak_mib(), "loss": last[0],
                    "threads": torch.get_num_threads()}
    out["ratio_impl_over_torch"] = out["impl"]["median_s"] / out["torch"]["median_s"]
    out["tokens_per_step"] = b * cfg.t
    del tm, opt
    return out


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
    if a.json is not None:
        a.json.write_text(json.dumps(res, indent=1))
        print(f"wrote {a.json}")
    return 0
