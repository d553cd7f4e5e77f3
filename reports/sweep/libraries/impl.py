"""impl's functions as sweep libraries: KERNEL (impl's kernel function of each sweep function, with the portable
functions or the C library's as the process's BENDTORCH_LIBM selects: the libraries impl and impl_clib), RAW (the
portable functions' pair evaluation without the exception table: impl_raw) and EXP_ARRAY_BOTH_WAYS (the exp entry's
twin: libm.exp_array called apart and in place)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numba
import numpy as np

from bendtorch.impl.kernels import elementwise as E
from bendtorch.impl.kernels import libm, portable
from bendtorch.impl.kernels.erf import erf32
from bendtorch.oracle.functions import ROPE_BASE
from bendtorch.records.ops import ACTIVATIONS
from bendtorch.reports.sweep.libraries.maps import map1, map_d, map_d_out

Fn = Callable[[Any], Any]
_ONE32 = np.float32(1.0)
_BASE32 = np.float32(ROPE_BASE)


@numba.njit(cache=True, error_model="numpy")
def _rsqrt(v: np.float32) -> Any:
    """RMSNorm's rms_inv (main.bend line 1570) on its argument v = mean + eps: 1 / sqrt(v) in float32."""
    return _ONE32 / math.sqrt(v)


@numba.njit(cache=True)
def _sqrt(v: np.float32) -> Any:
    return math.sqrt(v)


@numba.njit(cache=True)
def _pow(x: np.float32) -> Any:
    """The RoPE table's powf(base, 2c/d) as a function of its exponent."""
    return libm.pow32(_BASE32, x)


def _scalar(f: Any) -> Fn:
    return lambda x: map1(f, x)


def _grad_in(d: Any) -> Fn:
    return lambda x: map_d(d, x)


def _grad_out(d: Any, f: Any) -> Fn:
    return lambda x: map_d_out(d, f, x)


def _activations() -> dict[str, Fn]:
    """The atlas's value and derivative of every activation, from its op record (records.ops.ACTIVATIONS): the same
    kernels impl's dispatch is generated from, `{kernel}_v(x)` and `{kernel}_d` with dy = 1, the derivative reading
    the saved output or the input as the layer's backward pass does (ActOut, main.bend line 749; ActIn, line 1052)."""
    out: dict[str, Fn] = {}
    for op in ACTIVATIONS:
        a = op.act
        if a is None or a.sweep is None:
            continue
        v, d = getattr(E, f"{a.kernel}_v"), getattr(E, f"{a.kernel}_d")
        out[a.sweep[0]] = _scalar(v)
        out[a.sweep[1]] = _grad_out(d, v) if a.saves_output else _grad_in(d)
    return out


KERNEL: dict[str, Fn] = {
    **{k: _scalar(f) for k, f in {
        "exp": libm.exp32, "log": libm.log32, "sin": libm.sin32, "cos": libm.cos32, "pow": _pow,
        "erf": erf32, "sqrt": _sqrt, "rsqrt": _rsqrt}.items()},
    **_activations(),
}

RAW: dict[str, Fn] = {f: _scalar(getattr(portable, f"raw_{f}32")) for f in ("exp", "log", "tanh", "sin", "cos")}


def EXP_ARRAY_BOTH_WAYS(x: Any) -> Any:  # noqa: N802  (a library function's name, as the record spells it)
    """Both calls the kernels make of libm.exp_array, one row each: apart, and in place."""
    out = np.empty((2, x.size), dtype=np.float32)
    libm.exp_array(x, out[0])
    out[1] = x
    libm.exp_array(out[1], out[1])
    return out
