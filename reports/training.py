"""A training run of the `tiny` or `smol` Llama (impl.llama) with impl's float32 library: what `bendtorch train` does.

tiny reads a text file as bytes (the shipped corpus by default, `bendtorch.data.corpus_tokens`); smol trains on random
tokens drawn from the seed. Every step's batch depends on (seed, step) alone, so a run resumed from its checkpoint
draws the same batches and ends on the same bits as one that never stopped. Writes into the output folder:
`ckpt_step<k>/` every k steps and `final_state/` at the end (verified checkpoints, impl.checkpoint.save_checkpoint),
`final_params.bin` (the seed's Params.save), `summary.json` and `loss.png`.

Everything a run needs is checked in `prepare`, before any model is built: the configuration's numbers, the data
(long enough for one batch), the resume checkpoint (verified in full), the output folder (writable, not in use by
another run: a file lock held for the whole run; temporary files of an earlier killed run are removed once the lock
is held). A non-finite loss stops the run (NonFiniteLoss; the last checkpoint stays) unless `allow_nonfinite`.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

LOCK_FILE = ".bendtorch.lock"
SUMMARY_SCHEMA_VERSION = 1  # summary.json's layout (records/schemas/summary.schema.json)
MAX_LAYERS = 64  # smol has 30; more would only build for minutes before the first step
OPTS = ("sgd", "momentum", "adam", "adamw", "adamw-bf16")


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


class TrainError(ValueError):
    """A run that cannot start: a bad number, data too short, a checkpoint that does not fit, a folder in use."""


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite; the run stopped with its last checkpoint kept."""


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
        """What a checkpoint records and a resumed run must repeat: every option that changes the numbers."""
        keep = ("model", "layers", "opt", "lr", "b1", "b2", "eps", "wd", "mu", "v16", "batch", "seed", "data")
        d = asdict(self)
        return {k: (str(d[k]) if isinstance(d[k], Path) else d[k]) for k in keep}


@dataclass
class Prepared:
    """A checked run: the options, the optimizer's configuration, the model's shape, the tokens, where to start."""

    opts: TrainOptions
    cfg: Any
    mcfg: Any
    batch: int
    tokens: npt.NDArray[np.int64]
    start: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def prepare(o: TrainOptions) -> Prepared:
    """Every check that needs no model: numbers, data, the model's configuration, the checkpoint's manifest."""
    from bendtorch.impl import llama
    from bendtorch.impl.optstate import ConfigError

    if o.model not in ("tiny", "smol"):
        raise TrainError(f"--model {o.model!r}: one of tiny, smol")
    if o.opt not in OPTS:
        raise TrainError(f"--opt {o.opt!r}: one of {', '.join(OPTS)}")
    for name, v, lo in (("steps", o.steps, 1), ("batch", o.batch, 1), ("layers", o.layers, 1), ("seed", o.seed, 0),
                        ("checkpoint-every", o.checkpoint_every, 0)):
        if v is not None and v < lo:
            raise TrainError(f"--{name} must be >= {lo}, got {v}")
    if o.layers is not None and o.layers > MAX_LAYERS:
        raise TrainError(f"--layers must be <= {MAX_LAYERS}, got {o.layers}")
    lr = o.lr if o.lr is not None else (3e-3 if o.model == "tiny" else 3e-4)
    wd = o.wd if o.wd is not None else (0.01 if o.opt.startswith("adamw") else 0.0)
    try:
        cfg = optimizer_config(o.opt, lr, o.b1, o.b2, o.eps, wd, o.mu, o.v16)
    except ConfigError as e:
        raise TrainError(f"--{e}") from None  # its messages start with the field's name
    try:
        mcfg = llama.config(o.model, **({"layers": o.layers} if o.layers is not None else {}))
    except ValueError as e:
        raise TrainError(f"--model {o.model}: {e}") from None
    b = o.batch if o.batch is not None else (4 if o.model == "tiny" else 1)
    need = mcfg.t + 2  # llama.batch_at: a window of t + 1 tokens at an offset in [0, size - t - 1)
    if o.model == "tiny":
        if o.data is None:
            from bendtorch.data import corpus_tokens
            tokens = corpus_tokens()
        else:
            if not o.data.is_file():
                raise TrainError(f"--data {o.data}: no such file")
            try:
                raw = o.data.read_bytes()
            except OSError as e:
                raise TrainError(f"--data {o.data}: cannot read: {e.strerror}") from None
            tokens = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
        if tokens.size < need:
            raise TrainError(f"--data {o.data if o.data is not None else 'corpus'}: {tokens.size} bytes, one batch "
                             f"needs at least {need} (a window of t + 1 = {mcfg.t + 1} tokens and one offset)")
    else:
        if o.data is not None:
            raise TrainError("--data applies to --model tiny only (smol trains on random tokens from --seed)")
        tokens = np.random.default_rng(o.seed + 1).integers(0, mcfg.vocab, size=max(100_000, 4 * b * (mcfg.t + 1)),
                                                            dtype=np.int64)
    p = Prepared(o, cfg, mcfg, b, tokens)
    if o.resume is not None:
        import os

        from bendtorch.impl.checkpoint import (MANIFEST_FILE, CheckpointError, check_flags, read_manifest,
                                               verify_bin)
        try:
            folder, body = read_manifest(o.resume)
            check_flags(os.path.join(folder, MANIFEST_FILE), body, o.flags())
            verify_bin(folder, body)
        except CheckpointError as e:
            raise TrainError(f"--resume: {e}") from None
        p.start = int(body["step"])
        if p.start > o.steps:
            raise TrainError(f"--resume: the checkpoint is at step {p.start}, past --steps {o.steps}")
    return p


