"""Row-wise layers (main.bend lines 1386-1866): Softmax, LogSoftmax (no parameters, they save a copy of their
output), RMSNorm (parameter: the gain, 1 x d) and LayerNorm (parameter: LN(g, b), each 1 x d), which save a copy of
their input. The loops, and the order of every sum and operation, are in `impl.kernels.rows`.

    Softmax     y = exp(x - max) / sum(exp(x - max))        dx = y * (dy - sum(dy * y))
    LogSoftmax  y = (x - max) - log(sum(exp(x - max)))      dx = dy - exp(y) * sum(dy)
    RMSNorm     y = g * (x * r), r = 1 / sqrt(mean(x^2) + eps)
                dx = ((dy*g) - (x*r) * mean((dy*g) * (x*r))) * r;   dg += sum over rows of dy * (x*r)
    LayerNorm   y = ((x - mu) * r) * g + b, r = 1 / sqrt(var + eps), var biased
                dx = (((dy*g) - mean(dy*g)) - xh * mean((dy*g) * xh)) * r, xh = (x - mu) * r;
                dg += sum over rows of dy * xh;  db += sum over rows of dy

Each row needs at least one number (the seed reads a row's first number for its max or its sum), so c, d >= 1.
The parameters' gradients are summed over the rows from zeros and then added into g in place (Mat.sum2, line 1540).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bendtorch.impl.kernels import rows as K
from bendtorch.impl.optim import opt_mat
from bendtorch.impl.protocol import (Bwd, Fwd, Layer, check_dims, check_eps, layer_name, mat_param, pair_param,
                                     param_free)
from bendtorch.impl.specs import Mat, MatSpec

F32 = np.float32


def _check_dims(name: str, n: int, c: int) -> None:
    check_dims(name, n=n)
    check_dims(name, 1, c=c)


# ---------------------------------------------------------------------------------------------------------------
# Softmax (lines 1390-1442) and LogSoftmax (lines 1444-1522)
# ---------------------------------------------------------------------------------------------------------------

def Softmax(n: int, c: int) -> Layer[None, Mat, Mat, Mat]:
    """Softmax over each row of n x c (main.bend line 1441); saves a copy of its output."""
    _check_dims("Softmax", n, c)

    def fwd(p: None, x: Mat) -> Fwd[None, Mat, Mat]:
        """sm_fwd (line 1404): psm on each row."""
        y = np.empty((n, c), dtype=F32)
        K.softmax_fwd_into(np.ascontiguousarray(x), y)
        return Fwd(None, y, y.copy())

    def bwd(p: None, s: Mat, dy: Mat, g: None) -> Bwd[None, Mat]:
        """sm_bwd (line 1435): dx = y * (dy - sdot(dy, y)) per row."""
        dx = np.empty((n, c), dtype=F32)
        K.softmax_bwd_into(np.ascontiguousarray(s), np.ascontiguousarray(dy), dx)
        return Bwd(None, dx, None)

    spec = MatSpec(n, c)
    return param_free(layer_name("Softmax", n, c), spec, spec, F32, fwd, bwd)


def LogSoftmax(n: int, c: int) -> Layer[None, Mat, Mat, Mat]:
    """log_softmax over each row of n x c, as PyTorch's CPU kernel (main.bend line 1521); saves a copy of its
    output."""
    _check_dims("LogSoftmax", n, c)

    def fwd(p: None, x: Mat) -> Fwd[None, Mat, Mat]:
        """lsm_fwd (line 1482): y = (x - m) - log(sum exp(x - m)) per row."""
        y = np.empty((n, c), dtype=F32)
        K.logsoftmax_fwd_into(np.ascontiguousarray(x), y)
        return Fwd(None, y, y.copy())

    def bwd(p: None, s: Mat, dy: Mat, g: None) -> Bwd[None, Mat]:
        """lsm_bwd (line 1516): dx = dy - exp(y) * sum(dy) per row."""
        dx = np.empty((n, c), dtype=F32)
        K.logsoftmax_bwd_into(np.ascontiguousarray(s), np.ascontiguousarray(dy), dx)
        return Bwd(None, dx, None)

    spec = MatSpec(n, c)
    return param_free(layer_name("LogSoftmax", n, c), spec, spec, F32, fwd, bwd)


# ---------------------------------------------------------------------------------------------------------------
# RMSNorm (lines 1524-1680)
# ---------------------------------------------------------------------------------------------------------------

def RMSNorm(n: int, d: int, eps: float = 1e-5) -> Layer[Mat, Mat, Mat, Mat]:
    """RMSNorm over rows of d numbers with a learned gain g (1 x d) (Llama's norm; main.bend line 1679); saves a
    copy of its input. eps is taken as a float32. zeros() is the zero gain: initialize g (e.g. to ones) yourself."""
    _check_dims("RMSNorm", n, d)
    e32 = check_eps("RMSNorm", eps)

    def fwd(p: Mat, x: Mat) -> Fwd[Mat, Mat, Mat]:
        """rms_fwd (line 1607)."""
        xc = np.array(x, dtype=F32, copy=True, order="C")
        y = np.empty((n, d), dtype=F32)
        K.rms_fwd_into(xc, np.ascontiguousarray(p), e32, y)
        return Fwd(p, y, xc)

    def bwd(p: Mat, s: Mat, dy: Mat, g: Mat) -> Bwd[Mat, Mat]:
        """rms_bwd (line 1673): dx per row; dg over the rows, added into g in place."""
        dx = np.empty((n, d), dtype=F32)
        K.rms_bwd_into(np.ascontiguousarray(s), np.ascontiguousarray(p), np.ascontiguousarray(dy), e32, dx, g)
        return Bwd(p, dx, g)

    return mat_param(layer_name("RMSNorm", n, d, eps=e32), MatSpec(n, d), MatSpec(n, d), F32, 1, d, fwd, bwd,
                     opt_mat)


# ---------------------------------------------------------------------------------------------------------------
# LayerNorm (lines 1682-1866)
# ---------------------------------------------------------------------------------------------------------------

class LN(NamedTuple):
    """LayerNorm's parameters (main.bend line 1684): the gain g and the bias b, each 1 x d."""

    g: Mat
    b: Mat


def LayerNorm(n: int, d: int, eps: float = 1e-5) -> Layer[LN, Mat, Mat, Mat]:
    """LayerNorm over rows of d numbers with gain and bias (main.bend line 1865); saves a copy of its input. eps is
    taken as a float32. zeros() is LN(0, 0): initialize g (e.g. to ones) yourself."""
    _check_dims("LayerNorm", n, d)
    e32 = check_eps("LayerNorm", eps)

    def fwd(p: LN, x: Mat) -> Fwd[LN, Mat, Mat]:
        """ln_fwd (line 1745)."""
        xc = np.array(x, dtype=F32, copy=True, order="C")
        y = np.empty((n, d), dtype=F32)
        K.ln_fwd_into(xc, np.ascontiguousarray(p.g), np.ascontiguousarray(p.b), e32, y)
        return Fwd(p, y, xc)

    def bwd(p: LN, s: Mat, dy: Mat, g: LN) -> Bwd[LN, Mat]:
        """ln_bwd (line 1807): dx per row; dg and db over the rows, added into g.g and g.b in place."""
        dx = np.empty((n, d), dtype=F32)
        K.ln_bwd_into(np.ascontiguousarray(s), np.ascontiguousarray(p.g), np.ascontiguousarray(dy), e32, dx,
                      g.g, g.b)
        return Bwd(p, dx, g)

    return pair_param(layer_name("LayerNorm", n, d, eps=e32), MatSpec(n, d), MatSpec(n, d), F32, LN,
                      ((1, d), (1, d)), fwd, bwd, opt_mat)
