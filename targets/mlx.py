"""The conformance target `mlx`: the laws' operations on MLX's CPU build (mlx with its mlx-cpu backend on Linux), in
float32, as a model author writes them with mlx.core, mlx.core.fast, mlx.nn and mlx.optimizers (the tiny Llama as
mlx-lm writes its Llama). MLX is lazy: every result is evaluated (mx.eval) before it is read back.

    linear          mlx.nn.Linear (mx.addmm(b, x, wᵀ) with a bias, x @ wᵀ without)
    rms_norm        mx.fast.rms_norm(x, w, eps) (what nn.RMSNorm calls)
    layer_norm      mx.fast.layer_norm(x, w, b, eps) (what nn.LayerNorm calls)
    softmax         mx.softmax(x, axis=-1)
    log_softmax     nn.log_softmax (x - max, then minus logsumexp; mlx.core has no log_softmax)
    ce_rows         nn.losses.cross_entropy(z, labels, reduction="none") (on the CPU: logsumexp(z) - z[label])
    attention       mx.fast.scaled_dot_product_attention(q, k, v, scale, mask="causal"), grouped-query natively (k and
                    v keep their kv heads, not tiled); "causal" aligns lower right, upper left when t_q = t_kv
    attention_grad  mx.vjp of that call
    dropout         nn.Dropout(p) in training mode
    bf16_bits       x.astype(mx.bfloat16).view(mx.uint16)
    erf             mx.erf
    llama_logits    mlx-lm's Llama: nn.Embedding, nn.RMSNorm, nn.Linear without bias, nn.RoPE (traditional=False: the
                    rotate-half form, base theta), the attention above, nn.silu, the head tied to the embedding
    train           nn.value_and_grad of the mean cross-entropy, optimizer.update, mx.eval each step; the checkpoint
                    is the parameters and tree_flatten(optimizer.state) through mx.save_safetensors, read back with
                    mx.load into a fresh model and a fresh optimizer
    opt_steps       mlx.optimizers: SGD (momentum without dampening, as PyTorch's), Adam and AdamW with
                    bias_correction=True (MLX's default is off; the laws' optimizers are PyTorch's), Adam's L2 weight
                    decay added to the gradient as PyTorch's Adam adds it (MLX's Adam has none)

Not applicable: threads(k). MLX has no thread-count setting: its CPU backend runs each stream's operations on that
stream's one worker thread, and the Linux wheel's BLAS is the reference (netlib) BLAS, single-threaded.

The elementwise functions of the sweep's atlas (ELEMENTWISE, and their derivatives through mx.vjp, `derivative`)
are here too, the calls a model author makes: mx.exp ... mx.rsqrt, mx.sigmoid, nn.silu, nn.gelu_approx (GELU's tanh
form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), nn.gelu (the erf form). nn.silu, nn.gelu_approx, nn.gelu and
nn.log_softmax are mx.compile'd functions: on the CPU MLX fuses their operations into C++ that it compiles with
the machine's g++ on first use (cached under the temporary folder), so their bits are those of that build."""

from __future__ import annotations

import contextlib
import importlib
import io
from typing import Any, Callable, Iterator, Sequence

from bendtorch.records.targets import RECORDS
from bendtorch.records.targets import TargetRecord
from bendtorch.targets.base import NotRun, Opt, Target, as_f32, impl_shape, op_source, require, weights

# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("mlx", "bendtorch.targets.mlx:make",
                      "MLX's CPU build (mlx-cpu on Linux) in float32, eager and evaluated with mx.eval: mlx.core, "
                      "mx.fast's norms and attention, mlx.nn, mlx.optimizers, mx.save_safetensors",
                      libraries=("mlx", "numpy"), extra="mlx", rank=3)


require("mlx", target="mlx")
try:  # the mlx wheel alone has no backend on Linux (libmlx is mlx-cpu's): mlx is found, mlx.core does not import
    import mlx.core as mx
except ImportError as e:
    raise NotRun(f"mlx.core cannot be imported ({e}): its CPU backend mlx-cpu is missing "
                 f"({RECORDS['mlx'].install_hint()})") from e

import numpy as np  # noqa: E402

from bendtorch.impl.llama import LlamaCfg  # noqa: E402