def train(p: Prepared) -> dict[str, Any]:
    """Run a prepared training: lock the output folder, restore the checkpoint (verified in full), train, save.
    Returns the summary (also written to summary.json). TrainError before any step; NonFiniteLoss on a NaN or
    infinite loss unless allow_nonfinite."""
    from filelock import FileLock, Timeout

    o = p.opts
    o.out.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(o.out / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise TrainError(f"--out {o.out}: in use by another run (lock {o.out / LOCK_FILE} is held)") from None
    try:
        return _train_locked(p)
    finally:
        lock.release()


def _train_locked(p: Prepared) -> dict[str, Any]:
    from tqdm import tqdm

    from bendtorch import impl
    from bendtorch.impl import llama
    from bendtorch.impl.checkpoint import CheckpointError, load_checkpoint, params_save, remove_stale, save_checkpoint
    from bendtorch.records.durable import write_json
    from bendtorch.impl.train import train_new, train_step

    o, cfg, mcfg, b = p.opts, p.cfg, p.mcfg, p.batch
    removed = remove_stale(o.out)
    if removed:
        print(f"removed {len(removed)} temporary file(s) left by an earlier run in {o.out}", file=sys.stderr)
    model = llama.build(impl, mcfg, b)
    if o.resume is not None:
        try:
            tr, _ = load_checkpoint(model.layer, cfg, o.resume, flags=o.flags(), allow_nonfinite=o.allow_nonfinite)
        except CheckpointError as e:
            raise TrainError(f"--resume: {e}") from None
    else:
        tr = train_new(model.layer, cfg, model.init(o.seed))
    ntok = b * mcfg.t
    losses: list[float] = []
    step_s: list[float] = []
    last_ckpt: Path | None = o.resume
    bar = tqdm(range(p.start + 1, o.steps + 1), desc=f"train {o.model}", unit="step", disable=not o.progress,
               file=sys.stderr, initial=p.start, total=o.steps)
    t0 = time.perf_counter()
    for step in bar:
        x, y = llama.batch_at(p.tokens, b, mcfg.t, np.random.default_rng([o.seed, step]))
        s0 = time.perf_counter()
        tr = train_step(model.layer, model.loss, cfg, tr, x, y)
        step_s.append(time.perf_counter() - s0)
        losses.append(float(tr.loss))
        if not math.isfinite(losses[-1]) and not o.allow_nonfinite:
            bar.close()
            kept = f"the last checkpoint, {last_ckpt}, is kept" if last_ckpt is not None else "no checkpoint written"
            raise NonFiniteLoss(f"the loss is {losses[-1]} at step {step}: stopped, nothing saved for this step; "
                                f"{kept} (a smaller --lr may help; --allow-nonfinite trains on)")
        tps = ntok / step_s[-1]
        bar.set_postfix(loss=f"{losses[-1]:.4f}", tok_s=f"{tps:,.0f}")
        if not o.progress and (step % max(1, o.steps // 10) == 0 or step == o.steps):
            print(f"step {step}/{o.steps}  loss {losses[-1]:.4f}  {tps:,.0f} tokens/s", file=sys.stderr)
        if o.checkpoint_every and step % o.checkpoint_every == 0:
            last_ckpt = Path(save_checkpoint(model.layer, cfg, tr, o.out / f"ckpt_step{step}", step, o.flags()))
    total = time.perf_counter() - t0
    bar.close()
    params_save(model.layer, o.out / "final_params.bin", tr.p)
    save_checkpoint(model.layer, cfg, tr, o.out / "final_state", o.steps, o.flags())
    from bendtorch.records.machine import machine
    summary: dict[str, Any] = {"schema_version": SUMMARY_SCHEMA_VERSION, "model": o.model, "config": dict(mcfg.__dict__), "batch": b, "tokens_per_step": ntok,
                               "optimizer": {"opt": o.opt, **{k: float(v) for k, v in cfg.__dict__.items()
                                                              if k != "v16"}},
                               "seed": o.seed, "steps": o.steps, "first_step": p.start + 1, "losses": losses,
                               "parameters": model.layer.count(), "seconds": total, "machine": machine()}
    if losses:
        steady = step_s[1:] if len(step_s) > 1 else step_s  # the first step includes numba's compile or cache load
        summary.update({"first_loss": losses[0], "final_loss": losses[-1],
                        "mean_loss_last_10": float(np.mean(losses[-10:])),
                        "tokens_per_s": ntok * len(steady) / sum(steady),
                        "step_seconds_median": float(np.median(steady))})
        write_json(o.out / "summary.json", summary)
        plot_losses(losses, o.out / "loss.png", f"{o.model} ({o.opt}, lr {float(cfg.lr):g}, batch {b}x{mcfg.t})")
    return summary


def plot_losses(losses: list[float], path: Path, title: str) -> None:
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
    from bendtorch.records.durable import save_figure
    save_figure(fig, path, dpi=120)
