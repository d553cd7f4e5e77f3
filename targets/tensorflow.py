"""The conformance target `tensorflow`: the laws' operations on TensorFlow's CPU build (tensorflow-cpu) in float32, as
a model author writes them with tf ops (no Keras layers), Keras's SGD and PyTorch's Adam in tf ops. Gradients come
from tf.GradientTape. Two columns, the record's variants: eager (TF 2's default execution, a custom training loop
without @tf.function: each op is its registered CPU kernel, nothing rewritten between them) and tf.function (each
operation, the Llama's forward and the whole training step, tape and optimizer update included, as a
tf.function(jit_compile=False), as Keras's fit and a decorated training loop run them: grappler's rewrites and, with
oneDNN on, its fused kernels apply to the graph; one trace per input shape).

    linear          tf.linalg.matmul(x, w, transpose_b=True) + b (without a bias, the matmul alone)
    rms_norm        x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), -1, keepdims=True) + eps) * w (TF has no RMSNorm op)
    layer_norm      tf.nn.moments(x, axes=[-1], keepdims=True), then tf.nn.batch_normalization(x, mean, var, b, w,
                    eps) (TF has no layer-norm op; this is the tf ops' form of it)
    softmax         tf.nn.softmax(x, axis=-1)
    log_softmax     tf.nn.log_softmax(x, axis=-1)
    ce_rows         tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits) (the labels int32)
    attention       tf.linalg.matmul(q, k, transpose_b=True) * scale, tf.where(causal mask, s, -inf) (the mask from
                    tf.linalg.band_part), tf.nn.softmax, tf.linalg.matmul(p, v); grouped-query by tf.repeat of the
                    key/value heads (Hugging Face's repeat_kv): TF has no fused attention op
    attention_grad  tf.GradientTape over that, output_gradients = dO
    dropout         tf.nn.dropout(x, rate=p) (training: it always drops)
    bf16_bits       tf.bitcast(tf.cast(x, tf.bfloat16), tf.uint16)
    erf             tf.math.erf
    llama_logits    the tiny Llama in tf ops: tf.gather for the embedding, the RMSNorm above, tf.linalg.matmul with
                    transpose_b for the projections, RoPE in the rotate-half form (cos and sin computed as Hugging
                    Face's LlamaRotaryEmbedding does, in float32), the attention above, tf.nn.silu, the head tied to
                    the embedding
    train           tf.GradientTape over the mean of tf.nn.sparse_softmax_cross_entropy_with_logits, then the
                    optimizer's apply_gradients (opt_steps') on the tf.Variables; the checkpoint is every model and
                    optimizer variable through tf.io.serialize_tensor and tf.io.parse_tensor (TensorProto bytes, nothing
                    unpickled), assigned into a fresh model and a freshly built optimizer
    opt_steps       SGD and momentum: keras.optimizers.SGD (Keras 3, TensorFlow backend; momentum in Keras's
                    velocity form v = mu v - lr g, p += v: PyTorch's update for a constant lr). Adam and AdamW: the
                    update written in tf ops following torch.optim.Adam's and AdamW's formulas (class Adam), since
                    Keras's Adam adds eps before the bias correction and so is another optimizer; Adam's weight
                    decay is PyTorch's L2 (wd p added to the gradient), AdamW's decoupled

Not run: threads(k). TensorFlow sizes its intra-op thread pool when its runtime initialises
(tf.config.threading.set_intra_op_parallelism_threads raises once it has), so one process cannot compare 1 and 2
threads.

The elementwise functions of the sweep's atlas (ELEMENTWISE, and their derivatives through tf.GradientTape,
`derivative`) are here too: tf.exp, tf.math.log, tf.tanh, tf.sin, tf.cos, tf.math.erf, tf.sqrt, tf.math.rsqrt,
tf.sigmoid, tf.nn.silu, tf.nn.gelu(approximate=True) (GELU's tanh form) and tf.nn.gelu(approximate=False) (its erf
form).

TensorFlow is imported by load(), so this module imports without it; TF_CPP_MIN_LOG_LEVEL is set to 2 beforehand
unless already set (TensorFlow's C++ notes are noise here), and left set; the notes it writes while it is imported,
before it reads that setting, are left out of standard error (records.machine.import_quietly).
TF_ENABLE_ONEDNN_OPTS (read when TensorFlow is imported) decides whether oneDNN's kernels replace Eigen's for matmuls
and some row operations: the machine record (records.machine) carries its value."""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from bendtorch.impl.llama import LlamaCfg
from bendtorch.records.machine import import_quietly
from bendtorch.records.targets import TargetRecord, Variant
from bendtorch.targets.base import NotRun, Opt, Target, as_f32, impl_shape, op_source, require, weights

# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("tensorflow", "bendtorch.targets.tensorflow:make",
                      "TensorFlow's CPU build (tensorflow-cpu) in float32: tf.linalg.matmul, tf.nn's softmax, "
                      "log-softmax, cross-entropy and dropout, attention in tf ops, tf.GradientTape, Keras's SGD and "
                      "PyTorch's Adam in tf ops, checkpoints through tf.io.serialize_tensor; eager (TF 2's default) "
                      "and in tf.function (jit_compile=False, grappler's graph) as two columns",
                      libraries=("tensorflow", "numpy"), extra="tensorflow",
                      variants=(Variant("eager", "eager", {"function": False}),
                                Variant("tf-function", "tf.function", {"function": True})), rank=5)


# tensorflow and keras, imported by load(): untyped, used as Any
tf: Any = None
keras: Any = None


def load() -> None:
    """Import tensorflow and keras (NotRun naming the extra where tensorflow is missing), quietly."""
    global tf, keras
    require("tensorflow", target="tensorflow")
    if tf is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        tf = import_quietly("tensorflow")  # its C++ start-up notes left out (TF_CPP_MIN_LOG_LEVEL misses them)
        keras = importlib.import_module("keras")
        tf.config.set_visible_devices([], "GPU")  # a CPU target wherever it runs


def dev(a: Any) -> Any:
    """A float32 TF tensor of a copy of a."""
    return tf.constant(as_f32(a))


def host(a: Any) -> Any:
    """A TF tensor copied back into a C-contiguous float32 numpy array."""
    return as_f32(a.numpy())


def ids(a: Any) -> Any:
    """Token ids or labels as an int32 TF tensor."""
    return tf.constant(np.asarray(a, np.int32))


# ---- the elementwise functions (the atlas's columns) ----

ELEMENTWISE: dict[str, Callable[[Any], Any]] = {
    "exp": lambda x: tf.exp(x), "log": lambda x: tf.math.log(x), "tanh": lambda x: tf.tanh(x),
    "sin": lambda x: tf.sin(x), "cos": lambda x: tf.cos(x), "erf": lambda x: tf.math.erf(x),
    "sqrt": lambda x: tf.sqrt(x), "rsqrt": lambda x: tf.math.rsqrt(x), "sigmoid": lambda x: tf.sigmoid(x),
    "silu": lambda x: tf.nn.silu(x), "gelu_tanh": lambda x: tf.nn.gelu(x, approximate=True),
    "gelu_erf": lambda x: tf.nn.gelu(x, approximate=False),
}


def elementwise(name: str, x: Any) -> Any:
    """ELEMENTWISE[name] on a float32 numpy array."""
    load()
    return host(ELEMENTWISE[name](dev(x))).reshape(np.shape(x))


def derivative(name: str, x: Any) -> Any:
    """The derivative of ELEMENTWISE[name] at every element of x: tf.GradientTape with the output gradient 1."""
    load()
    a = dev(x)
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = ELEMENTWISE[name](a)
    return host(tape.gradient(y, a, output_gradients=tf.ones_like(y))).reshape(np.shape(x))


# ---- the operations on TF tensors ----

def rms(x: Any, w: Any, eps: float) -> Any:
    return x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), axis=-1, keepdims=True) + eps) * w


