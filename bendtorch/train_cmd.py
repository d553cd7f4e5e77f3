"""`bendtorch train`: train the `tiny` or `smol` Llama (impl.llama) with impl's float32 library and any optimizer.

    bendtorch train --model tiny --steps 200 --opt adamw --lr 3e-3 --out runs/tiny

tiny reads the shipped corpus (data/corpus.txt) as bytes; smol trains on random tokens from --seed (the issue's
data). Shows a progress bar with the step, the loss and tokens/s; writes `loss.png` (the loss curve) and
`summary.json` (configuration, losses, seconds, tokens/s) into --out. Every flag and the optimizer's configuration
are checked before any work starts. impl/ only: no PyTorch here.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
from decimal import Decimal
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus.txt"
OPTS = ("sgd", "momentum", "adam", "adamw", "adamw-bf16")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=("tiny", "smol"), default="tiny", help="which Llama (default tiny)")
    p.add_argument("--layers", type=int, default=None, help="override the number of layers (e.g. a 2-layer smol)")
    p.add_argument("--opt", choices=OPTS, default="adamw", help="optimizer (default adamw)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 3e-3 for tiny, 3e-4 for smol)")
    p.add_argument("--b1", type=float, default=0.9, help="Adam's beta1 (default 0.9)")
    p.add_argument("--b2", type=float, default=0.999, help="Adam's beta2 (default 0.999)")
    p.add_argument("--betas", type=float, nargs=2, default=None, metavar=("B1", "B2"), help="both betas at once")
    p.add_argument("--eps", type=float, default=1e-8, help="Adam's epsilon (default 1e-8)")
    p.add_argument("--wd", type=float, default=None, help="weight decay (default 0.01 for adamw, else 0)")
    p.add_argument("--mu", type=float, default=0.9, help="momentum (default 0.9)")
    p.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    p.add_argument("--batch", type=int, default=None, help="sequences per step (default 4 for tiny, 1 for smol)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and of the batches (default 0)")
    p.add_argument("--data", type=pathlib.Path, default=None, help=f"text file for tiny (default {CORPUS})")
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/train"), help="output directory")
    p.add_argument("--v16", action="store_true", help="adamw-bf16: pack the second moment as BF16 too")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K",
                   help="save the training state every K steps to OUT/ckpt_step<k>.bin (the seed's layout, "
                        "atomically), with a JSON sidecar; 0 = never (default)")
    p.add_argument("--resume", type=pathlib.Path, default=None, metavar="PATH",
                   help="continue from a checkpoint written by --checkpoint-every (the same flags otherwise); "
                        "the run ends on the same bits as one that never stopped")
    p.add_argument("--no-bar", action="store_true", help="no progress bar (a line every 10%% of the steps)")


def complement(b: float) -> float:
    """1 - b as the decimal the user meant (0.9 -> 0.1, 0.999 -> 0.001): Adam's c1, c2 written as their own
    constants (main.bend lines 273-275), not 1 - b rounded in float32."""
    return float(Decimal(1) - Decimal(repr(float(b))))


class Bad(ValueError):
    pass


def make_cfg(a: argparse.Namespace) -> Any:
    """The optimizer configuration from the flags, checked (impl.optim.cfg_check)."""
    from bendtorch.impl import optim

    lr = a.lr if a.lr is not None else (3e-3 if a.model == "tiny" else 3e-4)
    b1, b2 = (a.betas if a.betas is not None else (a.b1, a.b2))
    wd = a.wd if a.wd is not None else (0.01 if a.opt.startswith("adamw") else 0.0)
    for name, v in [("lr", lr), ("eps", a.eps), ("wd", wd), ("mu", a.mu), ("b1", b1), ("b2", b2)]:
        if not math.isfinite(v) or v < 0:
            raise Bad(f"--{name} must be a finite number >= 0, got {v}")
    if lr == 0:
        raise Bad("--lr must be > 0")
    for name, v in [("b1", b1), ("b2", b2)]:
        if not 0 <= v < 1:
            raise Bad(f"--{name} must be in [0, 1), got {v}")
    if a.opt == "sgd":
        return optim.CSGD(np.float32(lr))
    if a.opt == "momentum":
        return optim.CMomentum(np.float32(lr), np.float32(a.mu))
    consts = (np.float32(lr), np.float32(b1), np.float32(b2), np.float32(a.eps), np.float32(wd),
              np.float32(complement(b1)), np.float32(complement(b2)))
    if a.opt == "adamw-bf16":
        cfg: Any = optim.CAdamWBF16(*consts, v16=bool(a.v16))
    else:
        cfg = (optim.CAdamW if a.opt == "adamw" else optim.CAdam)(*consts)
    optim.cfg_check(cfg)
    return cfg


def run(a: argparse.Namespace) -> int:
    from bendtorch.impl.protocol import ConfigError

    try:
        if a.steps < 1:
            raise Bad(f"--steps must be >= 1, got {a.steps}")
        if a.batch is not None and a.batch < 1:
            raise Bad(f"--batch must be >= 1, got {a.batch}")
        if a.layers is not None and a.layers < 1:
            raise Bad(f"--layers must be >= 1, got {a.layers}")
        if a.checkpoint_every < 0:
            raise Bad(f"--checkpoint-every must be >= 0, got {a.checkpoint_every}")
        if a.v16 and a.opt != "adamw-bf16":
            raise Bad("--v16 applies to --opt adamw-bf16 only")
        start = 0
        if a.resume is not None:
            start = resume_step(a)
        cfg = make_cfg(a)
        data = a.data if a.data is not None else CORPUS
        if a.model == "tiny" and not data.is_file():
            raise Bad(f"no corpus at {data}")
    except (Bad, ConfigError) as e:
        print(f"bendtorch train: error: {e}", file=sys.stderr)
        return 2

    from bendtorch import impl
    from bendtorch.impl import llama
    from bendtorch.impl.train import train_new, train_step

    mcfg = llama.config(a.model, **({"layers": a.layers} if a.layers is not None else {}))
    b = a.batch if a.batch is not None else (4 if a.model == "tiny" else 1)
    model = llama.build(impl, mcfg, b)
    if a.model == "tiny":
        tokens = np.frombuffer(data.read_bytes(), dtype=np.uint8).astype(np.int64)
    else:
        tokens = np.random.default_rng(a.seed + 1).integers(0, mcfg.vocab, size=max(100_000, 4 * b * (mcfg.t + 1)),
                                                             dtype=np.int64)
    tr = train_new(model.layer, cfg, model.init(a.seed))
    if a.resume is not None:
        from bendtorch.impl.checkpoint import CheckpointError, train_restore
        try:
            tr = train_restore(model.layer, train_new(model.layer, cfg, model.layer.zeros()), a.resume)
        except CheckpointError as e:
            print(f"bendtorch train: error: {e}", file=sys.stderr)
            return 2
    a.out.mkdir(parents=True, exist_ok=True)
    ntok = b * mcfg.t
    losses: list[float] = []
    step_s: list[float] = []

    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(range(start + 1, a.steps + 1), desc=f"train {a.model}", unit="step", disable=a.no_bar,
               file=sys.stderr, initial=start, total=a.steps)
    t0 = time.perf_counter()
    for step in bar:
        # each step's batch depends on (seed, step) alone, so a resumed run draws the same batches
        x, y = llama.batch_at(tokens, b, mcfg.t, np.random.default_rng([a.seed, step]))
        s0 = time.perf_counter()
        tr = train_step(model.layer, model.loss, cfg, tr, x, y)
        step_s.append(time.perf_counter() - s0)
        losses.append(float(tr.loss))
        tps = ntok / step_s[-1]
        bar.set_postfix(loss=f"{losses[-1]:.4f}", tok_s=f"{tps:,.0f}")
        if a.no_bar and (step % max(1, a.steps // 10) == 0 or step == a.steps):
            print(f"step {step}/{a.steps}  loss {losses[-1]:.4f}  {tps:,.0f} tokens/s", file=sys.stderr)
        if a.checkpoint_every and step % a.checkpoint_every == 0:
            save_checkpoint(a, model, tr, step)
    total = time.perf_counter() - t0
    bar.close()
    from bendtorch.impl.checkpoint import params_save, train_save
    params_save(model.layer, a.out / "final_params.bin", tr.p)
    train_save(model.layer, a.out / "final_state.bin", tr)
    if not losses:
        print(f"bendtorch train: nothing to do: the checkpoint is at step {start}, --steps is {a.steps}",
              file=sys.stderr)
        return 0

    # the first steps include numba's compilation (or cache load): tokens/s is over the steps after the first
    steady = step_s[1:] if len(step_s) > 1 else step_s
    summary = {
        "model": a.model, "config": mcfg.__dict__, "batch": b, "tokens_per_step": ntok,
        "optimizer": {"opt": a.opt, **{k: float(v) for k, v in cfg.__dict__.items() if k != "v16"}},
        "seed": a.seed, "steps": a.steps, "first_step": start + 1, "losses": losses, "first_loss": losses[0], "final_loss": losses[-1],
        "mean_loss_last_10": float(np.mean(losses[-10:])), "seconds": total,
        "tokens_per_s": ntok * len(steady) / sum(steady), "step_seconds_median": float(np.median(steady)),
        "parameters": model.layer.count(),
    }
    (a.out / "summary.json").write_text(json.dumps(summary, indent=1))
    _plot(losses, a.out / "loss.png", f"{a.model} ({a.opt}, lr {float(cfg.lr):g}, batch {b}x{mcfg.t})")
    print(f"{a.model}: loss {losses[0]:.4f} -> {losses[-1]:.4f} (mean of last 10: {summary['mean_loss_last_10']:.4f})"
          f" in {len(losses)} steps, {total:.1f} s, {summary['tokens_per_s']:,.0f} tokens/s; wrote {a.out}/summary.json "
          f"and {a.out}/loss.png")
    return 0


SIDE_KEYS = ("model", "layers", "opt", "lr", "b1", "b2", "betas", "eps", "wd", "mu", "v16", "batch", "seed", "data")


def _flags(a: argparse.Namespace) -> dict[str, Any]:
    return {k: (str(getattr(a, k)) if isinstance(getattr(a, k), pathlib.Path) else getattr(a, k)) for k in SIDE_KEYS}


def save_checkpoint(a: argparse.Namespace, model: Any, tr: Any, step: int) -> None:
    """OUT/ckpt_step<k>.bin in the seed's layout, and OUT/ckpt_step<k>.json: the step and the flags it needs."""
    from bendtorch.impl.checkpoint import train_save, write_atomic
    path = a.out / f"ckpt_step{step}.bin"
    train_save(model.layer, path, tr)
    write_atomic(path.with_suffix(".json"), json.dumps({"step": step, "flags": _flags(a)}, indent=1).encode())


def resume_step(a: argparse.Namespace) -> int:
    """The step a checkpoint was written after, from its sidecar; the flags must be the ones it was written with."""
    side = a.resume.with_suffix(".json")
    if not a.resume.is_file():
        raise Bad(f"--resume: no checkpoint at {a.resume}")
    if not side.is_file():
        raise Bad(f"--resume: no sidecar {side} beside the checkpoint (written by --checkpoint-every)")
    meta = json.loads(side.read_text())
    differ = {k: (v, _flags(a)[k]) for k, v in meta.get("flags", {}).items() if _flags(a).get(k) != v}
    if differ:
        raise Bad("--resume: the checkpoint was written with other flags: " +
                  ", ".join(f"--{k} {w!r} (now {n!r})" for k, (w, n) in differ.items()))
    step = int(meta["step"])
    if step > a.steps:
        raise Bad(f"--resume: the checkpoint is at step {step}, past --steps {a.steps}")
    return step


def _plot(losses: list[float], path: pathlib.Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(1, len(losses) + 1), losses, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
