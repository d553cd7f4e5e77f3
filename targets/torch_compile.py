"""The conformance target `torch_compile`: the laws' operations of the target `torch` (bendtorch.targets.torch), each
compiled as a model author compiles it, torch.compile(fn, backend="inductor", mode="default", dynamic=...), on the
CPU: TorchInductor generates C++ (OpenMP loops, vectorised) for the pointwise and reduction work, built with the
machine's C++ compiler, and calls ATen's kernels for what it does not generate (matmuls, through its extern
kernels). Two columns, the record's variants: static (dynamic=False: one graph per input shape) and dynamic
(dynamic=True: sizes symbolic from the first call, so a graph serves every shape but the sizes 0 and 1, which
dynamo specialises).

    linear .. erf   the eager target's functional call (F.linear, F.rms_norm, F.layer_norm, F.softmax,
                    F.log_softmax, F.cross_entropy(reduction="none"), F.scaled_dot_product_attention(is_causal=True,
                    enable_gqa=True), F.dropout(training=True), the bfloat16 cast, torch.erf) inside one compiled
                    function
    attention_grad  the compiled attention called on leaves requiring gradients, then backward(dO): AOTAutograd
                    compiles the forward and backward graphs together
    llama_logits    the eager target's Hugging Face-form tiny Llama forward, compiled whole (no_grad)
    train           the forward and the mean cross-entropy compiled as one function (its backward compiled by
                    AOTAutograd), the optimizer's step eager torch.optim (SGD, Adam, AdamW, as the target `torch`
                    makes them), as a training loop compiling its model and not its optimizer does; the
                    checkpoint is the eager target's (torch.save / torch.load(weights_only=True))
    opt_steps       eager torch.optim, as the eager target's (nothing compiled: the optimizer laws read the same
                    kernels as the target `torch`)
    threads         torch.set_num_threads around the compiled calls

Each compiled function is made once per operation, its Python constants (eps, the scale, p, the Llama's config) and
the column, and kept: a call with a shape seen before runs the graph compiled for it. dynamo's recompile limit is
raised so that every shape the laws draw gets its own graph, and reaching it is an error, never a silent fall back
to eager. Inductor's on-disk cache (TORCHINDUCTOR_CACHE_DIR) is the harness's cache folder's inductor/ unless the
variable is set already: a second run reuses the generated and built kernels.

Compiling is the cost (every new shape of the static column is a compilation, each kernel a run of the C++
compiler), so the record caps each law at 2 examples (TargetRecord.max_examples); what it costs cold and warm is
measured in docs/FINDINGS.md, with its machine. Inductor builds the kernels with its own default of compile
workers (one per core, TORCHINDUCTOR_COMPILE_THREADS to change it): on two cores its workers cut the ci laws from
135 s to 110 s on an empty cache, and `bendtorch laws` runs the two columns at once, 82 s (docs/FINDINGS.md)."""

from __future__ import annotations

import os
from typing import Any, Callable

from bendtorch.records.paths import cache_dir
from bendtorch.records.targets import TargetRecord, Variant
from bendtorch.targets.base import NotRun, Target, require

# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("torch_compile", "bendtorch.targets.torch_compile:make",
                      "PyTorch's eager target with each operation, the Llama's forward and its training loss in "
                      "torch.compile(backend=\"inductor\", mode=\"default\"): Inductor's generated C++ on the CPU, "
                      "backward through AOTAutograd, the optimizer's step eager torch.optim; static shapes "
                      "(dynamic=False) and dynamic shapes (dynamic=True) as two columns; fewer examples a law, since "
                      "every new shape of the static column is a compilation",
                      libraries=("torch", "numpy"), max_examples=2,
                      variants=(Variant("static", "static shapes", {"dynamic": False}),
                                Variant("dynamic", "dynamic shapes", {"dynamic": True})), rank=6)


require("torch", target="torch_compile")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402

from bendtorch.impl.llama import LlamaCfg  # noqa: E402
from bendtorch.targets.torch import Torch, torch_source  # noqa: E402

MODE = "default"
# graphs kept per compiled function's code: the static column compiles one per shape the laws draw (up to 16 for
# Linear: 4 batch sizes, 2 widths, 2 outputs; each Python constant adds its own), and both columns share the code
RECOMPILE_LIMIT = 256


