"""A catalog of impl's layers and combinators for the law suites: each entry is a layer built with drawn shapes,
together with an independent statement of its parameters' structure (DESIGN.md's table: `Lin(w: o x i, b: 1 x o)`,
`LN(g, b)`, `DropP(t)`, a v x d table, pairs for the combinators, ...) filled from a value source, and the bound of
its token ids when its input is Ids.

The laws draw entries by kind (`KINDS`: every op record tagged "protocol" (bendtorch.records.ops: every layer and
every combinator), and a small Llama), or draw matrix-to-matrix layers of given shapes (`mat_layer`) to compose. A
record tagged "protocol" that `of_kind` cannot build fails the protocol laws: the tag is a test."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

import bendtorch.impl as L
from bendtorch.impl.layers.dropout import DropP
from bendtorch.impl.layers.linear import Lin
from bendtorch.impl.layers.rows import LN
from bendtorch.impl.protocol import Layer
from bendtorch.impl.specs import IdsSpec, MatSpec, PairSpec, Spec
from bendtorch.laws.strategies import fill_bits, fill_rng
from bendtorch.records.ops import CONSTRUCTORS, OpRecord, tagged

F32 = np.float32


class Src:
    """Where the numbers come from: matrices (normal values with zeros of both signs, subnormals, tiny and large
    magnitudes mixed in, or raw 32-bit patterns), 32-bit counters and token ids, from one seed."""

    def __init__(self, seed: int, bits: bool = False, special_rate: float = 0.1, allow_nan: bool = False,
                 allow_infinity: bool = False, scale: float = 1.0) -> None:
        self.rng = np.random.default_rng(seed ^ 0x5EED)
        self.fill = fill_bits(seed) if bits else fill_rng(seed, special_rate, allow_nan, allow_infinity, scale)

    def mat(self, r: int, c: int) -> Any:
        return np.ascontiguousarray(self.fill(r, c))

    def u32(self) -> int:
        return int(self.rng.integers(0, 2**32))

    def ids(self, n: int, v: int) -> Any:
        return self.rng.integers(0, v, n).astype(np.int64)


MakeP = Callable[[Src], Any]


@dataclass(frozen=True)
class Built:
    """A layer, its parameters' structure as DESIGN.md states it (filled from a Src), its ids' bound."""

    kind: str
    layer: Layer[Any, Any, Any, Any]
    make_p: MakeP
    vocab: int = 0


def value_of(spec: Spec, src: Src, vocab: int = 0) -> Any:
    """A value of the spec: a matrix, ids in [0, vocab), or a pair of values."""
    if isinstance(spec, MatSpec):
        return src.mat(spec.r, spec.c)
    if isinstance(spec, IdsSpec):
        return src.ids(spec.n, vocab)
    return (value_of(spec.a, src, vocab), value_of(spec.b, src, vocab))


def leaves(tree: Any) -> list[Any]:
    """The arrays and counters of a parameter tree, in order (DropP gives its counter)."""
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, DropP):
        return [tree.t]
    if isinstance(tree, tuple):
        return [x for part in tree for x in leaves(part)]
    return []


def tree_copy(tree: Any) -> Any:
    if isinstance(tree, np.ndarray):
        return tree.copy()
    if isinstance(tree, tuple) and not isinstance(tree, DropP):
        return type(tree)(*(tree_copy(x) for x in tree)) if hasattr(tree, "_fields") else \
            tuple(tree_copy(x) for x in tree)
    return tree


def same_tree(a: Any, b: Any) -> bool:
    """Equal structure and every number the same 32 bits (counters equal)."""
    la, lb = leaves(a), leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if x.dtype.kind == "f" and not np.array_equal(x.view(np.uint32), y.view(np.uint32)):
                return False
            if x.dtype.kind != "f" and not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def same_value(a: Any, b: Any) -> bool:
    """Two layer values (matrices, ids, pairs) with the same structure and bits."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(same_value(x, y) for x, y in zip(a, b))
    return same_tree(a, b)


def _none(src: Src) -> None:
    return None


# ---------------------------------------------------------------------------------------------------------------
# The entries
# ---------------------------------------------------------------------------------------------------------------

def _same_shape_free(r: OpRecord) -> Callable[[int, int], Layer[None, Any, Any, Any]]:
    small = r.small
    assert small is not None
    return lambda n, d: r.build(L, small(n, d, d))


