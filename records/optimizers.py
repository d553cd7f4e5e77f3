"""The optimizers, one record each, for every command, test, study and report to read.

An optimizer has a name on each axis: the command line's (`bendtorch train --opt adamw`), the one the op table, the
studies and PyTorch's comparison use ("AdamW"), the seed's configuration class (impl.optim's CAdamW, main.bend line
454) and PyTorch's class (torch.optim.AdamW), and whether the conformance targets (the laws held against impl,
PyTorch, JAX) have it. Classes are named by "module:attr" strings, resolved only when used (`resolve` in
bendtorch.records.studies), so reading the records imports nothing but the standard library."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Optimizer:
    """One optimizer.

    name: the command line's name (`--opt`); title: its name in the op table, the studies and their figures;
    config: the seed's configuration class; seed_line: main.bend's line of its OptCfg constructor; torch: PyTorch's
    class, with the options that make it this optimizer in torch_options (None: PyTorch has no counterpart);
    conformance: the conformance targets' `opt_steps` and `train` have it (bendtorch.targets.Opt's names); laws: the law
    families that state its properties (a test checks each family's laws use its configuration)."""

    name: str
    title: str
    config: str
    seed_line: int
    torch: str | None
    torch_options: str
    conformance: bool
    laws: tuple[str, ...] = ("optimizers", "checkpoints")


OPTIMIZERS: tuple[Optimizer, ...] = (
    Optimizer("sgd", "SGD", "bendtorch.impl.optim:CSGD", 451, "torch.optim:SGD", "", True),
    Optimizer("momentum", "Momentum", "bendtorch.impl.optim:CMomentum", 452, "torch.optim:SGD",
              "momentum=mu (no dampening, not Nesterov)", True),
    Optimizer("adam", "Adam", "bendtorch.impl.optim:CAdam", 453, "torch.optim:Adam",
              "weight_decay=wd (added to the gradient)", True),
    Optimizer("adamw", "AdamW", "bendtorch.impl.optim:CAdamW", 454, "torch.optim:AdamW",
              "weight_decay=wd (decoupled)", True),
    Optimizer("adamw-bf16", "AdamWBF16", "bendtorch.impl.optim:CAdamWBF16", 455, None,
              "none: PyTorch keeps its moments in float32, not as packed BF16", False),
)

NAMES: tuple[str, ...] = tuple(o.name for o in OPTIMIZERS)                    # the command line's choices
CONFORMANCE: tuple[str, ...] = tuple(o.name for o in OPTIMIZERS if o.conformance)
COMPARED: tuple[str, ...] = tuple(o.title for o in OPTIMIZERS if o.torch)      # compared with torch.optim


def optimizer(name: str) -> Optimizer:
    """The record of a command-line name or a title; a KeyError naming the choices for any other."""
    for o in OPTIMIZERS:
        if name in (o.name, o.title):
            return o
    raise KeyError(f"unknown optimizer {name!r}; one of {', '.join(NAMES)}")
