"""Losses (main.bend lines 2745-2956): CrossEntropy and NLL of an n x c matrix against one label per row, MSE
against an n x c target; each the mean over the batch, in float32, with the seed's order (the loops are in
`impl.kernels.losses`). A loss is a `protocol.Loss` record: calling it checks y's shape, then the targets.

Labels: a 1-D integer array (or sequence) of length n, every label >= 0, else a ValueError naming the loss and the
position of the bad label. A label >= c gets the seed's behaviour: CrossEntropy picks probability 0 clamped at 1e-12
(the row adds -log(1e-12) to the loss, its gradient is softmax / n with no class hit; ce_bad, line 2859); NLL picks
0.0 and leaves the row's gradient zero (nll_one, line 2931). NaN and Inf propagate as the arithmetic makes them.

The loss never writes into y or the targets: its gradient is a new array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels import losses as K
from bendtorch.impl.protocol import Ids, Loss, LossOut, Mat, MatSpec, ShapeError, check_value

F32 = np.float32


def check_labels(name: str, labels: object, n: int, c: int) -> Ids:
    """The labels as int64, each label >= c replaced by c (the kernels' "past the last class"), after checking
    they are a 1-D integer array of length n with every label >= 0."""
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
    return np.where(a < c, a, c).astype(np.int64)


def _dims(name: str, n: int, c: int, c_min: int) -> None:
    if n < 0 or c < c_min:
        raise ValueError(f"{name}: needs n >= 0 rows of c >= {c_min} numbers, got n = {n}, c = {c}")


def CrossEntropy(n: int, c: int) -> Loss[Mat, Ids]:
    """Cross-entropy of the logits z (n x c) against one label per row, mean over the rows (PyTorch's
    F.cross_entropy, reduction="mean"; main.bend line 2894): per row, softmax with the exponentials summed by
    tree_sum, the loss term -((z[y] - m) - log(s)); gradient (softmax - onehot) / n."""
    _dims("CrossEntropy", n, c, 1)
    name = f"CrossEntropy({n}x{c})"

    def f(z: Mat, labels: Ids) -> LossOut[Mat]:
        lab = check_labels(name, labels, n, c)
        dz = np.empty((n, c), dtype=F32)
        loss = K.ce_into(np.ascontiguousarray(z), lab, dz)
        return LossOut(F32(loss), dz)

    return Loss(name, MatSpec(n, c), F32, f)


def MSE(n: int, c: int) -> Loss[Mat, Mat]:
    """Mean squared error over every number (PyTorch's F.mse_loss; main.bend line 2918): d = y - t,
    loss = tree_sum(d*d) / (n*c), gradient d * (2 / (n*c)) with 2 / (n*c) rounded once to float32."""
    _dims("MSE", n, c, 0)
    name = f"MSE({n}x{c})"
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
    _dims("NLL", n, c, 1)
    name = f"NLL({n}x{c})"

    def f(lp: Mat, labels: Ids) -> LossOut[Mat]:
        lab = check_labels(name, labels, n, c)
        g = np.zeros((n, c), dtype=F32)
        loss = K.nll_into(np.ascontiguousarray(lp), lab, g)
        return LossOut(F32(loss), g)

    return Loss(name, MatSpec(n, c), F32, f)