# the parameter-free layers of one shape n x d -> n x d: every activation and parameter-free row-wise op of the
# records (Softmax, LogSoftmax)
ACTS: dict[str, Callable[[int, int], Layer[None, Any, Any, Any]]] = {
    r.name: _same_shape_free(r) for r in CONSTRUCTORS if r.impl_kind in ("activation", "row") and r.pshapes is None}


def linear(kind: str, n: int, i: int, o: int) -> Built:
    if kind == "LinearNB":
        return Built(kind, L.LinearNB(n, i, o), lambda s: s.mat(o, i))
    ctor = L.Linear if kind == "Linear" else L.LinearFirst
    return Built(kind, ctor(n, i, o), lambda s: Lin(s.mat(o, i), s.mat(1, o)))


def seq(a: Built, b: Built) -> Built:
    return Built("Seq", L.Seq(a.layer, b.layer), lambda s: (a.make_p(s), b.make_p(s)), a.vocab)


def fork(a: Built, b: Built) -> Built:
    return Built("Fork", L.Fork(a.layer, b.layer), lambda s: (a.make_p(s), b.make_p(s)), a.vocab)


def residual(f: Built) -> Built:
    return Built("Residual", L.Residual(f.layer), lambda s: ((None, f.make_p(s)), None), f.vocab)