# mlx.core is typed (its stubs); mlx.nn, mlx.optimizers and mlx.utils are not, and are used as Any
nn: Any = importlib.import_module("mlx.nn")
optim: Any = importlib.import_module("mlx.optimizers")
_utils: Any = importlib.import_module("mlx.utils")
tree_flatten, tree_map, tree_unflatten = _utils.tree_flatten, _utils.tree_map, _utils.tree_unflatten

mx.set_default_device(mx.cpu)


def dev(a: Any) -> mx.array:
    """A float32 MLX array of a copy of a."""
    return mx.array(as_f32(a))


def host(a: mx.array) -> Any:
    """An MLX array evaluated and copied back into a C-contiguous float32 numpy array."""
    mx.eval(a)
    return as_f32(np.array(a, copy=False))


def ids(a: Any) -> mx.array:
    """Token ids or labels as an int32 MLX array."""
    return mx.array(np.asarray(a, np.int32))


# ---- the elementwise functions (the atlas's columns) ----

ELEMENTWISE: dict[str, Callable[[mx.array], mx.array]] = {
    "exp": mx.exp, "log": mx.log, "tanh": mx.tanh, "sin": mx.sin, "cos": mx.cos, "erf": mx.erf, "sqrt": mx.sqrt,
    "rsqrt": mx.rsqrt, "sigmoid": mx.sigmoid, "silu": nn.silu, "gelu_tanh": nn.gelu_approx, "gelu_erf": nn.gelu,
}


def elementwise(name: str, x: Any) -> Any:
    """ELEMENTWISE[name] on a float32 numpy array."""
    return host(ELEMENTWISE[name](dev(x)))


def derivative(name: str, x: Any) -> Any:
    """The derivative of ELEMENTWISE[name] at every element of x: mx.vjp with the cotangent 1."""
    a = dev(x)
    _, (g,) = mx.vjp(ELEMENTWISE[name], [a], [mx.ones_like(a)])
    return host(g)


# ---- the operations on MLX arrays, one function each ----

# each operation in MLX alone, for a failure's reproduction (Target.source): its parameters, its computation on MLX
# arrays (the functions here, written out) and how the numpy arrays become its arguments (a = mx.array)
SOURCES: dict[str, tuple[str, str, str]] = {
    "linear": ("x, w, b", "layer = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)\nlayer.weight = w\n"
               "if b is not None:\n    layer.bias = b\nreturn layer(x)", "a(x), a(w), None if b is None else a(b)"),
    "rms_norm": ("x, w, eps", "return mx.fast.rms_norm(x, w, eps)", "a(x), a(w), eps"),
    "layer_norm": ("x, w, b, eps", "return mx.fast.layer_norm(x, w, b, eps)", "a(x), a(w), a(b), eps"),
    "softmax": ("x", "return mx.softmax(x, axis=-1)", "a(x)"),
    "log_softmax": ("x", "return nn.log_softmax(x, axis=-1)", "a(x)"),
    "ce_rows": ("z, labels", 'return nn.losses.cross_entropy(z, labels, reduction="none")',
                "a(z), a(np.asarray(labels, np.int32))"),
    "attention": ("q, k, v, sc", 'return mx.fast.scaled_dot_product_attention(q, k, v, scale=sc,\n'
                  '                                           mask="causal" if q.shape[2] > 1 else None)',
                  "a(q), a(k), a(v), float(sc)"),
    "erf": ("x", "return mx.erf(x)", "a(x)"),
}


def linear(x: mx.array, w: mx.array, b: mx.array | None) -> mx.array:
    layer = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    layer.weight = w
    if b is not None:
        layer.bias = b
    out: mx.array = layer(x)
    return out


def sdpa(q: mx.array, k: mx.array, v: mx.array, sc: float) -> mx.array:
    return mx.fast.scaled_dot_product_attention(q, k, v, scale=sc, mask="causal" if q.shape[2] > 1 else None)


def sdpa_grad(q: mx.array, k: mx.array, v: mx.array, do: mx.array, sc: float) -> list[mx.array]:
    _, grads = mx.vjp(lambda q, k, v: sdpa(q, k, v, sc), [q, k, v], [do])
    return grads


# ---- the tiny Llama, as mlx-lm writes it (parameter paths are Hugging Face's names) ----

