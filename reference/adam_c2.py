"""Adam's c2, settled: which (c2, q2) pairing puts the tiny Llama how far from float64 (main.bend lines 273-275).

The seed's claim: taking c2 = 1 - b2 in float32 (0.00099998713, 1.3e-5 below 0.001) "alone put the tiny Llama 21x
further from float64 than PyTorch's float32" after 100 AdamW steps. c2 enters impl's step twice: in the second moment,
v <- v b2 + (c2 g) g (main.bend line 280), and in the bias correction q2 = 1 - b2^t that divides it,
advanced as q2 <- q2 + c2 (1 - q2) in float32 (line 926). Every pairing is measured here:

  c2 in v:  "0.001"        the constant the seed gives (oracle.hyper.one_minus(b2) rounded to float32)
            "1-b2 (F32)"   F32(1) - F32(b2)
  q2:       "recursion, same c2"    q2 <- q2 + c2 (1 - q2) with v's c2 (impl's Train.step)
            "recursion, other c2"   the same recursion with the other c2
            "float64 power"         F32(1 - b2^t), b2 the decimal, 1 - b2^t in float64, as PyTorch's bias correction
            "float32 power"         F32(1) - F32(b2)^t, the power in float32 (numpy's powf)

Each pairing trains impl's tiny Llama for `steps` AdamW steps from the same weights on the same batches as the float64
oracle and PyTorch's float32 AdamW (reference/trio.py); the figure is each run's final drift ||p - p64|| / ||p64||
and its ratio to PyTorch's, over seeds and learning rates, as distributions.

Why a pairing can matter (`v_over_q2_bias`): Adam divides sqrt(v) by sqrt(q2); over the steps v carries c2_v and q2
carries c2_q (or the power), so v / q2 is off the exact c2 / (1 - b2^t) by a factor that is constant (1 for a matched
pairing) or drifts with t (a mismatched one): that factor, not c2's size, moves the step.

    bendtorch study adam_c2 --seeds 10 --lrs 1e-3 3e-3 --out reports/results/findings
"""

from __future__ import annotations

import json
import pathlib
import time
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

from bendtorch.oracle.hyper import one_minus, one_minus_pow
from bendtorch.reference import trio

F32 = np.float32
B2 = 0.999

C2_V = ("0.001", "1-b2 (F32)")
Q2 = ("recursion, same c2", "recursion, other c2", "float64 power", "float32 power")
PAIRINGS = [(c, q) for c in C2_V for q in Q2]


def c2_value(which: str, b2: float = B2) -> np.float32:
    """c2 as the seed gives it ("0.001": 1 - b2 as the decimal meant) or as 1 - b2 taken in float32."""
    if which == "0.001":
        return F32(one_minus(b2))
    if which == "1-b2 (F32)":
        return F32(F32(1.0) - F32(b2))
    raise ValueError(f"c2: {which!r} is not one of {C2_V}")


def q2_rule(which: str, c2v: str, b2: float = B2) -> Callable[[np.float32, int], np.float32]:
    """q2 at step t (1-based) from the previous q2: one of Q2, for v's c2 `c2v`."""
    if which == "recursion, same c2" or which == "recursion, other c2":
        other = C2_V[1 - C2_V.index(c2v)]
        c = c2_value(c2v if which == "recursion, same c2" else other, b2)
        return lambda q, t: F32(q + F32(c * F32(F32(1.0) - q)))  # main.bend line 926
    if which == "float64 power":
        return lambda q, t: F32(1.0 - b2 ** t)
    if which == "float32 power":
        bb = F32(b2)
        return lambda q, t: F32(F32(1.0) - np.power(bb, F32(t), dtype=F32))
    raise ValueError(f"q2: {which!r} is not one of {Q2}")


