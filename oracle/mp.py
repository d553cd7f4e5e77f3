"""mpmath at high precision, where float64 might not be enough (and to check that it is).

- `erf_mp(x)`: erf at `dps` decimal digits, rounded once to float64 (checks oracle.funcs.erf/erfc and GELUErf).
- `ce_row_mp(row, y)`: one cross-entropy row, log(sum(exp(row))) - row[y], at enough digits for the row's exponent
  range (`row_dps`): the loss of a
  confident row is a tiny difference of two numbers near row[y], which float64 computed naively (log of a sum near 1)
  would lose entirely. oracle.losses.CrossEntropy does not need this at run time: it writes the row's loss as
  log1p(sum of exp(z_j - m) over every j but one argmax) + (m - z_y), a sum of non-negative terms with no cancellation;
  tests/test_oracle_math.py checks that form against ce_row_mp on rows where the naive float64 form gives 0.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import mpmath
import numpy as np
import numpy.typing as npt

DPS = 50


def erf_mp(x: float, dps: int = DPS) -> float:
    """erf(x) at dps digits, rounded to float64. NaN for NaN, +-1 for +-inf."""
    if x != x:
        return float("nan")
    with mpmath.workdps(dps):
        return float(mpmath.erf(mpmath.mpf(x)))


def erf_mp_array(x: npt.ArrayLike, dps: int = DPS) -> npt.NDArray[np.float64]:
    """erf_mp element-wise."""
    a = np.asarray(x, dtype=np.float64)
    return np.asarray([erf_mp(float(v), dps) for v in a.reshape(-1)], dtype=np.float64).reshape(a.shape)


def row_dps(row: Sequence[float] | npt.NDArray[Any], extra: int = DPS) -> int:
    """Digits enough for log(sum(exp(row))) - row[y] however confident the row: the smallest term is exp(-range)
    of the largest, range = max - min, so a sum near 1 must keep range / ln(10) digits past its leading 1 before the
    `extra` digits the result needs (capped at 5000 digits; a range past ~11000 only adds terms below 10^-5000)."""
    a = np.asarray(row, dtype=np.float64)
    fin = a[np.isfinite(a)]
    span = float(np.max(fin) - np.min(fin)) if fin.size else 0.0
    return extra + min(5000, int(span / math.log(10.0)) + 1)


def ce_row_mp(row: Sequence[float] | npt.NDArray[Any], y: int, dps: int | None = None) -> float:
    """log(sum(exp(row))) - row[y] at dps digits (default: row_dps(row), enough for a loss as small as the row's
    smallest exp(z_j - max)), rounded to float64 once."""
    with mpmath.workdps(dps or row_dps(row)):
        s = mpmath.fsum(mpmath.exp(mpmath.mpf(float(v))) for v in row)
        return float(mpmath.log(s) - mpmath.mpf(float(row[y])))


def softmax_mp(row: Sequence[float] | npt.NDArray[Any], dps: int = DPS) -> npt.NDArray[np.float64]:
    """exp(row) / sum(exp(row)) at dps digits, each rounded to float64 (a quotient: no digits lost)."""
    with mpmath.workdps(dps):
        es = [mpmath.exp(mpmath.mpf(float(v))) for v in row]
        s = mpmath.fsum(es)
        return np.asarray([float(e / s) for e in es], dtype=np.float64)
