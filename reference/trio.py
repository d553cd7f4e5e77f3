"""One model trained from the same weights on the same batches in impl (float32), the oracle (float64) and PyTorch
(float32): the loop behind every drift figure (reference/llama_drift.py), the small-model comparison
(reference/model.py), the notebooks and the benchmark (bench/bench.py), written once.

    hp = AdamWHP(lr=3e-3)                         # hyperparameters as a user writes them (Python floats)
    s = tiny_setup(b=4, seed=0)                   # impl and oracle models, float32 initial weights, {name: weight}
    data = batches(100, 4, s.cfg.t, seed=1)       # (inputs, labels) from the shipped corpus
    runs = {"impl": impl_llama_run(s.impl, hp.impl_cfg(), s.p0),
            "oracle": oracle_llama_run(s.oracle, hp.impl_cfg(), s.p0),
            "torch": torch_llama_run(s.cfg, s.b, s.weights, hp)}
    rec = record(runs, data)                      # per library: losses and flat parameters after every step
    drift(rec["impl"].params, rec["oracle"].params)

Every run exposes `step(x, y) -> loss` and `flat() -> float64 vector of its parameters` (Hugging Face's names, in
`impl.llama.named` order, for the Llama; dump order for any other layer), so a caller times one run, records all
three, or swaps impl's optimizer configuration without writing the loop again.

The oracle reads impl's configuration as the decimals the user meant (oracle/hyper.py), so one `CAdamW` drives both.
"""

from __future__ import annotations

import pathlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np
import numpy.typing as npt

from bendtorch.oracle.hyper import one_minus

F32 = np.float32
F64 = np.float64
Batch = tuple[Any, Any]
Vec = npt.NDArray[np.float64]


@dataclass(frozen=True)
class AdamWHP:
    """AdamW's hyperparameters as the user writes them; impl reads each as the nearest float32, c = 1 - b as the
    decimal meant (oracle.hyper.one_minus: 0.999 -> 0.001, main.bend lines 273-275), PyTorch as Python floats."""

    lr: float = 3e-3
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    wd: float = 0.01

    def impl_cfg(self) -> Any:
        """impl's CAdamW (the oracle reads the same configuration)."""
        from bendtorch.impl.optim import CAdamW
        return CAdamW(F32(self.lr), F32(self.b1), F32(self.b2), F32(self.eps), F32(self.wd),
                      F32(one_minus(self.b1)), F32(one_minus(self.b2)))

    def torch_opt(self, params: Sequence[Any], foreach: bool | None = False) -> Any:
        """torch.optim.AdamW over params; foreach=False is `_single_tensor_adam`, the order the seed follows."""
        import torch
        return torch.optim.AdamW(list(params), lr=self.lr, betas=(self.b1, self.b2), eps=self.eps,
                                 weight_decay=self.wd, foreach=foreach)


class Run(Protocol):
    """One library's training: a step on a batch gives the loss; `flat` is the current parameters."""

    def step(self, x: Any, y: Any) -> float: ...

    def flat(self) -> Vec: ...


def _concat(arrays: Sequence[Any]) -> Vec:
    return np.concatenate([np.asarray(a, dtype=F64).reshape(-1) for a in arrays])


def _widen(x: Any, dtype: Any) -> Any:
    """Float inputs widened (exactly) to the oracle's dtype; never narrowed; token ids unchanged."""
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating) and np.dtype(dtype).itemsize > x.itemsize:
        return x.astype(dtype)
    return x


class _LibRun:
    """impl's or the oracle's Train state over a layer and a loss; `flatten` reads the parameter tree."""

    def __init__(self, lib: Any, layer: Any, loss: Any, cfg: Any, p0: Any,
                 flatten: Callable[[Any], Vec]) -> None:
        self.lib, self.layer, self.loss, self.cfg, self.flatten = lib, layer, loss, cfg, flatten
        self.tr = lib.train_new(layer, cfg, p0)

    def step(self, x: Any, y: Any) -> float:
        self.tr = self.lib.train_step(self.layer, self.loss, self.cfg, self.tr, _widen(x, self.lib.DTYPE), y)
        return float(self.tr.loss)

    def flat(self) -> Vec:
        return self.flatten(self.tr.p)


