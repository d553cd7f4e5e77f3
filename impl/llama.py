"""A decoder-only Llama built from the combinators alone (the seed's tiny Llama, main.bend lines 2120-2742
for RoPE and Attention, 1942-2118 for the combinators).

    Tie(Embedding(n, V, d),
        Seq(block_1, ..., block_L, RMSNorm(n, d)),
        LinearNB(n, d, V))                       the LM head shares the embedding's V x d matrix
    block = Seq(Residual(attention part), Residual(MLP part))
    attention part = Seq(RMSNorm(n, d),
                         Seq(Fork(Seq(LinearNB(n, d, h*hd), RoPE q),
                                  Fork(Seq(LinearNB(n, d, kv*hd), RoPE k), LinearNB(n, d, kv*hd))),
                             Seq(Attention(n, h*hd, kv*hd, b, t, kv, g, hd, 1/sqrt(hd)), LinearNB(n, h*hd, d))))
    MLP part = Seq(RMSNorm(n, d),
                   Seq(Fork(Seq(LinearNB(n, d, ffn), SiLU(n, ffn)), LinearNB(n, d, ffn)),   gate, up
                       Seq(Mul2(n, ffn), LinearNB(n, ffn, d))))                           SiLU(gate) * up, down
    loss = CrossEntropy(n, V)

n = b*t rows: b sequences of t tokens. The same description builds impl's model (float32) or the oracle's
(its own dtype): `build(lib, cfg, b)` takes the library, `bendtorch.impl` or `bendtorch.oracle` (or any object with
the constructors as attributes: LinearNB, Embedding, RMSNorm, SiLU, RoPE, Attention, CrossEntropy).

Initialization (`Model.init(seed)`), as Hugging Face's LlamaPreTrainedModel: every Linear and the embedding
normal(0, 0.02), every RMSNorm gain 1; drawn in float32 from numpy's PCG64 in construction order, so a seed gives the
same weights everywhere. `Model.names` gives Hugging Face's parameter names (`model.layers.0.self_attn.q_proj.weight`,
...) for the leaves, so other implementations (reference/, PyTorch) can load the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from bendtorch.impl.combinators import Fork, Mul2, Residual, Seq, Tie
from bendtorch.impl.protocol import Layer, Loss

F32 = np.float32

# ---------------------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaCfg:
    """A Llama's shape: vocabulary, width d, layers, query heads h, key/value heads kv (h = kv*g), head dim hd,
    MLP width ffn, sequence length t, RMSNorm eps and RoPE theta."""

    name: str
    vocab: int
    d: int
    layers: int
    heads: int
    kv_heads: int
    hd: int
    ffn: int
    t: int
    eps: float = 1e-5
    theta: float = 10000.0

    @property
    def g(self) -> int:
        return self.heads // self.kv_heads

    def check(self) -> None:
        bad = []
        if self.heads % self.kv_heads != 0:
            bad.append(f"heads = {self.heads} is not a multiple of kv_heads = {self.kv_heads}")
        if self.hd % 2 != 0:
            bad.append(f"hd = {self.hd} must be even (RoPE turns pairs)")
        if min(self.vocab, self.d, self.layers, self.heads, self.kv_heads, self.hd, self.ffn, self.t) < 1:
            bad.append("every dimension must be >= 1")
        if bad:
            raise ValueError(f"LlamaCfg {self.name}: " + "; ".join(bad))


# the seed's tiny Llama: t = 16, w = 32, 4 heads (hd 8), 2 key/value heads, 2 layers, bytes as tokens
TINY = LlamaCfg("tiny", vocab=256, d=32, layers=2, heads=4, kv_heads=2, hd=8, ffn=64, t=16, eps=1e-5,
                theta=10000.0)
# SmolLM2-135M's published shape (config.json of HuggingFaceTB/SmolLM2-135M), t = 128
SMOL = LlamaCfg("smol", vocab=49152, d=576, layers=30, heads=9, kv_heads=3, hd=64, ffn=1536, t=128, eps=1e-5,
                theta=100000.0)
CONFIGS: dict[str, LlamaCfg] = {"tiny": TINY, "smol": SMOL}


def config(name: str, **changes: Any) -> LlamaCfg:
    """A built-in configuration by name, with fields changed (e.g. config("smol", layers=2, t=32))."""
    if name not in CONFIGS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(CONFIGS)}")
    cfg = replace(CONFIGS[name], **changes) if changes else CONFIGS[name]
    cfg.check()
    return cfg


# ---------------------------------------------------------------------------------------------------------------
# Building: a layer together with its parameters' initializer and names
# ---------------------------------------------------------------------------------------------------------------

Init = Callable[[np.random.Generator], Any]


@dataclass(frozen=True)
class Part:
    """A layer, how to draw its parameters, and their names (a tree of the parameters' structure, a string at each
    matrix, None where there are no parameters)."""

    layer: Layer[Any, Any, Any, Any]
    init: Init
    names: Any


def _none(layer: Layer[Any, Any, Any, Any]) -> Part:
    return Part(layer, lambda rng: None, None)


def _normal(layer: Layer[Any, Any, Any, Any], shape: tuple[int, int], name: str) -> Part:
    return Part(layer, lambda rng: rng.standard_normal(shape, dtype=np.float32) * F32(0.02), name)


def _ones(layer: Layer[Any, Any, Any, Any], d: int, name: str) -> Part:
    return Part(layer, lambda rng: np.ones((1, d), dtype=np.float32), name)


def _seq(a: Part, b: Part) -> Part:
    return Part(Seq(a.layer, b.layer), lambda rng: (a.init(rng), b.init(rng)), (a.names, b.names))


def _seq_all(ps: list[Part]) -> Part:
    """Seq(p1, Seq(p2, ...)): parameters (P1, (P2, ...))."""
    out = ps[-1]
    for p in reversed(ps[:-1]):
        out = _seq(p, out)
    return out


def _fork(a: Part, b: Part) -> Part:
    return Part(Fork(a.layer, b.layer), lambda rng: (a.init(rng), b.init(rng)), (a.names, b.names))


def _residual(f: Part) -> Part:
    """Residual(f) = Seq(Fork(Id, f), Add2): parameters ((None, P), None)."""
    return Part(Residual(f.layer), lambda rng: ((None, f.init(rng)), None), ((None, f.names), None))


@dataclass(frozen=True)
class Model:
    """A built Llama: the layer (Ids[n] -> logits n x V), the loss, the config, the batch b, and its dtype."""

    cfg: LlamaCfg
    b: int
    layer: Layer[Any, Any, Any, Any]
    loss: Loss[Any, Any]
    _init: Init
    names: Any

    @property
    def n(self) -> int:
        return self.b * self.cfg.t

    def init(self, seed: int) -> Any:
        """float32 parameters drawn from `seed` (Hugging Face's scheme); convert with `cast` for the oracle."""
        return self._init(np.random.default_rng(seed))


def build(lib: Any, cfg: LlamaCfg, b: int) -> Model:
    """The Llama of `cfg` for batches of b sequences, built from `lib`'s constructors and the combinators."""
    cfg.check()
    L = lib
    t, d, V, h, kv, hd, ffn = cfg.t, cfg.d, cfg.vocab, cfg.heads, cfg.kv_heads, cfg.hd, cfg.ffn
    n, w, kvw, half = b * t, cfg.heads * cfg.hd, cfg.kv_heads * cfg.hd, cfg.hd // 2
    sc = F32(1.0) / np.sqrt(F32(hd))
    dt = L.SiLU(1, 1).dtype
    blocks = []
    for i in range(cfg.layers):
        pre = f"model.layers.{i}."
        q = _seq(_normal(L.LinearNB(n, d, w), (w, d), pre + "self_attn.q_proj.weight"),
                 _none(L.RoPE(n, w, t, h, half, cfg.theta)))
        k = _seq(_normal(L.LinearNB(n, d, kvw), (kvw, d), pre + "self_attn.k_proj.weight"),
                 _none(L.RoPE(n, kvw, t, kv, half, cfg.theta)))
        v = _normal(L.LinearNB(n, d, kvw), (kvw, d), pre + "self_attn.v_proj.weight")
        attn = _seq_all([_ones(L.RMSNorm(n, d, cfg.eps), d, pre + "input_layernorm.weight"),
                         _fork(q, _fork(k, v)),
                         _none(L.Attention(n, w, kvw, b, t, kv, cfg.g, hd, sc)),
                         _normal(L.LinearNB(n, w, d), (d, w), pre + "self_attn.o_proj.weight")])
        gate = _seq(_normal(L.LinearNB(n, d, ffn), (ffn, d), pre + "mlp.gate_proj.weight"),
                    _none(L.SiLU(n, ffn)))
        up = _normal(L.LinearNB(n, d, ffn), (ffn, d), pre + "mlp.up_proj.weight")
        mlp = _seq_all([_ones(L.RMSNorm(n, d, cfg.eps), d, pre + "post_attention_layernorm.weight"),
                        _fork(gate, up),
                        _none(Mul2(n, ffn, dt)),
                        _normal(L.LinearNB(n, ffn, d), (d, ffn), pre + "mlp.down_proj.weight")])
        blocks.append(_seq(_residual(attn), _residual(mlp)))
    body = _seq_all(blocks + [_ones(L.RMSNorm(n, d, cfg.eps), d, "model.norm.weight")])
    emb = _normal(L.Embedding(n, V, d), (V, d), "model.embed_tokens.weight")
    head = L.LinearNB(n, d, V)
    model = Tie(emb.layer, body.layer, head)
    return Model(cfg, b, model, L.CrossEntropy(n, V), lambda rng: (emb.init(rng), body.init(rng)),
                 (emb.names, body.names))


# ---------------------------------------------------------------------------------------------------------------
# Parameter trees
# ---------------------------------------------------------------------------------------------------------------


def cast(tree: Any, dtype: Any) -> Any:
    """A copy of a parameter tree with every matrix converted to dtype (exactly, when dtype is wider than float32)."""
    if isinstance(tree, np.ndarray):
        return np.ascontiguousarray(tree, dtype=dtype).copy()
    if isinstance(tree, tuple):
        return tuple(cast(x, dtype) for x in tree)
    return tree


def named(names: Any, tree: Any) -> dict[str, Any]:
    """{name: matrix} over the leaves of a parameter (or gradient) tree, walking `Model.names` alongside; the
    matrices are the tree's own arrays (not copies)."""
    out: dict[str, Any] = {}

    def walk(nm: Any, x: Any) -> None:
        if isinstance(nm, str):
            out[nm] = x
        elif isinstance(nm, tuple):
            for a, b in zip(nm, x):
                walk(a, b)

    walk(names, tree)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Data: token ids into (inputs, labels) batches
# ---------------------------------------------------------------------------------------------------------------


def batch_at(tokens: Any, b: int, t: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """b windows of t + 1 tokens at random offsets: inputs (b*t ids) and next-token labels (b*t ids)."""
    toks = np.asarray(tokens, dtype=np.int64)
    if toks.size < t + 2:
        raise ValueError(f"the corpus has {toks.size} tokens, fewer than a window of t + 1 = {t + 1}")
    starts = rng.integers(0, toks.size - t - 1, size=b)
    x = np.concatenate([toks[s:s + t] for s in starts])
    y = np.concatenate([toks[s + 1:s + t + 1] for s in starts])
    return x, y


# ---------------------------------------------------------------------------------------------------------------
# The fixed run: where the whole-run bit pins (tests/test_speed_bits.py) and the step timings (bench) start
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixedRun:
    """A Llama of impl with its AdamW training state, ready to step on one batch."""

    model: Model
    cfg: Any        # impl.optim.CAdamW
    train: Any      # impl.train.Train: the parameters and the optimizer's state
    x: Any
    y: Any


def fixed_run(name: str, b: int, **changes: Any) -> FixedRun:
    """The Llama `name` (with `changes`) for b sequences, its weights from seed 0 and one batch of random token ids
    from numpy's Generator at seed 0 (10 windows' worth of tokens), under AdamW(lr 1e-3, betas 0.9 and 0.999, eps
    1e-8, weight decay 0.01, c1 0.1, c2 0.001)."""
    from bendtorch import impl
    from bendtorch.impl import optim
    from bendtorch.impl.train import train_new

    cfg = config(name, **changes)
    ocfg = optim.CAdamW(np.float32(1e-3), np.float32(0.9), np.float32(0.999), np.float32(1e-8),
                        np.float32(0.01), np.float32(0.1), np.float32(0.001))
    rng = np.random.default_rng(0)
    x, y = batch_at(rng.integers(0, cfg.vocab, size=10 * cfg.t), b, cfg.t, rng)
    model = build(impl, cfg, b)
    return FixedRun(model, ocfg, train_new(model.layer, ocfg, model.init(0)), x, y)
