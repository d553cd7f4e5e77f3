"""What a conformance target is: the operations the conformance laws (bendtorch.laws.test_targets) call.

A law's statement and its strategy are written once; a target is a small adapter mapping the laws' operations onto
one library (impl, PyTorch, JAX, or a library of another package). Every operation takes and returns numpy float32
arrays (uint16 for BF16 bits), so a law compares the bits of what two calls give, whatever computed them:

    linear(x n x i, w o x i, b o or None) -> n x o          y = x·Wᵀ + b
    rms_norm(x, w, eps), layer_norm(x, w, b, eps)           over each row of x (n x d); w, b of d
    softmax(x), log_softmax(x)                              over each row
    ce_rows(z n x c, labels n) -> n                         cross-entropy's per-row terms (no reduction)
    attention(q b x h x t x hd, k v b x kv x t x hd, sc)    causal, grouped-query (query head a reads key/value head
                                                            a // (h / kv)), scale sc
    attention_grad(q, k, v, do, sc) -> (dq, dk, dv)
    dropout(x, p)                                           training mode
    bf16_bits(x) -> uint16                                  float32 -> bfloat16 conversion
    erf(x)
    llama_logits(cfg, seed, tokens b x t) -> b x t x V      the tiny Llama of bendtorch.impl.llama, weights from seed
    train(cfg, seed, opt, batches, save_at) -> (params, losses)
                                                            tiny Llama training steps; with save_at = k the model
                                                            and optimizer state are saved after k steps, loaded into
                                                            fresh objects and the run goes on from them
    opt_steps(opt, params, grads) -> params                 one optimizer step per gradient list
    threads(k)                                              a context manager: the library's work on k threads

An operation a library does not have raises NotApplicable(reason); a target that cannot run here raises NotRun(reason)
when it is made (its library is missing: `require` at the top of the adapter; no GPU) or from one operation. Each law
turns these into pytest skips whose reasons start with "not applicable:" or "not run:", which bendtorch.laws.run
reports as such (never as a pass)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from bendtorch.records import optimizers
from bendtorch.records.targets import RECORDS, SpecError

if TYPE_CHECKING:
    from bendtorch.impl.llama import LlamaCfg

F32 = np.float32


class NotApplicable(Exception):
    """The law has no meaning for this library (the operation does not exist, or is defined otherwise)."""


class NotRun(Exception):
    """The target, or one of its operations, cannot run here (its library is not installed, there is no GPU, the
    thread count asked for is not available)."""


def require(*modules: str, target: str) -> None:
    """NotRun naming the missing module and the pip command that installs it (the built-in target's extra, from its
    record) unless every module can be imported; an adapter calls it before importing its library."""
    for m in modules:
        if importlib.util.find_spec(m) is None:
            raise NotRun(f"{m} is not installed ({RECORDS[target].install_hint()})")


@dataclass(frozen=True)
class Opt:
    """An optimizer as PyTorch names it: "sgd" (plain), "momentum" (SGD with momentum mu, no dampening), "adam"
    (weight decay wd added to the gradient) or "adamw" (decoupled weight decay wd)."""

    name: str
    lr: float
    wd: float = 0.0
    mu: float = 0.9
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8


OPTS = optimizers.CONFORMANCE  # the registry's optimizers that every conformance target has


def weights(cfg: LlamaCfg, seed: int) -> dict[str, Any]:
    """The tiny Llama's float32 weights drawn from seed (impl.llama's initialization), by Hugging Face's names: every
    target computes with the same numbers."""
    import bendtorch.impl as L
    from bendtorch.impl.llama import build, named
    m = build(L, cfg, 1)
    return named(m.names, m.init(seed))


def impl_shape(name: str, a: Any) -> Any:
    """A trained parameter in impl's shape: a norm's gain is 1 x d there, d in the libraries."""
    return a.reshape(1, -1) if name.endswith("norm.weight") else a


@contextlib.contextmanager
def thread_count(get: Callable[[], int], put: Callable[[int], Any], k: int) -> Iterator[None]:
    """A library's thread count set to k for the with-block (put(k)), the count before put back after: an
    adapter's `threads`."""
    old = get()
    put(k)
    try:
        yield
    finally:
        put(old)


def op_source(imports: str, op: str, params: str, body: str, call: str, wrap: str | None = None) -> str:
    """The source of a reproduction's operation: `_op(params)`, the library's computation on its own arrays (body),
    optionally rebound to a wrapped form of itself (wrap, e.g. "torch.compile({f}, ...)" or "tf.function({f})"),
    then `op(params)` on numpy arrays, whose body `call` ("{f}" standing for _op) converts the arrays, calls _op and
    returns numpy arrays."""
    f = f"_{op}"
    out = [imports, "", "", f"def {f}({params}):", textwrap.indent(body, "    ")]
    if wrap is not None:
        out += ["", "", f"{f} = {wrap.format(f=f)}"]
    out += ["", "", f"def {op}({params}):", textwrap.indent(call.format(f=f), "    ")]
    return "\n".join(out) + "\n"


def as_f32(a: Any) -> Any:
    """A C-contiguous float32 numpy copy."""
    return np.array(a, dtype=F32, order="C", copy=True)


class Target:
    """The operations the conformance laws use; each adapter overrides those its library has. The defaults say
    NotApplicable with the reason.

    A target from another package sets `name` (its column in the law table), `libraries` (the distributions or
    `records.machine` probe names it measures: their versions go into the laws document's machine record) and, if
    it runs elsewhere than the CPU, `devices`. Made as `Cls(device=..., **options)` when named by its class."""

    name = "?"
    device = "cpu"
    libraries: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("cpu",)

    def __init__(self, device: str = "cpu", **options: Any) -> None:
        if device not in self.devices:
            raise SpecError(f"target {self.name} runs on {', '.join(self.devices)}, not {device}")
        self.device = device
        self.options = options

    def versions(self) -> dict[str, str]:
        """The installed version of each library measured (by its distribution's name)."""
        out = {}
        for lib in self.libraries:
            try:
                out[lib] = importlib.metadata.version(lib)
            except importlib.metadata.PackageNotFoundError:
                out[lib] = "not installed"
        return out

    def _na(self, what: str, why: str) -> NotApplicable:
        return NotApplicable(f"{self.name} {what}: {why}")

    def source(self, op: str) -> str | None:
        """The Python source of a function named `op` computing the operation as this column does, with the library
        alone (numpy arrays in and out, its imports first; `op_source` writes one), for a failure's reproduction
        (bendtorch.laws.repro); None where the adapter gives none."""
        return None

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        raise self._na("linear", "no such operation")

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        raise self._na("rms_norm", "no such operation")

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        raise self._na("layer_norm", "no such operation")

    def softmax(self, x: Any) -> Any:
        raise self._na("softmax", "no such operation")

    def log_softmax(self, x: Any) -> Any:
        raise self._na("log_softmax", "no such operation")

    def ce_rows(self, z: Any, labels: Any) -> Any:
        raise self._na("cross-entropy per-row terms", "no such operation")

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        raise self._na("attention", "no such operation")

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        raise self._na("attention backward", "no such operation")

    def dropout(self, x: Any, p: float) -> Any:
        raise self._na("dropout", "no such operation")

    def bf16_bits(self, x: Any) -> Any:
        raise self._na("bfloat16", "no such conversion")

    def erf(self, x: Any) -> Any:
        raise self._na("erf", "no such function")

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        raise self._na("Llama", "no model")

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        raise self._na("training", "no training step")

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        raise self._na(f"optimizer {opt.name}", "no such optimizer")

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        raise self._na("threads", "no thread control")
        yield
