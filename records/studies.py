"""The studies behind the findings, one record each, for `bendtorch study NAME` (bendtorch/commands/study.py), the
tests and the docs to read.

A study is a plain function of the library with typed keyword arguments that returns a JSON-able dict (its figures).
Its record names that function and every option it takes (type, default, bounds, help), the file its result is
written to (committed under reports/results/findings/), the function that draws its figure and the one that prints
its summary. Functions are named by "module:attr" strings and imported only when a study runs (`resolve`), so
reading the records imports nothing heavier than the standard library: `bendtorch study --help` lists the studies
without loading numba or torch."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

Value = int | float | bool | str | None | tuple[int, ...] | tuple[float, ...]


@dataclass(frozen=True)
class Option:
    """One keyword argument of a study's function, as `--name` on the command line (underscores as dashes).

    kind: "int" or "float" (within [lo, hi]; (lo, hi] with lo_open; no bound where None), "flag" (False unless
    given), or "choice" (one of choices). many: one or more values, passed as a tuple. default: what the function
    takes when the option is not given (None: the function decides, and the option is left out of the command)."""

    name: str
    kind: Literal["int", "float", "flag", "choice"]
    default: Value
    help: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    many: bool = False
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Study:
    """A study: `run(**options) -> dict` ("module:attr"; with progress=callable(str) too where `progress`), its
    options, the file name of its result, `plot(result, path)` that writes its figure as PNG (beside the result, with
    the result's stem), `text(result) -> str` that prints its summary, and the options of a quick run (seconds to a
    minute: what the tests and a first look use)."""

    name: str
    description: str
    run: str
    options: tuple[Option, ...]
    result: str
    plot: str | None = None
    text: str | None = None
    progress: bool = False
    quick: tuple[str, ...] = ()

    @property
    def figure(self) -> str | None:
        """The figure's file name, or None for a study without one."""
        return None if self.plot is None else self.result.rsplit(".", 1)[0] + ".png"


def resolve(spec: str) -> Any:
    """The object a "module:attr" string names, imported now."""
    module, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


SEEDS = "seeds 0 .. SEEDS-1"

STUDIES: tuple[Study, ...] = (
    Study("orders", "where the seed's left-to-right sums and float32 angles lose to PyTorch: Softmax, cross-entropy "
          "and RoPE errors at scale",
          "bendtorch.reference.findings.orders:study",
          (Option("small", "flag", False, "the notebook's small sizes (widths to 8192, n to 2048, 3 seeds, positions "
                                          "to 2048) instead of the full ones"),),
          "orders.json", plot="bendtorch.reference.findings.orders:plot", quick=("--small",)),
    Study("llama_drift", "the tiny Llama's drift from float64 in impl and PyTorch float32 over AdamW steps, over seeds",
          "bendtorch.reference.llama_drift:run",
          (Option("seeds", "int", 8, SEEDS, lo=1),
           Option("steps", "int", 100, "AdamW steps", lo=1),
           Option("lr", "float", 3e-3, "learning rate", lo=0.0, hi=1.0, lo_open=True)),
          "llama_drift.json", plot="bendtorch.reference.llama_drift:plot", text="bendtorch.reference.llama_drift:text",
          quick=("--seeds", "2", "--steps", "3")),
    Study("adam_c2", "Adam's c2 settled: every pairing of the c2 in v with the q2 of the bias correction, against "
          "float64 and PyTorch",
          "bendtorch.reference.adam_c2:run",
          (Option("seeds", "int", 10, SEEDS, lo=1),
           Option("lrs", "float", (1e-3, 3e-3), "learning rates", lo=0.0, hi=1.0, lo_open=True, many=True),
           Option("steps", "int", 100, "AdamW steps", lo=1)),
          "adam_c2.json", plot="bendtorch.reference.adam_c2:plot", text="bendtorch.reference.adam_c2:text",
          progress=True, quick=("--seeds", "2", "--lrs", "1e-3", "--steps", "3")),
    Study("bf16_drift", "AdamW with packed BF16 moments: the tiny Llama's drift from float64 beside float32 moments "
          "and PyTorch, over seeds",
          "bendtorch.reference.bf16_drift:run",
          (Option("seeds", "int", 8, SEEDS, lo=1),
           Option("steps", "int", 100, "AdamW steps", lo=1),
           Option("lr", "float", 1e-3, "learning rate", lo=0.0, hi=1.0, lo_open=True)),
          "bf16_drift.json", plot="bendtorch.reference.bf16_drift:plot", text="bendtorch.reference.bf16_drift:text",
          progress=True, quick=("--seeds", "2", "--steps", "3")),
    Study("two_truths", "both errors of every op whose float32 constants differ from the decimals meant: against the "
          "decimal and against the program's constants",
          "bendtorch.reference.findings.two_truths:survey",
          (Option("full", "flag", False, "every shape and seed of each op (default: the first)"),),
          "two_truths.json"),
    Study("invariance", "batch-size and thread-count invariance of impl's and PyTorch's operations (impl's threads "
          "compare only with NUMBA_NUM_THREADS >= 2)",
          "bendtorch.reference.findings.invariance:run",
          (Option("max_batch", "int", 64, "largest batch size", lo=1),),
          "invariance.json", plot="bendtorch.reference.findings.invariance:plot", quick=("--max-batch", "4")),
    Study("optimizers", "why impl's optimizer steps differ from torch.optim's, element by element: FMA, float64 "
          "scalars and MKL's sqrt, each shown by an emulation",
          "bendtorch.reference.optim_study:run", (), "optimizers.json",
          text="bendtorch.reference.optim_study:text"),
    Study("proofs", "the index laws of the kernels proved with z3 for every size within their bounds",
          "bendtorch.laws.proofs:run",
          (Option("timeout", "float", 60.0, "seconds z3 may take per proof", lo=0.0, hi=3600.0, lo_open=True),),
          "proofs.json", text="bendtorch.laws.proofs:text"),
    Study("matmul", "impl's blocked-tree matmul against PyTorch's: ulps against the float64 product per shape and "
          "block length, and GFLOP/s",
          "bendtorch.bench.matmul:run",
          (Option("kb", "int", (16,), "block lengths of impl's order to measure (impl's own is 16)", lo=1, hi=4096,
                  many=True),
           Option("accuracy_only", "flag", False, "the ulps alone, without the timings")),
          "matmul.json", text="bendtorch.bench.matmul:text", quick=("--accuracy-only",)),
    Study("libm_step", "the cost of impl's portable float32 functions against the C library's: a training step, "
          "each function alone and cross-entropy",
          "bendtorch.bench.libm_step:measure",
          (Option("rounds", "int", 3, "alternated process pairs (portable, C library)", lo=1),
           Option("repeats", "int", 10, "timed steps per process", lo=1)),
          "libm_step.json", text="bendtorch.bench.libm_step:text", quick=("--rounds", "1", "--repeats", "2")),
    Study("state_bytes", "the optimizer state's bytes after one AdamW step: float32 moments against packed BF16 m, "
          "and m and v",
          "bendtorch.bench.state_bytes:measure",
          (Option("model", "choice", "smol", "which Llama", choices=("tiny", "smol")),
           Option("layers", "int", None, "override the model's layer count (default: the model's own)", lo=1,
                  hi=64)),
          "state_bytes.json", text="bendtorch.bench.state_bytes:text", quick=("--model", "tiny")),
)

BY_NAME: dict[str, Study] = {s.name: s for s in STUDIES}


def get(name: str) -> Study:
    """The study named `name`; KeyError with one line naming the studies otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no study named {name!r}; the studies are {', '.join(BY_NAME)}") from None