class PairedRun:
    """impl's training step (impl.train.train_step) with q2 taken from `q2_rule` instead of the seed's recursion;
    q1 and everything else as impl. `step` and `flat` as trio.Run."""

    def __init__(self, model: Any, hp: trio.AdamWHP, c2v: str, q2: str, p0: Any) -> None:
        from dataclasses import replace

        from bendtorch.impl import llama
        from bendtorch.impl.train import train_new
        self.model = model
        self.cfg = replace(hp.impl_cfg(), c2=c2_value(c2v, hp.b2))
        self.rule = q2_rule(q2, c2v, hp.b2)
        self.tr = train_new(model.layer, self.cfg, llama.cast(p0, F32))
        self.t = 0

    def step(self, x: Any, y: Any) -> float:
        from bendtorch.impl.optim import cfg_c1, opt_at
        from bendtorch.impl.train import Train
        m, tr = self.model, self.tr
        self.t += 1
        f = m.layer.fwd(tr.p, x)
        lo = m.loss(f.y, y)
        b = m.layer.bwd(f.p, f.s, lo.dy, tr.g)
        q1 = F32(tr.p1 + F32(cfg_c1(self.cfg) * F32(F32(1.0) - tr.p1)))
        q2 = self.rule(tr.p2, self.t)
        r = m.layer.step(opt_at(self.cfg, q1, q2), b.p, b.g, tr.st)
        self.tr = Train(r.p, r.g, r.st, q1, q2, F32(lo.loss))
        return float(lo.loss)

    def flat(self) -> trio.Vec:
        from bendtorch.impl import llama
        return np.concatenate([np.asarray(a, np.float64).reshape(-1)
                               for a in llama.named(self.model.names, self.tr.p).values()])


def v_over_q2_bias(c2v: str, q2: str, steps: int, b2: float = B2) -> npt.NDArray[np.float64]:
    """Per step t, (c2_v / q2_t) / (c2 / (1 - b2^t)) - 1 with the exact decimals: the relative bias of v / q2 that a
    pairing carries for a constant g^2 (v_t = c2_v sum b2^k g^2 ~ c2_v (1 - b2^t) / c2 g^2 to first order)."""
    rule = q2_rule(q2, c2v, b2)
    c = c2_value(c2v, b2)
    q = F32(0.0)
    out = []
    for t in range(1, steps + 1):
        q = rule(q, t)
        exact = one_minus(b2) / one_minus_pow(b2, t)
        out.append((float(c) / float(q)) / exact - 1.0)
    return np.array(out)


