"""The conformance target `jax`: the laws' operations on JAX on the CPU in float32 (x64 disabled), as a model author
writes them with jax.numpy, jax.nn and optax.

jnp.matmul for Linear; RMSNorm as Flax and Hugging Face's Flax Llama write it (x * rsqrt(mean(x^2) + eps) * w);
LayerNorm through jax.nn.standardize; jax.nn.softmax and log_softmax; optax's
softmax_cross_entropy_with_integer_labels for cross-entropy's per-row terms; jax.nn.dot_product_attention
(is_causal=True, grouped-query heads, implementation "xla"); jax.scipy.special.erf; the bfloat16 cast. Every
operation is jitted, as a JAX program runs it (one compilation per shape, cached); so are the tiny Llama's forward
and its training step, as two programs (loss and gradient, then the optimizer's update). optax's sgd, adam and
adamw (Adam's L2 weight decay as add_decayed_weights before adam, as PyTorch adds it to the gradient); a checkpoint
as the parameters' and the optimizer state's leaves in a .npz.

Not applicable: dropout (jax.nn has none: it lives in Flax or Equinox, over a PRNG key). Not run: 1 vs 2 threads
(XLA sizes its CPU thread pool when the process starts, from XLA_FLAGS)."""

from __future__ import annotations

import contextlib
import io
import platform
from functools import partial
from typing import Any, Callable, Iterator, Sequence

from bendtorch.records.targets import TargetRecord
from bendtorch.targets.base import NotApplicable, NotRun, Opt, Target, as_f32, impl_shape, op_source, require, weights

# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("jax", "bendtorch.targets.jax:make",
                      "JAX on the CPU in float32, jitted, with jax.numpy, jax.nn and optax",
                      libraries=("jax", "numpy"), extra="jax", rank=2)


require("jax", "optax", target="jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # type: ignore[import-untyped]  # noqa: E402

from bendtorch.impl.llama import LlamaCfg  # noqa: E402

jax.config.update("jax_enable_x64", False)  # type: ignore[no-untyped-call]
jax.config.update("jax_platforms", "cpu")  # type: ignore[no-untyped-call]


def _rms(x: Any, w: Any, eps: float) -> Any:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + jnp.float32(eps)) * w


def _rotate_half(x: Any) -> Any:
    h = x.shape[-1] // 2
    return jnp.concatenate((-x[..., h:], x[..., :h]), axis=-1)


def _forward(cfg: LlamaCfg, P: dict[str, Any], ids: Any) -> Any:
    """The tiny Llama as Hugging Face's FlaxLlamaForCausalLM computes it, layout (b, t, heads, hd)."""
    b, t = ids.shape
    h, kv, hd = cfg.heads, cfg.kv_heads, cfg.hd
    inv = 1.0 / (cfg.theta ** (jnp.arange(0, hd, 2, dtype=jnp.int32).astype(jnp.float32) / hd))
    fr = jnp.outer(jnp.arange(t, dtype=jnp.float32), inv)
    emb = jnp.concatenate((fr, fr), axis=-1)
    cos, sin = jnp.cos(emb)[None, :, None, :], jnp.sin(emb)[None, :, None, :]
    sc = float(np.float32(1.0 / np.sqrt(hd)))
    x = P["model.embed_tokens.weight"][ids]
    for i in range(cfg.layers):
        pre = f"model.layers.{i}."
        hn = _rms(x, P[pre + "input_layernorm.weight"], cfg.eps)
        q = (hn @ P[pre + "self_attn.q_proj.weight"].T).reshape(b, t, h, hd)
        k = (hn @ P[pre + "self_attn.k_proj.weight"].T).reshape(b, t, kv, hd)
        v = (hn @ P[pre + "self_attn.v_proj.weight"].T).reshape(b, t, kv, hd)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        o = jax.nn.dot_product_attention(q, k, v, scale=sc, is_causal=True, implementation="xla")
        x = x + o.reshape(b, t, h * hd) @ P[pre + "self_attn.o_proj.weight"].T
        hn = _rms(x, P[pre + "post_attention_layernorm.weight"], cfg.eps)
        m = jax.nn.silu(hn @ P[pre + "mlp.gate_proj.weight"].T) * (hn @ P[pre + "mlp.up_proj.weight"].T)
        x = x + m @ P[pre + "mlp.down_proj.weight"].T
    x = _rms(x, P["model.norm.weight"], cfg.eps)
    return x @ P["model.embed_tokens.weight"].T


def _loss(cfg: LlamaCfg, P: dict[str, Any], x: Any, y: Any) -> Any:
    z = _forward(cfg, P, x).reshape(-1, cfg.vocab)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(z, y.reshape(-1)))


def _optimizer(opt: Opt) -> optax.GradientTransformation:
    if opt.name in ("sgd", "momentum"):
        tx = optax.sgd(opt.lr, momentum=opt.mu if opt.name == "momentum" else None)
        return optax.chain(optax.add_decayed_weights(opt.wd), tx) if opt.wd else tx
    if opt.name == "adam":
        tx = optax.adam(opt.lr, b1=opt.b1, b2=opt.b2, eps=opt.eps)
        return optax.chain(optax.add_decayed_weights(opt.wd), tx) if opt.wd else tx
    return optax.adamw(opt.lr, b1=opt.b1, b2=opt.b2, eps=opt.eps, weight_decay=opt.wd)


