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
fixed at construction: composing layers whose shapes do not meet raises `ShapeError` at composition time, and every
call of `Layer.fwd` / `Layer.bwd` checks, cheaply and always, that x, y, dy, dx and g have the structure and shapes
the layer declared. The generic structure (which of X, Y, P meet where) is checked by mypy --strict.

Ownership (the seed's Arrays have one owner, main.bend line 18): fwd and bwd never write into x, s or dy; bwd adds
into g in place and hands it back; step writes p, g and the optimizer state in place and hands them back. A caller
that wants to keep a value across one of these calls copies it first.

This module is dtype-generic: impl's layers work in float32, oracle's in its own wider type, and the combinators
are shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
Q = TypeVar("Q")
X = TypeVar("X")
Y = TypeVar("Y")
Z = TypeVar("Z")
W = TypeVar("W")
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


@dataclass(frozen=True, eq=False)
class Layer(Generic[P, X, Y, S]):
    """A layer: its name, the shapes of its input and output, its dtype, and the seed's eight functions.

    Call the methods (`fwd`, `bwd`, `step`, ...): they check shapes and structure, then run the raw functions
    `f_fwd`, `f_bwd`, ... The checks are O(size of the structure), never O(numbers)."""

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

    def fwd(self, p: P, x: X) -> Fwd[P, Y, S]:
        e = check_value(x, self.x_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.name}.fwd: input x: {e}")
        r = self.f_fwd(p, x)
        e = check_value(r.y, self.y_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.name}.fwd: output y: {e}")
        return r

    def bwd(self, p: P, s: S, dy: Y, g: P) -> Bwd[P, X]:
        # A combinator's children check their own parts of g before and after their backward passes, so it checks
        # only its own level: the whole tree once per layer, not once per level of nesting above it.
        depth = 1 if self.children else -1
        e = check_value(dy, self.y_spec, self.dtype)
        if e is not None:
            raise ShapeError(f"{self.name}.bwd: dy: {e}")
        e = structure_diff(g, p, depth=depth)
        if e is not None:
            raise ShapeError(f"{self.name}.bwd: the gradient g has not the parameters' structure: {e}")
        r = self.f_bwd(p, s, dy, g)
        e = check_value(r.dx, self.x_spec, self.dtype, grad=True)
        if e is not None:
            raise ShapeError(f"{self.name}.bwd: dx must have x's structure and shape: {e}")
        e = structure_diff(r.g, p, depth=depth)
        if e is not None:
            raise ShapeError(f"{self.name}.bwd: g must have p's structure: {e}")
        return r

    def step(self, op: Opt, p: P, g: P, st: "OptState[P]") -> Step[P]:
        return self.f_step(op, p, g, st)

    def zeros(self) -> P:
        return self.f_zeros()

    def dump(self, p: P) -> Flat:
        return self.f_dump(p)

    def load(self, p: P, xs: Flat, off: int = 0) -> Loaded[P]:
        return self.f_load(p, xs, off)

    def store(self, p: P, xs: Flat, off: int = 0) -> int:
        return self.f_store(p, xs, off)

    def count(self) -> int:
        return self.n_count

    def __repr__(self) -> str:
        return f"<Layer {self.name}: {self.x_spec} -> {self.y_spec}, {self.n_count} parameters>"


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

    return Layer(name, x_spec, y_spec, dtype, fwd, bwd, no_step, lambda: None,
                 lambda p: empty_flat(dtype), load, lambda p, xs, off: off, 0)