def study(seeds: Sequence[int], lrs: Sequence[float], steps: int = 100, b: int = 4,
          pairings: Sequence[tuple[str, str]] = tuple(PAIRINGS),
          progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every pairing, seed and learning rate: final drifts from the oracle (impl's pairings and PyTorch's) and each
    pairing's ratio to PyTorch's, with the distributions over seeds (trio.distribution)."""
    runs: dict[str, Any] = {}
    t0 = time.perf_counter()
    for lr in lrs:
        hp = trio.AdamWHP(lr=lr)
        for seed in seeds:
            s = trio.tiny_setup(b, seed)
            rs: dict[str, trio.Run] = {"oracle": trio.oracle_llama_run(s.oracle, hp.impl_cfg(), s.p0),
                                       "PyTorch float32": trio.torch_llama_run(s.cfg, b, s.weights, hp)}
            for c2v, q2 in pairings:
                rs[f"{c2v} | {q2}"] = PairedRun(s.impl, hp, c2v, q2, s.p0)
            rec = trio.record(rs, trio.batches(steps, b, s.cfg.t, seed + 1))
            ref = rec.pop("oracle").params
            runs[f"{lr:g}/{seed}"] = {k: trio.drift(r.params, ref).tolist() for k, r in rec.items()}
            if progress is not None:
                progress(f"lr {lr:g} seed {seed}: {time.perf_counter() - t0:.0f} s")
    keys = ["PyTorch float32"] + [f"{c} | {q}" for c, q in pairings]
    dist: dict[str, Any] = {}
    for lr in lrs:
        d: dict[str, Any] = {}
        for k in keys:
            fin = {s: runs[f"{lr:g}/{s}"][k][-1] for s in seeds}
            tor = {s: runs[f"{lr:g}/{s}"]["PyTorch float32"][-1] for s in seeds}
            d[k] = {"drift": trio.distribution(fin),
                    "ratio_to_torch": trio.distribution({s: fin[s] / tor[s] for s in seeds})}
        dist[f"{lr:g}"] = d
    bias = {f"{c} | {q}": v_over_q2_bias(c, q, steps).tolist() for c, q in pairings}
    return {"steps": steps, "batch": b, "seeds": list(seeds), "lrs": list(lrs), "pairings": keys[1:],
            "c2": {k: float(c2_value(k)) for k in C2_V}, "distributions": dist, "v_over_q2_bias": bias,
            "runs": runs, "seconds": time.perf_counter() - t0}


def verdict(r: dict[str, Any], claimed: float = 21.0) -> dict[str, Any]:
    """Where a ratio to PyTorch of at least claimed / 4 appears (pairing, lr, on how many seeds), the largest ratio,
    and the median ratio of each pairing, matched (v and q2 agree on c2) or mismatched."""
    hits, worst = [], ("", "", 0.0)
    for lr, d in r["distributions"].items():
        for k in r["pairings"]:
            vals = d[k]["ratio_to_torch"]["values"]
            n = sum(v >= claimed / 4 for v in vals)
            if n:
                hits.append({"pairing": k, "lr": lr, "seeds_at_or_above": n, "of": len(vals)})
            if max(vals) > worst[2]:
                worst = (k, lr, max(vals))
    return {"claim": "c2 = 1 - b2 in float32 puts the tiny Llama 21x further from float64 than PyTorch's float32 "
                     "after 100 AdamW steps (main.bend lines 273-275)",
            "threshold": claimed / 4, "appears_under_some_pairing": bool(hits), "hits": hits,
            "largest_ratio": {"pairing": worst[0], "lr": worst[1], "ratio": worst[2]},
            "median_ratio": {lr: {k: d[k]["ratio_to_torch"]["median"] for k in r["pairings"]}
                             for lr, d in r["distributions"].items()},
            "matched": [k for k in r["pairings"] if matched(*k.split(" | "))]}


def matched(c2v: str, q2: str) -> bool:
    """Whether v's c2 and q2 agree on c2: the recursion with the same c2, the float64 power with the decimal 0.001
    (1 - b2^t of the decimal b2), the float32 power with 1 - b2 in float32 (1 - F32(b2)^t)."""
    return (q2 == "recursion, same c2" or (q2 == "float64 power" and c2v == "0.001")
            or (q2 == "float32 power" and c2v == "1-b2 (F32)"))


def figure(r: dict[str, Any]) -> Any:
    """Left: each pairing's final drift / PyTorch's over seeds (a dot per seed, a bar at the median), a panel per
    learning rate; right: the relative bias each pairing puts in v / q2, per step. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    lrs = list(r["distributions"])
    fig, axes = plt.subplots(1, len(lrs) + 1, figsize=(5.2 * (len(lrs) + 1), 5.6))
    ks = r["pairings"]
    for ax, lr in zip(axes, lrs):
        for i, k in enumerate(ks):
            d = r["distributions"][lr][k]["ratio_to_torch"]
            ax.plot([i] * d["n"], d["values"], "o", ms=3, alpha=0.6,
                    color="C0" if matched(*k.split(" | ")) else "C3")
            ax.plot([i - 0.3, i + 0.3], [d["median"]] * 2, "k-", lw=2)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.axhline(21.0, color="red", lw=0.8, ls="--", label="the seed's 21x")
        ax.set_yscale("log")
        ax.set_xticks(range(len(ks)))
        ax.set_xticklabels([k.replace(" | ", "\n") for k in ks], rotation=90, fontsize=7)
        ax.set_ylabel("final drift / PyTorch's (dots: seeds, bar: median;\nblue: matched c2, red: mismatched)")
        seeds = r["seeds"]
        ax.set_title(f"lr {lr}, {r['steps']} steps, seeds {seeds[0]}-{seeds[-1]}", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    ax = axes[-1]
    for i, k in enumerate(ks):
        b = np.abs(np.array(r["v_over_q2_bias"][k]))
        ax.plot(range(1, len(b) + 1), np.maximum(b, 1e-12), ("-", "--", ":", "-.")[i % len(Q2)], lw=1,
                color=("C0" if matched(*k.split(" | ")) else "C3") if i < len(Q2) else
                ("C9" if matched(*k.split(" | ")) else "C1"), label=k)
    ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel("|(c2_v / q2) / (c2 / (1 - b2^t)) - 1|")
    ax.set_title("the bias each pairing puts in v / q2", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def plot(r: dict[str, Any], path: pathlib.Path) -> None:
    """`figure(r)` written to path (PNG), without a display."""
    trio.save_figure(figure, r, path, dpi=110)


def run(seeds: int = 10, lrs: Sequence[float] = (1e-3, 3e-3), steps: int = 100,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """`study` on seeds 0 .. seeds-1 with its `verdict`."""
    r = study(range(seeds), lrs, steps, progress=progress)
    r["verdict"] = verdict(r)
    return r


def text(r: dict[str, Any]) -> str:
    """The verdict, as JSON."""
    return json.dumps(r["verdict"], indent=1)
