"""The float32 functions impl's kernels call (exp, log, tanh, sin, cos, pow), chosen once, at import, by the
environment variable BENDTORCH_LIBM:

    portable (the default)   impl.kernels.portable: float32 and integer arithmetic only, the same bits on every
                             machine, C library and operating system, correctly rounded on every input (pow:
                             nearly every)
    clib                     the C library's expf, logf, tanhf, sinf, cosf, powf (numba's math.* on a float32 calls
                             them): the bits the seed-era figures were measured with, which differ between C
                             libraries and their releases

Kernels call the compiled `exp32`, `log32`, `tanh32`, `sin32`, `cos32`, `pow32`, and `exp_array(src, dst)` for a
whole row (dst[i] = exp32(src[i]), the same bits; the portable one vectorises); plain Python code calls `expf`,
`logf`, ... (the same functions, returning np.float32). `clib_expf`, ... always call the C library directly.

numba's cache does not notice which function a compiled kernel called (nor that the callee's source changed), so
every kernel compiled after this module's import is cached in a directory of its own (under NUMBA_CACHE_DIR when set,
else the user's cache): numba-libm-clib for the C library's functions, numba-libm-portable-DIGEST for the portable
ones (portable.CACHE_DIR, where the portable functions themselves are compiled), DIGEST from the portable package's
source (which names its exception tables' digest): the two choices never load each other's machine code, and a kernel
compiled with other portable functions is never loaded. A kernel that calls one of these functions imports this
module first, so its cache is always the right one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from typing import Any, Callable

import numba
import numpy as np

from bendtorch.impl.kernels import portable

MODES = ("portable", "clib")
MODE = os.environ.get("BENDTORCH_LIBM", "portable").strip().lower() or "portable"
if MODE not in MODES:
    raise ValueError(f"BENDTORCH_LIBM={os.environ.get('BENDTORCH_LIBM')!r}: must be one of {', '.join(MODES)}")

# the folder every kernel compiled after this import is cached in
CACHE_DIR = portable.numba_cache_dir("numba-libm-clib") if MODE == "clib" else portable.CACHE_DIR
setattr(numba.config, "CACHE_DIR", CACHE_DIR)

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


clib_expf = _unary("expf")
clib_logf = _unary("logf")
clib_tanhf = _unary("tanhf")
clib_sinf = _unary("sinf")
clib_cosf = _unary("cosf")
clib_powf = _binary("powf")
sqrtf = _unary("sqrtf")  # IEEE 754 requires sqrt correctly rounded: every C library gives the same bits


@numba.njit(cache=True)
def _c_exp(x: np.float32) -> Any:
    return math.exp(x)


@numba.njit(cache=True)
def _c_log(x: np.float32) -> Any:
    return math.log(x)


@numba.njit(cache=True)
def _c_tanh(x: np.float32) -> Any:
    return math.tanh(x)


@numba.njit(cache=True)
def _c_sin(x: np.float32) -> Any:
    return math.sin(x)


@numba.njit(cache=True)
def _c_cos(x: np.float32) -> Any:
    return math.cos(x)


@numba.njit(cache=True)
def _c_pow(x: np.float32, y: np.float32) -> Any:
    return math.pow(x, y)


@numba.njit(cache=True)
def _c_exp_array(src: Any, dst: Any) -> None:
    for i in range(src.size):
        dst[i] = math.exp(src[i])


exp32: Callable[[Any], np.float32]
exp_array: Callable[[Any, Any], None]
log32: Callable[[Any], np.float32]
tanh32: Callable[[Any], np.float32]
sin32: Callable[[Any], np.float32]
cos32: Callable[[Any], np.float32]
pow32: Callable[[Any, Any], np.float32]
if MODE == "portable":
    exp32, log32, tanh32 = portable.exp32, portable.log32, portable.tanh32
    sin32, cos32, pow32 = portable.sin32, portable.cos32, portable.pow32
    exp_array = portable.exp_array
else:
    exp32, log32, tanh32, sin32, cos32, pow32 = _c_exp, _c_log, _c_tanh, _c_sin, _c_cos, _c_pow
    exp_array = _c_exp_array


def _plain1(f: Any, name: str) -> Callable[[Any], np.float32]:
    def call(x: Any) -> np.float32:
        return np.float32(f(np.float32(x)))
    call.__name__ = name
    return call


expf = _plain1(exp32, "expf")
logf = _plain1(log32, "logf")
tanhf = _plain1(tanh32, "tanhf")
sinf = _plain1(sin32, "sinf")
cosf = _plain1(cos32, "cosf")


def powf(x: Any, y: Any) -> np.float32:
    return np.float32(pow32(np.float32(x), np.float32(y)))
