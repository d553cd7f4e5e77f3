"""The layer protocol (main.bend lines 27-160): a layer is a record of eight functions over its parameters P, its
input X, its output Y and what its forward pass saves for the backward pass S.

    fwd   : P -> X -> Fwd[P, Y, S]              the parameters handed back, the output, the saved values
    bwd   : P -> S -> Y -> P -> Bwd[P, X]       from dY to dX, adding this call's dP into the gradient g
    step  : Opt -> P -> P -> OptState[P] -> Step[P]   one optimizer step; the gradient comes back zeroed
    zeros : () -> P                             a zero P (gradients and optimizer state start from it)
    dump  : P -> flat array                     every number of P in the layer's one fixed order
    load  : P -> flat array -> offset -> Loaded[P]   P overwritten from the array at an offset, in dump order
    store : P -> flat array -> offset -> offset      P copied into the array at an offset (load's inverse)
    count : () -> int                           how many numbers dump gives

The seed's types carry the shapes (`Mat<r, c>`); Python's cannot, so a layer carries its shapes as values (`Spec`),
fixed at construction, and its parameters' structure is the one its `zeros()` gives: composing layers whose shapes
do not meet raises `ShapeError` at composition time, and every call of `Layer.fwd`, `.bwd`, `.step`, `.dump`,
`.load`, `.store` checks, cheaply and always, that x, y, dy, dx, p, g and the optimizer state have the structure,
shapes, dtype and memory layout the layer declared, so no public call hands a kernel an array it would read or
write out of bounds (docs/DESIGN.md). The generic structure (which of X, Y, P meet where) is checked by mypy
--strict.

Ownership (the seed's Arrays have one owner, main.bend line 18): fwd and bwd never write into x, s or dy; bwd adds
into g in place and hands it back; step writes p, g and the optimizer state in place and hands them back. A caller
that wants to keep a value across one of these calls copies it first.

This module is dtype-generic: impl's layers work in float32, oracle's in its own wider type, and the combinators
are shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Generic, TypeVar, Union

import numpy as np
import numpy.typing as npt

# A matrix of impl is an r x c float32 array, row by row (bend-ml's Mat<r, c>, main.bend line 17).
Mat = npt.NDArray[np.float32]
# Token ids (the seed's List<Nat>): a 1-D int64 array.
Ids = npt.NDArray[np.int64]
# A flat array of numbers of either library's dtype.
Flat = npt.NDArray[Any]

P = TypeVar("P")
X = TypeVar("X")
Y = TypeVar("Y")
S = TypeVar("S")
T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")


class ShapeError(ValueError):
    """A value whose structure or shape is not the one a layer declared, or two layers whose shapes do not meet."""


class ConfigError(ValueError):
    """A configuration that the seed rejects (for example an Adam configuration whose c1, c2 disagree with b1, b2)."""


# ---------------------------------------------------------------------------------------------------------------
# Shapes as values
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatSpec:
    """An r x c matrix of the library's dtype."""

    r: int
    c: int

    def __str__(self) -> str:
        return f"Mat[{self.r} x {self.c}]"


@dataclass(frozen=True)
class IdsSpec:
    """n token ids (non-negative integers). Their gradient is the empty list (Embedding, main.bend line 1916)."""

    n: int

    def __str__(self) -> str:
        return f"Ids[{self.n}]"


@dataclass(frozen=True)
class PairSpec:
    """A pair (the seed's Two{a, b}), a Python tuple (a, b)."""

    a: "Spec"
    b: "Spec"

    def __str__(self) -> str:
        return f"({self.a}, {self.b})"


Spec = Union[MatSpec, IdsSpec, PairSpec]


def _dtype_name(dtype: type[np.floating[Any]]) -> str:
    return np.dtype(dtype).name


