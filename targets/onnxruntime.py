"""The conformance target `onnxruntime`: each of the laws' operations as a small ONNX graph built with onnx.helper at
opset 24, run by onnxruntime's CPUExecutionProvider with the graph optimisations at one level: ORT_ENABLE_ALL (what
an InferenceSession gets by default) or ORT_DISABLE_ALL (the graph as written), the record's two variants.

Opset 24 is the newest at which the CPU provider has a kernel for every operator used here: from opset 25 on
Attention has none and onnxruntime expands the operator's ONNX function (MatMul, Softmax and the masking ops) in its
place. SoftmaxCrossEntropyLoss is an ONNX function at every opset (LogSoftmax, then NegativeLogLikelihoodLoss); the
inference package registers no kernel for it.

A graph holds its parameters as initializers and its activations as inputs, as an exported model holds them:

    linear        Gemm(x, W, b, transB=1) with a bias; MatMul(x, Wᵀ) with Wᵀ an initializer without (torch.onnx's
                  nn.Linear, its transpose folded into the stored weight)
    rms_norm      RMSNormalization(axis=-1, epsilon)        layer_norm   LayerNormalization(axis=-1, epsilon)
    softmax       Softmax(axis=-1)                           log_softmax  LogSoftmax(axis=-1)
    ce_rows       SoftmaxCrossEntropyLoss(reduction="none"), the labels int64 (an ONNX function: LogSoftmax, then
                  NegativeLogLikelihoodLoss)
    attention     Attention(q, k, v; is_causal=1, scale) on 4-D (b, heads, t, hd); grouped-query when k and v have
                  fewer heads
    dropout       Dropout(x, ratio, training_mode=True): the operator's training mode, which the CPU kernel
                  implements (a mask drawn from the node's seed)
    bf16_bits     Cast(to=BFLOAT16), then Cast(to=FLOAT) (exact): the bfloat16's bits are the float32's high half
    erf           Erf; the other elementwise operators (act) for the sweep: Exp, Log, Tanh, Sin, Cos, Sqrt,
                  Reciprocal(Sqrt(x)), Sigmoid, x * Sigmoid(x), Gelu(approximate "tanh" and "none")
    llama_logits  the tiny Llama as one graph: Gather, RMSNormalization, MatMul on transposed initializers,
                  RotaryEmbedding (rotate-half form, its cos/sin cache an initializer computed as Hugging Face's
                  LlamaRotaryEmbedding does, in float32), Attention (3-D, q_num_heads and kv_num_heads, is_causal),
                  SiLU as x * Sigmoid(x), the head tied to the embedding
    threads(k)    SessionOptions.intra_op_num_threads = k (a session per thread count)

One InferenceSession per (operation, attributes, input shapes, initializers' bits, level, threads), kept in a
bounded cache. Not applicable: attention_grad, train, opt_steps (the inference package differentiates nothing and
registers no optimizer: gradient graphs are onnxruntime-training's, a separate package)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
from collections import OrderedDict
from typing import Any, Iterator, Sequence

import numpy as np

from bendtorch.impl.llama import LlamaCfg
from bendtorch.records.targets import TargetRecord, Variant
from bendtorch.targets.base import F32, NotRun, Opt, Target, as_f32, require, thread_count, weights

# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("onnxruntime", "bendtorch.targets.onnxruntime:make",
                      "ONNX Runtime's CPUExecutionProvider on small ONNX graphs built with onnx.helper at opset 24, "
                      "the parameters initializers; graph optimisations ORT_ENABLE_ALL (an InferenceSession's "
                      "default) and ORT_DISABLE_ALL (the graph as written) as two columns",
                      libraries=("onnxruntime", "numpy"), extra="onnx",
                      variants=(Variant("opt-all", "ORT_ENABLE_ALL", {"level": "all"}),
                                Variant("opt-none", "ORT_DISABLE_ALL", {"level": "none"})), rank=4)


# onnx and onnxruntime, imported by load(): this module imports without them, and make() says "not run" with the
# pip command where they are missing
onnx: Any = None
ort: Any = None
oh: Any = None    # onnx.helper
onh: Any = None   # onnx.numpy_helper
TP: Any = None    # onnx.TensorProto


def load() -> None:
    """Import onnx and onnxruntime (NotRun naming the extra where one is missing) and quiet onnxruntime's log."""
    global onnx, ort, oh, onh, TP
    require("onnx", "onnxruntime", target="onnxruntime")
    if ort is None:
        onnx = importlib.import_module("onnx")
        oh, onh = importlib.import_module("onnx.helper"), importlib.import_module("onnx.numpy_helper")
        TP = onnx.TensorProto
        ort = importlib.import_module("onnxruntime")
        ort.set_default_logger_severity(3)  # errors only: its notes on the providers it does not use are noise here


