"""Printing numbers as the decimal of their 32 bits (main.bend lines 1019-1036), for exact comparisons: two runs, or
impl and a PyTorch reference, agree bit for bit exactly when these strings are equal."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def f32_bits(x: np.float32 | float) -> int:
    """The 32 bits of a float32 as an unsigned integer (bits, main.bend line 976)."""
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f32_of_bits(u: int) -> np.float32:
    """The float32 with these 32 bits (bitcast, line 971)."""
    return np.float32(np.array([u & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0])


def mat_print(name: str, m: npt.NDArray[np.float32]) -> str:
    """One line: the name, then each number (row by row) as the decimal of its 32 bits (Mat.print, line 1032)."""
    words = np.ascontiguousarray(m, dtype=np.float32).reshape(-1).view(np.uint32)
    return name + "".join(" " + str(int(w)) for w in words)


def f32_print(name: str, x: np.float32) -> str:
    """F32.print (line 1035)."""
    return f"{name} {f32_bits(x)}"


def same_bits(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> bool:
    """True when two float32 arrays have the same shape and every number the same 32 bits (NaN payloads and the
    sign of zero included)."""
    a32 = np.ascontiguousarray(a, dtype=np.float32)
    b32 = np.ascontiguousarray(b, dtype=np.float32)
    return a32.shape == b32.shape and bool(np.array_equal(a32.view(np.uint32), b32.view(np.uint32)))
