"""Compiled loops that apply a float32 scalar function (a numba function) to every number of a float32 array."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit
def map1(fn: Any, x: Any) -> Any:
    """fn(x[i]) for every i, in a new array."""
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = fn(x[i])
    return out


@numba.njit
def map_d(fn: Any, x: Any) -> Any:
    """The input gradient of an activation at x with dy = 1 (fn(dy, x))."""
    out = np.empty_like(x)
    one = np.float32(1.0)
    for i in range(x.size):
        out[i] = fn(one, x[i])
    return out


@numba.njit
def map_d_out(fn: Any, f: Any, x: Any) -> Any:
    """The input gradient of an activation that saves its output: fn(1, f(x))."""
    out = np.empty_like(x)
    one = np.float32(1.0)
    for i in range(x.size):
        out[i] = fn(one, f(x[i]))
    return out