def _dpa(q: Any, k: Any, v: Any, sc: Any) -> Any:
    # the laws' (b, heads, t, hd) <-> jax.nn's (b, t, heads, hd)
    o = jax.nn.dot_product_attention(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3),
                                     scale=sc, is_causal=True, implementation="xla")
    return o.transpose(0, 2, 1, 3)


def _dpa_grad(q: Any, k: Any, v: Any, do: Any, sc: Any) -> Any:
    _, vjp = jax.vjp(partial(_dpa, sc=sc), q, k, v)
    return vjp(do)


# every operation jitted, as a JAX program runs it (one compilation per shape, cached)
_JIT: dict[str, Callable[..., Any]] = {
    "matmul_nt": jax.jit(lambda x, w: jnp.matmul(x, w.T)),
    "linear": jax.jit(lambda x, w, b: jnp.matmul(x, w.T) + b),
    "rms_norm": jax.jit(_rms, static_argnums=2),
    "layer_norm": jax.jit(lambda x, w, b, eps: jax.nn.standardize(x, axis=-1, epsilon=eps) * w + b,
                          static_argnums=3),
    "softmax": jax.jit(partial(jax.nn.softmax, axis=-1)),
    "log_softmax": jax.jit(partial(jax.nn.log_softmax, axis=-1)),
    "ce_rows": jax.jit(optax.softmax_cross_entropy_with_integer_labels),
    "attention": jax.jit(_dpa),
    "attention_grad": jax.jit(_dpa_grad),
    "bf16": jax.jit(lambda x: x.astype(jnp.bfloat16)),
    "erf": jax.jit(jax.scipy.special.erf),
}


# each operation in JAX alone, for a failure's reproduction (Target.source): its parameters, its computation on jax
# arrays (_JIT's, written out), how the numpy arrays become its arguments (a = jnp.asarray) and its jax.jit call
SOURCES: dict[str, tuple[str, str, str, str]] = {
    "linear": ("x, w, b", "y = jnp.matmul(x, w.T)\nreturn y if b is None else y + b",
               "a(x), a(w), None if b is None else a(b)", "jax.jit({f})"),
    "rms_norm": ("x, w, eps", "return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + jnp.float32(eps)) * w",
                 "a(x), a(w), eps", "jax.jit({f}, static_argnums=2)"),
    "layer_norm": ("x, w, b, eps", "return jax.nn.standardize(x, axis=-1, epsilon=eps) * w + b", "a(x), a(w), a(b), eps",
                   "jax.jit({f}, static_argnums=3)"),
    "softmax": ("x", "return jax.nn.softmax(x, axis=-1)", "a(x)", "jax.jit({f})"),
    "log_softmax": ("x", "return jax.nn.log_softmax(x, axis=-1)", "a(x)", "jax.jit({f})"),
    "ce_rows": ("z, labels", "return optax.softmax_cross_entropy_with_integer_labels(z, labels)",
                "a(z), jnp.asarray(np.asarray(labels, np.int32))", "jax.jit({f})"),
    "attention": ("q, k, v, sc", "o = jax.nn.dot_product_attention(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),\n"
                  "                                 v.transpose(0, 2, 1, 3), scale=sc, is_causal=True,\n"
                  '                                 implementation="xla")\nreturn o.transpose(0, 2, 1, 3)',
                  "a(q), a(k), a(v), jnp.float32(sc)", "jax.jit({f})"),
    "erf": ("x", "return jax.scipy.special.erf(x)", "a(x)", "jax.jit({f})"),
}
_IMPORTS = 'import jax\nimport jax.numpy as jnp\nimport jax.scipy.special\nimport optax\n\njax.config.update("jax_platforms", "cpu")'

# optax's optimizers as opt_steps applies them (_optimizer, written out), for the optimizer laws' reproductions
OPT_SOURCE = """\
import jax.numpy as jnp
import optax


def opt_steps(optimizer, params, grads):
    o = optimizer
    if o["name"] in ("sgd", "momentum"):
        tx = optax.sgd(o["lr"], momentum=o["mu"] if o["name"] == "momentum" else None)
    elif o["name"] == "adam":
        tx = optax.adam(o["lr"], b1=o["b1"], b2=o["b2"], eps=o["eps"])
    else:
        tx = optax.adamw(o["lr"], b1=o["b1"], b2=o["b2"], eps=o["eps"], weight_decay=o["wd"])
    if o["wd"] and o["name"] != "adamw":
        tx = optax.chain(optax.add_decayed_weights(o["wd"]), tx)
    ps = [jnp.asarray(p) for p in params]
    state = tx.init(ps)
    for gs in grads:
        updates, state = tx.update([jnp.asarray(g) for g in gs], state, ps)
        ps = optax.apply_updates(ps, updates)
    return [np.asarray(p) for p in ps]
"""


