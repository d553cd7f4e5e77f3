"""The optimizers' element loops (main.bend lines 238-295), in place over flat float32 arrays, element by element
in index order; each expression keeps the seed's order of operations and rounds each operation once.

The plain versions are the same expressions in numpy float32 (one ufunc per operation, so one rounding each); each
kernel equals its twin bit for bit (tests/test_layers_optim_kernels.py)."""

from __future__ import annotations

import math

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import sized

F = npt.NDArray[np.float32]
F32 = np.float32
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def sgd(w: F, g: F, lr: np.float32) -> None:
    """w <- w + (-lr) g, as PyTorch's p.add_(g, alpha=-lr); g <- 0 (sgd_l, main.bend line 239)."""
    nl = -lr
    for t in numba.prange(w.size):
        w[t] = w[t] + nl * g[t]
        g[t] = _ZERO


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def momentum(w: F, g: F, m: F, lr: np.float32, mu: np.float32) -> None:
    """buf <- buf*mu + g; w <- w + (-lr)*buf; g <- 0 (mom_l, main.bend line 247)."""
    nl = -lr
    for t in numba.prange(w.size):
        nb = m[t] * mu + g[t]
        w[t] = w[t] + nl * nb
        m[t] = nb
        g[t] = _ZERO


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def adam(w: F, g: F, m: F, v: F, lr: np.float32, c1: np.float32, b2: np.float32, c2: np.float32,
         eps: np.float32, wd: np.float32, dec: bool, step: np.float32, bc2: np.float32) -> None:
    """The Adam family in _single_tensor_adam's order (adam_l, main.bend lines 256-295):
    g' = g + w*wd (Adam) or g (AdamW); m = m + c1*(g' - m); v = v*b2 + (c2*g')*g';
    w' = w*(1 - lr*wd) (AdamW) or w (Adam); w = w' + ((-step)*m) / (sqrt(v)/bc2 + eps); g <- 0."""
    ns = -step
    decay = _ONE - lr * wd
    for t in numba.prange(w.size):
        x = w[t]
        y = g[t]
        gg = y if dec else y + x * wd
        nm = m[t] + c1 * (gg - m[t])
        nv = v[t] * b2 + (c2 * gg) * gg
        xw = x * decay if dec else x
        w[t] = xw + (ns * nm) / (math.sqrt(nv) / bc2 + eps)
        m[t] = nm
        v[t] = nv
        g[t] = _ZERO


def sgd_plain(w: F, g: F, lr: np.float32) -> None:
    w[:] = w + (-F32(lr)) * g
    g[:] = 0


def momentum_plain(w: F, g: F, m: F, lr: np.float32, mu: np.float32) -> None:
    nb = m * F32(mu) + g
    w[:] = w + (-F32(lr)) * nb
    m[:] = nb
    g[:] = 0


def adam_plain(w: F, g: F, m: F, v: F, lr: np.float32, c1: np.float32, b2: np.float32, c2: np.float32,
               eps: np.float32, wd: np.float32, dec: bool, step: np.float32, bc2: np.float32) -> None:
    lr, c1, b2, c2, eps, wd, step, bc2 = (F32(a) for a in (lr, c1, b2, c2, eps, wd, step, bc2))
    gg = g.copy() if dec else g + w * wd
    nm = m + c1 * (gg - m)
    nv = v * b2 + (c2 * gg) * gg
    xw = w * F32(F32(1.0) - F32(lr * wd)) if dec else w.copy()
    w[:] = xw + ((-step) * nm) / (np.sqrt(nv) / bc2 + eps)
    m[:] = nm
    v[:] = nv
    g[:] = 0
