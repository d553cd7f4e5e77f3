"""The float64 oracle: the seed's layers, losses, combinators, optimizers and training step, from their mathematical
definitions, in float64 (mpmath where float64 is not enough; see oracle/mp.py). Same names and constructor arguments
as impl, so a model is built in either library with one word changed:

    import bendtorch.oracle as L          # or: import bendtorch.impl as L
    m = L.Seq(L.Linear(8, 4, 16), L.Seq(L.GELUErf(8, 16), L.Linear(8, 16, 3)))

Every value is float64 (Layer.dtype is np.float64); oracle.from_impl converts impl's float32 values exactly.
It imports only impl's protocol (impl.protocol, impl.specs, impl.optstate), impl.combinators and impl.optim's
configuration classes from impl.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from bendtorch.impl import combinators as _C
from bendtorch.impl.combinators import Both, Fork, Residual, Seq, Tie, tree_add
from bendtorch.impl.optim import CAdam, CAdamW, CAdamWBF16, CMomentum, CSGD, adam, adamw
from bendtorch.impl.protocol import Layer
from bendtorch.impl.specs import PairSpec, Spec
from bendtorch.oracle.convert import from_impl, to_f64_params
from bendtorch.oracle import funcs as _funcs
from bendtorch.oracle.funcs import *  # noqa: F403  (every activation of the op table, by its name)
from bendtorch.oracle.layers import (DropP, Dropout, Embedding, LN, LayerNorm, Lin, Linear, LinearFirst, LinearNB,
                                     LogSoftmax, RMSNorm, Softmax)
from bendtorch.oracle.losses import CrossEntropy, MSE, NLL
from bendtorch.oracle.optim import cfg_ok, opt_at, opt_at_step, opt_mat, q_at, state_new
from bendtorch.oracle.train import Train, train_new, train_step
from bendtorch.oracle.attention import Attention
from bendtorch.oracle.rope import RoPE

DTYPE = np.float64

X = TypeVar("X")
F64 = npt.NDArray[np.float64]


def Id(x_spec: Spec, dtype: type[np.floating[Any]] = np.float64) -> Layer[None, X, X, None]:
    """The identity (main.bend line 1946), float64 by default."""
    return _C.Id(x_spec, dtype)


def Add2(n: int, c: int, dtype: type[np.floating[Any]] = np.float64) -> Layer[None, tuple[F64, F64], F64, None]:
    """y = a + b (main.bend line 2083), float64 by default (typed on float64 matrices, so mypy can place it)."""
    return _C.Add2(n, c, dtype)


def Mul2(n: int, c: int,
         dtype: type[np.floating[Any]] = np.float64) -> Layer[None, tuple[F64, F64], F64, tuple[F64, F64]]:
    """y = a * b (main.bend lines 2086-2113), float64 by default."""
    return _C.Mul2(n, c, dtype)


__all__ = [
    "DTYPE", "Layer", "PairSpec",
    "Lin", "LN", "DropP",
    "Linear", "LinearFirst", "LinearNB", "Dropout", "Attention", "RoPE",
    "Softmax", "LogSoftmax", "RMSNorm", "LayerNorm", "Embedding",
    "CrossEntropy", "MSE", "NLL",
    "Id", "Seq", "Fork", "Both", "Tie", "Add2", "Mul2", "Residual", "tree_add",
    "CSGD", "CMomentum", "CAdam", "CAdamW", "CAdamWBF16", "adam", "adamw",
    "cfg_ok", "opt_at", "opt_at_step", "opt_mat", "q_at", "state_new",
    "Train", "train_new", "train_step",
    "from_impl", "to_f64_params",
]
__all__ += _funcs.__all__