OPSET = 24
LEVELS = {"all": "ORT_ENABLE_ALL", "none": "ORT_DISABLE_ALL"}
CACHED = 256      # sessions kept (least recently used dropped first)
_ELEM = {np.dtype(np.float32): "FLOAT", np.dtype(np.int64): "INT64", np.dtype(np.bool_): "BOOL"}  # TensorProto's

# the elementwise operators as one-node (or two-node) graphs of one input "x", by the sweep's function names
ACTS: dict[str, list[tuple[str, list[str], str, dict[str, Any]]]] = {
    **{f: [(op, ["x"], "y", {})] for f, op in (("exp", "Exp"), ("log", "Log"), ("tanh", "Tanh"), ("sin", "Sin"),
                                               ("cos", "Cos"), ("erf", "Erf"), ("sqrt", "Sqrt"),
                                               ("sigmoid", "Sigmoid"))},
    "rsqrt": [("Sqrt", ["x"], "s", {}), ("Reciprocal", ["s"], "y", {})],
    "silu": [("Sigmoid", ["x"], "s", {}), ("Mul", ["x", "s"], "y", {})],
    "gelu_tanh": [("Gelu", ["x"], "y", {"approximate": "tanh"})],
    "gelu_erf": [("Gelu", ["x"], "y", {"approximate": "none"})],
}


def _value_info(name: str, a: Any, dynamic: bool = False) -> Any:
    shape = ["n"] * a.ndim if dynamic else list(a.shape)
    return oh.make_tensor_value_info(name, getattr(TP, _ELEM[np.dtype(a.dtype)]), shape)


def node(op: str, ins: list[str], out: str = "y", **attrs: Any) -> Any:
    """One ONNX node of the default domain with one output."""
    return oh.make_node(op, ins, [out], **attrs)


def model(nodes: list[Any], feeds: dict[str, Any], inits: dict[str, Any] | None = None,
          dynamic: bool = False) -> bytes:
    """A one-graph ONNX model at OPSET, serialised: inputs typed from the feeds' arrays (their dimensions named
    "n" when dynamic, so one session serves every length), the initializers, one float32 output "y", shapes
    inferred and the model checked as the ONNX checker checks an exported one."""
    g = oh.make_graph(nodes, "op", [_value_info(k, v, dynamic) for k, v in feeds.items()],
                      [oh.make_tensor_value_info("y", TP.FLOAT, None)],
                      initializer=[onh.from_array(v, k) for k, v in (inits or {}).items()])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", OPSET)])
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m)
    return bytes(m.SerializeToString())


