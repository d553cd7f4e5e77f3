"""Linear layers (main.bend lines 598-721, 1920-1940): y = x·Wᵀ + b with W stored o x i (PyTorch's nn.Linear
layout), b 1 x o; the layer saves its input x itself (no copy) for the backward pass.

    forward   y  = x·Wᵀ (+ b)        matmul_nt, then add_row (line 613, 618)
    backward  dX = dY·W              matmul_precise (line 640)
              dW += dYᵀ·X            matmul_tn_acc: the product, then added into g (lines 633-636)
              db += column sums of dY  col_sums_acc (line 628)

Every sum is in impl.kernels.matmul's one order (the blocked tree over the summed dimension). LinearFirst skips dX
(returns zeros, line 708-718); LinearNB has no bias and its parameter is the o x i matrix W (lines 1920-1940).
The parameter record's step, dump, load, store and count are protocol.pair_param's: the state split along (w, b),
each matrix stepped with opt_mat (lin_step, lines 655-666); w then b, row by row (lines 668-698); o (i + 1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bendtorch.impl.kernels.matmul import add_row, col_sums_acc, matmul_nt, matmul_precise, matmul_tn_acc
from bendtorch.impl.optim import opt_mat
from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, mat_param, pair_param
from bendtorch.impl.specs import Mat, MatSpec

F32 = np.float32


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


def Linear(n: int, i: int, o: int) -> Layer[Lin, Mat, Mat, Mat]:
    """A linear layer from i to o features on batches of n rows (main.bend line 704)."""
    check_dims("Linear", n=n, i=i, o=o)
    return pair_param(layer_name("Linear", n, i, o), MatSpec(n, i), MatSpec(n, o), F32, Lin, ((o, i), (1, o)),
                      _lin_fwd, _lin_bwd, opt_mat)


def LinearFirst(n: int, i: int, o: int) -> Layer[Lin, Mat, Mat, Mat]:
    """Linear as the model's first layer (main.bend lines 707-721): its input needs no gradient, so the backward
    pass computes gW and gb only, skips dX = dY·W, and returns zeros as dX."""
    check_dims("LinearFirst", n=n, i=i, o=o)

    def bwd(p: Lin, x: Mat, dy: Mat, g: Lin) -> Bwd[Lin, Mat]:
        matmul_tn_acc(dy, x, g.w)
        col_sums_acc(dy, g.b)
        return Bwd(p, np.zeros((n, i), dtype=F32), g)

    return pair_param(layer_name("LinearFirst", n, i, o), MatSpec(n, i), MatSpec(n, o), F32, Lin, ((o, i), (1, o)),
                      _lin_fwd, bwd, opt_mat)


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
    check_dims("LinearNB", n=n, i=i, o=o)
    return mat_param(layer_name("LinearNB", n, i, o), MatSpec(n, i), MatSpec(n, o), F32, o, i, _lnb_fwd, _lnb_bwd,
                     opt_mat)