def check_value(v: object, spec: Spec, dtype: type[np.floating[Any]], grad: bool = False) -> str | None:
    """None if v has spec's structure and shapes (and the library's dtype), else what is wrong. With grad=True, an Ids
    spec asks for the gradient of ids: the empty id list."""
    if isinstance(spec, MatSpec):
        if not isinstance(v, np.ndarray):
            return f"expected {spec}, got {type(v).__name__}"
        if v.shape != (spec.r, spec.c):
            return f"expected {spec}, got shape {v.shape}"
        if v.dtype != dtype:
            return f"expected {spec} of {_dtype_name(dtype)}, got {v.dtype}"
        return None
    if isinstance(spec, IdsSpec):
        if not isinstance(v, np.ndarray):
            return f"expected {spec}, got {type(v).__name__}"
        want = 0 if grad else spec.n
        if v.ndim != 1 or v.shape[0] != want:
            return f"expected {'the empty id list' if grad else spec}, got shape {v.shape}"
        if not np.issubdtype(v.dtype, np.integer):
            return f"expected {spec} of integers, got {v.dtype}"
        return None
    if not isinstance(v, tuple) or len(v) != 2:
        return f"expected a pair {spec}, got {type(v).__name__}"
    ea = check_value(v[0], spec.a, dtype, grad)
    if ea is not None:
        return f"first of pair: {ea}"
    eb = check_value(v[1], spec.b, dtype, grad)
    if eb is not None:
        return f"second of pair: {eb}"
    return None


def structure_diff(a: object, b: object, path: str = "p", depth: int = -1) -> str | None:
    """None if a and b have the same structure (tuple nesting, record types, array shapes and dtypes), else where
    they first differ. Used to check that a gradient g has the parameters' structure. depth >= 0 looks only that
    many tuple levels down (-1: all the way)."""
    if isinstance(b, np.ndarray):
        if not isinstance(a, np.ndarray):
            return f"{path}: expected an array {b.shape}, got {type(a).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: expected shape {b.shape} {b.dtype}, got {a.shape} {a.dtype}"
        return None
    if isinstance(b, tuple):
        if type(a) is not type(b) or not isinstance(a, tuple) or len(a) != len(b):
            return f"{path}: expected {type(b).__name__} of {len(b)}, got {type(a).__name__}"
        if depth == 0:
            return None
        for i, (x, y) in enumerate(zip(a, b)):
            e = structure_diff(x, y, f"{path}[{i}]", depth - 1)
            if e is not None:
                return e
        return None
    if b is None:
        return None if a is None else f"{path}: expected no parameters, got {type(a).__name__}"
    if type(a) is not type(b):
        return f"{path}: expected {type(b).__name__}, got {type(a).__name__}"
    return None


