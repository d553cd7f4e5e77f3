"""Shapes as values (main.bend line 17: the seed's types carry them, Python's cannot): the specs of a layer's input
and output (`MatSpec(r, c)`, `IdsSpec(n)`, `PairSpec(a, b)`) and the checks of a value against them, the skeleton of a
parameter structure (its arrays' shapes and dtypes) and the check of parameters and gradients against it. Each check
is O(size of the structure), never O(numbers), and returns what is wrong (None if nothing): the layer protocol
(impl/protocol.py) raises `ShapeError` with it, naming the layer and the call. Each check has a fast form
(`value_check`, `param_check`): a predicate built once per layer that says only whether a value fits, so a call
pays for the naming walk only when something is wrong.

Dtype-generic: impl's values are float32, oracle's its own wider type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np
import numpy.typing as npt

# A matrix of impl is an r x c float32 array, row by row (bend-ml's Mat<r, c>, main.bend line 17).
Mat = npt.NDArray[np.float32]
# Token ids (the seed's List<Nat>): a 1-D int64 array.
Ids = npt.NDArray[np.int64]
# A flat array of numbers of either library's dtype.
Flat = npt.NDArray[Any]


class ShapeError(ValueError):
    """A value whose structure or shape is not the one a layer declared, or two layers whose shapes do not meet."""


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


# A check's fast form: True exactly when its *_diff / check_value finds nothing wrong. A layer call runs these (each
# node a closure comparing against constants fixed when the layer was built, no message formatted) and works out the
# message only when one fails: the checks of the tiny Llama's training step took 0.37 of 1.7 ms as *_diff walks
# (AMD EPYC, family 26, model 2). tests/test_specs_checks.py holds each predicate to its *_diff on broken values.
Check = Callable[[object], bool]


def _yes(v: object) -> bool:
    return True


def value_check(spec: Spec, dtype: type[np.floating[Any]], grad: bool = False) -> Check:
    """The predicate `check_value(v, spec, dtype, grad) is None`, built once for the spec."""
    if isinstance(spec, MatSpec):
        shape, dt = (spec.r, spec.c), np.dtype(dtype)

        def mat(v: object) -> bool:
            return isinstance(v, np.ndarray) and v.shape == shape and v.dtype == dt
        return mat
    if isinstance(spec, IdsSpec):
        want = 0 if grad else spec.n

        def ids(v: object) -> bool:
            return isinstance(v, np.ndarray) and v.shape == (want,) and (
                v.dtype.kind in "iu" or np.issubdtype(v.dtype, np.integer))
        return ids
    first, second = value_check(spec.a, dtype, grad), value_check(spec.b, dtype, grad)

    def pair(v: object) -> bool:
        return isinstance(v, tuple) and len(v) == 2 and first(v[0]) and second(v[1])
    return pair


def structure_diff(a: object, b: object, path: str = "p", depth: int = -1) -> str | None:
    """None if a and b have the same structure (tuple nesting, record types, array shapes and dtypes), else where
    they first differ. Used to check that a gradient g has the parameters' structure. depth >= 0 looks only that
    many tuple levels down (-1: all the way)."""
    e = _structure_diff(a, b, depth)
    return None if e is None else f"{path}{e[0]}: {e[1]}"


def _structure_diff(a: object, b: object, depth: int) -> tuple[str, str] | None:
    # (the path below this level, what is wrong); the path is written only for a difference found (a layer's every
    # backward pass runs this on its gradient)
    if isinstance(b, np.ndarray):
        if not isinstance(a, np.ndarray):
            return "", f"expected an array {b.shape}, got {type(a).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return "", f"expected shape {b.shape} {b.dtype}, got {a.shape} {a.dtype}"
        return None
    if isinstance(b, tuple):
        if type(a) is not type(b) or not isinstance(a, tuple) or len(a) != len(b):
            return "", f"expected {type(b).__name__} of {len(b)}, got {type(a).__name__}"
        if depth == 0:
            return None
        for i in range(len(b)):
            e = _structure_diff(a[i], b[i], depth - 1)
            if e is not None:
                return f"[{i}]{e[0]}", e[1]
        return None
    if b is None:
        return None if a is None else ("", f"expected no parameters, got {type(a).__name__}")
    if type(a) is not type(b):
        return "", f"expected {type(b).__name__}, got {type(a).__name__}"
    return None


def structure_check(skel: object, depth: int = -1) -> Check:
    """A predicate built once for a parameter skeleton, true only where `structure_diff(v, p, depth=depth)` is None
    for every p that `param_check(skel, depth)` accepts (a layer's backward pass holds its gradient to its p, which
    passed that check): the same walk as _structure_diff, each node a closure comparing against constants. A
    counter's node always says no: p's counter may be a Python or a numpy integer, which structure_diff tells apart,
    so the caller asks structure_diff itself there."""
    if isinstance(skel, ArrSkel):
        shape, dt = skel.shape, skel.dtype
        return lambda v: isinstance(v, np.ndarray) and v.shape == shape and v.dtype == dt
    if isinstance(skel, tuple):
        checks = [] if depth == 0 else [structure_check(x, depth - 1) for x in skel]
        return _tuple_check(type(skel), len(skel), list(enumerate(checks)))
    if skel is None:
        return lambda v: v is None
    if isinstance(skel, int) and not isinstance(skel, bool):
        return lambda v: False
    kind_ = type(skel)
    return lambda v: type(v) is kind_


@dataclass(frozen=True)
class ArrSkel:
    """An array of a declared shape and dtype, in a parameter structure's skeleton."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    def __str__(self) -> str:
        return f"an array {self.shape} of {self.dtype}"


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


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def _tuple_check(kind: type[tuple[Any, ...]], n: int, parts: list[tuple[int, Check]]) -> Check:
    """A tuple node's predicate: v of exactly the type `kind` (a tuple type or record) and length n, each part i
    accepted by its check."""
    def tup(v: object) -> bool:
        if type(v) is not kind or len(v) != n:
            return False
        for i, ok in parts:
            if not ok(v[i]):
                return False
        return True
    return tup


def param_check(skel: object, depth: int = -1) -> Check:
    """The predicate `param_diff(v, skel, depth=depth) is None`, built once for the skeleton: a closure per node."""
    if depth == 0 and not isinstance(skel, tuple):
        return _yes
    if isinstance(skel, ArrSkel):
        shape, dt = skel.shape, skel.dtype
        strides = _c_strides(shape, dt.itemsize)

        def arr(v: object) -> bool:
            # C strides are C-contiguous; numpy also calls some other strides so (a dimension of 1 or 0), asked last
            return isinstance(v, np.ndarray) and v.shape == shape and v.dtype == dt and (
                v.strides == strides or v.flags.c_contiguous)
        return arr
    if isinstance(skel, tuple):
        kind, n = type(skel), len(skel)
        # the parts that look at anything (an array at the last level looked at does not)
        checks = [] if depth == 0 else [param_check(x, depth - 1) for x in skel]
        return _tuple_check(kind, n, [(i, ok) for i, ok in enumerate(checks) if ok is not _yes])
    if skel is None:
        return lambda v: v is None
    if isinstance(skel, int) and not isinstance(skel, bool):
        return lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 <= int(v) < 2 ** 32
    kind_ = type(skel)
    return lambda v: type(v) is kind_