def _llama_flatten(model: Any) -> Callable[[Any], Vec]:
    from bendtorch.impl import llama
    return lambda p: _concat(list(llama.named(model.names, p).values()))


def _dump_flatten(layer: Any) -> Callable[[Any], Vec]:
    return lambda p: np.asarray(layer.dump(p), dtype=F64)


def impl_llama_run(model: Any, cfg: Any, p0: Any) -> Run:
    """impl's training of an impl.llama Model from a float32 copy of p0 (impl.train.train_step)."""
    from bendtorch import impl
    from bendtorch.impl import llama
    return _LibRun(impl, model.layer, model.loss, cfg, llama.cast(p0, F32), _llama_flatten(model))


def oracle_llama_run(model: Any, cfg: Any, p0: Any) -> Run:
    """The oracle's training (oracle.train.train_step: float64, exact 1 - b^t) of an oracle Model from p0 widened
    exactly to float64."""
    from bendtorch import oracle
    from bendtorch.impl import llama
    return _LibRun(oracle, model.layer, model.loss, cfg, llama.cast(p0, F64), _llama_flatten(model))


def layer_run(lib: Any, layer: Any, loss: Any, cfg: Any, flat0: npt.NDArray[Any]) -> Run:
    """Any layer of impl or the oracle (lib) trained from the flat parameters flat0 (dump order, converted to
    lib.DTYPE exactly when it widens); `flat` is the layer's dump."""
    p = layer.load(layer.zeros(), np.asarray(flat0, dtype=lib.DTYPE), 0).p
    return _LibRun(lib, layer, loss, cfg, p, _dump_flatten(layer))


class TorchRun:
    """PyTorch: parameters as leaf tensors, a loss closure loss_fn(x, y) -> scalar tensor, an optimizer."""

    def __init__(self, params: Sequence[Any], loss_fn: Callable[[Any, Any], Any], opt: Any,
                 set_to_none: bool = True) -> None:
        self.params, self.loss_fn, self.opt, self.set_to_none = list(params), loss_fn, opt, set_to_none

    def step(self, x: Any, y: Any) -> float:
        self.opt.zero_grad(set_to_none=self.set_to_none)
        loss = self.loss_fn(x, y)
        loss.backward()
        self.opt.step()
        return float(loss.detach())

    def flat(self) -> Vec:
        return _concat([p.detach().numpy() for p in self.params])


# ---- the tiny Llama --------------------------------------------------------------------------------------------

@dataclass
class LlamaSetup:
    """One Llama in impl and in the oracle, its float32 initial parameters and {Hugging Face name: weight}."""

    cfg: Any
    b: int
    impl: Any
    oracle: Any
    p0: Any
    weights: dict[str, Any] = field(repr=False)


def llama_setup(b: int, seed: int, name: str = "tiny", **changes: Any) -> LlamaSetup:
    """impl.llama's model `name` (batch b) in impl and the oracle, initialised by impl from `seed`."""
    from bendtorch import impl, oracle
    from bendtorch.impl import llama
    cfg = llama.config(name, **changes)
    mi, mo = llama.build(impl, cfg, b), llama.build(oracle, cfg, b)
    p0 = mi.init(seed)
    weights = {k: np.array(v, copy=True) for k, v in llama.named(mi.names, p0).items()}
    return LlamaSetup(cfg, b, mi, mo, p0, weights)


def tiny_setup(b: int, seed: int) -> LlamaSetup:
    return llama_setup(b, seed, "tiny")


def torch_llama_run(cfg: Any, b: int, weights: Mapping[str, Any], hp: AdamWHP, foreach: bool | None = False,
                    set_to_none: bool = True) -> TorchRun:
    """Hugging Face's Llama in PyTorch float32 (reference/torch_llama.py) from {name: weight}, AdamW (hp)."""
    import torch

    from bendtorch.reference.torch_llama import TorchLlama
    tm = TorchLlama(cfg, dict(weights), torch.float32)
    return TorchRun(tm.params(), lambda x, y: tm.loss(x, y, b)[0], hp.torch_opt(tm.params(), foreach),
                    set_to_none)