class Jax(Target):
    name = "jax"

    def __init__(self, device: str = "cpu") -> None:
        super().__init__(device)
        self._jit: dict[Any, Callable[..., Any]] = {}

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version
        return {"jax": jax.__version__, "jaxlib": version("jaxlib"), "optax": version("optax"),
                "numpy": np.__version__, "device": str(jax.devices()[0]), "machine": platform.machine()}

    @staticmethod
    def _np(a: Any) -> Any:
        return as_f32(np.asarray(a))

    @staticmethod
    def _j(a: Any) -> Any:
        return jnp.asarray(as_f32(a))

    def source(self, op: str) -> str | None:
        if op == "opt_steps":
            return OPT_SOURCE
        if op not in SOURCES:
            return None
        params, body, args, wrap = SOURCES[op]
        return op_source(_IMPORTS, op, params, body, f"a = jnp.asarray\nreturn np.asarray({{f}}({args}))", wrap)

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        if b is None:
            return self._np(_JIT["matmul_nt"](self._j(x), self._j(w)))
        return self._np(_JIT["linear"](self._j(x), self._j(w), self._j(b)))

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        return self._np(_JIT["rms_norm"](self._j(x), self._j(w), eps))

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        return self._np(_JIT["layer_norm"](self._j(x), self._j(w), self._j(b), eps))

    def softmax(self, x: Any) -> Any:
        return self._np(_JIT["softmax"](self._j(x)))

    def log_softmax(self, x: Any) -> Any:
        return self._np(_JIT["log_softmax"](self._j(x)))

    def ce_rows(self, z: Any, labels: Any) -> Any:
        return self._np(_JIT["ce_rows"](self._j(z), jnp.asarray(np.asarray(labels, np.int32))))

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        return self._np(_JIT["attention"](self._j(q), self._j(k), self._j(v), jnp.float32(sc)))

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        dq, dk, dv = _JIT["attention_grad"](self._j(q), self._j(k), self._j(v), self._j(do), jnp.float32(sc))
        return self._np(dq), self._np(dk), self._np(dv)

    def dropout(self, x: Any, p: float) -> Any:
        raise NotApplicable("jax dropout: jax.nn has no dropout (Flax and Equinox write it over a PRNG key)")

    def bf16_bits(self, x: Any) -> Any:
        return np.asarray(_JIT["bf16"](self._j(x))).view(np.uint16).copy()

    def erf(self, x: Any) -> Any:
        return self._np(_JIT["erf"](self._j(x)))

    def _params(self, cfg: LlamaCfg, seed: int) -> dict[str, Any]:
        return {k: self._j(np.asarray(v).reshape(-1) if k.endswith("norm.weight") else v)
                for k, v in weights(cfg, seed).items()}

    def _compiled(self, key: Any, make: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
        if key not in self._jit:
            self._jit[key] = make()
        return self._jit[key]

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        f = self._compiled(("fwd", cfg), lambda: jax.jit(partial(_forward, cfg)))
        return self._np(f(self._params(cfg, seed), jnp.asarray(np.asarray(tokens, np.int32))))

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        tx = _optimizer(opt)

        def make_update() -> Callable[..., Any]:
            def update(P: Any, st: Any, g: Any) -> Any:
                up, st = tx.update(g, st, P)
                return optax.apply_updates(P, up), st
            return jax.jit(update)

        # two jitted programs a step: the loss and its gradient (compiled once per model), the optimizer's update
        # (once per optimizer), so the laws that train under four optimizers compile the model once
        grad = self._compiled(("grad", cfg), lambda: jax.jit(jax.value_and_grad(partial(_loss, cfg))))
        update = self._compiled(("update", cfg, opt), make_update)

        def step(P: Any, st: Any, x: Any, y: Any) -> Any:
            loss, g = grad(P, x, y)
            return (*update(P, st, g), loss)

        P = self._params(cfg, seed)
        st = tx.init(P)
        losses = []
        for s, (x, y) in enumerate(batches):
            if s == save_at:
                leaves, tree = jax.tree_util.tree_flatten((P, st))
                buf = io.BytesIO()
                np.savez(buf, *[np.asarray(a) for a in leaves])
                buf.seek(0)
                with np.load(buf, allow_pickle=False) as z:
                    back = [jnp.asarray(z[f"arr_{j}"]) for j in range(len(leaves))]
                P, st = jax.tree_util.tree_unflatten(tree, back)
            P, st, loss = step(P, st, jnp.asarray(np.asarray(x, np.int32)), jnp.asarray(np.asarray(y, np.int32)))
            losses.append(np.float32(loss))
        return {k: impl_shape(k, self._np(v)) for k, v in P.items()}, np.array(losses, np.float32)

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        tx = _optimizer(opt)
        ps = [self._j(p) for p in params]
        st = tx.init(ps)
        for gs in grads:
            up, st = tx.update([self._j(g) for g in gs], st, ps)
            ps = optax.apply_updates(ps, up)
        return [self._np(p) for p in ps]

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        raise NotRun("jax threads: XLA sizes its CPU thread pool when the process starts (XLA_FLAGS), so one "
                     "process cannot compare 1 and 2 threads")
        yield


def make(device: str = "cpu") -> Target:
    return Jax(device)
