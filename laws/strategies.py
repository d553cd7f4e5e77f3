"""Strategies for the law suites: float32 values that include zeros of both signs, subnormals, large and tiny
magnitudes and, where a law speaks of them, infinities and NaNs; shapes including sizes that are not powers of two."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

F32 = np.float32

SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, -1.1754944e-38, 3.4028235e38, -3.4028235e38,
           1e-30, -1e-30, 1e30, -1e30, 1.0, -1.0, 0.5]


def f32(allow_nan: bool = False, allow_infinity: bool = False, max_abs: float | None = None) -> st.SearchStrategy[Any]:
    """One float32: anything finite by default (subnormals and both zeros included), bounded by max_abs if given."""
    if max_abs is None:
        base = st.floats(width=32, allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=True)
    else:
        base = st.floats(-max_abs, max_abs, width=32, allow_subnormal=True)
    return base.map(F32)


def mats(r: int, c: int, max_abs: float | None = 1e3, allow_nan: bool = False,
         allow_infinity: bool = False) -> st.SearchStrategy[Any]:
    """An r x c float32 matrix; elements drawn from f32 with the given bounds."""
    if max_abs is None:
        elems = st.floats(width=32, allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=True)
    else:
        elems = st.floats(-max_abs, max_abs, width=32, allow_subnormal=True)
    return hnp.arrays(np.float32, (r, c), elements=elems)


def bits32() -> st.SearchStrategy[Any]:
    """Any float32 by its 32 bits (every NaN payload and both zeros included)."""
    return st.integers(0, 2**32 - 1).map(lambda u: np.array([u], np.uint32).view(F32)[0])


def dims(lo: int = 1, hi: int = 9) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)
