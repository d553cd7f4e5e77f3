"""Linear layers (main.bend lines 598-721, 1920-1940): y = x·Wᵀ + b with W stored o x i (PyTorch's nn.Linear
layout), b 1 x o; the layer saves its input x itself (no copy) for the backward pass.

    forward   y  = x·Wᵀ (+ b)        matmul_nt, then add_row (line 613, 618)
    backward  dX = dY·W              matmul_precise (line 640)
              dW += dYᵀ·X            matmul_tn_acc: the product, then added into g (lines 633-636)
              db += column sums of dY  col_sums_acc (line 628)

Every sum is in impl.kernels.matmul's one order (the blocked tree over the summed dimension). LinearFirst skips dX
(returns zeros, line 708-718); LinearNB has no bias and its parameter is the o x i matrix W (lines 1920-1940).
The step splits the optimizer state along (w, b) and steps each matrix with opt_mat, as lin_step does (lines
655-666); dump / load / store are w then b, row by row (lines 668-698); count is o (i + 1) (line 705).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bendtorch.impl.kernels.matmul import add_row, col_sums_acc, matmul_nt, matmul_precise, matmul_tn_acc
from bendtorch.impl.optim import opt_mat
from bendtorch.impl.protocol import (Bwd, Flat, Fwd, Layer, Loaded, Mat, MatSpec, Opt, OptState, Step, mat_dump, mat_restore,
                           mat_store, state_join, state_map, state_split)


class Lin(NamedTuple):
    """A linear layer's parameters (main.bend line 602): w is o x i, b is 1 x o."""

    w: Mat
    b: Mat


def _lin_fwd(p: Lin, x: Mat) -> Fwd[Lin, Mat, Mat]:
    """y = x·Wᵀ + b (lin_fwd, line 615): the product (matmul_nt), then b added to every row (add_row)."""
    y = add_row(matmul_nt(x, p.w), p.b)
    return Fwd(p, y, x)


def _lin_bwd(p: Lin, x: Mat, dy: Mat, g: Lin) -> Bwd[Lin, Mat]:
    """dX = dY·W; gW += dYᵀ·X; gb += column sums of dY (lin_bwd, line 637), g in place."""
    dx = matmul_precise(dy, p.w)
    matmul_tn_acc(dy, x, g.w)
    col_sums_acc(dy, g.b)
    return Bwd(p, dx, g)


def _lin_step(op: Opt, p: Lin, g: Lin, st: OptState[Lin]) -> Step[Lin]:
    """lin_step (lines 655-666): the state viewed as the pair (w, b), split, each matrix stepped with opt_mat, the
    two states joined and viewed as Lin again."""
    sw, sb = state_split(state_map(st, lambda q: (q.w, q.b)))
    rw = opt_mat(op, p.w, g.w, sw)
    rb = opt_mat(op, p.b, g.b, sb)
    st2: OptState[Lin] = state_map(state_join(rw.st, rb.st), lambda q: Lin(q[0], q[1]))
    return Step(Lin(rw.p, rb.p), Lin(rw.g, rb.g), st2)


def _lin_zeros(i: int, o: int) -> Lin:
    return Lin(np.zeros((o, i), dtype=np.float32), np.zeros((1, o), dtype=np.float32))


def _lin_dump(p: Lin) -> Flat:
    """w's o*i numbers row by row, then b's o (lin_dump, line 673)."""
    return np.concatenate([mat_dump(p.w), mat_dump(p.b)])


def _lin_load(p: Lin, xs: Flat, off: int) -> Loaded[Lin]:
    """w then b overwritten from xs at off (lin_load, line 687)."""
    rw = mat_restore(p.w, xs, off)
    rb = mat_restore(p.b, xs, rw.off)
    return Loaded(Lin(rw.p, rb.p), rb.off)


def _lin_store(p: Lin, xs: Flat, off: int) -> int:
    """w then b copied into xs at off (lin_store, line 696); the next offset."""
    return mat_store(p.b, xs, mat_store(p.w, xs, off))


def Linear(n: int, i: int, o: int) -> Layer[Lin, Mat, Mat, Mat]:
    """A linear layer from i to o features on batches of n rows (main.bend line 704)."""
    return Layer(f"Linear({n}x{i}->{o})", MatSpec(n, i), MatSpec(n, o), np.float32, _lin_fwd, _lin_bwd, _lin_step,
                 lambda: _lin_zeros(i, o), _lin_dump, _lin_load, _lin_store, o * (i + 1))


def LinearFirst(n: int, i: int, o: int) -> Layer[Lin, Mat, Mat, Mat]:
    """Linear as the model's first layer (main.bend lines 707-721): its input needs no gradient, so the backward
    pass computes gW and gb only, skips dX = dY·W, and returns zeros as dX."""

    def bwd(p: Lin, x: Mat, dy: Mat, g: Lin) -> Bwd[Lin, Mat]:
        matmul_tn_acc(dy, x, g.w)
        col_sums_acc(dy, g.b)
        return Bwd(p, np.zeros((n, i), dtype=np.float32), g)

    return Layer(f"LinearFirst({n}x{i}->{o})", MatSpec(n, i), MatSpec(n, o), np.float32, _lin_fwd, bwd, _lin_step,
                 lambda: _lin_zeros(i, o), _lin_dump, _lin_load, _lin_store, o * (i + 1))


# ---- Linear without bias (main.bend lines 1920-1940): P is W, o x i ----


def _lnb_fwd(w: Mat, x: Mat) -> Fwd[Mat, Mat, Mat]:
    """y = x·Wᵀ (LinearNB's forward, line 1940)."""
    return Fwd(w, matmul_nt(x, w), x)


def _lnb_bwd(w: Mat, x: Mat, dy: Mat, g: Mat) -> Bwd[Mat, Mat]:
    """dX = dY·W; g += dYᵀ·X (lnb_b2, line 1934), g in place."""
    dx = matmul_precise(dy, w)
    matmul_tn_acc(dy, x, g)
    return Bwd(w, dx, g)


def LinearNB(n: int, i: int, o: int) -> Layer[Mat, Mat, Mat, Mat]:
    """A linear layer without bias (Llama's projections, main.bend line 1939): P is the o x i matrix W."""
    return Layer(f"LinearNB({n}x{i}->{o})", MatSpec(n, i), MatSpec(n, o), np.float32, _lnb_fwd, _lnb_bwd, opt_mat,
                 lambda: np.zeros((o, i), dtype=np.float32), mat_dump, mat_restore, mat_store, o * i)
