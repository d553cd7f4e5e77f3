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
--strict. The shapes and their checks are impl/specs.py's, the optimizer state and the step's scalars
impl/optstate.py's; this module's namespace holds their names too, so a user imports the whole protocol from here.

Ownership (the seed's Arrays have one owner, main.bend line 18): fwd and bwd never write into x, s or dy; bwd adds
into g in place and hands it back; step writes p, g and the optimizer state in place and hands them back. A caller
that wants to keep a value across one of these calls copies it first.

This module is dtype-generic: impl's layers work in float32, oracle's in its own wider type, and the combinators
are shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Generic, TypeVar

import numpy as np

from bendtorch.impl.optstate import (Adam, ConfigError, Momentum, NoMom, OneMom, Opt, OptState, Packed, PLeaf, PLeafV,
                                     PNew, PNode, PTree, SGD, TwoMom, state_diff, state_fits, state_join, state_map,
                                     state_split)
from bendtorch.impl.specs import (ArrSkel, Check, Flat, Ids, IdsSpec, Mat, MatSpec, PairSpec, ShapeError, Spec,
                                  check_value, param_check, param_diff, skeleton, structure_check, structure_diff,
                                  value_check)

P = TypeVar("P")
X = TypeVar("X")
Y = TypeVar("Y")
S = TypeVar("S")
T = TypeVar("T")

# longest layer name an error message repeats whole (a composite's description can run to kilobytes)
LABEL_MAX = 120


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


@dataclass
class Step(Generic[P]):
    """What an optimizer step returns: the new parameters, the zeroed gradient, the new optimizer state."""

    p: P
    g: P
    st: "OptState[P]"



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
        self._refuse(call, "", param_diff(v, self.p_skel, what, self._depth()))

    # The checks' fast forms (impl/specs.py, value_check and param_check), built once: a call runs them, and the
    # checks that name what is wrong only when one fails.
    @cached_property
    def _p_ok(self) -> Check:
        return param_check(self.p_skel, self._depth())

    @cached_property
    def _x_ok(self) -> Check:
        return value_check(self.x_spec, self.dtype)

    @cached_property
    def _y_ok(self) -> Check:
        return value_check(self.y_spec, self.dtype)

    @cached_property
    def _dx_ok(self) -> Check:
        return value_check(self.x_spec, self.dtype, grad=True)

    @cached_property
    def _g_like_p(self) -> Check:
        return structure_check(self.p_skel, self._depth())

    def _refuse(self, call: str, what: str, e: str | None) -> None:
        if e is not None:
            raise ShapeError(f"{self.label}.{call}: {what}{e}")

    def fwd(self, p: P, x: X) -> Fwd[P, Y, S]:
        if not (self._p_ok(p) and self._x_ok(x)):
            self.check_params("fwd", "p", p)
            self._refuse("fwd", "input x: ", check_value(x, self.x_spec, self.dtype))
        r = self.f_fwd(p, x)
        if not self._y_ok(r.y):
            self._refuse("fwd", "output y: ", check_value(r.y, self.y_spec, self.dtype))
        return r

    def bwd(self, p: P, s: S, dy: Y, g: P) -> Bwd[P, X]:
        depth = self._depth()
        if not (self._y_ok(dy) and self._p_ok(p) and self._p_ok(g)):
            self._refuse("bwd", "dy: ", check_value(dy, self.y_spec, self.dtype))
            self.check_params("bwd", "p", p)
            self._refuse("bwd", "the gradient g has not the parameters' structure: ",
                         param_diff(g, self.p_skel, "g", depth))
        r = self.f_bwd(p, s, dy, g)
        if not self._dx_ok(r.dx):
            self._refuse("bwd", "dx must have x's structure and shape: ",
                         check_value(r.dx, self.x_spec, self.dtype, grad=True))
        if not self._g_like_p(r.g):
            self._refuse("bwd", "g must have p's structure: ", structure_diff(r.g, p, depth=depth))
        return r

    def step(self, op: Opt, p: P, g: P, st: "OptState[P]") -> Step[P]:
        if not (self._p_ok(p) and self._p_ok(g) and state_fits(st, self._p_ok)):
            self.check_params("step", "p", p)
            self.check_params("step", "g", g)
            self._refuse("step", "optimizer state: ", state_diff(st, self.p_skel, self._depth()))
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


__all__ = ["Adam", "ArrSkel", "Bwd", "ConfigError", "Flat", "Fwd", "Ids", "IdsSpec", "LABEL_MAX", "Layer", "Loaded",
           "Loss", "LossOut", "Mat", "MatSpec", "MatStep", "Momentum", "NoMom", "OneMom", "Opt", "OptState", "Packed",
           "PairSpec", "PLeaf", "PLeafV", "PNew", "PNode", "PTree", "SGD", "ShapeError", "Spec", "Step", "TwoMom",
           "check_dims", "check_eps", "check_prob", "check_seed", "check_value", "empty_flat", "layer_name",
           "mat_dump", "mat_param", "mat_restore", "mat_store", "no_step", "pair_param", "param_diff", "param_free",
           "skeleton", "state_diff", "state_join", "state_map", "state_split", "structure_diff"]
