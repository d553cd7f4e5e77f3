"""A training run's options and their checks: the optimizer's configuration, the defaults of each model, the flags a
checkpoint records (main.bend lines 2958-2961: a run resumed from its checkpoint with the same flags computes the same
bits as one that never stopped)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bendtorch.records import optimizers

SUMMARY_SCHEMA_VERSION = 2  # summary.json's layout (records/schemas/summary.schema.json)
MAX_LAYERS = 64  # smol has 30; more would only build for minutes before the first step
OPTS = optimizers.NAMES  # the optimizer registry's command-line names
# the options that change the numbers: what a checkpoint records and a resumed run must repeat (the data is bound
# by its digest, not by its path: impl.checkpoint_folder.check_data)
FLAG_KEYS = ("model", "layers", "opt", "lr", "b1", "b2", "eps", "wd", "mu", "v16", "batch", "seed")


class TrainError(ValueError):
    """A run that cannot start: a bad number, data too short, a checkpoint that does not fit, a folder in use."""


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite; the run stopped with its last checkpoint kept."""


def optimizer_config(opt: str, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, wd: float = 0.0,
                     mu: float = 0.9, v16: bool = False) -> Any:
    """The configuration of optimizer `opt` (one of OPTS), checked: lr > 0, every number finite and >= 0, betas in
    [0, 1), c1 = 1 - b1 and c2 = 1 - b2 as the decimals meant (oracle.hyper.one_minus: 0.999 -> 0.001, main.bend
    lines 273-275; impl.optim.cfg_check). ConfigError names the field."""
    from bendtorch.impl import optim
    from bendtorch.impl.optstate import ConfigError
    from bendtorch.oracle.hyper import one_minus

    if opt not in OPTS:
        raise ConfigError(f"unknown optimizer {opt!r}: one of {', '.join(OPTS)}")
    for name, v in [("lr", lr), ("eps", eps), ("wd", wd), ("mu", mu), ("b1", b1), ("b2", b2)]:
        if not np.isfinite(v) or v < 0:
            raise ConfigError(f"{name} must be a finite number >= 0, got {v}")
    if lr == 0:
        raise ConfigError("lr must be > 0")
    for name, v in [("b1", b1), ("b2", b2), ("mu", mu)]:
        if not 0 <= v < 1:
            raise ConfigError(f"{name} must be in [0, 1), got {v}")
    if v16 and opt != "adamw-bf16":
        raise ConfigError("v16 applies to adamw-bf16 only")
    if opt == "sgd":
        return optim.CSGD(np.float32(lr))
    if opt == "momentum":
        return optim.CMomentum(np.float32(lr), np.float32(mu))
    f = np.float32
    consts = (f(lr), f(b1), f(b2), f(eps), f(wd), f(one_minus(b1)), f(one_minus(b2)))
    cfg: Any
    if opt == "adamw-bf16":
        cfg = optim.CAdamWBF16(*consts, v16=bool(v16))
    else:
        cfg = (optim.CAdamW if opt == "adamw" else optim.CAdam)(*consts)
    optim.cfg_check(cfg)
    return cfg


def resolve(flags: dict[str, Any]) -> dict[str, Any]:
    """flags with every default filled in from its model and optimizer (None: the default): lr 3e-3 for tiny and
    3e-4 for smol, wd 0.01 for adamw and adamw-bf16 and 0 otherwise, batch 4 for tiny and 1 for smol, the model's
    own number of layers. A flag spelled out at its default is then the same as the default."""
    from bendtorch.impl import llama

    f = dict(flags)
    model, opt = f.get("model"), str(f.get("opt", ""))
    if f.get("lr") is None:
        f["lr"] = 3e-3 if model == "tiny" else 3e-4
    if f.get("wd") is None:
        f["wd"] = 0.01 if opt.startswith("adamw") else 0.0
    if f.get("batch") is None:
        f["batch"] = 4 if model == "tiny" else 1
    if f.get("layers") is None and model in llama.CONFIGS:
        f["layers"] = llama.CONFIGS[str(model)].layers
    return f


@dataclass(frozen=True)
class TrainOptions:
    """One training run. None means the model's default (lr 3e-3 for tiny, 3e-4 for smol; batch 4 for tiny, 1 for
    smol; wd 0.01 for adamw and adamw-bf16, else 0; data: the shipped corpus)."""

    out: Path
    model: str = "tiny"
    layers: int | None = None
    opt: str = "adamw"
    lr: float | None = None
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    wd: float | None = None
    mu: float = 0.9
    v16: bool = False
    steps: int = 200
    batch: int | None = None
    seed: int = 0
    data: Path | None = None
    checkpoint_every: int = 0
    resume: Path | None = None
    progress: bool = True
    allow_nonfinite: bool = False

    def flags(self) -> dict[str, Any]:
        """What a checkpoint records and a resumed run must repeat: every option that changes the numbers, with its
        default resolved (resolve)."""
        return resolve({k: getattr(self, k) for k in FLAG_KEYS})
