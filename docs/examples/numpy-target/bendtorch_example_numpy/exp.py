"""A float32 exp of this package's own, for bendtorch's exhaustive sweep (the entry-point group
bendtorch.sweep_libraries): every step in float32.

x = k ln 2 + r with k = round(x / ln 2) and r reduced in two float32 steps (Cody and Waite's split of ln 2: its
high part has 12 significant bits, so k * LN2_HI is exact for the |k| <= 150 that occur), exp(r) by a degree-7
Taylor polynomial in Horner form (|r| <= ln 2 / 2), then scaled by 2^k with ldexp (one rounding, subnormal results
included). Not correctly rounded: the sweep says by how much."""

from __future__ import annotations

from typing import Any

import numpy as np

F32 = np.float32
INV_LN2 = F32(1.44269504)
LN2_HI = F32(0.693145752)       # ln 2 to 12 significant bits
LN2_LO = F32(1.42860677e-06)    # ln 2 - LN2_HI
COEFFS = [F32(1 / 5040), F32(1 / 720), F32(1 / 120), F32(1 / 24), F32(1 / 6), F32(0.5), F32(1.0), F32(1.0)]
OVER = F32(88.7228394)          # above: exp overflows float32
UNDER = F32(-103.972084)        # below: exp rounds to 0 even as a subnormal


def exp32(x: Any) -> Any:
    """exp of a float32 array, elementwise, in float32: inf above OVER, 0 below UNDER, NaN for NaN."""
    x = np.asarray(x, dtype=F32)
    xc = np.nan_to_num(np.clip(x, F32(-104), F32(89)))   # k stays a small integer; NaN is put back at the end
    k = np.rint(xc * INV_LN2).astype(F32)
    r = (xc - k * LN2_HI) - k * LN2_LO
    p = np.full_like(r, COEFFS[0])
    for c in COEFFS[1:]:
        p = p * r + c
    with np.errstate(over="ignore"):  # x in (OVER, 89]: inf, as below
        y = np.ldexp(p, k.astype(np.int32))
    y = np.where(x > OVER, F32(np.inf), np.where(x < UNDER, F32(0), y))
    return np.where(np.isnan(x), x, y).astype(F32)
