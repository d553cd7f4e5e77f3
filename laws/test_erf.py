"""Laws of the seed's erf (main.bend lines 1104-1199), over every float32 (hypothesis draws raw 32-bit patterns, so
NaN payloads, both zeros, subnormals and infinities all occur)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from bendtorch.impl.kernels.erf import erf
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import bits32

F32 = np.float32


def e1(x: np.float32) -> np.float32:
    return F32(erf(np.array([x], F32))[0])


def bits(x: np.float32) -> int:
    return int(np.array([x], F32).view(np.uint32)[0])


@law("erf", "odd", "bit for bit")
@given(bits32())
@example(F32(0.0))
@example(F32(3.92))
def test_erf_is_odd(x: np.float32) -> None:
    """erf is odd, erf(-x) = -erf(x), and erf(-0) = -0 (lines 1110-1113): the work is done on |x| and the sign put
    back, so the two results have the same bits apart from the sign bit."""
    if np.isnan(x):
        return
    assert bits(e1(F32(-x))) == bits(e1(x)) ^ 0x80000000


@law("erf", "nan_in_nan_out", "bit for bit")
@given(st.integers(0, 2**23 - 1), st.booleans())
def test_nan_gives_nan(payload: int, neg: bool) -> None:
    """NaN reaches erf_small (every comparison with NaN is false) and comes out NaN (line 1113)."""
    u = (0x7F800000 | max(payload, 1)) | (0x80000000 if neg else 0)
    assert np.isnan(e1(np.array([u], np.uint32).view(F32)[0]))


@law("erf", "bounded", "bit for bit")
@given(bits32())
def test_erf_is_within_one(x: np.float32) -> None:
    """|erf(x)| <= 1 for every non-NaN float32."""
    if not np.isnan(x):
        assert abs(float(e1(x))) <= 1.0


@law("erf", "monotone", "bit for bit")
@given(bits32(), bits32())
@example(F32(0.84375), np.nextafter(F32(0.84375), F32(0)))
def test_erf_is_non_decreasing(x: np.float32, y: np.float32) -> None:
    """Non-decreasing over ordered float32 inputs: x <= y gives erf(x) <= erf(y), across the pieces' borders too."""
    if np.isnan(x) or np.isnan(y):
        return
    lo, hi = (x, y) if x <= y else (y, x)
    assert e1(lo) <= e1(hi)


@law("erf", "saturates", "bit for bit")
@given(st.floats(min_value=float(F32(3.92)), width=32, allow_infinity=True, allow_nan=False).map(F32))
@example(F32(3.92))
@example(F32(np.inf))
def test_erf_is_one_from_392(x: np.float32) -> None:
    """1 from 3.92 on, infinity included (erf_top, line 1192)."""
    assert e1(x) == F32(1.0) and e1(F32(-x)) == F32(-1.0)
