"""Drift of float32 training from exact training (issue 3): `tiny` trained with AdamW for `steps` steps in impl
(float32), in PyTorch float32 (torch.optim.AdamW, foreach=False: `_single_tensor_adam`, the order the seed follows)
and in the float64 oracle, from the same weights on the same batches; after every step, each float32 run's relative
distance to the oracle's parameters, ||p32 - p64||_2 / ||p64||_2 over all parameters (the measure the seed's NOTES
used to pick its Adam constants).

`drift()` returns the figures; `plot(result, path)` draws them. reports/ can call both (`bendtorch report`)."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np


def drift(steps: int = 100, b: int = 4, seed: int = 0, lr: float = 3e-3, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, wd: float = 0.01) -> dict[str, Any]:
    import torch

    from bendtorch import impl
    from bendtorch import oracle
    from bendtorch.train_cmd import CORPUS, complement
    from bendtorch.impl import llama, optim
    from bendtorch.impl.train import train_new, train_step
    from bendtorch.reference.torch_llama import TorchLlama

    cfg = llama.config("tiny")
    mi, mo = llama.build(impl, cfg, b), llama.build(oracle, cfg, b)
    ocfg = optim.CAdamW(np.float32(lr), np.float32(b1), np.float32(b2), np.float32(eps), np.float32(wd),
                        np.float32(complement(b1)), np.float32(complement(b2)))
    p32 = mi.init(seed)
    names = mi.names
    tm = TorchLlama(cfg, {k: v.copy() for k, v in llama.named(names, p32).items()}, torch.float32)
    topt = torch.optim.AdamW(tm.params(), lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=False)
    ti = train_new(mi.layer, ocfg, p32)
    to = oracle.train_new(mo.layer, ocfg, llama.cast(p32, np.float64))
    toks = np.frombuffer(CORPUS.read_bytes(), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(seed + 1)
    keys = list(llama.named(names, p32))

    def flat(d: dict[str, Any]) -> Any:
        return np.concatenate([np.asarray(d[k], dtype=np.float64).reshape(-1) for k in keys])

    out: dict[str, Any] = {"steps": steps, "batch": b, "lr": lr, "betas": [b1, b2], "eps": eps, "wd": wd,
                           "impl": [], "torch": [], "loss_oracle": [], "loss_impl": [], "loss_torch": []}
    for _ in range(steps):
        x, y = llama.batch_at(toks, b, cfg.t, rng)
        ti = train_step(mi.layer, mi.loss, ocfg, ti, x, y)
        to = oracle.train_step(mo.layer, mo.loss, ocfg, to, x, y)
        topt.zero_grad()
        loss, _ = tm.loss(x, y, b)
        loss.backward()
        topt.step()
        e = flat(llama.named(names, to.p))
        ne = float(np.linalg.norm(e))
        out["impl"].append(float(np.linalg.norm(flat(llama.named(names, ti.p)) - e)) / ne)
        out["torch"].append(float(np.linalg.norm(flat({k: v.detach().numpy() for k, v in tm.p.items()}) - e)) / ne)
        out["loss_oracle"].append(float(to.loss))
        out["loss_impl"].append(float(ti.loss))
        out["loss_torch"].append(float(loss.detach()))
    out["final"] = {"impl": out["impl"][-1], "torch": out["torch"][-1]}
    return out


def plot(r: dict[str, Any], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    s = range(1, r["steps"] + 1)
    ax.semilogy(s, r["impl"], label="impl (float32)")
    ax.semilogy(s, r["torch"], label="PyTorch float32")
    ax.set_xlabel("AdamW step")
    ax.set_ylabel("||p32 - p64|| / ||p64||")
    ax.set_title(f"tiny Llama: drift from the float64 oracle (batch {r['batch']}, lr {r['lr']:g})")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    import json
    import sys

    res = drift(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
    print(json.dumps(res["final"]), "loss", res["loss_oracle"][0], "->", res["loss_oracle"][-1])
    if len(sys.argv) > 2:
        plot(res, pathlib.Path(sys.argv[2]))