def sdpa(q: Any, k: Any, v: Any, sc: float) -> Any:
    """Causal attention on (b, heads, t, hd); k and v of fewer heads repeated for their query heads."""
    g = q.shape[1] // k.shape[1]
    if g > 1:
        k, v = tf.repeat(k, g, axis=1), tf.repeat(v, g, axis=1)
    s = tf.linalg.matmul(q, k, transpose_b=True) * sc
    t_q, t_k = q.shape[2], k.shape[2]
    # lower-right aligned causal mask (query i reads keys up to i + t_k - t_q)
    mask = tf.cast(tf.linalg.band_part(tf.ones((t_q, t_k)), -1, t_k - t_q), tf.bool)
    s = tf.where(mask, s, tf.constant(-np.inf, tf.float32))
    return tf.linalg.matmul(tf.nn.softmax(s, axis=-1), v)


def rope(x: Any, cos: Any, sin: Any) -> Any:
    h = x.shape[-1] // 2
    return x * cos + tf.concat([-x[..., h:], x[..., :h]], axis=-1) * sin


def forward(cfg: LlamaCfg, P: dict[str, Any], tokens: Any) -> Any:
    """The tiny Llama's logits, layout (b, heads, t, hd) in attention, parameters by Hugging Face's names."""
    b, t = tokens.shape
    h, kv, hd = cfg.heads, cfg.kv_heads, cfg.hd
    inv = 1.0 / tf.pow(tf.constant(cfg.theta, tf.float32), tf.range(0, hd, 2, dtype=tf.float32) / hd)
    fr = tf.tensordot(tf.range(t, dtype=tf.float32), inv, axes=0)
    emb = tf.concat([fr, fr], axis=-1)
    cos, sin = tf.cos(emb), tf.sin(emb)
    sc = float(np.float32(1.0 / np.sqrt(hd)))

    def mm(x: Any, name: str) -> Any:
        return tf.linalg.matmul(x, P[name], transpose_b=True)

    def heads(x: Any, n: int) -> Any:
        return tf.transpose(tf.reshape(x, (b, t, n, hd)), (0, 2, 1, 3))

    x = tf.gather(P["model.embed_tokens.weight"], tokens)
    for i in range(cfg.layers):
        pre = f"model.layers.{i}."
        hn = rms(x, P[pre + "input_layernorm.weight"], cfg.eps)
        q = rope(heads(mm(hn, pre + "self_attn.q_proj.weight"), h), cos, sin)
        k = rope(heads(mm(hn, pre + "self_attn.k_proj.weight"), kv), cos, sin)
        v = heads(mm(hn, pre + "self_attn.v_proj.weight"), kv)
        o = tf.reshape(tf.transpose(sdpa(q, k, v, sc), (0, 2, 1, 3)), (b, t, h * hd))
        x = x + mm(o, pre + "self_attn.o_proj.weight")
        hn = rms(x, P[pre + "post_attention_layernorm.weight"], cfg.eps)
        m = tf.nn.silu(mm(hn, pre + "mlp.gate_proj.weight")) * mm(hn, pre + "mlp.up_proj.weight")
        x = x + mm(m, pre + "mlp.down_proj.weight")
    return mm(rms(x, P["model.norm.weight"], cfg.eps), "model.embed_tokens.weight")


def params(cfg: LlamaCfg, seed: int) -> dict[str, Any]:
    """The tiny Llama's weights drawn from seed as tf.Variables (a norm's gain as a vector)."""
    return {k: tf.Variable(dev(np.asarray(v).reshape(-1) if k.endswith("norm.weight") else v), name=k)
            for k, v in weights(cfg, seed).items()}