@st.composite
def rope(draw: Any, n: int, d: int) -> Built | None:
    """RoPE over n x d when d is even: h heads of 2*half, t a divisor of n."""
    if d % 2:
        return None
    hs = [h for h in range(1, d // 2 + 1) if (d // 2) % h == 0]
    h = draw(st.sampled_from(hs))
    ts = [t for t in range(1, n + 1) if n % t == 0]
    t = draw(st.sampled_from(ts))
    base = draw(st.sampled_from([10000.0, 100000.0, 10.0]))
    return Built("RoPE", L.RoPE(n, d, t, h, d // (2 * h), base), _none)


@st.composite
def attention(draw: Any, n: int) -> Built:
    """The attention core over n = b*t rows: x = (Q, (K, V))."""
    ts = [t for t in range(1, n + 1) if n % t == 0]
    t = draw(st.sampled_from(ts))
    kv, g, hd = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sc = draw(st.sampled_from([0.5, 1.0, float(F32(1) / np.sqrt(F32(hd)))]))
    return Built("Attention", L.Attention(n, kv * g * hd, kv * hd, n // t, t, kv, g, hd, sc), _none)


@st.composite
def attn_block(draw: Any, n: int, d: int) -> Built:
    """n x d -> n x d through attention: Seq(Fork(LinearNB q, Fork(LinearNB k, LinearNB v)), Seq(Attention,
    LinearNB o))."""
    a = draw(attention(n))
    xs = a.layer.x_spec
    assert isinstance(xs, PairSpec) and isinstance(xs.a, MatSpec) and isinstance(xs.b, PairSpec)
    w, kvw = xs.a.c, xs.b.a.c  # type: ignore[union-attr]
    qkv = fork(linear("LinearNB", n, d, w), fork(linear("LinearNB", n, d, kvw), linear("LinearNB", n, d, kvw)))
    return seq(qkv, seq(a, linear("LinearNB", n, w, d)))


@st.composite
def same_shape(draw: Any, n: int, d: int, depth: int) -> Built:
    """A layer from n x d to n x d: any of the element-wise, row-wise, Dropout, RoPE, a square Linear, Id, and (while
    depth > 0) Residual, Seq and the attention block."""
    kinds = list(ACTS) + ["RMSNorm", "LayerNorm", "Dropout", "Linear", "LinearNB", "Id"]
    if d % 2 == 0:
        kinds.append("RoPE")
    if depth > 0:
        kinds += ["Residual", "Seq", "AttnBlock"]
    k = draw(st.sampled_from(kinds))
    if k in ACTS:
        return Built(k, ACTS[k](n, d), _none)
    if k == "RMSNorm":
        return Built(k, L.RMSNorm(n, d, draw(st.sampled_from([1e-5, 1e-6]))), lambda s: s.mat(1, d))
    if k == "LayerNorm":
        return Built(k, L.LayerNorm(n, d), lambda s: LN(s.mat(1, d), s.mat(1, d)))
    if k == "Dropout":
        p = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9]))
        return Built(k, L.Dropout(n, d, p, draw(st.integers(0, 2**32 - 1))), lambda s: DropP(s.u32()))
    if k in ("Linear", "LinearNB"):
        return linear(k, n, d, d)
    if k == "Id":
        return Built(k, L.Id(MatSpec(n, d)), _none)
    if k == "RoPE":
        r: Built | None = draw(rope(n, d))
        assert r is not None
        return r
    if k == "Residual":
        return residual(draw(same_shape(n, d, depth - 1)))
    if k == "Seq":
        return seq(draw(same_shape(n, d, depth - 1)), draw(same_shape(n, d, depth - 1)))
    return draw(attn_block(n, d))  # type: ignore[no-any-return]


@st.composite
def mat_layer(draw: Any, n: int, di: int, do: int, depth: int = 1) -> Built:
    """A layer from n x di to n x do (a Linear of any kind when the widths differ, possibly after a same-shape
    layer)."""
    if di == do and draw(st.booleans()):
        return draw(same_shape(n, di, depth))  # type: ignore[no-any-return]
    lin = linear(draw(st.sampled_from(["Linear", "LinearFirst", "LinearNB"])), n, di, do)
    if depth > 0 and draw(st.booleans()):
        return seq(draw(same_shape(n, di, depth - 1)), lin)
    return lin


def small_llama(b: int) -> Built:
    from bendtorch.impl.llama import build, config
    cfg = config("tiny", vocab=13, d=8, layers=1, heads=2, kv_heads=1, hd=4, ffn=6, t=3)
    m = build(L, cfg, b)
    return Built("Llama", m.layer, lambda s: m.init(s.u32() & 0xFFFF), cfg.vocab)


# every op record tagged "protocol" (impl's layers and combinators), and a small Llama
KINDS = [r.name for r in tagged("protocol")] + ["Llama"]


@st.composite
def tie(draw: Any, n: int, d: int) -> Built:
    """Tie(first, mid, last) sharing first's parameter: the Llama pattern (Embedding, mid, LinearNB d -> v), or one
    square LinearNB used at both ends."""
    mid = draw(same_shape(n, d, 1))
    if draw(st.booleans()):
        v = draw(st.integers(1, 9))
        first = Built("Embedding", L.Embedding(n, v, d), lambda s: s.mat(v, d), v)
        last = L.LinearNB(n, d, v)
    else:
        first = linear("LinearNB", n, d, d)
        last = L.LinearNB(n, d, d)
    return Built("Tie", L.Tie(first.layer, mid.layer, last), lambda s: (first.make_p(s), mid.make_p(s)),
                 first.vocab)


@st.composite
def of_kind(draw: Any, kind: str) -> Built:
    """An entry of the kind, with drawn shapes (n rows, widths; 1 and non powers of two included)."""
    n, d, o = draw(st.integers(1, 6)), draw(st.integers(1, 7)), draw(st.integers(1, 6))
    if kind in ("Linear", "LinearFirst", "LinearNB"):
        return linear(kind, n, d, o)
    if kind in ACTS:
        return Built(kind, ACTS[kind](n, d), _none)
    if kind == "RMSNorm":
        return Built(kind, L.RMSNorm(n, d), lambda s: s.mat(1, d))
    if kind == "LayerNorm":
        return Built(kind, L.LayerNorm(n, d), lambda s: LN(s.mat(1, d), s.mat(1, d)))
    if kind == "Dropout":
        p = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
        return Built(kind, L.Dropout(n, d, p, draw(st.integers(0, 2**32 - 1))), lambda s: DropP(s.u32()))
    if kind == "Embedding":
        return Built(kind, L.Embedding(n, o, d), lambda s: s.mat(o, d), o)
    if kind == "RoPE":
        r: Built | None = draw(rope(n, 2 * d))
        assert r is not None
        return r
    if kind == "Attention":
        return draw(attention(n))  # type: ignore[no-any-return]
    if kind == "Id":
        return Built(kind, L.Id(MatSpec(n, d)), _none)
    if kind == "Seq":
        return seq(draw(mat_layer(n, d, o)), draw(mat_layer(n, o, d)))
    if kind == "Fork":
        return fork(draw(mat_layer(n, d, o)), draw(mat_layer(n, d, d)))
    if kind == "Both":
        a, b = draw(mat_layer(n, d, o)), draw(mat_layer(n, o, d))
        return Built(kind, L.Both(a.layer, b.layer), lambda s: (a.make_p(s), b.make_p(s)))
    if kind == "Tie":
        return draw(tie(n, d))  # type: ignore[no-any-return]
    if kind == "Add2":
        return Built(kind, L.Add2(n, d), _none)
    if kind == "Mul2":
        return Built(kind, L.Mul2(n, d), _none)
    if kind == "Residual":
        return residual(draw(same_shape(n, d, 1)))
    if kind == "Llama":
        return small_llama(draw(st.integers(1, 2)))
    raise ValueError(kind)
