"""Shapes as values (main.bend line 17: the seed's types carry them, Python's cannot): the specs of a layer's input
and output (`MatSpec(r, c)`, `IdsSpec(n)`, `PairSpec(a, b)`) and the checks of a value against them, the skeleton of a
parameter structure (its arrays' shapes and dtypes) and the check of parameters and gradients against it. Each check
is O(size of the structure), never O(numbers), and returns what is wrong (None if nothing): the layer protocol
(impl/protocol.py) raises `ShapeError` with it, naming the layer and the call.

Dtype-generic: impl's values are float32, oracle's its own wider type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

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