@dataclass(frozen=True)
class ArrSkel:
    """An array of a declared shape and dtype, in a parameter structure's skeleton."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    def __str__(self) -> str:
        return f"an array {self.shape} of {self.dtype}"


# longest layer name an error message repeats whole (a composite's description can run to kilobytes)
LABEL_MAX = 120


def skeleton(tree: object) -> object:
    """A parameter value with every array replaced by its shape and dtype (tuples, records and counters kept)."""
    if isinstance(tree, np.ndarray):
        return ArrSkel(tuple(tree.shape), tree.dtype)
    if isinstance(tree, tuple):
        parts = [skeleton(x) for x in tree]
        record: Any = type(tree)
        return record(*parts) if hasattr(tree, "_fields") else tuple(parts)
    return tree


def param_diff(v: object, skel: object, path: str = "p", depth: int = -1) -> str | None:
    """None if v has the skeleton's structure (record types, tuple nesting, counters as Python integers in [0, 2^32))
    and its arrays the skeleton's shapes and dtypes and are C-contiguous, else where they first differ. depth >= 0
    looks only that many tuple levels down (-1: all the way); at depth 0 only a tuple's type and length are looked
    at (a combinator's children check their own parameters, and so name themselves)."""
    if depth == 0 and not isinstance(skel, tuple):
        return None
    if isinstance(skel, ArrSkel):
        if not isinstance(v, np.ndarray):
            return f"{path}: expected {skel}, got {type(v).__name__}"
        if v.shape != skel.shape or v.dtype != skel.dtype:
            return f"{path}: expected {skel}, got {v.shape} of {v.dtype}"
        if not v.flags.c_contiguous:
            return f"{path}: expected a C-contiguous array (np.ascontiguousarray), got a strided view"
        return None
    if isinstance(skel, tuple):
        if type(v) is not type(skel) or not isinstance(v, tuple) or len(v) != len(skel):
            return f"{path}: expected {type(skel).__name__} of {len(skel)}, got {type(v).__name__}"
        if depth == 0:
            return None
        for i, (a, b) in enumerate(zip(v, skel)):
            e = param_diff(a, b, f"{path}[{i}]", depth - 1)
            if e is not None:
                return e
        return None
    if skel is None:
        return None if v is None else f"{path}: expected no parameters (None), got {type(v).__name__}"
    if isinstance(skel, int) and not isinstance(skel, bool):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= int(v) < 2 ** 32:
            return f"{path}: expected a counter, an integer in [0, 2^32), got {v!r}"
        return None
    if type(v) is not type(skel):
        return f"{path}: expected {type(skel).__name__}, got {type(v).__name__}"
    return None


def _words(what: str, a: object, n: int, dtype: type[np.generic]) -> str | None:
    if not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype != dtype or not a.flags.c_contiguous:
        got = type(a).__name__ if not isinstance(a, np.ndarray) else f"{a.shape} of {a.dtype}" + \
            ("" if a.flags.c_contiguous else ", a strided view")
        return f"{what}: expected a contiguous array ({n},) of {np.dtype(dtype).name}, got {got}"
    return None


def _packed_diff(t: object, skel: object, path: str, depth: int) -> str | None:
    """A packed moment tree against the parameters' skeleton: a node per pair, a leaf per matrix whose arrays hold
    exactly that matrix's moments (what OptState.split makes of any other tree is the seed's rule and allowed)."""
    if isinstance(t, PNew) or depth == 0:
        return None
    if isinstance(skel, tuple) and len(skel) == 2:
        if isinstance(t, PNode):
            return _packed_diff(t.a, skel[0], path + ".a", depth - 1) or \
                _packed_diff(t.b, skel[1], path + ".b", depth - 1)
        return _packed_diff(t, skel[0], path, depth - 1)
    if isinstance(skel, ArrSkel):
        n = int(np.prod(skel.shape))
        if isinstance(t, PLeaf):
            if t.n != n:
                return None  # a leaf of another size is left untouched (adamh_leaf's fallback, main.bend line 401)
            return _words(f"{path}.m", t.m, (n + 1) // 2, np.uint32) or _words(f"{path}.v", t.v, (n + 1) // 2,
                                                                                np.uint32)
        if isinstance(t, PLeafV):
            if t.n != n:
                return None
            return _words(f"{path}.m", t.m, (n + 1) // 2, np.uint32) or _words(f"{path}.v", t.v, n, np.float32)
        if isinstance(t, PNode):
            return None  # a matrix's step leaves a node untouched (line 401)
        return f"{path}: expected a packed moment tree, got {type(t).__name__}"
    return None


def state_diff(st: object, skel: object, depth: int = -1) -> str | None:
    """None if the optimizer state's buffers fit the parameters' skeleton (a state of another optimizer is allowed:
    the step leaves it untouched, main.bend line 432), else what is wrong."""
    if isinstance(st, NoMom):
        return None
    if isinstance(st, OneMom):
        return param_diff(st.m, skel, "state m", depth)
    if isinstance(st, TwoMom):
        return param_diff(st.m, skel, "state m", depth) or param_diff(st.v, skel, "state v", depth)
    if isinstance(st, Packed):
        return _packed_diff(st.t, skel, "state", depth)
    return None  # no buffers any step reads (Dropout's step ignores its state; opt_mat leaves it untouched)


# ---------------------------------------------------------------------------------------------------------------
# What the protocol's functions return (main.bend lines 31-41, 98-100, 110-117)
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Fwd(Generic[P, Y, S]):
    """What a forward pass returns: the parameters, the output, what the backward pass will need."""

    p: P
    y: Y
    s: S


@dataclass
class Bwd(Generic[P, X]):
    """What a backward pass returns: the parameters, the gradient of the input, the accumulated parameter gradient."""

    p: P
    dx: X
    g: P


@dataclass
class Loaded(Generic[P]):
    """Parameters read from a flat array, and the offset after them (the seed's PA)."""

    p: P
    off: int


# ---- optimizer state (main.bend lines 50-100) ----


@dataclass
class PNew:
    """A part of a packed tree not yet stepped (its leaf is created on the first step)."""

    v16: bool


@dataclass
class PLeaf:
    """A matrix's packed moments: n numbers, m and v as BF16 packed two to a uint32 word (element 2k low half)."""

    n: int
    m: npt.NDArray[np.uint32]
    v: npt.NDArray[np.uint32]


@dataclass
class PLeafV:
    """A matrix's moments with m packed BF16 and v float32."""

    n: int
    m: npt.NDArray[np.uint32]
    v: npt.NDArray[np.float32]


@dataclass
class PNode:
    a: "PTree"
    b: "PTree"


PTree = Union[PNew, PLeaf, PLeafV, PNode]


@dataclass
class NoMom:
    """SGD: no buffer."""


@dataclass
class OneMom(Generic[P]):
    """Momentum: one buffer of the parameters' structure."""

    m: P


@dataclass
class TwoMom(Generic[P]):
    """Adam and AdamW: two buffers of the parameters' structure."""

    m: P
    v: P


@dataclass
class Packed:
    """AdamW with packed BF16 moments: a tree that follows the parameters' pairs."""

    t: PTree


OptState = Union[NoMom, OneMom[P], TwoMom[P], Packed]


def state_map(st: "OptState[A]", f: Callable[[A], B]) -> "OptState[B]":
    """The seed's OptState.map (line 71): the same buffers under another view of the parameters (Lin <-> Two)."""
    if isinstance(st, OneMom):
        return OneMom(f(st.m))
    if isinstance(st, TwoMom):
        return TwoMom(f(st.m), f(st.v))
    return st


def state_split(st: "OptState[tuple[A, B]]") -> "tuple[OptState[A], OptState[B]]":
    """OptState.split (main.bend lines 78-87): a pair's buffers into the two parts' buffers. A packed tree splits at
    its node; a part not yet stepped splits into two such parts; a leaf goes left and the right side starts empty."""
    if isinstance(st, OneMom):
        return OneMom(st.m[0]), OneMom(st.m[1])
    if isinstance(st, TwoMom):
        return TwoMom(st.m[0], st.v[0]), TwoMom(st.m[1], st.v[1])
    if isinstance(st, Packed):
        t = st.t
        if isinstance(t, PNode):
            return Packed(t.a), Packed(t.b)
        if isinstance(t, PNew):
            return Packed(PNew(t.v16)), Packed(PNew(t.v16))
        return Packed(t), Packed(PNew(False))
    return NoMom(), NoMom()


def state_join(a: "OptState[A]", b: "OptState[B]") -> "OptState[tuple[A, B]]":
    """OptState.join (main.bend lines 89-96): pairs the buffers present on both sides; never allocates one."""
    if isinstance(a, OneMom) and isinstance(b, OneMom):
        return OneMom((a.m, b.m))
    if isinstance(a, TwoMom) and isinstance(b, TwoMom):
        return TwoMom((a.m, b.m), (a.v, b.v))
    if isinstance(a, Packed) and isinstance(b, Packed):
        return Packed(PNode(a.t, b.t))
    return NoMom()


@dataclass
class Step(Generic[P]):
    """What an optimizer step returns: the new parameters, the zeroed gradient, the new optimizer state."""

    p: P
    g: P
    st: "OptState[P]"


# ---- the optimizer with the scalars of the current step (main.bend lines 102-108) ----


@dataclass(frozen=True)
class SGD:
    lr: np.floating[Any]


@dataclass(frozen=True)
class Momentum:
    lr: np.floating[Any]
    mu: np.floating[Any]


@dataclass(frozen=True)
class Adam:
    """Adam's `step` is lr / (1 - b1^t) and `bc2` is sqrt(1 - b2^t); `dec` picks AdamW's decoupled weight decay."""

    lr: np.floating[Any]
    b1: np.floating[Any]
    b2: np.floating[Any]
    eps: np.floating[Any]
    wd: np.floating[Any]
    dec: bool
    step: np.floating[Any]
    bc2: np.floating[Any]
    c1: np.floating[Any]
    c2: np.floating[Any]


Opt = Union[SGD, Momentum, Adam]


# ---------------------------------------------------------------------------------------------------------------
# The layer record (main.bend line 119)
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class Layer(Generic[P, X, Y, S]):
    """A layer: its name, the shapes of its input and output, its dtype, and the seed's eight functions, built by
    keyword (`Layer(name=..., x_spec=..., f_fwd=..., ...)`; the helpers `param_free`, `mat_param` and `pair_param`
    below fill in all but fwd and bwd).

    Call the methods (`fwd`, `bwd`, `step`, ...): they check their arguments against the shapes and the parameter
    structure the layer declared, then run the raw functions `f_fwd`, `f_bwd`, ... So no public call hands a kernel
    an array of another shape, dtype or memory layout than the one it was written for. The checks are O(size of the
    structure), never O(numbers)."""

    name: str
    x_spec: Spec
    y_spec: Spec
    dtype: type[np.floating[Any]]
    f_fwd: Callable[[P, X], Fwd[P, Y, S]]
    f_bwd: Callable[[P, S, Y, P], Bwd[P, X]]
    f_step: Callable[[Opt, P, P, "OptState[P]"], Step[P]]
    f_zeros: Callable[[], P]
    f_dump: Callable[[P], Flat]
    f_load: Callable[[P, Flat, int], Loaded[P]]
    f_store: Callable[[P, Flat, int], int]
    n_count: int
    children: tuple["Layer[Any, Any, Any, Any]", ...] = field(default=())

    @cached_property
    def p_skel(self) -> object:
        """The declared parameter structure: `zeros()` with every array replaced by its shape and dtype."""
        return skeleton(self.f_zeros())

    @property
    def label(self) -> str:
        """The name, or for a long composite only its kind and shapes: an error names the failing part without
        the whole model's description."""
        if len(self.name) <= LABEL_MAX:
            return self.name
        return f"{self.name.split('(', 1)[0]}[{self.x_spec} -> {self.y_spec}]"

    def _depth(self) -> int:
        # A combinator's children check their own parts of p and g when it calls them, so it checks only its own
        # level: the whole tree once per layer, not once per level of nesting above it.
        return 1 if self.children else -1

    def check_params(self, call: str, what: str, v: object) -> None:
        """Raise ShapeError (naming the layer, the call and the argument) unless v has the declared parameter
        structure: the same nesting and record types, and arrays of the declared shapes, of the layer's dtype,
        C-contiguous (the kernels index them flat)."""
        e = param_diff(v, self.p_skel, what, self._depth())
        if e is not None:
            raise ShapeError(f"{self.label}.{call}: {e}")

    def fwd(self, p: P, x: X) -> Fwd[P, Y, S]:
        self.check_params("fwd", "p", p)
        e = check_value(x, self.x_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.label}.fwd: input x: {e}")
        r = self.f_fwd(p, x)
        e = check_value(r.y, self.y_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.label}.fwd: output y: {e}")
        return r

    def bwd(self, p: P, s: S, dy: Y, g: P) -> Bwd[P, X]:
        depth = self._depth()
        e = check_value(dy, self.y_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.label}.bwd: dy: {e}")
        self.check_params("bwd", "p", p)
        e = param_diff(g, self.p_skel, "g", depth)
        if e is not None:
            raise ShapeError(f"{self.label}.bwd: the gradient g has not the parameters' structure: {e}")
        r = self.f_bwd(p, s, dy, g)
        e = check_value(r.dx, self.x_spec, self.dtype, grad=True)
        if e is not None:
            raise ShapeError(f"{self.label}.bwd: dx must have x's structure and shape: {e}")
        e = structure_diff(r.g, p, depth=depth)
        if e is not None:
            raise ShapeError(f"{self.label}.bwd: g must have p's structure: {e}")
        return r

    def step(self, op: Opt, p: P, g: P, st: "OptState[P]") -> Step[P]:
        self.check_params("step", "p", p)
        self.check_params("step", "g", g)
        e = state_diff(st, self.p_skel, self._depth())
        if e is not None:
            raise ShapeError(f"{self.label}.step: optimizer state: {e}")
        return self.f_step(op, p, g, st)

    def zeros(self) -> P:
        return self.f_zeros()

    def dump(self, p: P) -> Flat:
        self.check_params("dump", "p", p)
        return self.f_dump(p)

    def _check_flat(self, call: str, xs: object, off: object) -> None:
        if not isinstance(xs, np.ndarray) or xs.ndim != 1 or xs.dtype.kind != "f":
            got = f"{xs.shape} of {xs.dtype}" if isinstance(xs, np.ndarray) else type(xs).__name__
            raise ShapeError(f"{self.label}.{call}: expected a 1-D float array of numbers, got {got}")
        if not isinstance(off, (int, np.integer)) or isinstance(off, bool) or not 0 <= off <= xs.size:
            raise ShapeError(f"{self.label}.{call}: the offset must be an integer in [0, {xs.size}], got {off!r}")

    def load(self, p: P, xs: Flat, off: int = 0) -> Loaded[P]:
        self.check_params("load", "p", p)
        self._check_flat("load", xs, off)
        return self.f_load(p, xs, off)

    def store(self, p: P, xs: Flat, off: int = 0) -> int:
        self.check_params("store", "p", p)
        self._check_flat("store", xs, off)
        return self.f_store(p, xs, off)

    def count(self) -> int:
        return self.n_count

    def __repr__(self) -> str:
        return f"<Layer {self.label}: {self.x_spec} -> {self.y_spec}, {self.n_count} parameters>"


# ---- losses (main.bend lines 883-888) ----


@dataclass
class LossOut(Generic[Y]):
    """The mean loss over the batch (a scalar of the library's dtype), and its gradient with respect to the output."""

    loss: np.floating[Any]
    dy: Y


@dataclass(frozen=True, eq=False)
class Loss(Generic[Y, T]):
    """A loss over a layer's output Y and targets T (the seed's `loss: Y -> T -> LossOut<Y>`)."""

    name: str
    y_spec: Spec
    dtype: type[np.floating[Any]]
    f: Callable[[Y, T], LossOut[Y]]

    def __call__(self, y: Y, t: T) -> LossOut[Y]:
        e = check_value(y, self.y_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.name}: output y: {e}")
        return self.f(y, t)


# ---------------------------------------------------------------------------------------------------------------
# Helpers for parameter-free layers and for matrices as parameters
# ---------------------------------------------------------------------------------------------------------------


def empty_flat(dtype: type[np.floating[Any]]) -> Flat:
    return np.zeros(0, dtype=dtype)


def no_step(op: Opt, p: P, g: P, st: "OptState[P]") -> Step[P]:
    """A layer without parameters steps nothing (main.bend line 734)."""
    return Step(p, g, st)


def mat_dump(m: Flat) -> Flat:
    """A matrix's r*c numbers, row by row (main.bend line 550)."""
    return np.ascontiguousarray(m).reshape(-1).copy()


def mat_restore(m: Flat, xs: Flat, off: int) -> Loaded[Flat]:
    """The matrix overwritten from xs at off, in dump order (main.bend line 563)."""
    n = m.size
    if off + n > xs.size:
        raise ShapeError(f"load: {n} numbers wanted from offset {off}, the array has {xs.size}")
    m.reshape(-1)[:] = xs[off:off + n]
    return Loaded(m, off + n)


def mat_store(m: Flat, xs: Flat, off: int) -> int:
    """The matrix copied into xs at off (main.bend line 579); the next offset."""
    n = m.size
    if off + n > xs.size:
        raise ShapeError(f"store: {n} numbers to write from offset {off}, the array has {xs.size}")
    xs[off:off + n] = m.reshape(-1)
    return off + n


def param_free(name: str, x_spec: Spec, y_spec: Spec, dtype: type[np.floating[Any]],
               fwd: Callable[[None, X], Fwd[None, Y, S]],
               bwd: Callable[[None, S, Y, None], Bwd[None, X]]) -> Layer[None, X, Y, S]:
    """A layer without parameters: P is None, step does nothing, dump is empty, count is 0 (ActOut, line 749)."""

    def load(p: None, xs: Flat, off: int) -> Loaded[None]:
        return Loaded(None, off)

    return Layer(name=name, x_spec=x_spec, y_spec=y_spec, dtype=dtype, f_fwd=fwd, f_bwd=bwd, f_step=no_step,
                 f_zeros=lambda: None, f_dump=lambda p: empty_flat(dtype), f_load=load,
                 f_store=lambda p, xs, off: off, n_count=0)


MatStep = Callable[[Opt, Any, Any, "OptState[Any]"], Step[Any]]


def mat_param(name: str, x_spec: Spec, y_spec: Spec, dtype: type[np.floating[Any]], r: int, c: int,
              fwd: Callable[[Any, X], Fwd[Any, Y, S]], bwd: Callable[[Any, S, Y, Any], Bwd[Any, X]],
              mat_step: MatStep) -> Layer[Any, X, Y, S]:
    """A layer whose parameter is one r x c matrix (LinearNB, RMSNorm's gain, Embedding's table): step is the
    library's one-matrix step (Opt.mat, main.bend line 434), dump / load / store the matrix row by row, count r*c,
    zeros an r x c zero matrix."""
    return Layer(name=name, x_spec=x_spec, y_spec=y_spec, dtype=dtype, f_fwd=fwd, f_bwd=bwd, f_step=mat_step,
                 f_zeros=lambda: np.zeros((r, c), dtype=dtype), f_dump=mat_dump, f_load=mat_restore,
                 f_store=mat_store, n_count=r * c)


def pair_param(name: str, x_spec: Spec, y_spec: Spec, dtype: type[np.floating[Any]],
               make: Callable[[Any, Any], Any], shapes: tuple[tuple[int, int], tuple[int, int]],
               fwd: Callable[[Any, X], Fwd[Any, Y, S]], bwd: Callable[[Any, S, Y, Any], Bwd[Any, X]],
               mat_step: MatStep) -> Layer[Any, X, Y, S]:
    """A layer whose parameter is a record of two matrices (Lin(w, b), LN(g, b)) made by `make`, of the two shapes:
    step splits the optimizer state along the pair, steps the first matrix then the second, and joins the states
    (lin_step, main.bend lines 655-666; ln_step, line 1830); dump / load / store are the first matrix then the
    second, row by row (lines 668-698, 1838-1861); count is the two sizes' sum."""
    (r1, c1), (r2, c2) = shapes

    def step(op: Opt, p: Any, g: Any, st: "OptState[Any]") -> Step[Any]:
        s1, s2 = state_split(state_map(st, lambda q: (q[0], q[1])))
        a = mat_step(op, p[0], g[0], s1)
        b = mat_step(op, p[1], g[1], s2)
        return Step(make(a.p, b.p), make(a.g, b.g), state_map(state_join(a.st, b.st), lambda t: make(t[0], t[1])))

    def dump(p: Any) -> Flat:
        return np.concatenate([mat_dump(p[0]), mat_dump(p[1])])

    def load(p: Any, xs: Flat, off: int) -> Loaded[Any]:
        a = mat_restore(p[0], xs, off)
        b = mat_restore(p[1], xs, a.off)
        return Loaded(make(a.p, b.p), b.off)

    def store(p: Any, xs: Flat, off: int) -> int:
        return mat_store(p[1], xs, mat_store(p[0], xs, off))

    return Layer(name=name, x_spec=x_spec, y_spec=y_spec, dtype=dtype, f_fwd=fwd, f_bwd=bwd, f_step=step,
                 f_zeros=lambda: make(np.zeros((r1, c1), dtype=dtype), np.zeros((r2, c2), dtype=dtype)),
                 f_dump=dump, f_load=load, f_store=store, n_count=r1 * c1 + r2 * c2)


# ---------------------------------------------------------------------------------------------------------------
# Constructor arguments: one check and one naming rule for impl and oracle
# ---------------------------------------------------------------------------------------------------------------


def check_dims(name: str, least: int = 0, **dims: object) -> None:
    """Each dimension an integer (not a bool) >= least, else a ValueError naming the layer and the dimension. A row
    the seed reads the first number of (a max, a sum, a label's class) needs least = 1."""
    for k, v in dims.items():
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ValueError(f"{name}: {k} must be an integer, got {v!r}")
        if v < least:
            raise ValueError(f"{name}: {k} must be >= {least}, got {v}")


def check_eps(name: str, eps: object) -> np.float32:
    """eps as the float32 the kernels use; a ValueError unless it is a finite number >= 0."""
    try:
        e = np.float32(eps)  # type: ignore[arg-type]
    except (TypeError, ValueError) as ex:
        raise ValueError(f"{name}: eps must be a number, got {eps!r}") from ex
    if not np.isfinite(e) or e < 0:
        raise ValueError(f"{name}: eps must be finite and >= 0, got {eps!r} (as float32: {e})")
    return e


def check_prob(name: str, p: object) -> np.float32:
    """A probability as the float32 the kernels use, in [0, 1], else a ValueError (NaN included: Dropout would keep
    every number and scale it by NaN). p = 1 drops every number (u < 1 always), as PyTorch's dropout(p=1) does; its
    scale 1 / 0 is never applied."""
    try:
        p32 = np.float32(p)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: p must be a number, got {p!r}") from e
    if not 0 <= p32 <= 1:
        raise ValueError(f"{name}: p must be in [0, 1], got {p!r} (as float32: {p32})")
    return p32


def check_seed(name: str, seed: object) -> int:
    """A 32-bit seed as a Python int in [0, 2^32), else a ValueError."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= int(seed) < 2 ** 32:
        raise ValueError(f"{name}: the seed must be an integer in [0, 2^32), got {seed!r}")
    return int(seed)


def layer_name(kind: str, *args: object, **kw: object) -> str:
    """`Kind(a, b, c, k=v)`: the constructor call, the same in impl and oracle. Floats are written as the shortest
    decimal of their float32 value (the value the layer uses)."""

    def show(v: object) -> str:
        return str(np.float32(v)) if isinstance(v, (float, np.floating)) else str(v)

    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kw.items()]
    return f"{kind}({', '.join(parts)})"