class Adam:
    """torch.optim.Adam and AdamW (single-tensor form) in tf ops on tf.Variables: m = b1 m + (1 - b1) g,
    v = b2 v + (1 - b2) g^2, p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps), the bias corrections
    Python floats as PyTorch computes them; AdamW first scales p by 1 - lr wd. Keras's Adam is another optimizer:
    it adds eps to sqrt(v) before the bias correction (folded into its step size), which moves a parameter whose
    gradient is near eps by a different amount. `variables`: the step count, then every m, then every v, in the
    parameters' order (the checkpoint's state)."""

    def __init__(self, opt: Opt) -> None:
        self.opt = opt
        self.variables: list[Any] = []

    def build(self, params: list[Any]) -> None:
        self.t = tf.Variable(tf.constant(0, tf.int64), name="step")
        self.m = [tf.Variable(tf.zeros_like(p), name="exp_avg") for p in params]
        self.v = [tf.Variable(tf.zeros_like(p), name="exp_avg_sq") for p in params]
        self.variables = [self.t, *self.m, *self.v]

    def apply_gradients(self, pairs: Any) -> None:
        o = self.opt
        self.t.assign_add(1)
        # the step's scalars in float64, rounded to float32 once, as PyTorch's Python floats are (in tf ops, so a
        # tf.function's graph computes them at each step, not once at tracing)
        t = tf.cast(self.t, tf.float64)
        bc1 = 1.0 - tf.pow(tf.constant(o.b1, tf.float64), t)
        step_size = tf.cast(o.lr / bc1, tf.float32)
        bc2_sqrt = tf.cast(tf.sqrt(1.0 - tf.pow(tf.constant(o.b2, tf.float64), t)), tf.float32)
        for (g, p), m, v in zip(pairs, self.m, self.v):
            if o.name == "adamw":
                p.assign(p * (1 - o.lr * o.wd))
            m.assign(m * o.b1 + g * (1 - o.b1))
            v.assign(v * o.b2 + g * g * (1 - o.b2))
            p.assign(p - step_size * (m / (tf.sqrt(v) / bc2_sqrt + o.eps)))


def optimizer(opt: Opt, variables: list[Any]) -> Any:
    """The laws' optimizer, built on the variables (its state created): Keras's SGD for SGD and momentum (the same
    update as PyTorch's in its velocity form), Adam above for Adam and AdamW."""
    o: Any
    if opt.name in ("sgd", "momentum"):
        o = keras.optimizers.SGD(opt.lr, momentum=opt.mu if opt.name == "momentum" else 0.0)
    else:
        o = Adam(opt)
    o.build(variables)
    return o


def step(opt: Opt, o: Any, grads: list[Any], variables: list[Any]) -> None:
    """One optimizer step; the L2 weight decay of PyTorch's Adam and SGD (wd p added to the gradient) first."""
    grads = [tf.convert_to_tensor(g) for g in grads]  # a gathered embedding's gradient comes as IndexedSlices
    if opt.name != "adamw" and opt.wd:
        grads = [g + opt.wd * v for g, v in zip(grads, variables)]
    o.apply_gradients(zip(grads, variables))


def saved_and_loaded(variables: list[Any]) -> list[Any]:
    """The variables' values through tf.io.serialize_tensor (TensorProto bytes) and tf.io.parse_tensor."""
    blobs = [bytes(tf.io.serialize_tensor(v).numpy()) for v in variables]
    return [tf.io.parse_tensor(s, v.dtype) for s, v in zip(blobs, variables)]


# each operation in TensorFlow alone, for a failure's reproduction (Target.source): its parameters, its computation
# on tensors (the functions above, written out) and how the numpy arrays become its arguments (c = tf.constant)
SOURCES: dict[str, tuple[str, str, str]] = {
    "linear": ("x, w, b", "y = tf.linalg.matmul(x, w, transpose_b=True)\nreturn y if b is None else y + b",
               "c(x), c(w), None if b is None else c(b)"),
    "rms_norm": ("x, w, eps", "return x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), axis=-1, keepdims=True) + eps) * w",
                 "c(x), c(w), eps"),
    "layer_norm": ("x, w, b, eps", "mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)\n"
                   "return tf.nn.batch_normalization(x, mean, var, b, w, eps)", "c(x), c(w), c(b), eps"),
    "softmax": ("x", "return tf.nn.softmax(x, axis=-1)", "c(x)"),
    "log_softmax": ("x", "return tf.nn.log_softmax(x, axis=-1)", "c(x)"),
    "ce_rows": ("z, labels", "return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=z)",
                "c(z), c(np.asarray(labels, np.int32))"),
    "attention": ("q, k, v, sc", "g = q.shape[1] // k.shape[1]\nif g > 1:\n"
                  "    k, v = tf.repeat(k, g, axis=1), tf.repeat(v, g, axis=1)\n"
                  "s = tf.linalg.matmul(q, k, transpose_b=True) * sc\nt_q, t_k = q.shape[2], k.shape[2]\n"
                  "mask = tf.cast(tf.linalg.band_part(tf.ones((t_q, t_k)), -1, t_k - t_q), tf.bool)\n"
                  "s = tf.where(mask, s, tf.constant(-np.inf, tf.float32))\n"
                  "return tf.linalg.matmul(tf.nn.softmax(s, axis=-1), v)", "c(q), c(k), c(v), sc"),
    "erf": ("x", "return tf.math.erf(x)", "c(x)"),
}

