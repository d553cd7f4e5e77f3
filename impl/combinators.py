"""Combinators (main.bend lines 763-881, 1942-2118): Id, Seq, Fork, Both, Tie, Add2, Mul2, Residual.

They only move values between layers; the one number each adds is an element-wise sum (Fork's two input gradients,
Add2) or product (Mul2), which numpy rounds once per element in the arrays' own dtype. So they are shared by impl
(float32) and oracle (its wider type): a combinator composes layers of one dtype and refuses to mix the two.

Parameters, gradients, saved values and optimizer state of a pair of layers are Python pairs (the seed's Two{a, b}).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from bendtorch.impl.kernels.index import pair_span, source
from bendtorch.impl.optstate import Opt, OptState, state_join, state_split
from bendtorch.impl.protocol import Bwd, Fwd, Layer, Loaded, Step, layer_name, param_free
from bendtorch.impl.specs import Flat, MatSpec, PairSpec, ShapeError, Spec, structure_diff

P1 = TypeVar("P1")
P2 = TypeVar("P2")
X = TypeVar("X")
X1 = TypeVar("X1")
X2 = TypeVar("X2")
Y = TypeVar("Y")
Y1 = TypeVar("Y1")
Y2 = TypeVar("Y2")
Z = TypeVar("Z")
W = TypeVar("W")
S = TypeVar("S")
S1 = TypeVar("S1")
S2 = TypeVar("S2")
S3 = TypeVar("S3")
P = TypeVar("P")
Q = TypeVar("Q")
M = TypeVar("M", bound=np.ndarray[Any, Any])


def _same_dtype(what: str, *ls: Layer[Any, Any, Any, Any]) -> type[np.floating[Any]]:
    d = ls[0].dtype
    for lay in ls[1:]:
        if lay.dtype != d:
            raise ShapeError(f"{what}: {ls[0].label} works in {np.dtype(d).name} but {lay.label} in "
                             f"{np.dtype(lay.dtype).name}; impl and oracle layers do not mix")
    return d


def _meet(what: str, a: Layer[Any, Any, Any, Any], a_side: str, sa: Spec,
          b: Layer[Any, Any, Any, Any], b_side: str, sb: Spec) -> None:
    if sa != sb:
        raise ShapeError(f"{what}: {a.label}'s {a_side} is {sa} but {b.label}'s {b_side} is {sb}")


def tree_add(a: X, b: X) -> X:
    """Element-wise a + b over matching structures (Fork's `add`, main.bend line 1979). The gradient of ids is the
    empty list, and stays so."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if np.issubdtype(a.dtype, np.integer):
            return a
        r: Any = a + b
        return r  # type: ignore[no-any-return]
    if isinstance(a, tuple) and isinstance(b, tuple):
        r2: Any = (tree_add(a[0], b[0]), tree_add(a[1], b[1]))
        return r2  # type: ignore[no-any-return]
    raise ShapeError(f"Fork: cannot add gradients of types {type(a).__name__} and {type(b).__name__}")


# A pair's flat numbers: the first layer's at [a, b), the second's at [b, end), from pair_span (impl.kernels.index,
# proved by laws/proofs.py to tile [off, off + count) without overlap). Its Python source runs here, on Python's
# unbounded integers; a count is a U32 in the seed (main.bend line 838), so a pair of more than COUNT_MAX numbers is
# refused where it is built, and the offsets never wrap.
COUNT_MAX = 2**32 - 1
_pair_span = source(pair_span)


def _pair_count(la: Layer[Any, Any, Any, Any], lb: Layer[Any, Any, Any, Any]) -> int:
    _, _, end = _pair_span(0, la.count(), lb.count())
    if end > COUNT_MAX:
        raise ShapeError(f"{la.label} and {lb.label} hold {la.count()} + {lb.count()} numbers, more than a layer's "
                         f"count can (at most 2^32 - 1, the seed's U32, main.bend line 838)")
    return end


def _parts_end(what: str, la: Layer[Any, Any, Any, Any], lb: Layer[Any, Any, Any, Any], got: tuple[int, int],
               want: tuple[int, int]) -> None:
    if got != want:
        raise ShapeError(f"{what}: {la.label} and {lb.label} ended at offsets {got}, their counts say {want}")


def _pair_dump(la: Layer[P1, Any, Any, Any], lb: Layer[P2, Any, Any, Any],
               dtype: type[np.floating[Any]]) -> Callable[[tuple[P1, P2]], Flat]:
    """The first layer's numbers, then the second's (pair_dump, main.bend line 812)."""
    _pair_count(la, lb)

    def dump(p: tuple[P1, P2]) -> Flat:
        a, b, end = _pair_span(0, la.count(), lb.count())
        da, db = la.dump(p[0]), lb.dump(p[1])
        _parts_end("dump", la, lb, (a + da.size, b + db.size), (b, end))
        out = np.empty(end, dtype=dtype)
        out[a:b] = da
        out[b:end] = db
        return out
    return dump


def _pair_load(la: Layer[P1, Any, Any, Any],
               lb: Layer[P2, Any, Any, Any]) -> Callable[[tuple[P1, P2], Flat, int], Loaded[tuple[P1, P2]]]:
    def load(p: tuple[P1, P2], xs: Flat, off: int) -> Loaded[tuple[P1, P2]]:
        a, b, end = _pair_span(off, la.count(), lb.count())
        ra = la.load(p[0], xs, a)
        rb = lb.load(p[1], xs, b)
        _parts_end("load", la, lb, (ra.off, rb.off), (b, end))
        return Loaded((ra.p, rb.p), end)
    return load


def _pair_store(la: Layer[P1, Any, Any, Any],
                lb: Layer[P2, Any, Any, Any]) -> Callable[[tuple[P1, P2], Flat, int], int]:
    def store(p: tuple[P1, P2], xs: Flat, off: int) -> int:
        a, b, end = _pair_span(off, la.count(), lb.count())
        _parts_end("store", la, lb, (la.store(p[0], xs, a), lb.store(p[1], xs, b)), (b, end))
        return end
    return store


def _pair_step(la: Layer[P1, Any, Any, Any],
               lb: Layer[P2, Any, Any, Any]) -> Callable[[Opt, tuple[P1, P2], tuple[P1, P2], OptState[tuple[P1, P2]]],
                                                          Step[tuple[P1, P2]]]:
    """Split the state along the pair, step the first part then the second, join (pair_step, line 1950)."""
    def step(op: Opt, p: tuple[P1, P2], g: tuple[P1, P2], st: OptState[tuple[P1, P2]]) -> Step[tuple[P1, P2]]:
        s1, s2 = state_split(st)
        r1 = la.step(op, p[0], g[0], s1)
        r2 = lb.step(op, p[1], g[1], s2)
        return Step((r1.p, r2.p), (r1.g, r2.g), state_join(r1.st, r2.st))
    return step


def Id(x_spec: Spec, dtype: type[np.floating[Any]] = np.float32) -> Layer[None, X, X, None]:
    """The identity: y = x, dx = dy (main.bend line 1946). Seq's unit."""

    def fwd(p: None, x: X) -> Fwd[None, X, None]:
        return Fwd(p, x, None)

    def bwd(p: None, s: None, dy: X, g: None) -> Bwd[None, X]:
        return Bwd(p, dy, g)

    return param_free(f"Id({x_spec})", x_spec, x_spec, dtype, fwd, bwd)


def Seq(la: Layer[P1, X, Y, S1], lb: Layer[P2, Y, Z, S2]) -> Layer[tuple[P1, P2], X, Z, tuple[S1, S2]]:
    """la then lb (main.bend line 837). Backward runs lb, then la on lb's dx."""
    dtype = _same_dtype("Seq", la, lb)
    _meet("Seq", la, "output", la.y_spec, lb, "input", lb.x_spec)

    def fwd(p: tuple[P1, P2], x: X) -> Fwd[tuple[P1, P2], Z, tuple[S1, S2]]:
        r1 = la.fwd(p[0], x)
        r2 = lb.fwd(p[1], r1.y)
        return Fwd((r1.p, r2.p), r2.y, (r1.s, r2.s))

    def bwd(p: tuple[P1, P2], s: tuple[S1, S2], dz: Z, g: tuple[P1, P2]) -> Bwd[tuple[P1, P2], X]:
        r2 = lb.bwd(p[1], s[1], dz, g[1])
        r1 = la.bwd(p[0], s[0], r2.dx, g[0])
        return Bwd((r1.p, r2.p), r1.dx, (r1.g, r2.g))

    return Layer(name=f"Seq({la.name}, {lb.name})", x_spec=la.x_spec, y_spec=lb.y_spec, dtype=dtype, f_fwd=fwd,
                 f_bwd=bwd, f_step=_pair_step(la, lb), f_zeros=lambda: (la.zeros(), lb.zeros()),
                 f_dump=_pair_dump(la, lb, dtype), f_load=_pair_load(la, lb), f_store=_pair_store(la, lb),
                 n_count=la.count() + lb.count(), children=(la, lb))


def Fork(la: Layer[P1, X, Y1, S1], lb: Layer[P2, X, Y2, S2],
         add: Callable[[X, X], X] = tree_add) -> Layer[tuple[P1, P2], X, tuple[Y1, Y2], tuple[S1, S2]]:
    """x goes to both layers; the two input gradients are summed, dx = dx1 + dx2 (main.bend line 1996). The seed
    copies x (`dup`); here fwd never writes into its input, so both layers read the same array. Backward runs lb
    first, then la (fork_bwd, line 1986)."""
    dtype = _same_dtype("Fork", la, lb)
    _meet("Fork", la, "input", la.x_spec, lb, "input", lb.x_spec)

    def fwd(p: tuple[P1, P2], x: X) -> Fwd[tuple[P1, P2], tuple[Y1, Y2], tuple[S1, S2]]:
        r1 = la.fwd(p[0], x)
        r2 = lb.fwd(p[1], x)
        return Fwd((r1.p, r2.p), (r1.y, r2.y), (r1.s, r2.s))

    def bwd(p: tuple[P1, P2], s: tuple[S1, S2], dy: tuple[Y1, Y2], g: tuple[P1, P2]) -> Bwd[tuple[P1, P2], X]:
        r2 = lb.bwd(p[1], s[1], dy[1], g[1])
        r1 = la.bwd(p[0], s[0], dy[0], g[0])
        return Bwd((r1.p, r2.p), add(r1.dx, r2.dx), (r1.g, r2.g))

    return Layer(name=f"Fork({la.name}, {lb.name})", x_spec=la.x_spec, y_spec=PairSpec(la.y_spec, lb.y_spec),
                 dtype=dtype, f_fwd=fwd, f_bwd=bwd, f_step=_pair_step(la, lb),
                 f_zeros=lambda: (la.zeros(), lb.zeros()), f_dump=_pair_dump(la, lb, dtype),
                 f_load=_pair_load(la, lb), f_store=_pair_store(la, lb), n_count=la.count() + lb.count(),
                 children=(la, lb))


def Both(la: Layer[P1, X1, Y1, S1],
         lb: Layer[P2, X2, Y2, S2]) -> Layer[tuple[P1, P2], tuple[X1, X2], tuple[Y1, Y2], tuple[S1, S2]]:
    """la on the first of a pair, lb on the second (main.bend line 2021). Backward runs lb first, then la."""
    dtype = _same_dtype("Both", la, lb)

    def fwd(p: tuple[P1, P2], x: tuple[X1, X2]) -> Fwd[tuple[P1, P2], tuple[Y1, Y2], tuple[S1, S2]]:
        r1 = la.fwd(p[0], x[0])
        r2 = lb.fwd(p[1], x[1])
        return Fwd((r1.p, r2.p), (r1.y, r2.y), (r1.s, r2.s))

    def bwd(p: tuple[P1, P2], s: tuple[S1, S2], dy: tuple[Y1, Y2],
            g: tuple[P1, P2]) -> Bwd[tuple[P1, P2], tuple[X1, X2]]:
        r2 = lb.bwd(p[1], s[1], dy[1], g[1])
        r1 = la.bwd(p[0], s[0], dy[0], g[0])
        return Bwd((r1.p, r2.p), (r1.dx, r2.dx), (r1.g, r2.g))

    return Layer(name=f"Both({la.name}, {lb.name})", x_spec=PairSpec(la.x_spec, lb.x_spec),
                 y_spec=PairSpec(la.y_spec, lb.y_spec), dtype=dtype, f_fwd=fwd, f_bwd=bwd,
                 f_step=_pair_step(la, lb), f_zeros=lambda: (la.zeros(), lb.zeros()),
                 f_dump=_pair_dump(la, lb, dtype), f_load=_pair_load(la, lb), f_store=_pair_store(la, lb),
                 n_count=la.count() + lb.count(), children=(la, lb))


def Tie(la: Layer[P, X, Y, S1], lb: Layer[Q, Y, Z, S2],
        lc: Layer[P, Z, W, S3]) -> Layer[tuple[P, Q], X, W, tuple[S1, S2, S3]]:
    """first, mid, last, where first and last share one parameter (tied embeddings, main.bend lines 2024-2074).
    Forward runs the three in order with the same P for first and last; backward runs last, mid, first, both adding
    into the same gradient, as PyTorch does for a tensor used twice. The shared parameter steps once, through first's
    step; last's step is never called."""
    dtype = _same_dtype("Tie", la, lb, lc)
    _meet("Tie", la, "output", la.y_spec, lb, "input", lb.x_spec)
    _meet("Tie", lb, "output", lb.y_spec, lc, "input", lc.x_spec)
    e = structure_diff(lc.zeros(), la.zeros())
    if e is not None:
        raise ShapeError(f"Tie: {la.label} and {lc.label} must share one parameter structure: {e}")

    def fwd(pq: tuple[P, Q], x: X) -> Fwd[tuple[P, Q], W, tuple[S1, S2, S3]]:
        r1 = la.fwd(pq[0], x)
        r2 = lb.fwd(pq[1], r1.y)
        r3 = lc.fwd(r1.p, r2.y)
        return Fwd((r3.p, r2.p), r3.y, (r1.s, r2.s, r3.s))

    def bwd(pq: tuple[P, Q], s: tuple[S1, S2, S3], dw: W, g: tuple[P, Q]) -> Bwd[tuple[P, Q], X]:
        r3 = lc.bwd(pq[0], s[2], dw, g[0])
        r2 = lb.bwd(pq[1], s[1], r3.dx, g[1])
        r1 = la.bwd(r3.p, s[0], r2.dx, r3.g)
        return Bwd((r1.p, r2.p), r1.dx, (r1.g, r2.g))

    return Layer(name=f"Tie({la.name}, {lb.name}, {lc.name})", x_spec=la.x_spec, y_spec=lc.y_spec, dtype=dtype,
                 f_fwd=fwd, f_bwd=bwd, f_step=_pair_step(la, lb), f_zeros=lambda: (la.zeros(), lb.zeros()),
                 f_dump=_pair_dump(la, lb, dtype), f_load=_pair_load(la, lb), f_store=_pair_store(la, lb),
                 n_count=la.count() + lb.count(), children=(la, lb, lc))


def Add2(n: int, c: int, dtype: type[np.floating[Any]] = np.float32) -> Layer[None, tuple[M, M], M, None]:
    """y = a + b element-wise; dx = (dy, a copy of dy) (main.bend line 2083)."""
    spec = MatSpec(n, c)

    def fwd(p: None, x: tuple[M, M]) -> Fwd[None, M, None]:
        y: Any = x[0] + x[1]
        return Fwd(None, y, None)

    def bwd(p: None, s: None, dy: M, g: None) -> Bwd[None, tuple[M, M]]:
        d2: Any = dy.copy()
        return Bwd(None, (dy, d2), None)

    return param_free(layer_name("Add2", n, c), PairSpec(spec, spec), spec, dtype, fwd, bwd)


def Mul2(n: int, c: int, dtype: type[np.floating[Any]] = np.float32) -> Layer[None, tuple[M, M], M, tuple[M, M]]:
    """y = a * b element-wise; saves (a, b); d(a*b) = (dy*b, dy*a) (main.bend lines 2086-2113)."""
    spec = MatSpec(n, c)

    def fwd(p: None, x: tuple[M, M]) -> Fwd[None, M, tuple[M, M]]:
        y: Any = x[0] * x[1]
        return Fwd(None, y, x)

    def bwd(p: None, s: tuple[M, M], dy: M, g: None) -> Bwd[None, tuple[M, M]]:
        da: Any = dy * s[1]
        db: Any = dy * s[0]
        return Bwd(None, (da, db), None)

    return param_free(layer_name("Mul2", n, c), PairSpec(spec, spec), spec, dtype, fwd, bwd)


def Residual(f: Layer[P, M, M, S]) -> Layer[tuple[tuple[None, P], None], M, M, tuple[tuple[None, S], None]]:
    """y = x + f(x), for any layer f from n x c to n x c: Seq(Fork(Id, f), Add2) (main.bend line 2117)."""
    if not isinstance(f.x_spec, MatSpec) or f.x_spec != f.y_spec:
        raise ShapeError(f"Residual: {f.label} must map a matrix to one of the same shape, it maps "
                         f"{f.x_spec} to {f.y_spec}")
    n, c = f.x_spec.r, f.x_spec.c
    ident: Layer[None, M, M, None] = Id(f.x_spec, f.dtype)
    fork: Layer[tuple[None, P], M, tuple[M, M], tuple[None, S]] = Fork(ident, f)
    add: Layer[None, tuple[M, M], M, None] = Add2(n, c, f.dtype)
    return Seq(fork, add)
