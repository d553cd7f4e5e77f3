"""Bit comparisons for the kernel tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def same_bits_or_nan(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    """Same bits everywhere except where both are NaN. When two NaNs meet in one operation (dy NaN and the saved
    value NaN; a NaN row's r and an inf row's inf * 0 in a column sum), IEEE 754 leaves which payload survives open
    and LLVM may swap the operands of a commutative operation, so only NaN-ness is compared there."""
    an, bn = np.isnan(a), np.isnan(b)
    if a.shape != b.shape or not np.array_equal(an, bn):
        return False
    return bool(np.array_equal(a.view(np.uint32)[~an], b.view(np.uint32)[~bn]))
