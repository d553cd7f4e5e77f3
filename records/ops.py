"""The op records, in the spirit of PyTorch's OpInfo (`op_db`): one record per op, read by impl's dispatch, the
oracle, the op table's comparison with PyTorch, the report, the laws, the layer zoo and the tests, so none of them
keeps a list of its own.

A record holds the op's names on every axis (the constructor's name in impl and the oracle; for an element-wise
activation its code in impl's dispatch, the stems of its kernels and formulas and its two atlas functions; the
conformance targets' operations that compute it), one sample-input generator (`sample`: shapes, seeds, input,
parameters, dy or the loss's targets), its bounds in ulps against the oracle with their reason, the law families
that state its properties, and what it lacks on an axis (`Gap`: the reason, the seed's line, where it is covered
instead). This module is the bottom layer: it imports nothing of the project, and numpy only where a sample is drawn
(the command line's help reads the activations' atlas names through records.libraries and records.functions without
loading numpy); `build(lib, dims)` takes the
library module (bendtorch.impl or bendtorch.oracle: the same constructors, and their DTYPE) as an argument, and an
activation names its kernels by stems that impl and the oracle resolve in their own modules.

A tag is a test: a record tagged with a law family is one the family's laws run on (the protocol laws draw every
record tagged "protocol" from laws.catalog, the loss laws every record tagged "losses", and tests/test_op_tags.py
checks each batch_invariance tag against the conformance laws run on impl, a gap saying why where impl has no such
operation). docs/ops.md says how to add an op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from bendtorch.records.optimizers import COMPARED, optimizer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Arr = npt.NDArray[Any]
    Gen = np.random.Generator
F32 = "float32"      # dtype names: .astype("float32") is .astype(np.float32)
I64 = "int64"
Dims = dict[str, Any]

FACTOR = 4.0  # default: impl's p99 / median error may be at most 4x PyTorch's (+ the slack of reference.ops.judge)
KINDS = ("layer", "loss", "combinator", "optimizer")                      # the op table's groups
IMPL_KINDS = ("activation", "row", "layer", "combinator", "loss")         # impl's constructors (impl.ops)


@dataclass(frozen=True)
class Gap:
    """What a record lacks on one axis, and why. axis: a law family ("batch_invariance": no law of it runs on the op
    for `target`), "torch" (not compared with PyTorch in the op table; `covered` says where it is), or "sweep" (no
    atlas functions). seed: the seed's line the reason rests on."""

    axis: str
    reason: str
    target: str = ""
    seed: str = ""
    covered: str = ""


@dataclass(frozen=True)
class Act:
    """An element-wise activation's names in impl and the oracle.

    code: its code in impl's numba dispatch (act_v / act_d); the records list the activations in code order.
    kernel: the stem of impl's kernels in bendtorch.impl.kernels.elementwise: `{kernel}_v(x)`, `{kernel}_d(dy, v)`,
    their plain twins `{kernel}_v_plain`, `{kernel}_d_plain`, and where exp_neg says so the forms given e = exp(-x),
    `{kernel}_v_e(x, e)`, `{kernel}_d_e(dy, x, e)`. formula: the stem of the oracle's float64 value, gradient and
    mpmath value in bendtorch.oracle.funcs: `{formula}`, `{formula}_grad`, `{formula}_mp`. saves_output: the backward
    pass reads the saved output (ActOut, main.bend line 749), else the input (ActIn, line 1052). sweep: the atlas
    functions of its value and its derivative (dy = 1), or None (with a Gap on the "sweep" axis). torch: PyTorch's
    float32 function of one tensor ("module:attr"), called with the keyword arguments torch_options."""

    code: int
    kernel: str
    formula: str
    saves_output: bool
    seed_lines: str
    sweep: tuple[str, str] | None
    torch: str
    torch_options: tuple[tuple[str, Any], ...] = ()
    exp_neg: tuple[bool, bool] = (False, False)