class Attention(nn.Module):  # type: ignore[misc]
    def __init__(self, cfg: LlamaCfg) -> None:
        super().__init__()
        h, kv, hd, d = cfg.heads, cfg.kv_heads, cfg.hd, cfg.d
        self.h, self.kv, self.hd = h, kv, hd
        self.scale = float(np.float32(1.0 / np.sqrt(hd)))
        self.q_proj = nn.Linear(d, h * hd, bias=False)
        self.k_proj = nn.Linear(d, kv * hd, bias=False)
        self.v_proj = nn.Linear(d, kv * hd, bias=False)
        self.o_proj = nn.Linear(h * hd, d, bias=False)
        self.rope = nn.RoPE(hd, traditional=False, base=cfg.theta)

    def __call__(self, x: mx.array) -> Any:
        b, t, _ = x.shape
        q = self.q_proj(x).reshape(b, t, self.h, self.hd).transpose(0, 2, 1, 3)
        k = self.k_proj(x).reshape(b, t, self.kv, self.hd).transpose(0, 2, 1, 3)
        v = self.v_proj(x).reshape(b, t, self.kv, self.hd).transpose(0, 2, 1, 3)
        o = sdpa(self.rope(q), self.rope(k), v, self.scale)
        return self.o_proj(o.transpose(0, 2, 1, 3).reshape(b, t, -1))


class MLP(nn.Module):  # type: ignore[misc]
    def __init__(self, cfg: LlamaCfg) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.d, cfg.ffn, bias=False)
        self.up_proj = nn.Linear(cfg.d, cfg.ffn, bias=False)
        self.down_proj = nn.Linear(cfg.ffn, cfg.d, bias=False)

    def __call__(self, x: mx.array) -> Any:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):  # type: ignore[misc]
    def __init__(self, cfg: LlamaCfg) -> None:
        super().__init__()
        self.self_attn, self.mlp = Attention(cfg), MLP(cfg)
        self.input_layernorm = nn.RMSNorm(cfg.d, eps=cfg.eps)
        self.post_attention_layernorm = nn.RMSNorm(cfg.d, eps=cfg.eps)

    def __call__(self, x: mx.array) -> Any:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):  # type: ignore[misc]
    def __init__(self, cfg: LlamaCfg) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = [Block(cfg) for _ in range(cfg.layers)]
        self.norm = nn.RMSNorm(cfg.d, eps=cfg.eps)


class Llama(nn.Module):  # type: ignore[misc]
    def __init__(self, cfg: LlamaCfg) -> None:
        super().__init__()
        self.model = Inner(cfg)

    def __call__(self, tokens: mx.array) -> Any:
        x = self.model.embed_tokens(tokens)
        for blk in self.model.layers:
            x = blk(x)
        return self.model.embed_tokens.as_linear(self.model.norm(x))


def llama(cfg: LlamaCfg, seed: int) -> Any:
    """The tiny Llama with impl's weights drawn from seed (a norm's gain as a vector)."""
    m = Llama(cfg)
    flat = {k: np.asarray(v).reshape(-1) if k.endswith("norm.weight") else v for k, v in weights(cfg, seed).items()}
    m.load_weights([(k, dev(v)) for k, v in flat.items()], strict=True)
    mx.eval(m.parameters())
    return m


def optimizer(opt: Opt) -> Any:
    """The laws' optimizer (PyTorch's semantics) in mlx.optimizers."""
    if opt.name in ("sgd", "momentum"):
        return optim.SGD(opt.lr, momentum=opt.mu if opt.name == "momentum" else 0.0, weight_decay=opt.wd)
    cls = optim.Adam if opt.name == "adam" else optim.AdamW
    kw = {"weight_decay": opt.wd} if opt.name == "adamw" else {}
    return cls(opt.lr, betas=[opt.b1, opt.b2], eps=opt.eps, bias_correction=True, **kw)


def decayed(opt: Opt, grads: Any, params: Any) -> Any:
    """The gradients with Adam's L2 weight decay added (g + wd p), as PyTorch's Adam adds it; others unchanged."""
    if opt.name == "adam" and opt.wd:
        return tree_map(lambda g, p: g + opt.wd * p, grads, params)
    return grads


def saved_and_loaded(tree: Any) -> list[tuple[str, mx.array]]:
    """A tree of arrays written with mx.save_safetensors and read back with mx.load, as (path, array) pairs."""
    buf = io.BytesIO()
    mx.save_safetensors(buf, dict(tree_flatten(tree)))
    buf.seek(0)
    back = mx.load(buf, format="safetensors")
    if not isinstance(back, dict):
        raise TypeError(f"mx.load gave a {type(back).__name__} for a .safetensors file, not a dict of arrays")
    return list(back.items())