def session(graph: bytes, level: str = "all", threads: int = 1, save_to: str | None = None) -> Any:
    """An InferenceSession of the CPU provider on the graph: the optimisation level ("all" or "none"),
    intra_op_num_threads = threads, one inter-op thread, sequential execution; save_to writes the graph as
    optimised (for seeing what a level changed)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if save_to is not None:
        so.optimized_model_filepath = save_to
    return ort.InferenceSession(graph, so, providers=["CPUExecutionProvider"])


def act_nodes(function: str) -> list[Any]:
    """The nodes of one elementwise function of ACTS, from the input "x" to the output "y"."""
    return [node(op, ins, out, **attrs) for op, ins, out, attrs in ACTS[function]]


def act_graph(function: str) -> bytes:
    """The graph of one elementwise function of ACTS on a float32 vector of any length."""
    return model(act_nodes(function), {"x": np.zeros(1, F32)}, dynamic=True)


def _digest(arrays: dict[str, Any]) -> str:
    h = hashlib.sha256()
    for k, v in arrays.items():
        h.update(f"{k}:{v.dtype.str}:{v.shape}".encode())
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


# each operation in ONNX Runtime alone, for a failure's reproduction (Target.source): run() builds the one-graph model
# and the session as model() and session() above do, then each operation's nodes, feeds and initializers
RUN_SOURCE = """\
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def run(nodes, feeds, inits=None):
    \"\"\"The one output y of a graph of the nodes at opset {opset}, on the CPU provider with {level}, one thread.\"\"\"
    g = helper.make_graph(nodes, "op", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                                        for k, v in feeds.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {{}}).items()])
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", {opset})]),
                                          strict_mode=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.{level}
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(["y"], feeds)[0]
"""
SOURCES: dict[str, str] = {
    "linear": """\
def linear(x, w, b):
    if b is None:
        return run([helper.make_node("MatMul", ["x", "wt"], ["y"])], {"x": x}, {"wt": np.ascontiguousarray(w.T)})
    return run([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], {"x": x}, {"w": w, "b": b})
""",
    "rms_norm": """\
def rms_norm(x, w, eps):
    return run([helper.make_node("RMSNormalization", ["x", "w"], ["y"], axis=-1, epsilon=float(eps))], {"x": x},
               {"w": w})
""",
    "layer_norm": """\
def layer_norm(x, w, b, eps):
    return run([helper.make_node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1, epsilon=float(eps))],
               {"x": x}, {"w": w, "b": b})
""",
    "softmax": """\
def softmax(x):
    return run([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": x})
""",
    "log_softmax": """\
def log_softmax(x):
    return run([helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)], {"x": x})
""",
    "attention": """\
def attention(q, k, v, sc):
    return run([helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1, scale=float(sc))],
               {"q": q, "k": k, "v": v})
""",
    "erf": """\
def erf(x):
    return run([helper.make_node("Erf", ["x"], ["y"])], {"x": x})