@dataclass(frozen=True)
class OpRecord:
    """One op.

    name: the constructor's name in impl and the oracle (`impl.Activation(name, n, c)` for an activation), or a
    composition's or an optimizer step's name in the op table. kind: its group in the op table and the report
    (KINDS); impl_kind: its kind among impl's constructors (IMPL_KINDS), None for a composition or an optimizer.
    build(lib, dims): the op in a library (a constructor record builds one instance of its constructor: a
    combinator of small parts). small(n, a, b): dims from three small sizes (the layer zoo's and the laws' drawn
    sizes). conformance: the conformance targets' operations that compute it (bendtorch.targets.Target's methods).
    Samples: `shapes` x `seeds`, x(rng, dims) the input (the loss's y; None: drawn from the layer's x_spec),
    pshapes(dims) the parameter matrices in dump order, pinit(rng, dims) their values (None: U(-a, a), PyTorch's
    Linear scale), t(rng, dims) a loss's targets. Bounds of each output against the oracle: `bound` normwise,
    `bound_elem` element-wise where the output is well conditioned element by element, `bitexact` the outputs equal
    to PyTorch bit for bit, `factor` impl's p99 and median at most this many times PyTorch's; `why` the reason.
    laws: the law families that state its properties; gaps: what it lacks, and why."""

    name: str
    kind: str
    impl_kind: str | None
    build: Callable[[Any, Dims], Any]
    small: Callable[[int, int, int], Dims] | None = None
    act: Act | None = None
    conformance: tuple[str, ...] = ()
    shapes: tuple[Dims, ...] = ()
    seeds: tuple[int, ...] = (0, 1)
    x: Callable[[Gen, Dims], Any] | None = None
    pshapes: Callable[[Dims], list[tuple[int, int]]] | None = None
    pinit: Callable[[Gen, Dims], list[Arr]] | None = None
    t: Callable[[Gen, Dims], Any] | None = None
    outputs: tuple[str, ...] = ("y", "dx", "dp")
    bound: dict[str, float] = field(default_factory=dict)
    bound_elem: dict[str, float] = field(default_factory=dict)
    why: str = ""
    factor: float = FACTOR
    bitexact: tuple[str, ...] = ()
    laws: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()

    def gap(self, axis: str, target: str = "") -> Gap | None:
        """The record's gap on the axis (for the target, or for every target), None if it has none."""
        return next((g for g in self.gaps if g.axis == axis and g.target in ("", target)), None)

    @property
    def compared(self) -> bool:
        """In the op table's comparison with PyTorch and the oracle (every record without a "torch" gap)."""
        return self.gap("torch") is None


# ---------------------------------------------------------------------------------------------------------------
# sample inputs: one generator for every suite
# ---------------------------------------------------------------------------------------------------------------

def mat(rng: Gen, r: int, c: int, scale: float = 1.0) -> Arr:
    return (rng.standard_normal((r, c)) * scale).astype(F32)


def x_nc(rng: Gen, d: Dims) -> Arr:
    return mat(rng, d["n"], d["c"], d.get("scale", 1.0))


def x_ni(rng: Gen, d: Dims) -> Arr:
    return mat(rng, d["n"], d["i"])


def x_nd(rng: Gen, d: Dims) -> Arr:
    return mat(rng, d["n"], d["d"])


def pair_nc(rng: Gen, d: Dims) -> Any:
    return (mat(rng, d["n"], d["c"]), mat(rng, d["n"], d["c"]))


def default_pinit(rng: Gen, shapes: list[tuple[int, int]]) -> list[Arr]:
    """PyTorch's Linear initialisation scale: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in the last dimension."""
    out = []
    for (r, c) in shapes:
        a = 1.0 / math.sqrt(c)      # correctly rounded, as np.sqrt
        out.append(rng.uniform(-a, a, (r, c)).astype(F32))
    return out


def spec_value(spec: Any, rng: Gen, vocab: int) -> Any:
    """Standard normal float32 values of a layer's spec (MatSpec r x c, a pair of specs), or ids in [0, vocab)
    (IdsSpec n)."""
    if hasattr(spec, "a"):
        return (spec_value(spec.a, rng, vocab), spec_value(spec.b, rng, vocab))
    if hasattr(spec, "r"):
        return rng.standard_normal((spec.r, spec.c)).astype(F32)
    return rng.integers(0, vocab, spec.n).astype(I64)


def dy_like(rng: Gen, y: Any) -> Any:
    """Standard normal float32 values of y's shape (a pair: each part in order)."""
    if isinstance(y, tuple):
        return tuple(dy_like(rng, a) for a in y)
    import numpy as np

    return rng.standard_normal(np.shape(y)).astype(F32)