def resumed(cfg: LlamaCfg, opt: Opt, m: Any, o: Any) -> tuple[Any, Any]:
    """The model's parameters and the optimizer's state saved and loaded into a fresh model and a fresh
    optimizer."""
    m2, o2 = Llama(cfg), optimizer(opt)
    m2.load_weights(saved_and_loaded(m.parameters()), strict=True)
    o2.state = tree_unflatten(saved_and_loaded(o.state))
    mx.eval(m2.parameters(), o2.state)
    return m2, o2


class Mlx(Target):
    """MLX's CPU build: mlx.core, mlx.core.fast, mlx.nn and mlx.optimizers, evaluated with mx.eval."""

    name = "mlx"
    libraries = ("mlx", "mlx-cpu", "numpy")

    def versions(self) -> dict[str, str]:
        return {**super().versions(), "device": str(mx.default_device())}

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        return host(linear(dev(x), dev(w), None if b is None else dev(b)))

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        return host(mx.fast.rms_norm(dev(x), dev(w), eps))

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        return host(mx.fast.layer_norm(dev(x), dev(w), dev(b), eps))

    def softmax(self, x: Any) -> Any:
        return host(mx.softmax(dev(x), axis=-1))

    def log_softmax(self, x: Any) -> Any:
        return host(nn.log_softmax(dev(x), axis=-1))

    def ce_rows(self, z: Any, labels: Any) -> Any:
        return host(nn.losses.cross_entropy(dev(z), ids(labels), reduction="none"))

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        return host(sdpa(dev(q), dev(k), dev(v), float(sc)))

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        dq, dk, dv = sdpa_grad(dev(q), dev(k), dev(v), dev(do), float(sc))
        return host(dq), host(dk), host(dv)

    def dropout(self, x: Any, p: float) -> Any:
        d = nn.Dropout(p)
        d.train()
        return host(d(dev(x)))

    def bf16_bits(self, x: Any) -> Any:
        h = dev(x).astype(mx.bfloat16).view(mx.uint16)
        mx.eval(h)
        return np.array(h).astype(np.uint16)

    def erf(self, x: Any) -> Any:
        return elementwise("erf", x)

    def source(self, op: str) -> str | None:
        if op not in SOURCES:
            return None
        params, body, args = SOURCES[op]
        return op_source("import mlx.core as mx\nimport mlx.nn as nn\n\nmx.set_default_device(mx.cpu)", op, params,
                         body, f"a = mx.array\ny = {{f}}({args})\nmx.eval(y)\nreturn np.array(y)")

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        return host(llama(cfg, seed)(ids(tokens)))

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        m, o = llama(cfg, seed), optimizer(opt)

        def loss_fn(model: Any, x: mx.array, y: mx.array) -> Any:
            return nn.losses.cross_entropy(model(x).reshape(-1, cfg.vocab), y.reshape(-1), reduction="mean")

        losses = []
        for s, (x, y) in enumerate(batches):
            if s == save_at:
                m, o = resumed(cfg, opt, m, o)
            loss, g = nn.value_and_grad(m, loss_fn)(m, ids(x), ids(y))
            o.update(m, decayed(opt, g, m.trainable_parameters()))
            mx.eval(m.parameters(), o.state, loss)
            losses.append(np.float32(np.array(loss)))
        return ({k: impl_shape(k, host(v)) for k, v in tree_flatten(m.parameters())},
                np.array(losses, np.float32))

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        o = optimizer(opt)  # a parameter tree is a dict: the optimizer's state is keyed like it
        ps = {f"p{j}": dev(p) for j, p in enumerate(params)}
        for gs in grads:
            ps = o.apply_gradients(decayed(opt, {f"p{j}": dev(g) for j, g in enumerate(gs)}, ps), ps)
            mx.eval(ps, o.state)
        return [host(ps[f"p{j}"]) for j in range(len(params))]

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        raise self._na("threads", "MLX has no thread-count setting (its CPU backend runs a stream's operations on "
                       "that stream's one worker thread, with the reference BLAS), so 1 and 2 threads cannot be "
                       "asked for")
        yield


def make(device: str = "cpu") -> Target:
    return Mlx(device)
