"""`bendtorch train`: train the `tiny` or `smol` Llama (impl.llama) with impl's float32 library and any optimizer.

    bendtorch train --model tiny --steps 200 --opt adamw --lr 3e-3 --out bendtorch-out/tiny

Every flag, the data and the output folder are checked before any work starts (a mistake is one line on stderr,
exit code 2): the paths (a regular file for --data, a checkpoint folder for --resume, no link or file of another type
where an output goes), the memory the run will take, the data a checkpoint was trained on. A NaN or infinite loss
stops the run with exit code 1, its last checkpoint kept; so does a failure while writing, with its reason. The work
is bendtorch.training's."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bendtorch.commands.args import UsageError, default_out, float_in, int_in, will_be_writable, writable_dir
from bendtorch.records import optimizers

OPTS = optimizers.NAMES  # the optimizer registry (records.optimizers): imports nothing heavy
MAX_LAYERS = 64  # bendtorch.training.options.MAX_LAYERS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=("tiny", "smol"), default="tiny", help="which Llama (default tiny)")
    p.add_argument("--layers", type=int_in(1, MAX_LAYERS), default=None,
                   help=f"override the number of layers, 1 to {MAX_LAYERS} (e.g. a 2-layer smol)")
    p.add_argument("--opt", choices=OPTS, default="adamw", help="optimizer (default adamw)")
    p.add_argument("--lr", type=float_in(0.0, 100.0, lo_open=True), default=None,
                   help="learning rate in (0, 100] (default 3e-3 for tiny, 3e-4 for smol)")
    p.add_argument("--b1", type=float_in(0.0, 1.0), default=0.9, help="Adam's beta1 in [0, 1) (default 0.9)")
    p.add_argument("--b2", type=float_in(0.0, 1.0), default=0.999, help="Adam's beta2 in [0, 1) (default 0.999)")
    p.add_argument("--betas", type=float_in(0.0, 1.0), nargs=2, default=None, metavar=("B1", "B2"),
                   help="both betas at once")
    p.add_argument("--eps", type=float_in(0.0, 1.0), default=1e-8, help="Adam's epsilon in [0, 1] (default 1e-8)")
    p.add_argument("--wd", type=float_in(0.0, 1e3), default=None,
                   help="weight decay in [0, 1000] (default 0.01 for adamw, else 0)")
    p.add_argument("--mu", type=float_in(0.0, 1.0), default=0.9, help="momentum in [0, 1) (default 0.9)")
    p.add_argument("--steps", type=int_in(1, 10**9), default=200, help="training steps (default 200)")
    p.add_argument("--batch", type=int_in(1, 4096), default=None,
                   help="sequences per step, 1 to 4096 (default 4 for tiny, 1 for smol)")
    p.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0,
                   help="seed of the weights and of the batches, >= 0 (default 0)")
    p.add_argument("--data", type=Path, default=None,
                   help="text file for tiny, its bytes the tokens (default: the shipped corpus)")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default bendtorch-out/train, or $BENDTORCH_OUT/train)")
    p.add_argument("--v16", action="store_true", help="adamw-bf16: pack the second moment as BF16 too")
    p.add_argument("--checkpoint-every", type=int_in(0), default=0, metavar="K",
                   help="save a verified checkpoint every K steps to OUT/ckpt_step<k>/ (state.bin in the seed's "
                        "layout and manifest.json, published together); 0 = never (default)")
    p.add_argument("--resume", type=Path, default=None, metavar="DIR",
                   help="continue from a checkpoint folder written by this command (the same flags otherwise); "
                        "the run ends on the same bits as one that never stopped")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="train on after a NaN or infinite loss (by default the run stops with exit code 1)")
    p.add_argument("--no-bar", action="store_true", help="no progress bar (a line every 10%% of the steps)")


def run(a: argparse.Namespace) -> int:
    b1, b2 = a.betas if a.betas is not None else (a.b1, a.b2)
    a.out = default_out(a.out, "train")
    if a.v16 and a.opt != "adamw-bf16":
        raise UsageError("--v16 applies to --opt adamw-bf16 only")
    from bendtorch.records.durable import OutputError
    from bendtorch.records.files import check_regular, shown

    if a.data is not None:
        check_regular(a.data, "--data ", error=UsageError)
    if a.resume is not None and not os.path.lexists(a.resume):
        raise UsageError(f"--resume {shown(a.resume)}: no checkpoint there")
    will_be_writable(a.out)
    from bendtorch.impl.kernels import warm

    warm.start(f"train-{a.model}")  # on a cold cache, a second process compiles the model's kernels too
    from bendtorch.training.options import NonFiniteLoss, TrainError, TrainOptions
    from bendtorch.training.run import prepare, train

    opts = TrainOptions(out=a.out, model=a.model, layers=a.layers, opt=a.opt, lr=a.lr, b1=b1, b2=b2, eps=a.eps,
                        wd=a.wd, mu=a.mu, v16=a.v16, steps=a.steps, batch=a.batch, seed=a.seed, data=a.data,
                        checkpoint_every=a.checkpoint_every, resume=a.resume, progress=not a.no_bar,
                        allow_nonfinite=a.allow_nonfinite)
    prepared = None
    try:
        prepared = prepare(opts)
        for w in prepared.warnings:
            print(f"bendtorch train: warning: {w}", file=sys.stderr)
        writable_dir(a.out)
        summary = train(prepared)
    except TrainError as e:
        raise UsageError(str(e)) from None
    except NonFiniteLoss as e:
        print(f"bendtorch train: error: {e}", file=sys.stderr)
        return 1
    except OutputError as e:  # a link or a file of another type took an output's name during the run
        print(f"bendtorch train: error: {e}", file=sys.stderr)
        return 1
    except MemoryError:  # past the estimate: the machine's memory went to something else meanwhile
        est = prepared.memory.get("estimate_bytes", 0) if prepared is not None else 0
        print(f"bendtorch train: error: out of memory during the run (estimated {est >> 20} MiB)", file=sys.stderr)
        return 1
    except OSError as e:  # the disk filled or the folder went away mid-run: the file and the reason, no traceback
        print(f"bendtorch train: error: {shown(e.filename or a.out)}: {e.strerror or e}", file=sys.stderr)
        return 1
    losses = summary["losses"]
    assert prepared is not None
    if not losses:
        print(f"bendtorch train: nothing to do: the checkpoint is at step {prepared.start}, --steps is {a.steps}",
              file=sys.stderr)
        return 0
    out = shown(a.out)
    print(f"{a.model}: loss {losses[0]:.4f} -> {losses[-1]:.4f} (mean of the last {summary['mean_loss_last_steps']}:"
          f" {summary['mean_loss_last']:.4f}) in steps {summary['first_step']}-{summary['last_step']}, "
          f"{summary['seconds']:.1f} s, {summary['tokens_per_s']:,.0f} tokens/s over {summary['timed_steps']} timed "
          f"step(s); wrote {out}/summary.json and {out}/loss.png")
    return 0