""",
}


class OnnxRuntime(Target):
    """onnxruntime's CPUExecutionProvider on small ONNX graphs (opset 24) built with onnx.helper."""

    name = "onnxruntime"
    libraries = ("onnxruntime", "onnx", "numpy")

    def __init__(self, device: str = "cpu", level: str = "all") -> None:
        load()
        if level not in LEVELS:
            raise ValueError(f"level {level!r}: 'all' (ORT_ENABLE_ALL) or 'none' (ORT_DISABLE_ALL)")
        super().__init__(device, level=level)
        self.level = level
        self.nthreads = 1
        self._cache: OrderedDict[Any, Any] = OrderedDict()

    def versions(self) -> dict[str, str]:
        return {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "numpy": np.__version__,
                "opset": str(OPSET), "graph_optimization_level": LEVELS[self.level],
                "provider": "CPUExecutionProvider"}

    def _session(self, key: Any, build: Any) -> Any:
        k = (key, self.level, self.nthreads)
        s = self._cache.get(k)
        if s is None:
            s = self._cache[k] = session(build(), self.level, self.nthreads)
            while len(self._cache) > CACHED:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(k)
        return s

    def run(self, tag: Any, nodes: list[Any], feeds: dict[str, Any], inits: dict[str, Any] | None = None) -> Any:
        """The graph's one output "y" on the feeds; the session made once per tag, the feeds' shapes and dtypes
        and the initializers' bits."""
        inits = inits or {}
        key = (tag, tuple((k, v.shape, v.dtype.str) for k, v in feeds.items()), _digest(inits))
        s = self._session(key, lambda: model(nodes, feeds, inits))
        return as_f32(s.run(["y"], feeds)[0])

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        if b is None:
            return self.run("matmul", [node("MatMul", ["x", "wt"])], {"x": as_f32(x)}, {"wt": as_f32(as_f32(w).T)})
        return self.run("gemm", [node("Gemm", ["x", "w", "b"], transB=1)], {"x": as_f32(x)},
                        {"w": as_f32(w), "b": as_f32(b)})

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        return self.run(("rms", eps), [node("RMSNormalization", ["x", "w"], axis=-1, epsilon=float(eps))],
                        {"x": as_f32(x)}, {"w": as_f32(w)})

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        return self.run(("ln", eps), [node("LayerNormalization", ["x", "w", "b"], axis=-1, epsilon=float(eps))],
                        {"x": as_f32(x)}, {"w": as_f32(w), "b": as_f32(b)})

    def softmax(self, x: Any) -> Any:
        return self.run("softmax", [node("Softmax", ["x"], axis=-1)], {"x": as_f32(x)})

    def log_softmax(self, x: Any) -> Any:
        return self.run("logsoftmax", [node("LogSoftmax", ["x"], axis=-1)], {"x": as_f32(x)})

    def ce_rows(self, z: Any, labels: Any) -> Any:
        return self.run("sce", [node("SoftmaxCrossEntropyLoss", ["z", "l"], reduction="none")],
                        {"z": as_f32(z), "l": np.asarray(labels, np.int64)})

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        return self.run(("attn", float(sc)), [node("Attention", ["q", "k", "v"], is_causal=1, scale=float(sc))],
                        {"q": as_f32(q), "k": as_f32(k), "v": as_f32(v)})

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        raise self._na("attention backward", "ONNX Runtime has no autodiff: inference runtime (gradient graphs are "
                       "onnxruntime-training's, a separate package)")

    def dropout(self, x: Any, p: float) -> Any:
        return self.run(("dropout", float(p)), [node("Dropout", ["x", "r", "t"], seed=0)], {"x": as_f32(x)},
                        {"r": np.array(p, F32), "t": np.array(True)})

    def bf16_bits(self, x: Any) -> Any:
        # bfloat16 widened back to float32 (exact: its bits become the float32's high half, NaN payloads too), as
        # the Python binding has no numpy type for a bfloat16 output and BitCast is opset 26
        nodes = [node("Cast", ["x"], "h", to=TP.BFLOAT16), node("Cast", ["h"], to=TP.FLOAT)]
        y = self.run("bf16", nodes, {"x": as_f32(x)})
        return (y.view(np.uint32) >> 16).astype(np.uint16)

    def erf(self, x: Any) -> Any:
        return self.act("erf", x)

    def source(self, op: str) -> str | None:
        if op not in SOURCES:
            return None
        return RUN_SOURCE.format(opset=OPSET, level=LEVELS[self.level]) + "\n\n" + SOURCES[op]

    def act(self, function: str, x: Any) -> Any:
        """One elementwise function of ACTS on x (any shape)."""
        return self.run(("act", function), act_nodes(function), {"x": as_f32(x)})

    # ---- the tiny Llama as one ONNX graph ----

    @staticmethod
    def _rope_cache(cfg: LlamaCfg, t: int) -> tuple[Any, Any]:
        # LlamaRotaryEmbedding in float32: inv_freq = 1 / base^(arange(0, hd, 2) / hd), freqs = pos x inv_freq;
        # RotaryEmbedding's cache holds the hd/2 distinct columns (the rotate-half form repeats them)
        inv = (F32(1.0) / np.power(F32(cfg.theta), np.arange(0, cfg.hd, 2).astype(F32) / F32(cfg.hd))).astype(F32)
        fr = np.outer(np.arange(t).astype(F32), inv).astype(F32)
        return np.cos(fr).astype(F32), np.sin(fr).astype(F32)

    def _llama_model(self, cfg: LlamaCfg, seed: int, b: int, t: int) -> bytes:
        W = weights(cfg, seed)
        h, kv, hd = cfg.heads, cfg.kv_heads, cfg.hd
        cos, sin = self._rope_cache(cfg, t)
        inits: dict[str, Any] = {"cos": cos, "sin": sin, "pos": np.tile(np.arange(t, dtype=np.int64), (b, 1))}
        nodes: list[Any] = []

        def init(name: str, a: Any) -> str:
            inits[name] = as_f32(a)
            return name

        def add(op: str, ins: list[str], out: str, **attrs: Any) -> str:
            nodes.append(node(op, ins, out, **attrs))
            return out

        def mm(x: str, wname: str, out: str) -> str:  # x·Wᵀ, Wᵀ stored, as torch.onnx exports nn.Linear
            return add("MatMul", [x, init(wname + ".T", np.asarray(W[wname]).T)], out)

        def rms(x: str, wname: str, out: str) -> str:
            return add("RMSNormalization", [x, init(wname, np.asarray(W[wname]).reshape(-1))], out, axis=-1,
                       epsilon=float(cfg.eps))

        emb = init("embed", W["model.embed_tokens.weight"])
        x = add("Gather", [emb, "ids"], "x0")
        sc = float(np.float32(1.0 / np.sqrt(hd)))
        for i in range(cfg.layers):
            p, s = f"model.layers.{i}.", f"l{i}"
            hn = rms(x, p + "input_layernorm.weight", s + "hn")
            q, k, v = (mm(hn, f"{p}self_attn.{n}_proj.weight", s + n) for n in "qkv")
            qr = add("RotaryEmbedding", [q, "cos", "sin", "pos"], s + "qr", interleaved=0, num_heads=h)
            kr = add("RotaryEmbedding", [k, "cos", "sin", "pos"], s + "kr", interleaved=0, num_heads=kv)
            o = add("Attention", [qr, kr, v], s + "o", is_causal=1, scale=sc, q_num_heads=h, kv_num_heads=kv)
            x1 = add("Add", [x, mm(o, p + "self_attn.o_proj.weight", s + "a")], s + "x1")
            hn2 = rms(x1, p + "post_attention_layernorm.weight", s + "hn2")
            gt, up = mm(hn2, p + "mlp.gate_proj.weight", s + "g"), mm(hn2, p + "mlp.up_proj.weight", s + "u")
            silu = add("Mul", [gt, add("Sigmoid", [gt], s + "sg")], s + "silu")
            dn = mm(add("Mul", [silu, up], s + "m"), p + "mlp.down_proj.weight", s + "dn")
            x = add("Add", [x1, dn], s + "x2")
        xn = rms(x, "model.norm.weight", "xn")
        add("MatMul", [xn, init("embed.T", np.asarray(W["model.embed_tokens.weight"]).T)], "y")
        return model(nodes, {"ids": np.zeros((b, t), np.int64)}, inits=inits)

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        b, t = tokens.shape
        s = self._session(("llama", cfg, seed, b, t), lambda: self._llama_model(cfg, seed, b, t))
        return as_f32(s.run(["y"], {"ids": np.asarray(tokens, np.int64)})[0])

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        raise self._na("training", "ONNX Runtime has no gradients and no optimizer step: inference runtime "
                       "(training is onnxruntime-training's, a separate package)")

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        raise self._na(f"optimizer {opt.name}", "ONNX Runtime has no optimizer step: inference runtime "
                       "(ai.onnx.preview.training's Momentum and Adam have no kernel in the CPU provider)")

    def _set_threads(self, k: int) -> None:
        self.nthreads = k

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        with thread_count(lambda: self.nthreads, self._set_threads, k):
            yield


def make(device: str = "cpu", level: str = "all") -> Target:
    """The target at one graph-optimisation level: "all" (ORT_ENABLE_ALL) or "none" (ORT_DISABLE_ALL)."""
    load()
    if onnx.defs.onnx_opset_version() < OPSET:
        raise NotRun(f"onnx {onnx.__version__} has opset {onnx.defs.onnx_opset_version()}; the graphs are opset "
                     f"{OPSET} (onnx >= 1.19)")
    return OnnxRuntime(device, level)
