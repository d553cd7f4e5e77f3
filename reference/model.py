"""A small model trained in impl (impl.train), PyTorch float32 and the oracle (oracle.train) from the same initial
weights: Linear(i -> h), GELUErf, LayerNorm(h), Linear(h -> k), CrossEntropy, AdamW, one fixed batch.

    model_run(n=16, i=12, h=32, k=10, steps=50, seed=0) -> {"impl": losses, "torch": losses, "oracle": losses,
                                                            "params": {impl, torch, oracle final flat params}}

The three see the same float32 batch, labels and initial weights (drawn once; the oracle gets them widened,
exactly); PyTorch's AdamW is torch.optim.AdamW(foreach=False) over the same matrices (biases as 1 x o, as the seed
stores them), hyperparameters as the user writes them (Python floats).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.reference import trio

F32 = np.float32
HP = {"lr": 3e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01}


def build(L: Any, n: int, i: int, h: int, k: int) -> Any:
    """The model in one library (L = bendtorch.impl or bendtorch.oracle): Seq(Linear, Seq(GELUErf, Seq(LayerNorm,
    Linear)))."""
    return L.Seq(L.Linear(n, i, h), L.Seq(L.GELUErf(n, h), L.Seq(L.LayerNorm(n, h), L.Linear(n, h, k))))


def _init(rng: np.random.Generator, i: int, h: int, k: int) -> list[npt.NDArray[np.float32]]:
    """w1 (h x i), b1 (1 x h), LayerNorm g, b (1 x h), w2 (k x h), b2 (1 x k): dump order."""
    a1, a2 = 1 / np.sqrt(i), 1 / np.sqrt(h)
    return [rng.uniform(-a1, a1, (h, i)).astype(F32), rng.uniform(-a1, a1, (1, h)).astype(F32),
            (1 + 0.1 * rng.standard_normal((1, h))).astype(F32), (0.1 * rng.standard_normal((1, h))).astype(F32),
            rng.uniform(-a2, a2, (k, h)).astype(F32), rng.uniform(-a2, a2, (1, k)).astype(F32)]


def model_run(n: int = 16, i: int = 12, h: int = 32, k: int = 10, steps: int = 50, seed: int = 0) -> dict[str, Any]:
    import torch.nn.functional as tf

    from bendtorch import impl, oracle
    from bendtorch.reference.torch_ref import to_t, torch_mod

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, i)).astype(F32)
    t = rng.integers(0, k, n).astype(np.int64)
    ps = _init(rng, i, h, k)
    flat = np.concatenate([p.reshape(-1) for p in ps])
    hp = trio.AdamWHP(**HP)
    cfg = hp.impl_cfg()

    torch = torch_mod()
    tp = [torch.nn.Parameter(to_t(p)) for p in ps]

    def torch_loss(xt: Any, tt: Any) -> Any:
        w1, b1, g, b, w2, b2 = tp
        z = tf.linear(xt, w1, b1.reshape(-1))
        z = tf.gelu(z)
        z = tf.layer_norm(z, (h,), g.reshape(-1), b.reshape(-1), 1e-5)
        z = tf.linear(z, w2, b2.reshape(-1))
        return tf.cross_entropy(z, tt)

    xt, tt = to_t(x), to_t(t)
    runs: dict[str, trio.Run] = {
        "impl": trio.layer_run(impl, build(impl, n, i, h, k), impl.CrossEntropy(n, k), cfg, flat),
        "oracle": trio.layer_run(oracle, build(oracle, n, i, h, k), oracle.CrossEntropy(n, k), cfg, flat),
        "torch": trio.TorchRun(tp, lambda _x, _y: torch_loss(xt, tt), hp.torch_opt(tp))}
    rec = trio.record(runs, [(x, t)] * steps, keep_params=False)
    out: dict[str, Any] = {lib: r.losses for lib, r in rec.items()}
    out["params"] = {lib: r.flat() for lib, r in runs.items()}
    return out


def summary(r: dict[str, Any]) -> dict[str, Any]:
    """The losses' largest relative distance to the oracle's over the run, and the final parameters' distance to
    the oracle's (normwise ulps and median element-wise ulps)."""
    from bendtorch.oracle.ulp import normwise, ulp_error
    lo = np.array(r["oracle"])
    out: dict[str, Any] = {"steps": len(lo), "oracle_loss_first": lo[0], "oracle_loss_last": lo[-1]}
    for lib in ("impl", "torch"):
        la = np.array(r[lib])
        out[f"{lib}_loss_last"] = la[-1]
        out[f"{lib}_loss_rel_max"] = float(np.max(np.abs(la - lo) / np.abs(lo)))
        out[f"{lib}_loss_ulp_max"] = float(np.max(ulp_error(la.astype(F32), lo)))
        out[f"{lib}_param_norm_ulp"] = normwise(r["params"][lib], r["params"]["oracle"])
        out[f"{lib}_param_median_ulp"] = float(np.median(ulp_error(r["params"][lib].astype(F32),
                                                                   r["params"]["oracle"])))
    return out
