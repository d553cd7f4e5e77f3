"""Losses (main.bend lines 2745-2956): CrossEntropy and NLL of an n x c matrix against one label per row, MSE
against an n x c target; each the mean over the batch, in float32, with the seed's order (the loops are in
`impl.kernels.losses`). A loss is a `protocol.Loss` record: calling it checks y's shape, then the targets.

Labels: a 1-D integer array (or sequence) of length n, every label in [0, 2^32), else a ValueError naming the loss and
the position of the bad label. n and c are at least 1 (a mean over no rows has no value). A label >= c gets the seed's behaviour: CrossEntropy picks probability 0 clamped at 1e-12
(the row adds -log(1e-12) to the loss, its gradient is softmax / n with no class hit; ce_bad, line 2859); NLL picks
0.0 and leaves the row's gradient zero (nll_one, line 2931). NaN and Inf propagate as the arithmetic makes them.

The loss never writes into y or the targets: its gradient is a new array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels import losses as K
from bendtorch.impl.protocol import Loss, LossOut, check_dims, layer_name
from bendtorch.impl.specs import Ids, Mat, MatSpec, ShapeError, check_value

F32 = np.float32
LABEL_LIMIT = 2 ** 32  # the seed's gradient reads a label as a U32 (U32.from_nat, main.bend line 2875)


def check_labels(name: str, labels: object, n: int, c: int) -> Ids:
    """The labels as int64, each label >= c replaced by c (the kernels' "past the last class"), after checking
    they are a 1-D integer array of length n with every label in [0, 2^32) (past 2^32 the seed's loss and gradient
    disagree, main.bend lines 2840-2880; such a label is refused, docs/DESIGN.md)."""
    a: npt.NDArray[Any] = np.asarray(labels)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{name}: labels must be a 1-D array of {n} integers, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name}: labels must be integers, got {a.dtype}")
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    neg = np.nonzero(a < 0)[0]
    if neg.size:
        i = int(neg[0])
        raise ValueError(f"{name}: label {int(a[i])} at position {i} is negative (labels must be >= 0)")
    big = np.nonzero(a >= LABEL_LIMIT)[0]
    if big.size:
        i = int(big[0])
        raise ValueError(f"{name}: label {int(a[i])} at position {i} is >= 2^32 "
                         "(the seed's loss and gradient disagree past 2^32; docs/DESIGN.md)")
    return np.where(a < c, a, c).astype(np.int64)


def _dims(name: str, n: int, c: int) -> None:
    """n >= 1 rows (the loss is a mean over the rows: over none it is 0 / 0) of c >= 1 numbers."""
    check_dims(name, 1, n=n, c=c)


def CrossEntropy(n: int, c: int) -> Loss[Mat, Ids]:
    """Cross-entropy of the logits z (n x c) against one label per row, mean over the rows (PyTorch's
    F.cross_entropy, reduction="mean"; main.bend line 2894): per row, softmax with the exponentials summed by
    tree_sum, the loss term -((z[y] - m) - log(s)); gradient (softmax - onehot) / n."""
    _dims("CrossEntropy", n, c)
    name = layer_name("CrossEntropy", n, c)

    def f(z: Mat, labels: Ids) -> LossOut[Mat]:
        lab = check_labels(name, labels, n, c)
        dz = np.empty((n, c), dtype=F32)
        loss = K.ce_into(np.ascontiguousarray(z), lab, dz)
        return LossOut(F32(loss), dz)

    return Loss(name, MatSpec(n, c), F32, f)


def MSE(n: int, c: int) -> Loss[Mat, Mat]:
    """Mean squared error over every number (PyTorch's F.mse_loss; main.bend line 2918): d = y - t,
    loss = tree_sum(d*d) / (n*c), gradient d * (2 / (n*c)) with 2 / (n*c) rounded once to float32."""
    _dims("MSE", n, c)
    name = layer_name("MSE", n, c)
    spec = MatSpec(n, c)

    def f(y: Mat, t: Mat) -> LossOut[Mat]:
        e = check_value(t, spec, F32)
        if e is not None:
            raise ShapeError(f"{name}: target t: {e}")
        dy = np.empty((n, c), dtype=F32)
        loss = K.mse_into(np.ascontiguousarray(y).reshape(-1), np.ascontiguousarray(t).reshape(-1),
                          dy.reshape(-1))
        return LossOut(F32(loss), dy)

    return Loss(name, spec, F32, f)


def NLL(n: int, c: int) -> Loss[Mat, Ids]:
    """Negative log-likelihood of log-probabilities (n x c), mean over the rows (PyTorch's F.nll_loss; main.bend
    line 2953): loss = -(sum of lp[i, y_i] in row order from +0.0) / n; gradient -1/n at each label."""
    _dims("NLL", n, c)
    name = layer_name("NLL", n, c)

    def f(lp: Mat, labels: Ids) -> LossOut[Mat]:
        lab = check_labels(name, labels, n, c)
        g = np.zeros((n, c), dtype=F32)
        loss = K.nll_into(np.ascontiguousarray(lp), lab, g)
        return LossOut(F32(loss), g)

    return Loss(name, MatSpec(n, c), F32, f)
