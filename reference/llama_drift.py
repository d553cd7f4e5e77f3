"""Drift of float32 training from exact training: `tiny` trained with AdamW for `steps` steps in impl (float32), in
PyTorch float32 (torch.optim.AdamW, foreach=False: `_single_tensor_adam`, the order the seed follows) and in the
float64 oracle, from the same weights on the same batches (reference/trio.py); after every step, each float32 run's
relative distance to the oracle's parameters, ||p32 - p64||_2 / ||p64||_2 over all parameters (the measure the
seed's NOTES used to pick its Adam constants).

Which float32 run ends closer to float64 changes with the seed (training amplifies single rounding differences
chaotically), so the figure to quote is `drift_over_seeds`: the median and range over several seeds, seeds listed.

`drift()` returns one seed's figures; `drift_over_seeds()` their distribution (`bendtorch study llama_drift`);
`plot(result, path)` draws either. reports/ calls them (`bendtorch report`)."""

from __future__ import annotations

import pathlib
from typing import Any, Sequence

from bendtorch.reference import trio


def drift(steps: int = 100, b: int = 4, seed: int = 0, lr: float = 3e-3, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, wd: float = 0.01) -> dict[str, Any]:
    """One seed: the weights from `seed`, the batches from a generator seeded with seed + 1."""
    hp = trio.AdamWHP(lr, b1, b2, eps, wd)
    s = trio.tiny_setup(b, seed)
    cfg = hp.impl_cfg()
    runs: dict[str, trio.Run] = {"impl": trio.impl_llama_run(s.impl, cfg, s.p0),
                                 "oracle": trio.oracle_llama_run(s.oracle, cfg, s.p0),
                                 "torch": trio.torch_llama_run(s.cfg, b, s.weights, hp)}
    rec = trio.record(runs, trio.batches(steps, b, s.cfg.t, seed + 1))
    ref = rec["oracle"].params
    out: dict[str, Any] = {"steps": steps, "batch": b, "seed": seed, "lr": lr, "betas": [b1, b2], "eps": eps,
                           "wd": wd, "impl": trio.drift(rec["impl"].params, ref).tolist(),
                           "torch": trio.drift(rec["torch"].params, ref).tolist(),
                           "loss_oracle": rec["oracle"].losses, "loss_impl": rec["impl"].losses,
                           "loss_torch": rec["torch"].losses}
    out["final"] = {"impl": out["impl"][-1], "torch": out["torch"][-1]}
    return out


def drift_over_seeds(seeds: Sequence[int] = tuple(range(8)), steps: int = 100, **kw: Any) -> dict[str, Any]:
    """`drift` on every seed; the final drifts of impl and PyTorch and their ratio impl / PyTorch, each as a
    distribution (trio.distribution: median, min, max, every value with its seed)."""
    runs = {s: drift(steps, seed=s, **kw) for s in seeds}
    fin = {s: r["final"] for s, r in runs.items()}
    return {"steps": steps, "seeds": list(seeds), **{k: v for k, v in next(iter(runs.values())).items()
                                                     if k in ("batch", "lr", "betas", "eps", "wd")},
            "impl": trio.distribution({s: f["impl"] for s, f in fin.items()}),
            "torch": trio.distribution({s: f["torch"] for s, f in fin.items()}),
            "ratio": trio.distribution({s: f["impl"] / f["torch"] for s, f in fin.items()}),
            "runs": runs}


def at_steps(r: dict[str, Any], steps: Sequence[int] = (1, 10, 25, 50, 75, 100)) -> dict[int, dict[str, Any]]:
    """drift_over_seeds' result at chosen steps: impl's drift, PyTorch's and impl / PyTorch, each a distribution."""
    out: dict[int, dict[str, Any]] = {}
    for k in [k for k in steps if 1 <= k <= r["steps"]]:
        runs = r["runs"]
        out[k] = {"impl": trio.distribution({s: x["impl"][k - 1] for s, x in runs.items()}),
                  "torch": trio.distribution({s: x["torch"][k - 1] for s, x in runs.items()}),
                  "ratio": trio.distribution({s: x["impl"][k - 1] / x["torch"][k - 1] for s, x in runs.items()})}
    return out


def table(r: dict[str, Any]) -> str:
    """A Markdown table of drift_over_seeds' result: per step, the median and range over the seeds (listed)."""
    rows = [f"Seeds {', '.join(map(str, r['seeds']))}; median (min to max) over the seeds.\n",
            "| step | impl | PyTorch | impl / PyTorch |", "| ---: | ---: | ---: | ---: |"]
    for k, d in at_steps(r, sorted({1, 10, 25, 50, 75, r["steps"]})).items():
        cell = [f"{d[x]['median']:.3e} ({d[x]['min']:.2e} to {d[x]['max']:.2e})" for x in ("impl", "torch")]
        q = d["ratio"]
        rows.append(f"| {k} | {cell[0]} | {cell[1]} | {q['median']:.2f} ({q['min']:.2f} to {q['max']:.2f}) |")
    return "\n".join(rows)


def figure(r: dict[str, Any]) -> Any:
    """One run's drift curves, or, given drift_over_seeds' result, every seed's (impl solid, PyTorch dotted)."""
    import matplotlib.pyplot as plt

    runs = r["runs"] if "runs" in r else {r.get("seed", 0): r}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for i, (seed, one) in enumerate(runs.items()):
        s = range(1, one["steps"] + 1)
        lab = len(runs) == 1 or i == 0
        ax.semilogy(s, one["impl"], "-", color="C0", alpha=0.7, label="impl (float32)" if lab else None)
        ax.semilogy(s, one["torch"], ":", color="C1", alpha=0.9, label="PyTorch float32" if lab else None)
    one = next(iter(runs.values()))
    ax.set_xlabel("AdamW step")
    ax.set_ylabel("||p32 - p64|| / ||p64||")
    ks = [int(k) for k in runs]
    seeds = "" if len(ks) == 1 else (f", seeds {ks[0]}-{ks[-1]}" if ks == list(range(ks[0], ks[0] + len(ks)))
                                     else f", seeds {', '.join(map(str, ks))}")
    ax.set_title(f"tiny Llama: drift from the float64 oracle (batch {one['batch']}, lr {one['lr']:g}{seeds})",
                 fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    return fig


def plot(r: dict[str, Any], path: pathlib.Path) -> None:
    """`figure(r)` written to path (PNG), without a display."""
    trio.save_figure(figure, r, path, dpi=120)


def run(seeds: int = 8, steps: int = 100, lr: float = 3e-3) -> dict[str, Any]:
    """`drift_over_seeds` on seeds 0 .. seeds-1."""
    return drift_over_seeds(range(seeds), steps, lr=lr)


def text(r: dict[str, Any]) -> str:
    """The final drifts of impl and PyTorch and their ratio, over the seeds."""
    return "\n".join(f"final {k}: {trio.fmt_distribution(r[k])}" for k in ("impl", "torch", "ratio"))
