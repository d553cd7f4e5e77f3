"""A training run of the `tiny` or `smol` Llama (impl.llama) with impl's float32 library: what `bendtorch train` does.

Every step's batch depends on (seed, step) alone, so a run resumed from its checkpoint draws the same batches and, on
the same data (bound by its SHA-256 in the checkpoint), ends on the same bits as one that never stopped. Writes into
the output folder: `ckpt_step<k>/` every k steps and `final_state/` at the end (verified checkpoints,
impl.checkpoint_folder.save_checkpoint), `final_params.bin` (the seed's Params.save), `summary.json` and `loss.png`,
each atomically and never through a link (records.durable).

Everything a run needs is checked in `prepare`, before anything is written: the configuration's numbers, the output
folder's planned files (no link, nothing of another type in their place), the memory the run will take (estimated
from the model's shape, before any allocation), the data (a regular file, long enough for one batch), the resume
checkpoint (verified in full and restored: its flags, its data's digest, its state). `train` then holds the output
folder's lock for the whole run (temporary files of an earlier killed run are removed once it is held). A non-finite
loss stops the run (NonFiniteLoss; the last checkpoint stays) unless `allow_nonfinite`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import numpy.typing as npt

from bendtorch.records import files
from bendtorch.training import memory
from bendtorch.training.data import describe, random_count, random_tokens, read_corpus
from bendtorch.training.data import data_record as make_record
from bendtorch.training.options import (MAX_LAYERS, OPTS, SUMMARY_SCHEMA_VERSION, NonFiniteLoss, TrainError,
                                        TrainOptions, optimizer_config, resolve)

OUT_FILES = ("summary.json", "loss.png", "final_params.bin")
OUT_FOLDERS = ("final_state",)


@dataclass
class Prepared:
    """A checked run: the options, the optimizer's configuration, the model and its shape, the tokens and their
    record, the restored state and its step (None and 0 for a fresh run), the memory estimate, warnings to print."""

    opts: TrainOptions
    cfg: Any
    mcfg: Any
    batch: int
    tokens: npt.NDArray[np.int64]
    data: dict[str, Any]
    model: Any = None
    state: Any = None
    start: int = 0
    memory: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def planned_outputs(o: TrainOptions, start: int) -> tuple[list[str], list[str]]:
    """(files, folders) the run will write into o.out: the summary, plot and parameters, the folder's lock, the
    final checkpoint, and every ckpt_step<k> already there that this run will replace."""
    from bendtorch.impl.checkpoint_folder import LOCK_FILE

    folders = list(OUT_FOLDERS)
    if o.checkpoint_every and os.path.isdir(o.out):
        for name in sorted(os.listdir(o.out)):
            m = re.fullmatch(r"ckpt_step([0-9]+)", name)
            if m and start < int(m.group(1)) <= o.steps and int(m.group(1)) % o.checkpoint_every == 0:
                folders.append(name)
    return [*OUT_FILES, LOCK_FILE], folders


def _check_numbers(o: TrainOptions) -> None:
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
    if o.model != "tiny" and o.data is not None:
        raise TrainError("--data applies to --model tiny only (smol trains on random tokens from --seed)")


def prepare(o: TrainOptions) -> Prepared:
    """Every check, before anything is written: numbers, the output folder's planned files, memory, data, the
    checkpoint (verified and restored). TrainError (one line) on the first that fails."""
    from bendtorch import impl
    from bendtorch.impl import llama
    from bendtorch.impl.optstate import ConfigError
    from bendtorch.records.durable import OutputError, check_targets

    import psutil

    held = psutil.Process().memory_info()  # what the process holds before the run allocates: the record's baseline
    _check_numbers(o)
    f = o.flags()
    try:
        cfg = optimizer_config(o.opt, f["lr"], o.b1, o.b2, o.eps, f["wd"], o.mu, o.v16)
    except ConfigError as e:
        raise TrainError(f"--{e}") from None  # its messages start with the field's name
    try:
        mcfg = llama.config(o.model, layers=f["layers"])
    except ValueError as e:
        raise TrainError(f"--model {o.model}: {e}") from None
    b = int(f["batch"])
    try:
        check_targets(o.out, *planned_outputs(o, 0))
    except OutputError as e:
        raise TrainError(str(e)) from None
    request = " ".join(f"--{k} {v}" for k, v in (("model", o.model), ("layers", o.layers), ("batch", o.batch))
                       if v is not None)
    mem: dict[str, Any] = {"baseline_rss_bytes": int(held.rss), "baseline_vm_bytes": int(held.vms)}

    def fits(data_bytes: int) -> None:
        parts = memory.estimate(mcfg, b, o.opt, o.v16, data_bytes, o.resume is not None)
        mem.update(memory.check(parts, request))

    if o.model == "tiny":
        tokens, record = read_corpus(o.data, lambda size: fits(9 * size))
        need = mcfg.t + 2  # llama.batch_at: a window of t + 1 tokens at an offset in [0, size - t - 1)
        if tokens.size < need:
            raise TrainError(f"{describe(o.data)}: {tokens.size} bytes, one batch needs at least {need} (a window "
                             f"of t + 1 = {mcfg.t + 1} tokens and one offset)")
    else:
        fits(8 * random_count(b, mcfg.t))
        tokens = random_tokens(o.seed, mcfg.vocab, b, mcfg.t)
        record = make_record(tokens, None, f"random tokens of --seed {o.seed}")
    p = Prepared(o, cfg, mcfg, b, tokens, record, model=llama.build(impl, mcfg, b), memory=mem)
    if o.resume is not None:
        _restore(p)
    return p


def _restore(p: Prepared) -> None:
    """Verify and restore p.opts.resume: its manifest, its flags and its data (both against this run's), then the
    state itself (impl.checkpoint_folder.load_checkpoint). A version 1 manifest, which records the data's path but
    not its digest, is read with a warning, its path compared as it was written."""
    from bendtorch.impl.checkpoint import CheckpointError
    from bendtorch.impl.checkpoint_folder import MANIFEST_FILE, check_data, check_flags, load_checkpoint, read_manifest

    o = p.opts
    assert o.resume is not None
    try:
        folder, body = read_manifest(o.resume)
        mpath = os.path.join(folder, MANIFEST_FILE)
        saved = dict(body["flags"])
        if body["version"] == 1:
            old = saved.pop("data", None)
            given = None if o.data is None else str(o.data)
            if old != given:
                raise CheckpointError(f"{files.shown(mpath)}: written with other flags: --data {old!r:.200} (now "
                                      f"{given!r:.200})")
            p.warnings.append(f"--resume {files.shown(o.resume)}: a version 1 manifest, which records the data's "
                              f"path but not its digest: {describe(o.data)} is not verified to be the data it was "
                              f"trained on")
        check_flags(mpath, resolve(saved), o.flags())
        if body["version"] >= 2:
            check_data(mpath, body, p.data)
        p.state, p.start = load_checkpoint(p.model.layer, p.cfg, o.resume, allow_nonfinite=o.allow_nonfinite)
    except CheckpointError as e:
        raise TrainError(f"--resume: {e}") from None
    if p.start > o.steps:
        raise TrainError(f"--resume: the checkpoint is at step {p.start}, past --steps {o.steps}")


def train(p: Prepared) -> dict[str, Any]:
    """Run a prepared training: lock the output folder, train, save. Returns the summary (also written to
    summary.json). TrainError before any step; NonFiniteLoss on a NaN or infinite loss unless allow_nonfinite;
    records.durable.OutputError if a link or a file of another type took an output's name during the run."""
    from bendtorch.impl.checkpoint_folder import FolderInUse, hold_folder

    o = p.opts
    o.out.mkdir(parents=True, exist_ok=True)
    try:
        with hold_folder(o.out):
            return _train_locked(p)
    except FolderInUse as e:
        raise TrainError(f"--out {e}") from None


def _peak_vm() -> int | None:
    """The most address space the process has held (Linux's VmPeak), or None where the system does not say."""
    try:
        with open("/proc/self/status", "rb") as f:
            line = next((x for x in f.read(1 << 16).splitlines() if x.startswith(b"VmPeak:")), None)
        return None if line is None else int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB elsewhere


@contextlib.contextmanager
def compile_notice(show: bool, after_s: float = 1.0) -> Iterator[None]:
    """While the block runs (the first training step: numba compiles impl's kernels on first use, then loads them
    from its cache), a line on stderr with the seconds so far, once the block has taken after_s: a fresh install's
    first step otherwise sits silent for tens of seconds. The kernels and their bits are the same either way."""
    done = threading.Event()

    def tick() -> None:
        if done.wait(after_s):
            return
        from tqdm import tqdm
        with tqdm(desc="compiling impl's kernels (once; then cached)", bar_format="{desc}: {elapsed}",
                  file=sys.stderr) as bar:
            bar.start_t -= after_s  # the seconds since the block began
            while not done.wait(0.5):
                bar.refresh()
    t = threading.Thread(target=tick, daemon=True) if show else None
    if t is not None:
        t.start()
    try:
        yield
    finally:
        done.set()
        if t is not None:
            t.join()


def _train_locked(p: Prepared) -> dict[str, Any]:
    from tqdm import tqdm

    from bendtorch.impl import llama
    from bendtorch.impl.checkpoint import params_save
    from bendtorch.impl.checkpoint_folder import remove_stale, save_checkpoint
    from bendtorch.impl.train import train_new, train_step

    o, cfg, mcfg, b, model = p.opts, p.cfg, p.mcfg, p.batch, p.model
    removed = remove_stale(o.out)
    if removed:
        print(f"removed {len(removed)} temporary file(s) left by an earlier run in {files.shown(o.out)}",
              file=sys.stderr)
    tr = p.state if p.state is not None else train_new(model.layer, cfg, model.init(o.seed))
    p.state = None
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
        with compile_notice(o.progress and not step_s):
            tr = train_step(model.layer, model.loss, cfg, tr, x, y)
        step_s.append(time.perf_counter() - s0)
        losses.append(float(tr.loss))
        if not math.isfinite(losses[-1]) and not o.allow_nonfinite:
            bar.close()
            kept = (f"the last checkpoint, {files.shown(last_ckpt)}, is kept" if last_ckpt is not None
                    else "no checkpoint written")
            raise NonFiniteLoss(f"the loss is {losses[-1]} at step {step}: stopped, nothing saved for this step; "
                                f"{kept} (a smaller --lr may help; --allow-nonfinite trains on)")
        tps = ntok / step_s[-1]
        bar.set_postfix(loss=f"{losses[-1]:.4f}", tok_s=f"{tps:,.0f}")
        if not o.progress and (step % max(1, o.steps // 10) == 0 or step == o.steps):
            print(f"step {step}/{o.steps}  loss {losses[-1]:.4f}  {tps:,.0f} tokens/s", file=sys.stderr)
        if o.checkpoint_every and step % o.checkpoint_every == 0:
            last_ckpt = Path(save_checkpoint(model.layer, cfg, tr, o.out / f"ckpt_step{step}", step, o.flags(),
                                             p.data))
    total = time.perf_counter() - t0
    bar.close()
    params_save(model.layer, o.out / "final_params.bin", tr.p)
    save_checkpoint(model.layer, cfg, tr, o.out / "final_state", o.steps, o.flags(), p.data)
    summary = _summary(p, losses, step_s, total)
    if losses:
        from bendtorch.records.durable import write_json
        write_json(o.out / "summary.json", summary)
        plot_losses(losses, o.out / "loss.png", p.start + 1,
                    f"{o.model} ({o.opt}, lr {float(cfg.lr):g}, batch {b}x{mcfg.t})")
    return summary


def _summary(p: Prepared, losses: list[float], step_s: list[float], total: float) -> dict[str, Any]:
    """summary.json: what was run and what it gave, every figure over the steps this process ran (first_step to
    last_step: a resumed run's, a short run's); the rate over the steps timed after the first (which includes the
    kernels' compilation or cache load) when there are two or more."""
    from bendtorch.records.machine import machine

    o, b, mcfg = p.opts, p.batch, p.mcfg
    ntok = b * mcfg.t
    s: dict[str, Any] = {
        "schema_version": SUMMARY_SCHEMA_VERSION, "model": o.model, "config": dict(mcfg.__dict__), "batch": b,
        "tokens_per_step": ntok,
        "optimizer": {"opt": o.opt, **{k: float(v) for k, v in p.cfg.__dict__.items() if k != "v16"}},
        "seed": o.seed, "steps": o.steps, "first_step": p.start + 1, "last_step": p.start + len(losses),
        "steps_run": len(losses), "losses": losses, "parameters": p.model.layer.count(), "seconds": total,
        "data": p.data,
        "memory": {**p.memory, "peak_rss_bytes": _peak_rss(), "peak_vm_bytes": _peak_vm()},
        "machine": machine()}
    if losses:
        timed = step_s[1:] if len(step_s) > 1 else step_s
        k = min(10, len(losses))
        s.update({"first_loss": losses[0], "final_loss": losses[-1], "mean_loss_last": float(np.mean(losses[-k:])),
                  "mean_loss_last_steps": k, "timed_steps": len(timed),
                  "tokens_per_s": ntok * len(timed) / sum(timed), "step_seconds_median": float(np.median(timed))})
    return s


def plot_losses(losses: list[float], path: Path, first: int, title: str) -> None:
    """The losses by step (from step `first`) as loss.png, written atomically (records.durable.save_figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bendtorch.records.durable import save_figure

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(first, first + len(losses)), losses, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
