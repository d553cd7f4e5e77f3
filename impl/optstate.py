"""The optimizer's side of the layer protocol: the optimizer state a step reads and writes (main.bend lines 50-100:
no buffer, one or two buffers of the parameters' structure, or a tree of packed BF16 moments that follows the
parameters' pairs), the seed's OptState.map, split and join, the check of a state's buffers against the parameters'
skeleton, and the optimizer with the scalars of the current step (`Opt`: SGD, Momentum, Adam; lines 102-108).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar, Union

import numpy as np
import numpy.typing as npt

from bendtorch.impl.specs import ArrSkel, Check, param_diff

P = TypeVar("P")
A = TypeVar("A")
B = TypeVar("B")


class ConfigError(ValueError):
    """A configuration that the seed rejects (for example an Adam configuration whose c1, c2 disagree with b1, b2)."""


# ---- the state (main.bend lines 50-100) ----


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


# ---- a state's buffers against the parameters' skeleton ----


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


def state_fits(st: object, p_ok: Check) -> bool:
    """True only if `state_diff(st, skel, depth)` finds nothing wrong, for p_ok = param_check(skel, depth): the fast
    form a step runs first. A packed state answers False, so that state_diff walks its tree against the skeleton."""
    if isinstance(st, TwoMom):
        return p_ok(st.m) and p_ok(st.v)
    if isinstance(st, OneMom):
        return p_ok(st.m)
    return not isinstance(st, Packed)


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