def configure() -> None:
    """Inductor's cache folder (unless set) and dynamo's limits, before anything compiles."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_dir("inductor")))
    cfg: Any = torch._dynamo.config
    cfg.recompile_limit = RECOMPILE_LIMIT
    cfg.accumulated_recompile_limit = max(int(cfg.accumulated_recompile_limit), 4 * RECOMPILE_LIMIT)
    cfg.fail_on_recompile_limit_hit = True

# ---- the functions compiled: torch tensors in, torch tensors out ----

def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return Fn.linear(x, w, b)


def _matmul(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return Fn.linear(x, w)


def _softmax(x: torch.Tensor) -> torch.Tensor:
    return Fn.softmax(x, dim=-1)


def _log_softmax(x: torch.Tensor) -> torch.Tensor:
    return Fn.log_softmax(x, dim=-1)


def _ce(z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return Fn.cross_entropy(z, labels, reduction="none")


def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).view(torch.int16)


def _erf(x: torch.Tensor) -> torch.Tensor:
    return torch.erf(x)


class TorchCompile(Torch):
    """The eager target's operations, each through torch.compile(backend="inductor", mode=MODE, dynamic=dynamic)."""

    name = "torch_compile"
    libraries = ("torch", "numpy")
    devices: tuple[str, ...] = ("cpu",)

    def __init__(self, device: str = "cpu", dynamic: bool = False) -> None:
        configure()
        super().__init__(device)
        self.options = {"dynamic": dynamic, "mode": MODE}
        self.dynamic = dynamic
        self._fns: dict[Any, Callable[..., Any]] = {}

    def versions(self) -> dict[str, str]:
        v = super().versions()
        v["compile"] = f"inductor, mode={MODE}, dynamic={self.dynamic}"
        return v

    def compiled(self, key: Any, f: Callable[..., Any]) -> Callable[..., Any]:
        """f through torch.compile, made once per key (the operation and its Python constants) and kept."""
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = torch.compile(f, backend="inductor", mode=MODE, dynamic=self.dynamic)
        return fn

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        with torch.no_grad():
            if b is None:
                return self._np(self.compiled("matmul", _matmul)(self._t(x), self._t(w)))
            return self._np(self.compiled("linear", _linear)(self._t(x), self._t(w), self._t(b)))

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        def rms(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
            return Fn.rms_norm(a, (a.shape[-1],), g, eps)
        with torch.no_grad():
            return self._np(self.compiled(("rms_norm", eps), rms)(self._t(x), self._t(w)))

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        def ln(a: torch.Tensor, g: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
            return Fn.layer_norm(a, (a.shape[-1],), g, c, eps)
        with torch.no_grad():
            return self._np(self.compiled(("layer_norm", eps), ln)(self._t(x), self._t(w), self._t(b)))

    def softmax(self, x: Any) -> Any:
        with torch.no_grad():
            return self._np(self.compiled("softmax", _softmax)(self._t(x)))

    def log_softmax(self, x: Any) -> Any:
        with torch.no_grad():
            return self._np(self.compiled("log_softmax", _log_softmax)(self._t(x)))

    def ce_rows(self, z: Any, labels: Any) -> Any:
        lab = torch.as_tensor(np.asarray(labels, np.int64), device=self.device)
        with torch.no_grad():
            return self._np(self.compiled("ce", _ce)(self._t(z), lab))

    def _attn_fn(self, sc: float) -> Callable[..., Any]:
        sc = float(sc)

        def attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return self._sdpa(q, k, v, sc)
        return self.compiled(("attention", sc), attn)

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        with torch.no_grad():
            return self._np(self._attn_fn(sc)(self._t(q), self._t(k), self._t(v)))

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        qt, kt, vt = (self._t(a).requires_grad_(True) for a in (q, k, v))
        self._attn_fn(sc)(qt, kt, vt).backward(self._t(do))
        assert qt.grad is not None and kt.grad is not None and vt.grad is not None
        return self._np(qt.grad), self._np(kt.grad), self._np(vt.grad)

    def dropout(self, x: Any, p: float) -> Any:
        p = float(p)

        def drop(a: torch.Tensor) -> torch.Tensor:
            return Fn.dropout(a, p, training=True)
        with torch.no_grad():
            return self._np(self.compiled(("dropout", p), drop)(self._t(x)))

    def bf16_bits(self, x: Any) -> Any:
        with torch.no_grad():
            h = self.compiled("bf16", _bf16)(self._t(x))
        return h.cpu().numpy().view(np.uint16).copy()

    def erf(self, x: Any) -> Any:
        with torch.no_grad():
            return self._np(self.compiled("erf", _erf)(self._t(x)))

    def source(self, op: str) -> str | None:
        return torch_source(op, f'torch.compile({{f}}, backend="inductor", mode="{MODE}", dynamic={self.dynamic})')

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        def logits(P: dict[str, torch.Tensor], ids: torch.Tensor) -> torch.Tensor:
            return self._forward(cfg, P, ids)
        with torch.no_grad():
            return self._np(self.compiled(("llama", cfg), logits)(self._params(cfg, seed), self._ids(tokens)))

    def _loss(self, cfg: LlamaCfg, P: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The eager target's training loss, compiled (its backward compiled with it by AOTAutograd)."""
        def loss_of(P: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return Torch._loss(self, cfg, P, x, y)
        out: torch.Tensor = self.compiled(("loss", cfg), loss_of)(P, x, y)
        return out


def make(device: str = "cpu", dynamic: bool = False) -> Target:
    """The target with static shapes (dynamic False: a graph per input shape) or dynamic ones (dynamic True)."""
    if device != "cpu":
        raise NotRun(f"torch_compile runs on the CPU (Inductor's C++ backend), not {device}")
    return TorchCompile(device, dynamic)
