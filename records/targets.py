"""The conformance targets' records, and how a target is named on the command line.

A target is a library held to the conformance laws (bendtorch.laws.test_targets) through an adapter
(bendtorch.targets.*). Each built-in target is one `TargetRecord` in RECORDS, read by every command, test and report:
its name, the adapter's maker as a "module:attr" string (resolved lazily, above this layer), a note, the libraries it
measures (the names `records.machine.probe` knows, so a laws document's machine record carries their version, build
and dispatch level), the pip extra that installs them, the devices it runs on, and its variants: named option sets
of the maker that become separate columns of the law table (PyTorch CUDA's TF32 matmuls off and on; a compiler's
static and dynamic shapes, a runtime's graph optimisation on and off).

`classify(spec)` says what a target spec names, in this order: a built-in name, a "module:attr" string, an entry
point of the group `bendtorch.targets` (importlib.metadata). It imports nothing; bendtorch.targets.resolve loads
what it names. A spec that names nothing is a `SpecError`: one line, which the command line shows as a usage error.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

GROUP = "bendtorch.targets"   # the entry-point group a package publishes its targets in
ENV = "BENDTORCH_TARGET"      # the target spec when none is given on the command line
DEFAULT = "impl"

_REF = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


class SpecError(ValueError):
    """A target spec that names no target (unknown name, no such module or attribute, not a target, a device or
    variant the target does not have): one line."""


@dataclass(frozen=True)
class Variant:
    """A named set of the maker's keyword options, run as a column of its own. `devices` lists the devices it applies
    to (empty: every device of the target)."""

    name: str                                  # what --variant takes: "tf32-on"
    label: str                                 # the column's qualifier: "TF32 on"
    options: Mapping[str, Any] = field(default_factory=dict)
    devices: tuple[str, ...] = ()


PLAIN = Variant("default", "")   # the one column of a target without variants


@dataclass(frozen=True)
class TargetRecord:
    """One conformance target. `own`: the harness's own library, held to every law suite of bendtorch.laws (not the
    conformance laws alone), a failing law being a bug (exit 1) rather than a finding about another library.
    `devices` None: whatever the maker accepts (a target from outside the harness decides itself)."""

    name: str
    maker: str                                 # "bendtorch.targets.torch:make"
    note: str
    libraries: tuple[str, ...] = ()
    extra: str | None = None                   # the pip extra installing the libraries; None: core dependencies
    devices: tuple[str, ...] | None = ("cpu",)
    variants: tuple[Variant, ...] = ()
    own: bool = False
    # the most examples hypothesis draws for each law against this target (the profile's count where that is
    # fewer; a law scaled down divides this one), its failures not shrunk: for a target whose every new input shape
    # costs a compilation of seconds, so that its ci profile stays near the time of the others'. None: the
    # profile's count, shrinking as usual
    max_examples: int | None = None

    def variants_on(self, device: str) -> tuple[Variant, ...]:
        """The variants that apply on device, in the record's order; PLAIN where none does."""
        vs = tuple(v for v in self.variants if not v.devices or device in v.devices)
        return vs or (PLAIN,)

    def label(self, device: str = "cpu", variant: Variant = PLAIN) -> str:
        """The column's name: "impl", "jax", "torch cuda (TF32 off)"."""
        base = self.name if device == "cpu" else f"{self.name} {device}"
        return f"{base} ({variant.label})" if variant.label else base

    def install_hint(self) -> str:
        """The pip command installing the target's libraries."""
        return f"pip install 'bendtorch[{self.extra}]'" if self.extra else "pip install bendtorch"

    def check(self, device: str, variant: str | None = None) -> tuple[Variant, ...]:
        """The variants to run on device (the one named, or all that apply); SpecError for a device or a variant
        the target does not have."""
        if self.devices is not None and device not in self.devices:
            raise SpecError(f"target {self.name} runs on {', '.join(self.devices)}, not {device}")
        vs = self.variants_on(device)
        if variant is None:
            return vs
        hit = tuple(v for v in vs if v.name == variant)
        if not hit:
            names = ", ".join(v.name for v in vs)
            raise SpecError(f"target {self.name} on {device} has no variant {variant!r} (its variants: {names})")
        return hit


MAX_EXAMPLES_COMPILED = 2   # torch_compile's examples a law (records.targets.TargetRecord.max_examples)

_TORCH_NOTE = ("PyTorch eager as a model author calls it: torch.nn.functional, torch.optim, torch.save; on cuda "
               "every tensor on the GPU")

