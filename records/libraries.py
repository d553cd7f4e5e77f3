"""The sweep libraries' records: one `SweepLibrary` per float32 implementation the exhaustive checker sets side by
side (a column of the atlas), and the one place that says which library provides which function.

A record maps each function it provides to a "module:attr" string naming a function float32 array -> float32 array
(attr may be a dotted path through attributes and mapping keys: "pkg.mod:TABLE.exp"). The strings are resolved inside
every worker process (bendtorch.reports.sweep.libraries.resolve), so a library from outside the project works in the
process pool and on a Dask cluster alike, as long as its module imports there. This module imports nothing of the
project beyond the op records (records.ops, which give impl's activations).

What a chunk of a sweep is keyed by comes partly from here: `distribution`, the library whose version, build and
dispatch level (bendtorch.records.machine.probe) enter the key; `libm`, the BENDTORCH_LIBM the worker must run
(impl.kernels.libm reads it once, at import, so a task's libraries share one); `impl`, impl's source digest enters
the key; `code`, modules whose source enters it besides the adapters'. `everywhere` says the library's bits are the
same on every machine (impl's own float32 functions), so its figures are facts everywhere; any other library's
figures are facts of the machine that measured them. A `twin` is a second implementation a function record checks
a library against (it has no atlas row of its own).

Libraries from outside: `bendtorch sweep FUNCTION --lib NAME=pkg.mod:attr` (a function for that one function, or an
object or mapping providing several, or a SweepLibrary), and the entry points of the group `bendtorch.sweep_libraries`
(`entry_point_names()`), whose objects give a SweepLibrary (docs/extending.md).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
from dataclasses import asdict, dataclass
from typing import Mapping

GROUP = "bendtorch.sweep_libraries"   # the entry-point group a package publishes its sweep libraries in

_REF = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


class SpecError(ValueError):
    """A --lib argument that names no library: one line."""


@dataclass(frozen=True)
class SweepLibrary:
    """One implementation of some sweep functions (see the module's docstring)."""

    name: str
    note: str
    functions: Mapping[str, str]      # function name -> "module:attr" of a float32 array -> float32 array function
    distribution: str | None = None   # whose version, build and dispatch level enter the key (records.machine.probe)
    libm: str | None = None           # the BENDTORCH_LIBM a worker must run: "portable" or "clib"
    impl: bool = False                # impl's source digest enters the key
    everywhere: bool = False          # the same bits on every machine: its figures are facts everywhere
    code: tuple[str, ...] = ()        # modules whose source enters the key besides the adapters'
    twin: bool = False                # a twin: checked against a library, no atlas row of its own
    device: str | None = None         # an accelerator it runs on ("cuda"): named with --lib only, never a default

    def fields_digest(self) -> str:
        """sha256 of the record's fields in canonical JSON."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


_A = "bendtorch.reports.sweep.libraries"
_PORTABLE = ("exp", "log", "tanh", "sin", "cos")                 # impl's functions with an exception table
_BASIC = _PORTABLE + ("pow",)
# the activations PyTorch's and numpy's adapters write out (reports/sweep/libraries/pytorch.py, numpy_ufuncs.py)
_ACTS = ("sigmoid", "silu", "gelu_tanh", "dsigmoid", "dtanh", "dsilu", "dgelu_tanh")


def _impl_activations() -> tuple[str, ...]:
    """The atlas functions of impl's activations, value and derivative, from their op records (records.ops): impl's
    kernel table (reports/sweep/libraries/impl.py) is built from the same records, so a new activation reaches
    impl's columns with its record and its sweep functions' entries (records.functions), nothing here. The order of
    a library's functions does not enter its digest (fields_digest sorts them)."""
    from bendtorch.records.ops import ACTIVATIONS
    return tuple(f for op in ACTIVATIONS if op.act is not None and op.act.sweep for f in op.act.sweep)


_IMPL = tuple(dict.fromkeys(_BASIC + ("erf", "sqrt", "rsqrt") + _impl_activations()))
# every function the other libraries' adapters write out (their tables name each)
_ALL = _BASIC + ("erf", "sqrt", "rsqrt") + _ACTS[:3] + ("gelu_erf",) + _ACTS[3:] + ("dgelu_erf",)


def _table(module: str, table: str, names: tuple[str, ...]) -> dict[str, str]:
    return {f: f"{_A}.{module}:{table}.{f}" for f in names}


LIBRARIES: dict[str, SweepLibrary] = {lib.name: lib for lib in [
    SweepLibrary("impl", "impl's kernel function with its portable functions (impl.kernels.portable; "
                 "BENDTORCH_LIBM=portable)", _table("impl", "KERNEL", _IMPL), libm="portable", impl=True,
                 everywhere=True),
    SweepLibrary("impl_raw", "impl's portable function without its exception table (impl.kernels.portable.raw_*: the "
                 "float32 pair alone); the inputs it misrounds are the table's", _table("impl", "RAW", _PORTABLE),
                 impl=True, everywhere=True),
    SweepLibrary("impl_clib", "impl's kernel function with the C library's float32 functions (BENDTORCH_LIBM=clib)",
                 _table("impl", "KERNEL", tuple(f for f in _IMPL if f not in ("erf", "sqrt", "rsqrt"))),
                 distribution="clib", libm="clib", impl=True),
    SweepLibrary("torch", "PyTorch CPU float32, a large contiguous tensor (the vectorised path)",
                 _table("pytorch", "VECTOR", _ALL), distribution="torch"),
    SweepLibrary("torch_scalar", "PyTorch CPU float32 on a strided (non-contiguous) view: the loop such a tensor takes "
                 "(on this build it gives the contiguous path's bits for exp, and a 1-element tensor does too)",
                 _table("pytorch", "STRIDED", _BASIC + ("rsqrt",) + _ACTS + ("dgelu_erf",)), distribution="torch"),
    SweepLibrary("torch_aten", "PyTorch's ATen kernel with oneDNN disabled", _table("pytorch", "ATEN", ("gelu_erf",)),
                 distribution="torch"),
    SweepLibrary("numpy", "numpy float32 ufuncs (the formula in float32 operations where numpy has no such function)",
                 _table("numpy_ufuncs", "UFUNCS", _BASIC + ("sqrt", "rsqrt") + _ACTS), distribution="numpy"),
    SweepLibrary("clib", "the C library's float32 function called directly (ctypes, e.g. expf)",
                 _table("c_library", "LIBM", _BASIC + ("erf", "sqrt")), distribution="clib"),
    SweepLibrary("torch_gelu_erf_aten", "the erf inside PyTorch's ATen GELU, ported op by op "
                 "(bendtorch.reference.torch_erf)", _table("pytorch", "PORTS", ("erf",)),
                 code=("bendtorch.reference.torch_erf",), everywhere=True),
    SweepLibrary("mlx", "MLX's CPU build (mlx-cpu), one thread: mx.exp, log, tanh, sin, cos, erf, sqrt, rsqrt, "
                 "mx.sigmoid, nn.silu, nn.gelu_approx (GELU's tanh form), nn.gelu (its erf form); the derivatives "
                 "through mx.vjp (nn.silu and the GELUs are mx.compile'd: C++ built by the machine's g++)",
                 _table("mlx", "FUNCS", tuple(f for f in _ALL if f != "pow")),
                 distribution="mlx", code=("bendtorch.targets.mlx",)),
    SweepLibrary("onnxruntime", "ONNX Runtime's CPU provider on one-node float32 graphs at opset 24 (ORT_ENABLE_ALL, "
                 "one thread): Exp, Log, Tanh, Sin, Cos, Erf, Sqrt, Reciprocal(Sqrt(x)) for rsqrt, Sigmoid, "
                 "x * Sigmoid(x) for SiLU (fused into com.microsoft's QuickGelu), Gelu-20 with approximate tanh and "
                 "none; no derivatives (an inference runtime: no autodiff)",
                 _table("onnxruntime", "OPS", ("exp", "log", "tanh", "sin", "cos", "erf", "sqrt", "rsqrt", "sigmoid",
                                               "silu", "gelu_tanh", "gelu_erf")),
                 distribution="onnxruntime", code=("bendtorch.targets.onnxruntime",)),
    SweepLibrary("tensorflow", "TensorFlow's CPU build (tensorflow-cpu), eager: tf.exp, tf.math.log, tf.tanh, tf.sin, "
                 "tf.cos, tf.math.erf, tf.sqrt, tf.math.rsqrt, tf.sigmoid, tf.nn.silu, tf.nn.gelu with approximate "
                 "True (GELU's tanh form) and False (its erf form); the derivatives through tf.GradientTape",
                 _table("tensorflow", "FUNCS", tuple(f for f in _ALL if f != "pow")),
                 distribution="tensorflow", code=("bendtorch.targets.tensorflow",)),
    SweepLibrary("torch_compile", "PyTorch CPU float32 through torch.compile (Inductor's C++ backend, mode default, "
                 "dynamic shapes): torch's calls, each compiled into a loop of Sleef's vector functions built with the "
                 "machine's g++ -march=native; a lane's bits can depend on its vector's other lanes (sin, cos), and a "
                 "chunk's consecutive inputs make them neighbours of one magnitude",
                 _table("torch_compile", "FUNCS", _ALL), distribution="torch_compile",
                 code=("bendtorch.targets.torch_compile", f"{_A}.pytorch")),
    SweepLibrary("impl_exp_array", "impl's exp over a whole array (libm.exp_array, the vectorised loop the softmax, "
                 "log-softmax, cross-entropy and attention kernels and the Sigmoid and SiLU loops call), called apart "
                 "and in place: must give exp32's bits on every input", {"exp": f"{_A}.impl:EXP_ARRAY_BOTH_WAYS"},
                 libm="portable", impl=True, everywhere=True, twin=True),
    SweepLibrary("torch_cuda", "PyTorch CUDA float32, a large contiguous tensor on the GPU (the device is "
                 "$BENDTORCH_SWEEP_GPU, default cuda; cpu is a stand-in that tests the path, its figures are the CPU's)",
                 _table("pytorch", "GPU", _PORTABLE + ("erf", "sqrt", "rsqrt")), distribution="torch_cuda",
                 device="cuda"),
    SweepLibrary("torch_gelu_erf_port", "ATen's GELU (erf form) ported op by op (bendtorch.reference.torch_erf)",
                 _table("pytorch", "PORTS", ("gelu_erf",)), code=("bendtorch.reference.torch_erf",),
                 everywhere=True, twin=True),
]}

ORDER = tuple(LIBRARIES)   # the atlas's order of columns; a library from outside comes after, by name

# the built-in libraries that come with one of bendtorch's optional extras (pyproject.toml), by name: the extra and
# the module that must import (a distribution's name is not enough: TensorFlow's CPU build is tensorflow-cpu, MLX's
# backend is mlx-cpu's). Where it is not installed, a function's default libraries leave it out (named with --lib,
# it is an error)
EXTRAS: dict[str, tuple[str, str]] = {"onnxruntime": ("onnx", "onnxruntime"), "mlx": ("mlx", "mlx.core"),
                                      "tensorflow": ("tensorflow", "tensorflow")}

# the built-in libraries a sweep runs only where they are named (--lib NAME), with the reason: a default sweep's
# libraries start in under a second each
ON_REQUEST: dict[str, str] = {"torch_compile": "it compiles each function with g++ at its first call in a process "
                                               "(seconds on an empty Inductor cache)"}


def installed(name: str) -> bool:
    """Whether a built-in library can run here: always, unless it comes with an extra (EXTRAS) whose module cannot
    be found."""
    if name not in EXTRAS:
        return True
    try:
        return importlib.util.find_spec(EXTRAS[name][1]) is not None
    except (ImportError, ValueError):  # a parent package that fails to import, or a broken one
        return False


def providers(function: str) -> tuple[str, ...]:
    """The built-in libraries that provide `function` and run by default (twins, an accelerator's and those
    ON_REQUEST aside), in the atlas's order."""
    return tuple(n for n, lib in LIBRARIES.items()
                 if function in lib.functions and not lib.twin and lib.device is None and n not in ON_REQUEST)


def rank(name: str) -> tuple[int, str]:
    """A library's place in a function's JSON and the atlas: ORDER's, then any other by name."""
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def parse_lib(text: str) -> tuple[str, str | None]:
    """A --lib argument as (NAME, "module:attr" or None for a library named alone); SpecError for a malformed one."""
    name, eq, spec = text.partition("=")
    if not eq:
        if not _NAME.match(text):
            raise SpecError(f"--lib {text!r}: not a library name (a name, or NAME=module:attr)")
        return text, None
    if not _NAME.match(name):
        raise SpecError(f"--lib {text!r}: {name!r} is not a library name (NAME=module:attr)")
    if not _REF.match(spec):
        raise SpecError(f"--lib {text!r}: {spec!r} is not module:attr (e.g. mypkg.funcs:exp32)")
    if name in LIBRARIES:
        raise SpecError(f"--lib {text!r}: {name} is a built-in library; give yours another name")
    return name, spec


def entry_point_names() -> tuple[str, ...]:
    """The names of the sweep libraries installed packages publish (entry points of GROUP)."""
    return tuple(sorted({ep.name for ep in importlib.metadata.entry_points(group=GROUP)}))