# Keras's SGD (plain or with momentum) as opt_steps applies it, for the optimizer laws' reproductions
OPT_SOURCE = """\
import keras
import tensorflow as tf


def opt_steps(optimizer, params, grads):
    assert optimizer["name"] in ("sgd", "momentum"), "Keras's SGD: plain or with momentum"
    vs = [tf.Variable(tf.constant(p)) for p in params]
    o = keras.optimizers.SGD(optimizer["lr"], momentum=optimizer["mu"] if optimizer["name"] == "momentum" else 0.0)
    o.build(vs)

    def step(*gs):
        o.apply_gradients(zip(gs, vs))
{wrap}
    for gs in grads:
        step(*[tf.constant(g) for g in gs])
    return [v.numpy() for v in vs]
"""


class TensorFlow(Target):
    """TensorFlow's CPU build, eager or in tf.function: tf ops, tf.GradientTape, Keras's SGD, PyTorch's Adam and
    AdamW in tf ops."""

    name = "tensorflow"
    libraries = ("tensorflow", "numpy")

    def __init__(self, device: str = "cpu", function: bool = False) -> None:
        load()
        super().__init__(device, function=function)
        self.function = function
        self._fns: dict[Any, Any] = {}

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version
        return {"tensorflow": tf.__version__, "tensorflow-cpu": version("tensorflow-cpu"),
                "keras": keras.__version__, "numpy": np.__version__,
                "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
                "execution": "tf.function" if self.function else "eager"}

    def run(self, key: Any, f: Callable[..., Any], *args: Any) -> Any:
        """f(*args) eagerly; in tf.function, f's tf.function (jit_compile=False, made once per key: the operation
        and its Python constants) called on the tensors, which traces it once per input shape."""
        if not self.function:
            return f(*args)
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = tf.function(f, jit_compile=False)
        return fn(*args)

    def fresh(self, f: Callable[..., Any]) -> Callable[..., Any]:
        """f, or its own tf.function (a training step closing over its model's variables and its optimizer)."""
        return tf.function(f, jit_compile=False) if self.function else f

    def source(self, op: str) -> str | None:
        wrap = "tf.function({f}, jit_compile=False)" if self.function else None
        if op == "opt_steps":
            return OPT_SOURCE.format(wrap="\n    step = tf.function(step, jit_compile=False)\n" if self.function else "")
        if op not in SOURCES:
            return None
        params, body, args = SOURCES[op]
        return op_source("import tensorflow as tf", op, params, body, f"c = tf.constant\nreturn {{f}}({args}).numpy()",
                         wrap)

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        if b is None:
            return host(self.run("matmul", lambda x, w: tf.linalg.matmul(x, w, transpose_b=True), dev(x), dev(w)))
        return host(self.run("linear", lambda x, w, b: tf.linalg.matmul(x, w, transpose_b=True) + b, dev(x), dev(w),
                             dev(b)))

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        return host(self.run(("rms", eps), lambda x, w: rms(x, w, eps), dev(x), dev(w)))

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        def ln(a: Any, w: Any, b: Any) -> Any:
            mean, var = tf.nn.moments(a, axes=[-1], keepdims=True)
            return tf.nn.batch_normalization(a, mean, var, b, w, eps)
        return host(self.run(("ln", eps), ln, dev(x), dev(w), dev(b)))

    def softmax(self, x: Any) -> Any:
        return host(self.run("softmax", lambda x: tf.nn.softmax(x, axis=-1), dev(x)))

    def log_softmax(self, x: Any) -> Any:
        return host(self.run("log_softmax", lambda x: tf.nn.log_softmax(x, axis=-1), dev(x)))

    def ce_rows(self, z: Any, labels: Any) -> Any:
        return host(self.run("ce", lambda z, l: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=l, logits=z),
                             dev(z), ids(labels)))

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        sc = float(sc)
        return host(self.run(("attn", sc), lambda q, k, v: sdpa(q, k, v, sc), dev(q), dev(k), dev(v)))

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        sc = float(sc)

        def grad(a: Any, c: Any, e: Any, do: Any) -> Any:
            with tf.GradientTape() as tape:
                tape.watch([a, c, e])
                o = sdpa(a, c, e, sc)
            return tape.gradient(o, [a, c, e], output_gradients=do)
        dq, dk, dv = self.run(("attn_grad", sc), grad, dev(q), dev(k), dev(v), dev(do))
        return host(dq), host(dk), host(dv)

    def dropout(self, x: Any, p: float) -> Any:
        p = float(p)
        return host(self.run(("dropout", p), lambda x: tf.nn.dropout(x, rate=p), dev(x)))

    def bf16_bits(self, x: Any) -> Any:
        h = self.run("bf16", lambda x: tf.bitcast(tf.cast(x, tf.bfloat16), tf.uint16), dev(x))
        return h.numpy().astype(np.uint16)

    def erf(self, x: Any) -> Any:
        return host(self.run("erf", ELEMENTWISE["erf"], dev(x)))

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        P = {k: v.read_value() for k, v in params(cfg, seed).items()}
        return host(self.run(("llama", cfg), lambda P, t: forward(cfg, P, t), P, ids(tokens)))

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        def stepper(P: dict[str, Any], o: Any) -> Callable[..., Any]:
            def train_step(x: Any, y: Any) -> Any:
                with tf.GradientTape() as tape:
                    z = tf.reshape(forward(cfg, P, x), (-1, cfg.vocab))
                    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=tf.reshape(y, (-1,)), logits=z))
                step(opt, o, tape.gradient(loss, list(P.values())), list(P.values()))
                return loss
            return self.fresh(train_step)

        P = params(cfg, seed)
        o = optimizer(opt, list(P.values()))
        train_step = stepper(P, o)
        losses = []
        for s, (x, y) in enumerate(batches):
            if s == save_at:
                model_back, opt_back = saved_and_loaded(list(P.values())), saved_and_loaded(o.variables)
                P = {k: tf.Variable(tf.zeros_like(v), name=k) for k, v in P.items()}
                for var, val in zip(P.values(), model_back):
                    var.assign(val)
                o = optimizer(opt, list(P.values()))
                for var, val in zip(o.variables, opt_back):
                    var.assign(val)
                train_step = stepper(P, o)
            losses.append(np.float32(train_step(ids(x), ids(y)).numpy()))
        return {k: impl_shape(k, host(v)) for k, v in P.items()}, np.array(losses, np.float32)

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        vs = [tf.Variable(dev(p)) for p in params]
        o = optimizer(opt, vs)
        apply = self.fresh(lambda *gs: step(opt, o, list(gs), vs))
        for gs in grads:
            apply(*[dev(g) for g in gs])
        return [host(v) for v in vs]

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        raise NotRun("tensorflow threads: TensorFlow sizes its intra-op thread pool when its runtime initialises "
                     "(tf.config.threading.set_intra_op_parallelism_threads raises after that), so one process "
                     "cannot compare 1 and 2 threads")
        yield


def make(device: str = "cpu", function: bool = False) -> Target:
    """The target eager (function False: TF 2's default) or with every operation, forward and training step in a
    tf.function (function True)."""
    return TensorFlow(device, function)
