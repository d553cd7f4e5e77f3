"""The oracle's losses (main.bend lines 2811-2956) in float64: the mean loss over the batch and its gradient.

Labels (CrossEntropy, NLL): a 1-D integer array of length n with every label >= 0, else ValueError naming the loss
and the bad label (docs/DESIGN.md). A label >= c gets the seed's behaviour: CrossEntropy's row loss is
-log(1e-12) (probability 0 clamped at 1e-12, line 2864) and its gradient row is softmax(z) / n (no class is hit);
NLL's row picks 0.0 and leaves its gradient row zero (line 2931).

Why float64 suffices for cross-entropy (no mpmath at run time): a row's loss log(sum_j exp(z_j)) - z_y is written as
    log1p(t) + (m - z_y),   m = max_j z_j,  t = sum of exp(z_j - m) over every j but one argmax,
two non-negative terms, each within a few float64 ulps (exp and log1p of glibc are within an ulp; t is a sum of
non-negatives), so their sum is too: no cancellation however confident the row (the naive log(sum) - z_y loses
everything once t < 2^-53). An exp(z_j - m) that underflows float64 is below 2^-1074, and changes t by a relative
amount only if t itself is below ~2^-1000, where the row's loss (about t) is far below float32's smallest subnormal
2^-149; the mean adds non-negative row losses. The gradient p_j - [j = y] is p_j = e_j / (1 + t) off the label and
-(sum of e over j != y) / (1 + t) at it, again without a difference. tests/test_oracle_math.py checks this against
oracle.mp.ce_row_mp (50 digits) on rows whose loss is 1e-30.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import Loss, LossOut, check_dims, layer_name
from bendtorch.impl.specs import MatSpec, ShapeError, check_value
from bendtorch.oracle.layers import row_exp

F64 = npt.NDArray[np.float64]
Ids = npt.NDArray[np.int64]
DT = np.float64

CE_BAD = -math.log(1e-12)   # a label past the last class: -log(max(0, 1e-12)) (line 2862), 27.631021115928547


def labels_of(name: str, t: Any, n: int) -> npt.NDArray[Any]:
    """The labels as a 1-D integer array of length n with every label in [0, 2^32), else ValueError naming the
    loss."""
    a = t if isinstance(t, np.ndarray) else np.asarray(t)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{name}: labels must be a 1-D array of {n} integers (one per row), got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name}: labels must be integers, got dtype {a.dtype}")
    neg = np.nonzero(a < 0)[0]
    if neg.size:
        k = int(neg[0])
        raise ValueError(f"{name}: label {int(a[k])} at row {k} is negative (labels must be >= 0)")
    big = np.nonzero(a >= 2 ** 32)[0]
    if big.size:
        k = int(big[0])
        raise ValueError(f"{name}: label {int(a[k])} at row {k} is >= 2^32 "
                         "(the seed's loss and gradient disagree past 2^32; docs/DESIGN.md)")
    return a


def _fsum_mean(rows: F64, n: int) -> np.float64:
    """The rows' sum, correctly rounded (math.fsum), divided by n; NaN or inf in a row gives NaN or inf."""
    if not np.all(np.isfinite(rows)):
        return np.float64(np.sum(rows) / n)
    return np.float64(math.fsum(rows.tolist()) / n)


def CrossEntropy(n: int, c: int) -> Loss[F64, Ids]:
    """mean over rows of log(sum_j exp(z_j)) - z_y (PyTorch's F.cross_entropy, main.bend line 2894); the gradient is
    (softmax(z) - onehot(y)) / n."""
    check_dims("CrossEntropy", 1, n=n, c=c)

    def f(z: F64, t: Ids) -> LossOut[F64]:
        lab = labels_of("CrossEntropy", t, n)
        ok = lab < c
        rows = np.arange(n)
        r = row_exp(z)
        with np.errstate(invalid="ignore", over="ignore"):
            s = 1.0 + r.t
            dy = r.e / s
            yi = np.where(ok, lab, 0).astype(np.int64)
            rest = r.e.copy()
            rest[rows, yi] = 0.0
            rest_y = np.sum(rest, axis=1, keepdims=True)
            rest_y = np.where(np.isnan(r.t), np.nan, rest_y)
            zy = z[rows, yi].reshape(n, 1)
            row_loss = np.where(ok.reshape(n, 1), np.log1p(r.t) + (r.m - zy), CE_BAD).reshape(n)
            hit = -(rest_y / s)
            dy[rows[ok], yi[ok]] = hit[rows[ok], 0]
            dy = dy / n
        return LossOut(_fsum_mean(np.asarray(row_loss, dtype=np.float64), n), np.ascontiguousarray(dy))

    return Loss(layer_name("CrossEntropy", n, c), MatSpec(n, c), DT, f)


def MSE(n: int, c: int) -> Loss[F64, F64]:
    """sum((y - t)^2) / (n c) (PyTorch's F.mse_loss, main.bend line 2918); gradient 2 (y - t) / (n c)."""
    check_dims("MSE", 1, n=n, c=c)
    spec = MatSpec(n, c)

    def f(y: F64, t: F64) -> LossOut[F64]:
        e = check_value(t, spec, DT)
        if e is not None:
            raise ShapeError(f"MSE({n}x{c}): target t: {e}")
        with np.errstate(invalid="ignore", over="ignore"):
            d = y - t
            return LossOut(_fsum_mean((d * d).reshape(-1), n * c), np.ascontiguousarray(d * (2.0 / (n * c))))

    return Loss(layer_name("MSE", n, c), spec, DT, f)


def NLL(n: int, c: int) -> Loss[F64, Ids]:
    """-(sum over rows of logp[i, y_i]) / n (PyTorch's F.nll_loss, main.bend line 2953); gradient -1/n at each label.
    A label >= c picks 0.0 and leaves its gradient row zero."""
    check_dims("NLL", 1, n=n, c=c)

    def f(lp: F64, t: Ids) -> LossOut[F64]:
        lab = labels_of("NLL", t, n)
        ok = lab < c
        rows = np.nonzero(ok)[0]
        yi = lab[ok].astype(np.int64)
        picked = lp[rows, yi]
        dy = np.zeros((n, c), dtype=np.float64)
        dy[rows, yi] = -1.0 / n
        return LossOut(np.float64(-_fsum_mean(np.asarray(picked, dtype=np.float64), n)), dy)

    return Loss(layer_name("NLL", n, c), MatSpec(n, c), DT, f)
