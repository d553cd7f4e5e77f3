"""impl: BendTorch in float32 Python, faithful to the seed's semantics (main.bend).

    import bendtorch.impl as L            # or: import bendtorch.oracle as L, for the oracle's twin
    m = L.Seq(L.Linear(8, 4, 16), L.Seq(L.GELUErf(8, 16), L.Linear(8, 16, 3)))

Layers are records of the seed's eight functions (impl.protocol.Layer); combinators compose them; impl.optim holds the
optimizer configurations; impl.train the training step; impl.checkpoint the seed's checkpoint layout.
"""

from __future__ import annotations

from bendtorch.impl.combinators import Add2, Both, Fork, Id, Mul2, Residual, Seq, Tie, tree_add
from bendtorch.impl.layers import activations as _activations
from bendtorch.impl.layers.activations import *  # noqa: F403  (every activation of the op table, by its name)
from bendtorch.impl.layers.attention import Attention
from bendtorch.impl.layers.dropout import DropP, Dropout
from bendtorch.impl.layers.embedding import Embedding
from bendtorch.impl.layers.linear import Lin, Linear, LinearFirst, LinearNB
from bendtorch.impl.layers.rope import RoPE
from bendtorch.impl.layers.rows import LN, LayerNorm, LogSoftmax, RMSNorm, Softmax
from bendtorch.impl.losses import CrossEntropy, MSE, NLL
from bendtorch.impl.optim import (CAdam, CAdamW, CAdamWBF16, CMomentum, CSGD, adam, adamw, beta_ok, cfg_check, cfg_ok,
                        opt_at, opt_mat, state_new)
from bendtorch.impl.protocol import Bwd, Fwd, Layer, Loss, LossOut, Step
from bendtorch.impl.specs import IdsSpec, MatSpec, PairSpec, ShapeError
from bendtorch.impl.train import Train, train_new, train_step

DTYPE = __import__("numpy").float32

__all__ = [
    "Add2", "Both", "Fork", "Id", "Mul2", "Residual", "Seq", "Tie", "tree_add",
    "Attention", "DropP", "Dropout", "Embedding",
    "Lin", "Linear", "LinearFirst", "LinearNB", "RoPE", "LN", "LayerNorm", "LogSoftmax", "RMSNorm", "Softmax",
    "CrossEntropy", "MSE", "NLL",
    "CAdam", "CAdamW", "CAdamWBF16", "CMomentum", "CSGD", "adam", "adamw", "beta_ok", "cfg_check", "cfg_ok",
    "opt_at", "opt_mat", "state_new",
    "Bwd", "Fwd", "IdsSpec", "Layer", "Loss", "LossOut", "MatSpec", "PairSpec", "ShapeError", "Step",
    "Train", "train_new", "train_step", "DTYPE",
]
__all__ += _activations.__all__