RECORDS: dict[str, TargetRecord] = {r.name: r for r in (
    TargetRecord("impl", "bendtorch.targets.impl:make", "bendtorch.impl's layers: the seed's float32 semantics",
                 libraries=("numba", "numpy"), own=True),
    TargetRecord("torch", "bendtorch.targets.torch:make", _TORCH_NOTE, libraries=("torch", "numpy"),
                 devices=("cpu", "cuda"),
                 variants=(Variant("tf32-off", "TF32 off", {"tf32": False}, ("cuda",)),
                           Variant("tf32-on", "TF32 on", {"tf32": True}, ("cuda",)))),
    TargetRecord("jax", "bendtorch.targets.jax:make",
                 "JAX on the CPU in float32, jitted, with jax.numpy, jax.nn and optax",
                 libraries=("jax", "numpy"), extra="jax"),
    TargetRecord("mlx", "bendtorch.targets.mlx:make",
                 "MLX's CPU build (mlx-cpu on Linux) in float32, eager and evaluated with mx.eval: mlx.core, "
                 "mx.fast's norms and attention, mlx.nn, mlx.optimizers, mx.save_safetensors",
                 libraries=("mlx", "numpy"), extra="mlx"),
    TargetRecord("onnxruntime", "bendtorch.targets.onnxruntime:make",
                 "ONNX Runtime's CPUExecutionProvider on small ONNX graphs built with onnx.helper at opset 24, the "
                 "parameters initializers; graph optimisations ORT_ENABLE_ALL (an InferenceSession's default) and "
                 "ORT_DISABLE_ALL (the graph as written) as two columns",
                 libraries=("onnxruntime", "numpy"), extra="onnx",
                 variants=(Variant("opt-all", "ORT_ENABLE_ALL", {"level": "all"}),
                           Variant("opt-none", "ORT_DISABLE_ALL", {"level": "none"}))),
    TargetRecord("tensorflow", "bendtorch.targets.tensorflow:make",
                 "TensorFlow's CPU build (tensorflow-cpu) in float32: tf.linalg.matmul, tf.nn's softmax, "
                 "log-softmax, cross-entropy and dropout, attention in tf ops, tf.GradientTape, Keras's SGD and "
                 "PyTorch's Adam in tf ops, checkpoints through tf.io.serialize_tensor; eager (TF 2's default) and "
                 "in tf.function (jit_compile=False, grappler's graph) as two columns",
                 libraries=("tensorflow", "numpy"), extra="tensorflow",
                 variants=(Variant("eager", "eager", {"function": False}),
                           Variant("tf-function", "tf.function", {"function": True}))),
    TargetRecord("torch_compile", "bendtorch.targets.torch_compile:make",
                 "PyTorch's eager target with each operation, the Llama's forward and its training loss in "
                 "torch.compile(backend=\"inductor\", mode=\"default\"): Inductor's generated C++ on the CPU, "
                 "backward through AOTAutograd, the optimizer's step eager torch.optim; static shapes "
                 "(dynamic=False) and dynamic shapes (dynamic=True) as two columns; fewer examples a law, since "
                 "every new shape of the static column is a compilation",
                 libraries=("torch", "numpy"), max_examples=MAX_EXAMPLES_COMPILED,
                 variants=(Variant("static", "static shapes", {"dynamic": False}),
                           Variant("dynamic", "dynamic shapes", {"dynamic": True}))),
)}


def order(name: str, device: str = "cpu") -> tuple[int, int]:
    """Where a target's column goes: the built-ins in RECORDS' order, then any other; each target's devices in
    its record's order."""
    names = list(RECORDS)
    rec = RECORDS.get(name)
    devs = list(rec.devices or ()) if rec else []
    return (names.index(name) if rec else len(names), devs.index(device) if device in devs else len(devs))


def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed targets of other packages: entry points of the group GROUP, by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=GROUP)}


def default_spec() -> str:
    """The spec used when none is given: $BENDTORCH_TARGET, else impl."""
    return os.environ.get(ENV) or DEFAULT


@dataclass(frozen=True)
class Named:
    """What a spec names: a built-in record, or a "module:attr" reference (given, or an entry point's value)."""

    how: Literal["built-in", "module:attr", "entry point"]
    name: str                                  # the column's name: the record's, the spec's, the entry point's
    record: TargetRecord | None = None
    ref: str | None = None


def classify(spec: str) -> Named:
    """A built-in name, then a "module:attr" string, then an entry point of GROUP; SpecError otherwise."""
    spec = spec.strip()
    if spec in RECORDS:
        return Named("built-in", spec, record=RECORDS[spec])
    if ":" in spec:
        if not _REF.match(spec):
            raise SpecError(f"target {spec!r}: not a module:attr reference (pkg.mod:make)")
        return Named("module:attr", spec, ref=spec)
    eps = entry_points()
    if spec in eps:
        return Named("entry point", spec, ref=eps[spec].value)
    known = ", ".join(RECORDS) + (f"; installed: {', '.join(sorted(eps))}" if eps else "")
    raise SpecError(f"unknown target {spec!r}: not a built-in target ({known}), not a module:attr reference, and no "
                    f"entry point {spec!r} in the group {GROUP}")
