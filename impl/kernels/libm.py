"""The C library's float32 functions for plain Python code: the very functions numba's math.* call on float32
arguments, so a plain reference loop and a compiled kernel give the same bits."""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable

import numpy as np

_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def _unary(name: str) -> Callable[[np.float32], np.float32]:
    fn = getattr(_libm, name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]

    def call(x: np.float32) -> np.float32:
        return np.float32(fn(float(x)))

    call.__name__ = name
    return call


def _binary(name: str) -> Callable[[np.float32, np.float32], np.float32]:
    fn = getattr(_libm, name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float, ctypes.c_float]

    def call(x: np.float32, y: np.float32) -> np.float32:
        return np.float32(fn(float(x), float(y)))

    call.__name__ = name
    return call


expf = _unary("expf")
logf = _unary("logf")
tanhf = _unary("tanhf")
sinf = _unary("sinf")
cosf = _unary("cosf")
sqrtf = _unary("sqrtf")
powf = _binary("powf")
