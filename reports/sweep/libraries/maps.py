"""Compiled loops that apply a float32 scalar function (a numba function) to every number of a float32 array: each
a copy bound to its function (bendtorch.reports.sweep.bound), compiled once and cached, not once per process."""

from __future__ import annotations

from typing import Any

import numpy as np

from bendtorch.reports.sweep.bound import bound

_F: Any = None   # the scalar function a copy calls (bound)
_G: Any = None   # map_d_out's activation


def _map1(x: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = _F(x[i])
    return out


def _map_d(x: Any) -> Any:
    out = np.empty_like(x)
    one = np.float32(1.0)
    for i in range(x.size):
        out[i] = _F(one, x[i])
    return out


def _map_d_out(x: Any) -> Any:
    out = np.empty_like(x)
    one = np.float32(1.0)
    for i in range(x.size):
        out[i] = _F(one, _G(x[i]))
    return out


def map1(fn: Any, x: Any) -> Any:
    """fn(x[i]) for every i, in a new array."""
    return bound(_map1, _F=fn)(x)


def map_d(fn: Any, x: Any) -> Any:
    """The input gradient of an activation at x with dy = 1 (fn(dy, x))."""
    return bound(_map_d, _F=fn)(x)


def map_d_out(fn: Any, f: Any, x: Any) -> Any:
    """The input gradient of an activation that saves its output: fn(1, f(x))."""
    return bound(_map_d_out, _F=fn, _G=f)(x)