def batches(steps: int, b: int, t: int, seed: int, tokens: npt.NDArray[np.int64] | None = None) -> list[Batch]:
    """`steps` batches of b windows of t + 1 tokens (impl.llama.batch_at) from one generator seeded with `seed`,
    over the shipped corpus unless tokens are given."""
    from bendtorch.data import corpus_tokens
    from bendtorch.impl import llama
    toks = corpus_tokens() if tokens is None else tokens
    rng = np.random.default_rng(seed)
    return [llama.batch_at(toks, b, t, rng) for _ in range(steps)]


# ---- recording and drift ---------------------------------------------------------------------------------------

@dataclass
class Record:
    """A run's losses and flat float64 parameters after every step."""

    losses: list[float] = field(default_factory=list)
    params: list[Vec] = field(default_factory=list)


def record(runs: Mapping[str, Run], data: Sequence[Batch], keep_params: bool = True) -> dict[str, Record]:
    """Every run stepped over the same batches, in lockstep; each one's losses (and parameters) after each step."""
    out = {k: Record() for k in runs}
    for x, y in data:
        for k, r in runs.items():
            out[k].losses.append(r.step(x, y))
            if keep_params:
                out[k].params.append(r.flat())
    return out


def drift(ps: Sequence[Vec], ref: Sequence[Vec]) -> Vec:
    """Per step, ||p - p64||_2 / ||p64||_2 over every parameter at once (the distance from the float64 run; the
    measure the seed's NOTES used to pick its Adam constants)."""
    return np.array([float(np.linalg.norm(a - r)) / float(np.linalg.norm(r)) for a, r in zip(ps, ref)])


def distribution(values: Mapping[int, float]) -> dict[str, Any]:
    """A chaotic figure as a distribution over seeds: median, min, max and every value with its seed."""
    v = [float(values[s]) for s in sorted(values)]
    if not v:
        raise ValueError("distribution: no seeds")
    return {"median": float(statistics.median(v)), "min": min(v), "max": max(v), "n": len(v),
            "seeds": sorted(values), "values": v}


def fmt_distribution(d: Mapping[str, Any], spec: str = ".3g") -> str:
    """'median 1.02 (range 0.29 to 1.19, 8 seeds: 0-7)'."""
    seeds = list(d["seeds"])
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    listed = f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 2 else ", ".join(map(str, seeds))
    return (f"median {d['median']:{spec}} (range {d['min']:{spec}} to {d['max']:{spec}}, {d['n']} seeds: "
            f"{listed})")


def drift_study(variants: Mapping[str, Callable[[LlamaSetup, AdamWHP], Run]], seeds: Sequence[int],
                steps: int = 100, lr: float = 1e-3, b: int = 4, batch_seed_offset: int = 0,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The tiny Llama trained under each variant (a Run built from the setup and the hyperparameters) beside the
    float64 oracle (AdamW, hp), on every seed (weights from the seed, batches from seed + batch_seed_offset): each
    variant's drift per step per seed ("curves"), and its final drift as a distribution over the seeds ("final")."""
    hp = AdamWHP(lr=lr)
    curves: dict[str, dict[str, list[float]]] = {}
    losses: dict[str, dict[str, list[float]]] = {}
    for seed in seeds:
        s = tiny_setup(b, seed)
        runs: dict[str, Run] = {"oracle": oracle_llama_run(s.oracle, hp.impl_cfg(), s.p0)}
        runs.update({k: make(s, hp) for k, make in variants.items()})
        rec = record(runs, batches(steps, b, s.cfg.t, seed + batch_seed_offset))
        ref = rec["oracle"].params
        curves[str(seed)] = {k: drift(rec[k].params, ref).tolist() for k in variants}
        losses[str(seed)] = {k: r.losses for k, r in rec.items()}
        if progress is not None:
            progress(f"seed {seed} done")
    final = {k: distribution({s: curves[str(s)][k][-1] for s in seeds}) for k in variants}
    return {"steps": steps, "batch": b, "lr": lr, "seeds": list(seeds), "variants": list(variants),
            "curves": curves, "losses": losses, "final": final}


def save_figure(figure: Callable[[dict[str, Any]], Any], r: dict[str, Any], path: pathlib.Path,
                dpi: int = 110) -> None:
    """figure(r) written to path as PNG (atomically), without a display."""
    import matplotlib

    matplotlib.use("Agg")
    from bendtorch.records.durable import save_figure as save

    save(figure(r), path, dpi)
