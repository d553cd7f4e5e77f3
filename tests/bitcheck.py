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


def without_run_details(d: Any) -> Any:
    """A sweep report without its timings, command lines and paths (everything that must not depend on how or where
    the sweep ran, or on interruptions)."""
    if isinstance(d, dict):
        return {k: without_run_details(v) for k, v in d.items()
                if "seconds" not in k and k not in ("command", "machine", "runs", "plots", "json")}
    if isinstance(d, list):
        return [without_run_details(v) for v in d]
    return d