def widen(v: Any, dtype: Any) -> Any:
    """v (an array, a pair, ids) with its float arrays in dtype; ids stay int64."""
    import numpy as np

    if isinstance(v, tuple):
        return tuple(widen(a, dtype) for a in v)
    if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating):
        return np.ascontiguousarray(v, dtype=dtype)
    return v


def load_params(layer: Any, params: list[Arr], dtype: Any) -> Any:
    """The layer's parameters holding the matrices `params` (dump order) in dtype; zeros() when there are none."""
    p = layer.zeros()
    if not params:
        return p
    import numpy as np

    flat = np.concatenate([a.reshape(-1) for a in params]).astype(dtype)
    if flat.size != layer.count():
        raise ValueError(f"{layer.name}: {flat.size} parameters given, the layer counts {layer.count()}")
    return layer.load(p, flat, 0).p


@dataclass(frozen=True)
class Sample:
    """One case of an op: its float32 input x (a loss's y), parameter matrices (dump order), and dy (a layer: the
    output's shape) or t (a loss's targets)."""

    dims: Dims
    seed: int
    x: Any
    params: list[Arr]
    dy: Any = None
    t: Any = None


def sample(op: OpRecord, lib: Any, d: Dims, seed: int) -> Sample:
    """The case (dims d, seed) of an op, every suite's: x, the parameters and t drawn in that order from numpy's
    Generator at the seed; a layer's dy from the Generator at seed + 10000, shaped as its output in `lib` (the
    library's output for these inputs: the same shape in impl and the oracle)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    obj = op.build(lib, d)
    x = op.x(rng, d) if op.x is not None else spec_value(obj.x_spec, rng, d.get("v", 0))
    shapes = op.pshapes(d) if op.pshapes is not None else []
    params = op.pinit(rng, d) if op.pinit is not None else default_pinit(rng, shapes)
    if op.kind == "loss":
        assert op.t is not None, f"{op.name}: a loss's record draws its targets"
        return Sample(d, seed, x, params, t=op.t(rng, d))
    y = obj.fwd(load_params(obj, params, lib.DTYPE), widen(x, lib.DTYPE)).y
    return Sample(d, seed, x, params, dy=dy_like(np.random.default_rng(seed + 10_000), y))


def cases(op: OpRecord, quick: bool = False) -> list[tuple[Dims, int]]:
    """The (dims, seed) cases of an op: every shape with every seed; quick: the first shape, the first seed."""
    if quick:
        return [(op.shapes[0], op.seeds[0])]
    return [(d, s) for d in op.shapes for s in op.seeds]


# ---------------------------------------------------------------------------------------------------------------
# the records
# ---------------------------------------------------------------------------------------------------------------

def _nc(n: int, a: int, b: int) -> Dims:
    return {"n": n, "c": a}


def _nd(n: int, a: int, b: int) -> Dims:
    return {"n": n, "d": a}


def _nio(n: int, a: int, b: int) -> Dims:
    return {"n": n, "i": a, "o": b}


def _lin_p(d: Dims) -> list[tuple[int, int]]:
    return [(d["o"], d["i"]), (1, d["o"])]


def _gain(r: Gen, d: Dims) -> Arr:
    return (1.0 + 0.1 * r.standard_normal((1, d["d"]))).astype(F32)


ACT_SHAPES = ({"n": 4, "c": 7, "scale": 3.0}, {"n": 16, "c": 33, "scale": 3.0})
LIN_SHAPES = ({"n": 4, "i": 7, "o": 5}, {"n": 16, "i": 33, "o": 24})
LOSS_SHAPES = ({"n": 4, "c": 7, "scale": 3.0}, {"n": 16, "c": 10, "scale": 3.0}, {"n": 33, "c": 5, "scale": 3.0})
NC_SHAPES = ({"n": 4, "c": 7}, {"n": 16, "c": 33})


def _act(name: str, act: Act, bound: dict[str, float], why: str, elem: dict[str, float] | None = None,
         bitexact: tuple[str, ...] = (), gaps: tuple[Gap, ...] = ()) -> OpRecord:
    """An element-wise activation: Activation(name, n, c) in either library, n x c -> n x c, no parameters."""
    if act.sweep is None:
        assert any(g.axis == "sweep" for g in gaps), f"{name}: an activation outside the atlas says why"
    return OpRecord(name, "layer", "activation", lambda L, d: L.Activation(name, d["n"], d["c"]), _nc, act=act,
                    shapes=ACT_SHAPES, x=x_nc, outputs=("y", "dx"), bound=bound, bound_elem=elem or {}, why=why,
                    bitexact=bitexact, laws=("protocol",), gaps=gaps)


def _linear(name: str, outputs: tuple[str, ...], bound: dict[str, float], why: str, bias: bool = True,
            laws: tuple[str, ...] = ("protocol",), conformance: tuple[str, ...] = ()) -> OpRecord:
    return OpRecord(name, "layer", "layer", lambda L, d: getattr(L, name)(d["n"], d["i"], d["o"]), _nio,
                    conformance=conformance, shapes=LIN_SHAPES, x=x_ni,
                    pshapes=_lin_p if bias else (lambda d: [(d["o"], d["i"])]), outputs=outputs, bound=bound,
                    why=why, laws=laws)


def _covered(where: str) -> Gap:
    return Gap("torch", "compared with PyTorch outside the op table", covered=where)


ACTIVATIONS: tuple[OpRecord, ...] = (
    _act("ReLU", Act(0, "relu", "relu", True, "752-761", None, "torch.nn.functional:relu"), {"y": 0.0, "dx": 0.0},
         "exact: max(x, 0) and dy or 0 are exact", elem={"y": 0.0, "dx": 0.0}, bitexact=("y", "dx"),
         gaps=(Gap("sweep", "exact on every input (max(x, 0), and dy or +0): nothing to measure"),)),
    _act("Sigmoid", Act(1, "sigmoid", "sigmoid", True, "1055-1063", ("sigmoid", "dsigmoid"), "torch:sigmoid",
             exp_neg=(True, False)),
         {"y": 4.0, "dx": 8.0}, "1/(1+expf(-x)): expf within 1 ulp and two roundings, so y within ~2 ulps "
         "element-wise; the gradient dy*y*(1-y) is small where 1 - y cancels (bounded normwise)", elem={"y": 4.0}),
    _act("Tanh", Act(2, "tanh", "tanh", True, "1065-1072", ("tanh", "dtanh"), "torch:tanh"), {"y": 4.0, "dx": 4.0},
         "glibc's tanhf is within 2 ulps element-wise; dy*(1-y^2) loses relative accuracy where y^2 is near 1 "
         "(1 - y^2 cancels: millions of ulps of a tiny exact value, in PyTorch too), so dx is bounded normwise",
         elem={"y": 4.0}),
    _act("SiLU", Act(3, "silu", "silu", False, "1074-1084", ("silu", "dsilu"), "torch.nn.functional:silu",
                     exp_neg=(True, True)), {"y": 4.0, "dx": 8.0},
         "x*sigmoid(x): expf and three roundings, within ~2 ulps element-wise; its derivative s(1 + x(1-s)) "
         "cancels near its zero at x ~ -1.28 (bounded normwise)", elem={"y": 4.0}),
    _act("GELU", Act(4, "gelu", "gelu_tanh", False, "1086-1102", ("gelu_tanh", "dgelu_tanh"),
                     "torch.nn.functional:gelu", (("approximate", "tanh"),)),
         {"y": 4.0, "dx": 16.0}, "0.5x(1+tanh(inner)): for x < -3, 1 + tanh cancels, so the element-wise error of "
         "the tiny outputs is millions of ulps in any float32 evaluation of this form (PyTorch's too); normwise a "
         "few ulps"),
    _act("GELUErf", Act(5, "gelu_erf", "gelu_erf", False, "1201-1217", ("gelu_erf", "dgelu_erf"),
                        "torch.nn.functional:gelu"),
         {"y": 4.0, "dx": 8.0}, "x*(1+erf(x/sqrt2))/2: 1 + erf cancels for x < -2 (element-wise millions of ulps "
         "of the tiny exact value, as in PyTorch's float32 erf path); normwise within a few ulps"),
)

_ROWS_X = ({"n": 4, "c": 7, "scale": 3.0}, {"n": 16, "c": 33, "scale": 3.0})
_NORM_SHAPES = ({"n": 4, "d": 8}, {"n": 16, "d": 32})
_BI = ("protocol", "batch_invariance")

LAYERS: tuple[OpRecord, ...] = (
    _linear("Linear", ("y", "dx", "dp"), {"y": 16.0, "dx": 16.0, "dp": 16.0},
            "sums of k <= 33 products (dp: n <= 16): a float32 sum's error is at most ~k 2^-24 sum|terms|, and for "
            "random inputs sum|terms| is a few times the largest output, so a normwise 16 ulps is a loose bound; "
            "element-wise, outputs that nearly cancel have large ulp errors in any float32 order (PyTorch's too)",
            laws=_BI, conformance=("linear",)),
    _linear("LinearFirst", ("y", "dp"), {"y": 16.0, "dp": 16.0},
            "as Linear (LinearFirst gives no dx: the first layer's input is data)"),
    _linear("LinearNB", ("y", "dx", "dp"), {"y": 16.0, "dx": 16.0, "dp": 16.0}, "as Linear", bias=False, laws=_BI,
            conformance=("linear",)),
    *ACTIVATIONS,
    OpRecord("Dropout", "layer", "layer", lambda L, d: L.Dropout(d["n"], d["c"], d["p"], 1234),
             lambda n, a, b: {"n": n, "c": a, "p": 0.25}, conformance=("dropout",),
             shapes=({"n": 4, "c": 7, "p": 0.25}, {"n": 16, "c": 33, "p": 0.5}, {"n": 8, "c": 9, "p": 0.1}),
             x=x_nc, outputs=("y", "dx"), bound={"y": 2.0, "dx": 2.0}, bound_elem={"y": 2.0, "dx": 2.0},
             why="x times the float32 factor 1/(1-p), itself rounded: two roundings, at most 2^-23 relative, 2 ulps",
             bitexact=("y", "dx"), laws=("protocol", "dropout")),
    OpRecord("Softmax", "layer", "row", lambda L, d: L.Softmax(d["n"], d["c"]), _nc, conformance=("softmax",),
             shapes=_ROWS_X, x=x_nc, outputs=("y", "dx"), bound={"y": 16.0, "dx": 32.0},
             why="exp(x - max)/sum: expf (1 ulp) and a sum of c terms (~log2 c ulps); dx = y*(dy - <dy,y>) cancels "
                 "when dy is close to <dy,y>, so large ulps of a small exact value", laws=_BI),
    OpRecord("LogSoftmax", "layer", "row", lambda L, d: L.LogSoftmax(d["n"], d["c"]), _nc,
             conformance=("log_softmax",), shapes=_ROWS_X, x=x_nc, outputs=("y", "dx"), bound={"y": 4.0, "dx": 16.0},
             why="(x - m) - log(sum): the subtraction cancels near the row's maximum; dx = dy - softmax*sum(dy) "
                 "cancels", laws=_BI),
    OpRecord("RMSNorm", "layer", "row", lambda L, d: L.RMSNorm(d["n"], d["d"]), _nd, conformance=("rms_norm",),
             shapes=_NORM_SHAPES, x=x_nd, pshapes=lambda d: [(1, d["d"])], pinit=lambda r, d: [_gain(r, d)],
             bound={"y": 8.0, "dx": 16.0, "dp": 16.0}, bound_elem={"y": 8.0},
             why="mean of squares and rsqrt: a few ulps on y; dx = (g*dy - x*<g*dy,x>/(d*ms))/rms cancels (a "
                 "projection), so large ulps of small exact values; dp is a column sum over n rows", laws=_BI),
    OpRecord("LayerNorm", "layer", "row", lambda L, d: L.LayerNorm(d["n"], d["d"]), _nd,
             conformance=("layer_norm",), shapes=_NORM_SHAPES, x=x_nd, pshapes=lambda d: [(1, d["d"]), (1, d["d"])],
             pinit=lambda r, d: [_gain(r, d), (0.1 * r.standard_normal((1, d["d"]))).astype(F32)],
             bound={"y": 8.0, "dx": 16.0, "dp": 8.0},
             why="x - mean cancels for entries near the mean (y is relative to a small exact value); dx subtracts two "
                 "projections of dy (a double cancellation); dp sums n products", laws=_BI),
    OpRecord("Embedding", "layer", "layer", lambda L, d: L.Embedding(d["n"], d["v"], d["d"]),
             lambda n, a, b: {"n": n, "v": b, "d": a}, shapes=({"n": 6, "v": 5, "d": 4}, {"n": 20, "v": 11, "d": 16}),
             x=lambda r, d: r.integers(0, d["v"], d["n"]).astype(I64), pshapes=lambda d: [(d["v"], d["d"])],
             outputs=("y", "dp"), bound={"y": 0.0, "dp": 2.0}, bound_elem={"y": 0.0},
             why="y copies rows (exact); dp adds the rows of dy that share an id, at most a few float32 additions",
             bitexact=("y",), laws=("protocol",)),
    OpRecord("RoPE", "layer", "layer", lambda L, d: L.RoPE(d["n"], d["w"], d["t"], d["h"], d["half"], d["base"]),
             lambda n, a, b: {"n": n, "w": 2 * a, "t": 1, "h": 1, "half": a, "base": 10000.0},
             laws=("protocol", "rope"),
             gaps=(_covered("tests/reference/test_attention_vs_torch.py (impl, oracle and PyTorch's Llama rotary "
                            "embedding) and laws/test_rope.py"),)),
    OpRecord("Attention", "layer", "layer",
             lambda L, d: L.Attention(d["n"], d["w"], d["kvw"], d["b"], d["t"], d["kv"], d["g"], d["hd"], d["sc"]),
             lambda n, a, b: {"n": n, "w": a, "kvw": a, "b": n, "t": 1, "kv": 1, "g": 1, "hd": a, "sc": 0.5},
             conformance=("attention", "attention_grad"), laws=("protocol", "attention", "batch_invariance"),
             shapes=({"n": 16, "w": 64, "kvw": 32, "b": 2, "t": 8, "kv": 2, "g": 2, "hd": 16, "sc": 0.25},
                     {"n": 48, "w": 32, "kvw": 8, "b": 3, "t": 16, "kv": 1, "g": 4, "hd": 8, "sc": 0.25}),
             outputs=("y", "dx"), bound={"y": 32.0, "dx": 32.0},
             why="scores are float32 dots of hd terms, then expf, a sum and a division (softmax), then a dot of t "
                 "terms (P·V; the backward pass one more level of the same): a worst case of (t + hd + small) ulps "
                 "relative to the magnitudes, measured 2-8 ulps normwise in impl and PyTorch alike "
                 "(tests/reference/test_attention_vs_torch.py); dx holds dQ, dK and dV in that order",
             gaps=(_covered("tests/reference/test_attention_vs_torch.py (against PyTorch's "
                            "scaled_dot_product_attention) and laws/test_attention.py"),)),
)


def _labels(r: Gen, d: Dims) -> Any:
    return r.integers(0, d["c"], d["n"]).astype(I64)


def _logp(r: Gen, d: Dims) -> Arr:
    import numpy as np

    z = r.standard_normal((d["n"], d["c"])) * 2.0
    lp = z - np.log(np.sum(np.exp(z - z.max(1, keepdims=True)), 1, keepdims=True)) - z.max(1, keepdims=True)
    return np.asarray(lp, dtype=F32)


def _loss(name: str, **kw: Any) -> OpRecord:
    return OpRecord(name, "loss", "loss", lambda L, d: getattr(L, name)(d["n"], d["c"]), _nc, shapes=LOSS_SHAPES,
                    outputs=("loss", "dy"), **kw)


LOSSES: tuple[OpRecord, ...] = (
    _loss("CrossEntropy", x=x_nc, t=_labels, conformance=("ce_rows",), bound={"loss": 4.0, "dy": 8.0},
          bound_elem={"loss": 4.0}, laws=("losses", "batch_invariance"),
          why="loss: log-sum-exp and a tree sum of n row losses, a few ulps; dy = (softmax - onehot)/n cancels at the "
              "label where p is near 1",
          gaps=(Gap("batch_invariance", "impl's CrossEntropy returns only the mean over the rows (the seed's loss), "
                    "no per-row term to compare alone and in a batch", target="impl", seed="main.bend line 2894"),)),
    _loss("NLL", x=_logp, t=_labels, bound={"loss": 4.0, "dy": 0.5}, bound_elem={"loss": 4.0, "dy": 0.5},
          laws=("losses",), why="a sum of n picked numbers left to right (n <= 33 roundings of same-sign terms: a few "
                                "ulps); dy = -1/n is one correctly rounded division"),
    _loss("MSE", x=x_nc, t=lambda r, d: mat(r, d["n"], d["c"]), bound={"loss": 4.0, "dy": 2.0},
          bound_elem={"loss": 4.0, "dy": 2.0}, laws=("losses",),
          why="a tree sum of n*c non-negative squares (log2(nc) roundings of same-sign terms) then / nc; dy = "
              "(y - t) * (2/nc): two roundings, 2/nc itself rounded"),
)

_PROTOCOL_LAWS = "laws/test_protocol.py"
COMBINATORS: tuple[OpRecord, ...] = (
    OpRecord("Id", "combinator", "combinator", lambda L, d: L.Id(L.MatSpec(d["n"], d["c"])), _nc, laws=("protocol",),
             gaps=(_covered(f"{_PROTOCOL_LAWS} (Seq's unit, bit for bit)"),)),
    OpRecord("Seq", "combinator", "combinator",
             lambda L, d: L.Seq(L.Linear(d["n"], d["i"], d["o"]), L.GELUErf(d["n"], d["o"])), _nio, pshapes=_lin_p,
             laws=("protocol",), gaps=(_covered(f"the compositions below and {_PROTOCOL_LAWS}"),)),
    OpRecord("Fork", "combinator", "combinator",
             lambda L, d: L.Fork(L.Linear(d["n"], d["i"], d["o"]), L.LinearNB(d["n"], d["i"], d["o"])), _nio,
             pshapes=lambda d: _lin_p(d) + [(d["o"], d["i"])], laws=("protocol",),
             gaps=(_covered(f"the compositions below and {_PROTOCOL_LAWS}"),)),
    OpRecord("Both", "combinator", "combinator",
             lambda L, d: L.Both(L.Sigmoid(d["n"], d["c"]), L.Tanh(d["n"], d["c"])), _nc, laws=("protocol",),
             gaps=(_covered(f"the compositions below and {_PROTOCOL_LAWS}"),)),
    OpRecord("Tie", "combinator", "combinator",
             lambda L, d: L.Tie(L.Embedding(d["n"], d["v"], d["d"]), L.Tanh(d["n"], d["d"]),
                                L.LinearNB(d["n"], d["d"], d["v"])),
             lambda n, a, b: {"n": n, "v": b, "d": a}, pshapes=lambda d: [(d["v"], d["d"])], laws=("protocol",),
             gaps=(_covered(f"the compositions below and {_PROTOCOL_LAWS}"),)),
    OpRecord("Add2", "combinator", "combinator", lambda L, d: L.Add2(d["n"], d["c"], L.DTYPE), _nc, shapes=NC_SHAPES,
             x=pair_nc, outputs=("y", "dx"), bound={"y": 0.5, "dx": 0.0}, bound_elem={"y": 0.5, "dx": 0.0},
             why="one correctly rounded addition; dx copies dy", bitexact=("y", "dx"), laws=("protocol",)),
    OpRecord("Mul2", "combinator", "combinator", lambda L, d: L.Mul2(d["n"], d["c"], L.DTYPE), _nc, shapes=NC_SHAPES,
             x=pair_nc, outputs=("y", "dx"), bound={"y": 0.5, "dx": 0.5}, bound_elem={"y": 0.5, "dx": 0.5},
             why="one correctly rounded product each", bitexact=("y", "dx"), laws=("protocol",)),
    OpRecord("Residual", "combinator", "combinator",
             lambda L, d: L.Residual(L.Seq(L.RMSNorm(d["n"], d["c"]), L.LinearNB(d["n"], d["c"], d["c"]))), _nc,
             pshapes=lambda d: [(1, d["c"]), (d["c"], d["c"])], laws=("protocol",),
             gaps=(_covered(f"the compositions below and {_PROTOCOL_LAWS}"),)),
)


def _comp(name: str, build: Callable[[Any, Dims], Any], shapes: tuple[Dims, ...], x: Callable[[Gen, Dims], Any],
          pshapes: Callable[[Dims], list[tuple[int, int]]] | None, bound: dict[str, float], why: str,
          outputs: tuple[str, ...] = ("y", "dx", "dp")) -> OpRecord:
    """A small composition of constructors, compared as one op (its laws are its parts')."""
    return OpRecord(name, "combinator", None, build, shapes=shapes, x=x, pshapes=pshapes, outputs=outputs,
                    bound=bound, why=why)


_SQ = ({"n": 4, "c": 6}, {"n": 16, "c": 24})
COMPOSITIONS: tuple[OpRecord, ...] = (
    _comp("Seq(Linear,ReLU)", lambda L, d: L.Seq(L.Linear(d["n"], d["i"], d["o"]), L.ReLU(d["n"], d["o"])),
          LIN_SHAPES, x_ni, _lin_p, {"y": 16.0, "dx": 16.0, "dp": 16.0}, "as Linear (ReLU is exact)"),
    _comp("Fork(Linear,LinearNB)+Add2",
          lambda L, d: L.Seq(L.Fork(L.Linear(d["n"], d["i"], d["o"]), L.LinearNB(d["n"], d["i"], d["o"])),
                             L.Add2(d["n"], d["o"], L.DTYPE)),
          LIN_SHAPES, x_ni, lambda d: _lin_p(d) + [(d["o"], d["i"])], {"y": 16.0, "dx": 32.0, "dp": 16.0},
          "two Linear sums added (one more rounding, and the sum of two may cancel); dx adds two matmuls"),
    _comp("Both(Sigmoid,Tanh)+Mul2",
          lambda L, d: L.Seq(L.Both(L.Sigmoid(d["n"], d["c"]), L.Tanh(d["n"], d["c"])),
                             L.Mul2(d["n"], d["c"], L.DTYPE)),
          NC_SHAPES, pair_nc, None, {"y": 8.0, "dx": 8.0},
          "Sigmoid's and Tanh's bounds plus one product (a gated unit, as in GLU)", outputs=("y", "dx")),
    _comp("Residual(Seq(Linear,Tanh))",
          lambda L, d: L.Residual(L.Seq(L.Linear(d["n"], d["c"], d["c"]), L.Tanh(d["n"], d["c"]))),
          _SQ, x_nc, lambda d: [(d["c"], d["c"]), (1, d["c"])], {"y": 16.0, "dx": 32.0, "dp": 32.0},
          "x + tanh(Linear x): Linear's cancellation, and x + f(x) may cancel; Fork adds two input gradients"),
    _comp("Tie(Linear,Tanh,Linear)",
          lambda L, d: L.Tie(L.Linear(d["n"], d["c"], d["c"]), L.Tanh(d["n"], d["c"]),
                             L.Linear(d["n"], d["c"], d["c"])),
          _SQ, x_nc, lambda d: [(d["c"], d["c"]), (1, d["c"])], {"y": 32.0, "dx": 32.0, "dp": 32.0},
          "two Linears through Tanh with one shared weight: its gradient adds the two uses' sums (as autograd does), "
          "each with Linear's cancellation"),
)


def _optimizer_step(title: str) -> OpRecord:
    """One step (and ten) of an optimizer on one matrix, from the same weights and gradients (records.optimizers:
    the optimizers PyTorch has)."""
    return OpRecord(title, "optimizer", None, lambda L, d: title, shapes=({"r": 7, "c": 13}, {"r": 48, "c": 64}),
                    outputs=("w1", "w10"), bound={"w1": 2.0, "w10": 16.0}, bound_elem={},
                    why="one step: w plus a small update, a few roundings, within ~1 ulp of w's scale; after ten steps "
                        "each step's rounding accumulates (10 x ~1 ulp), and AdamW's decay factor 1 - lr*wd is itself "
                        "rounded to float32 (relative 1.4e-8 per step, in PyTorch too); element-wise, weights that "
                        "pass near zero have huge ulp errors in both libraries",
                    laws=optimizer(title).laws)


OPTIMIZER_STEPS: tuple[OpRecord, ...] = tuple(_optimizer_step(t) for t in COMPARED)

# every record: impl's layers (the activations among them in code order), losses and combinators, then the
# compositions and the optimizers' steps
OPS: tuple[OpRecord, ...] = LAYERS + LOSSES + COMBINATORS + COMPOSITIONS + OPTIMIZER_STEPS
CONSTRUCTORS: tuple[OpRecord, ...] = tuple(o for o in OPS if o.impl_kind is not None)
_BY_NAME = {o.name: o for o in OPS}


def op(name: str) -> OpRecord:
    """The record named `name`; a KeyError naming the records for any other."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no op {name!r}; the records are {', '.join(_BY_NAME)}") from None


def tagged(family: str) -> tuple[OpRecord, ...]:
    """The records tagged with a law family, in order."""
    return tuple(o for o in OPS if family in o.laws)
