"""impl's portable tanh: x + x^3 P(x^2) below 2^-5; otherwise E = exp(2|x|) as a pair, tanh = (E - 1) / (E + 1) as
a pair quotient; +-1 beyond 9.1.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.cr_table import TANH_DISP, TANH_KEYS, TANH_VALS, cr_fix
from bendtorch.impl.kernels.portable.eft import F32, ONE, ZERO, fast_two_sum, pow2, two_prod, two_sum
from bendtorch.impl.kernels.portable.exp import exp_core

_T3 = F32(-0.3333333333333333)
_T5 = F32(0.13333333333333333)
_T7 = F32(-0.05396825396825397)
_T9 = F32(0.021869488536155203)
_TANH_SMALL = F32(0.03125)
# below 2^-13 tanh(x) rounds to x (x^3/3 < 2^-26 x/3, under half the float32 spacing below x), and so does
# x + x^3 P(x^2): x itself, without the polynomial, whose terms in the subnormal range an Intel core computes
# through microcode assists (188 ns a number at |x| near 4e-22 against 4 elsewhere, Intel Xeon, family 6, model 167)
_TANH_TINY = F32(2.0 ** -13)
_TANH_BIG = F32(9.1)


@numba.njit(cache=True)
def raw_tanh32(x: np.float32) -> Any:
    """tanh(x) from the float32 pair alone (odd bit for bit): correctly rounded except near rounding boundaries;
    NaN -> NaN, +-inf -> +-1, +-0 -> +-0."""
    if x != x:
        return x + x
    a = abs(x)
    neg = x < ZERO
    if a >= _TANH_BIG:
        return -ONE if neg else ONE
    if a < _TANH_SMALL:
        if a < _TANH_TINY:                     # +-0 and the tiny: x
            return x
        z = a * a
        y = a + a * (z * (_T3 + z * (_T5 + z * (_T7 + z * _T9))))
        return -y if neg else y
    u, w, e = exp_core(a + a, ZERO)          # 2a exact; e <= 26
    sc = pow2(e)
    eh, el = fast_two_sum(u * sc, w * sc)
    nh, nl = two_sum(eh, -ONE)                # E - 1
    nl = nl + el
    nh, nl = fast_two_sum(nh, nl)
    dh, dl = two_sum(eh, ONE)                 # E + 1
    dl = dl + el
    dh, dl = fast_two_sum(dh, dl)
    q1 = nh / dh
    p, pe = two_prod(q1, dh)
    rem = (((nh - p) - pe) + nl) - q1 * dl     # nh - p exact (Sterbenz)
    y = q1 + rem / dh
    return -y if neg else y


@numba.njit(cache=True)
def tanh32(x: np.float32) -> Any:
    """tanh(x) in float32, correctly rounded on every input: raw_tanh32, corrected on its exception table's
    inputs."""
    return cr_fix(TANH_KEYS, TANH_VALS, TANH_DISP, x, raw_tanh32(x))
