"""The C library's float32 functions (expf, logf, ...) called directly as a sweep library (LIBM): numba calls the
ctypes function pointer in a compiled loop."""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any, Callable

import numba
import numpy as np

from bendtorch.oracle.functions import ROPE_BASE
from bendtorch.reports.sweep.libraries.maps import map1

Fn = Callable[[Any], Any]
_BASE32 = np.float32(ROPE_BASE)
_NAMES = {"exp": "expf", "log": "logf", "tanh": "tanhf", "sin": "sinf", "cos": "cosf", "erf": "erff",
          "sqrt": "sqrtf", "pow": "powf"}
_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def _call(func: str) -> Fn:
    cf = getattr(_LIBM, _NAMES[func])
    cf.restype = ctypes.c_float
    if func == "pow":
        cf.argtypes = [ctypes.c_float, ctypes.c_float]

        @numba.njit
        def call(x: np.float32) -> Any:
            return cf(_BASE32, x)
    else:
        cf.argtypes = [ctypes.c_float]

        @numba.njit
        def call(x: np.float32) -> Any:
            return cf(x)  # numba calls the ctypes function pointer directly
    return lambda x: map1(call, x)


LIBM = {f: _call(f) for f in _NAMES}
