"""`bendtorch sweep FUNCTION`: one exhaustive checker for float32 functions of one float32 argument, in the manner of
CORE-MATH's check_exhaustive. A function is a small entry of ENTRIES: its exact reference and the float32
implementations ("libraries") to check against it; the checker runs every one of the 2^32 float32 bit patterns (or
a spread sample, or a range), and writes per-function JSON and plots.

The reference, input by input:
- the entry's float64 formula gives y64 and a scale s with |y64 - f(x)| <= 2^-46 s (s = |y64| for one C library
  call, whose error glibc documents as a few float64 ulps; for a formula of several operations, s also covers the
  magnitude of its terms, so cancellation is accounted for); c32 = y64 rounded to float32;
- when y64 lies within 2^-46 s of a float32 rounding boundary (a midpoint between two neighbours, or the overflow
  threshold 2^128 - 2^103), c32 is decided by the entry's mpmath formula instead, the precision raised until the
  distance to the boundary is far above mpmath's error: those are the "hard cases". So c32 is the correctly rounded
  float32 of f(x) on every input, proved input by input. SiLU and the GELUs are x/2 to float64's precision for
  tiny x, and x/2 sits exactly on a midpoint when it is subnormal (16M inputs): there HALF_X_RULE decides, a proof
  from the function's form instead of mpmath (half_x_ties; tests/test_sweep.py checks it against mpmath).
Figures per library: ulp error (oracle.ulp's definition, against y64), whether the result is c32 ("correctly
rounded"; +0 and -0 count as equal), its distance from c32 in float32 steps, faithful (error < 1 ulp); where the
correctly rounded value overflows, a result equal to that infinity counts as error 0. Special inputs on their own:
NaN in NaN out, +-inf and +-0 (the exact bits of the entry's limit, sign of zero included), subnormal inputs (their
correctly rounded fraction), and the symmetry of odd or even functions bit for bit.

The work is done on the 2^31 patterns with the sign bit clear, each giving x and -x (odd and even functions then
need their reference once). A task is one library on one chunk of patterns; it returns its accumulators, which the
caller stores in OUT/FUNCTION/chunks/LIB/ (a temp file renamed), so a restarted sweep skips finished chunks and the
figures come from the chunk files alone. Tasks run on a local process pool (default: one process per core, each
single-threaded) or a Dask cluster (--dask). An impl library runs in processes whose BENDTORCH_LIBM selects its C
library or portable functions (impl.kernels.libm reads it once, at import).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numba
import numpy as np

from bendtorch.oracle.erf import mid_f32
from bendtorch.oracle.ulp import ulp32_1, ulp_error1_u
from bendtorch.reports.torch_erf import f2u, u2f

VERSION = 1          # the chunk files' layout
SCHEMA_VERSION = 1   # a sweep JSON's layout (records/schemas/sweep.schema.json)
FULL_HI = 1 << 31
REL_MARGIN = 2.0 ** -46   # the float64 error allowed for, relative to the entry's scale s
OVERFLOW_EDGE = 2.0 ** 128 - 2.0 ** 103  # float32 rounding sends |y| >= this to infinity
MP_START_PREC = 96
MISS_CAP = 4096           # misrounded inputs listed per chunk and library (all of them counted) ...
MISS_LISTED = 1 << 16     # ... and in all (a complete list is an exception table's source: 2^15 at most)
XSHIFT = 18               # x bins for the plots: 2^18 consecutive patterns (32 bins per binade) per sign
NXB = 1 << (31 - XSHIFT)
NLIN, NLOG = 200, 1200    # ulp-error histogram: [k/100, (k+1)/100) for k < 200, then quarter octaves, last bin inf
NB = NLIN + NLOG + 1
C_N, C_CR, C_W1, C_FAITH = 0, 1, 2, 3
SP_INF, SP_ZERO, SP_SUB = 0, 1, 2
ODD, EVEN = 1, 2


# ------------------------------------------------------------------------------------------------------------------
# the entries: exact references (float64 with a scale, mpmath) and the libraries of each function
# ------------------------------------------------------------------------------------------------------------------

_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_GA = 0.044715


@numba.njit(cache=True, error_model="numpy")
def _sig_pair(x: float) -> tuple[float, float]:
    """(sigma(x), 1 - sigma(x)) in float64, each with relative error a few 2^-53 for every x (no cancellation)."""
    if x >= 0.0:
        t = math.exp(-x)
        return 1.0 / (1.0 + t), t / (1.0 + t)
    t = math.exp(x)
    return t / (1.0 + t), 1.0 / (1.0 + t)


@numba.njit(cache=True, error_model="numpy")
def ref_exp(x: float) -> tuple[float, float]:
    y = math.exp(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_log(x: float) -> tuple[float, float]:
    if x < 0.0:
        return math.nan, 0.0
    if x == 0.0:
        return -math.inf, 0.0
    y = math.log(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_tanh(x: float) -> tuple[float, float]:
    y = math.tanh(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_sin(x: float) -> tuple[float, float]:
    y = math.sin(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_cos(x: float) -> tuple[float, float]:
    y = math.cos(x)
    return y, abs(y)


ROPE_BASE = 10000.0  # the seed's RoPE base: its table takes powf(base, 2c/d)


@numba.njit(cache=True, error_model="numpy")
def ref_pow(x: float) -> tuple[float, float]:
    y = math.pow(ROPE_BASE, x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_erf(x: float) -> tuple[float, float]:
    y = math.erf(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_sqrt(x: float) -> tuple[float, float]:
    y = math.sqrt(x) if x >= 0.0 or x != x else math.nan
    if x == 0.0:
        y = x  # sqrt(-0) = -0
    return y, abs(y) if y == y else 0.0


@numba.njit(cache=True, error_model="numpy")
def ref_rsqrt(x: float) -> tuple[float, float]:
    if x < 0.0:
        return math.nan, 0.0
    if x == 0.0:
        return 1.0 / x, 0.0  # +-inf, the sign of the zero
    y = 1.0 / math.sqrt(x)
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_sigmoid(x: float) -> tuple[float, float]:
    s, _ = _sig_pair(x)
    return s, s


@numba.njit(cache=True, error_model="numpy")
def ref_silu(x: float) -> tuple[float, float]:
    if x == -math.inf:
        return -0.0, 0.0
    s, _ = _sig_pair(x)
    y = x * s
    return y, abs(y)


@numba.njit(cache=True, error_model="numpy")
def ref_gelu_tanh(x: float) -> tuple[float, float]:
    """0.5 x (1 + tanh(u)) = x sigma(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 2u carries a relative error of a few
    2^-53, which exp magnifies by |2u|: the scale says so."""
    if x == -math.inf:
        return -0.0, 0.0
    if x == math.inf:
        return x, 0.0
    v = 2.0 * _SQRT_2_PI * (x + _GA * x * x * x)
    s, c = _sig_pair(v)
    y = x * s
    return y, abs(y) * (1.0 + abs(v) * c)  # sigma(v)'s relative sensitivity to v is 1 - sigma(v) = c


@numba.njit(cache=True, error_model="numpy")
def ref_gelu_erf(x: float) -> tuple[float, float]:
    """x Phi(x) = 0.5 x erfc(-x/sqrt 2); erfc's relative condition at t = -x/sqrt 2 is |x| phi(x) / Phi(x) (about
    x^2 for x < 0, going to 0 for x > 0, where the value is x)."""
    if x == -math.inf:
        return -0.0, 0.0
    cdf = 0.5 * math.erfc(-x * _INV_SQRT2)
    y = x * cdf
    cond = abs(x) * _INV_SQRT_2PI * math.exp(-0.5 * x * x) / cdf if cdf > 0.0 else x * x
    return y, abs(y) * (1.0 + cond + (x * x if cdf < 0.5 else 0.0))


@numba.njit(cache=True, error_model="numpy")
def ref_dsigmoid(x: float) -> tuple[float, float]:
    """sigma'(x) = sigma(x) (1 - sigma(x)) (even)."""
    s, c = _sig_pair(x)
    y = s * c
    return y, y * (1.0 + abs(x))


@numba.njit(cache=True, error_model="numpy")
def ref_dtanh(x: float) -> tuple[float, float]:
    """tanh'(x) = 1 - tanh(x)^2 = 4 sigma(2x)(1 - sigma(2x)) (even)."""
    s, c = _sig_pair(2.0 * x)
    y = 4.0 * s * c
    return y, y * (1.0 + 2.0 * abs(x))


@numba.njit(cache=True, error_model="numpy")
def ref_dsilu(x: float) -> tuple[float, float]:
    """silu'(x) = sigma(x) (1 + x (1 - sigma(x))); the scale is the terms' magnitude (a zero near x = -2.3994).
    exp's argument is x itself (exact), so no factor in |x|: with one, every x above 2^22 (where the value is 1)
    would be within the margin of a rounding boundary and go to mpmath."""
    s, c = _sig_pair(x)
    y = s * (1.0 + x * c)
    return y, s * (1.0 + abs(x) * c)


@numba.njit(cache=True, error_model="numpy")
def ref_dgelu_tanh(x: float) -> tuple[float, float]:
    """d/dx 0.5 x (1 + tanh u) = sigma(2u) (1 + 2 x (1 - sigma(2u)) u'), u' = sqrt(2/pi)(1 + 3 0.044715 x^2)."""
    v = 2.0 * _SQRT_2_PI * (x + _GA * x * x * x)
    du = _SQRT_2_PI * (1.0 + 3.0 * _GA * x * x)
    s, c = _sig_pair(v)
    y = s * (1.0 + 2.0 * x * c * du)
    return y, s * (1.0 + 2.0 * abs(x) * c * du) * (1.0 + abs(v) * c)  # v's rounding moves sigma by c |dv|


@numba.njit(cache=True, error_model="numpy")
def ref_dgelu_erf(x: float) -> tuple[float, float]:
    """d/dx x Phi(x) = Phi(x) + x phi(x) (a zero near x = -0.7518)."""
    if x == -math.inf:
        return -0.0, 0.0
    if x == math.inf:
        return 1.0, 0.0
    cdf = 0.5 * math.erfc(-x * _INV_SQRT2)
    pdf = _INV_SQRT_2PI * math.exp(-0.5 * x * x)
    y = cdf + x * pdf
    # cdf's relative condition is |x| pdf / cdf (x^2 for x < 0, 0 for large x > 0); exp's argument -x^2/2 is
    # rounded, so x pdf carries x^2 times its relative error
    cond = abs(x) * pdf / cdf if cdf > 0.0 else x * x
    return y, cdf * (1.0 + cond + (x * x if cdf < 0.5 else 0.0)) + abs(x) * pdf * (1.0 + x * x)


def _mp_funcs() -> dict[str, Callable[[Any], Any]]:
    import mpmath as mp

    def sq() -> Any:
        return mp.sqrt(2 / mp.pi)

    def ga() -> Any:
        return mp.mpf(44715) / 10 ** 6

    def sig(x: Any) -> Any:
        return 1 / (1 + mp.exp(-x))

    def gelu_t(x: Any) -> Any:
        return x / 2 * (1 + mp.tanh(sq() * (x + ga() * x ** 3)))

    def dgelu_t(x: Any) -> Any:
        u = sq() * (x + ga() * x ** 3)
        return (1 + mp.tanh(u)) / 2 + x / 2 * mp.sech(u) ** 2 * sq() * (1 + 3 * ga() * x ** 2)

    def phi(x: Any) -> Any:
        return mp.erfc(-x / mp.sqrt(2)) / 2

    return {
        "exp": mp.exp, "log": mp.log, "pow": lambda x: mp.mpf(int(ROPE_BASE)) ** x, "tanh": mp.tanh, "sin": mp.sin, "cos": mp.cos, "erf": mp.erf,
        "sqrt": mp.sqrt, "rsqrt": lambda x: 1 / mp.sqrt(x), "sigmoid": sig, "silu": lambda x: x * sig(x),
        "gelu_tanh": gelu_t, "gelu_erf": lambda x: x * phi(x), "dsigmoid": lambda x: sig(x) * (1 - sig(x)),
        "dtanh": lambda x: mp.sech(x) ** 2, "dsilu": lambda x: sig(x) * (1 + x * (1 - sig(x))),
        "dgelu_tanh": dgelu_t,
        "dgelu_erf": lambda x: phi(x) + x * mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi),
    }


@dataclass(frozen=True)
class Entry:
    """One function: its float64 reference with scale (see the module docstring), its symmetry (ODD, EVEN or 0),
    the libraries that implement it (names of LIBRARIES' makers), and optionally pieces of the float32 line
    (a compiled classifier of x and the pieces' names) for figures per piece; `twins` names, for a library, a
    second implementation whose bits it must equal (a port checked on every input; the twin may return one row per
    way of calling it, an input counting once if any row differs); `claims` states, for a
    library, published figures to confirm or refute: max_ulp_at_most, correctly_rounded_fraction (value,
    tolerance), within_one_ulp_fraction, nan_in_nan_out (with their source). `half_x_ties` marks a function
    f(x) = (x/2)(1 + g(x)) with g odd, of the sign of x and |g(x)| <= 2|x| (SiLU, both GELUs): its ties at x/2 are
    decided by HALF_X_RULE instead of mpmath."""
    name: str
    title: str
    ref: Any
    sym: int
    libs: tuple[str, ...]
    pieces: tuple[str, ...] = ("all",)
    piece_of: Any = None
    twins: dict[str, str] = field(default_factory=dict)
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)
    half_x_ties: bool = False


def _erf_piece() -> Any:
    from bendtorch.impl.kernels.erf import erf_piece32
    return erf_piece32


ERF_PIECES = ("[0, 0.84375)", "[0.84375, 1.25)", "[1.25, 1.75)", "[1.75, 2.25)", "[2.25, 2.75)", "[2.75, 3.25)",
              "[3.25, 3.92)", "[3.92, inf]")
BASIC = ("impl", "impl_clib", "torch", "torch_scalar", "numpy", "clib")
TABLED = ("impl", "impl_raw") + BASIC[1:]   # impl's functions with an exception table: also without it
ACTS = ("impl", "impl_clib", "torch", "torch_scalar", "numpy")

ENTRIES: dict[str, Entry] = {e.name: e for e in [
    Entry("exp", "exp(x)", ref_exp, 0, TABLED, twins={"impl": "impl_exp_array"}),
    Entry("log", "log(x)", ref_log, 0, TABLED),
    Entry("tanh", "tanh(x)", ref_tanh, ODD, TABLED),
    Entry("sin", "sin(x) (RoPE)", ref_sin, ODD, TABLED),
    Entry("cos", "cos(x) (RoPE)", ref_cos, EVEN, TABLED),
    Entry("pow", "10000^x (RoPE's table: powf(base, 2c/d))", ref_pow, 0, BASIC),
    Entry("erf", "erf(x)", ref_erf, ODD, ("impl", "torch", "torch_gelu_erf_aten", "clib"), ERF_PIECES, "erf",
          claims={"impl": {"source": "main.bend lines 1118-1120", "max_ulp_at_most": 0.93,
                           "correctly_rounded_fraction": (0.971, 0.0005), "within_one_ulp_fraction": 1.0,
                           "nan_in_nan_out": True}}),
    Entry("sqrt", "sqrt(x)", ref_sqrt, 0, ("impl", "torch", "numpy", "clib")),
    Entry("rsqrt", "1/sqrt(x) (RMSNorm: 1 / sqrt(v))", ref_rsqrt, 0, ("impl", "torch", "torch_scalar", "numpy")),
    Entry("sigmoid", "sigmoid(x) = 1/(1 + exp(-x))", ref_sigmoid, 0, ACTS),
    Entry("silu", "SiLU(x) = x sigmoid(x)", ref_silu, 0, ACTS, half_x_ties=True),
    Entry("gelu_tanh", "GELU, tanh form", ref_gelu_tanh, 0, ACTS, half_x_ties=True),
    Entry("gelu_erf", "GELU, erf form x Phi(x)", ref_gelu_erf, 0, ("impl", "impl_clib", "torch", "torch_aten"),
          twins={"torch_aten": "torch_gelu_erf_port"}, half_x_ties=True),
    Entry("dsigmoid", "sigmoid'(x)", ref_dsigmoid, EVEN, ACTS),
    Entry("dtanh", "tanh'(x)", ref_dtanh, EVEN, ACTS),
    Entry("dsilu", "SiLU'(x)", ref_dsilu, 0, ACTS),
    Entry("dgelu_tanh", "GELU'(x), tanh form", ref_dgelu_tanh, 0, ACTS),
    Entry("dgelu_erf", "GELU'(x), erf form", ref_dgelu_erf, 0, ("impl", "impl_clib", "torch", "torch_scalar")),
]}

LIB_NOTES = {
    "impl": "impl's kernel function with its portable functions (impl.kernels.portable; BENDTORCH_LIBM=portable)",
    "impl_clib": "impl's kernel function with the C library's float32 functions (BENDTORCH_LIBM=clib)",
    "impl_raw": ("impl's portable function without its exception table (impl.kernels.portable.raw_*: the float32 "
                 "pair alone); the inputs it misrounds are the table's"),
    "torch": "PyTorch CPU float32, a large contiguous tensor (the vectorised path)",
    "torch_scalar": ("PyTorch CPU float32 on a strided (non-contiguous) view: the loop such a tensor takes (on this "
                     "build it gives the contiguous path's bits for exp, and a 1-element tensor does too)"),
    "torch_aten": "PyTorch's ATen kernel with oneDNN disabled",
    "impl_exp_array": ("impl's exp over a whole array (libm.exp_array, the vectorised loop the softmax, log-softmax, "
                       "cross-entropy and attention kernels and the Sigmoid and SiLU loops call), called apart and "
                       "in place: must give exp32's bits on every input"),
    "torch_gelu_erf_port": "ATen's GELU (erf form) ported op by op (reports/torch_erf.py)",
    "torch_gelu_erf_aten": "the erf inside PyTorch's ATen GELU, ported op by op (reports/torch_erf.py)",
    "numpy": "numpy float32 ufuncs (the formula in float32 operations where numpy has no such function)",
    "clib": "the C library's float32 function called directly (ctypes, e.g. expf)",
}
LIB_LIBM_MODE = {"impl": "portable", "impl_clib": "clib"}


# ------------------------------------------------------------------------------------------------------------------
# the libraries: each maker returns a function float32 array -> float32 array
# ------------------------------------------------------------------------------------------------------------------

@numba.njit
def _map1(fn: Any, x: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = fn(x[i])
    return out


@numba.njit
def _map_d(fn: Any, x: Any) -> Any:
    """The input gradient of an activation at x with dy = 1 (fn(dy, x))."""
    out = np.empty_like(x)
    one = np.float32(1.0)
    for i in range(x.size):
        out[i] = fn(one, x[i])
    return out


@numba.njit
def _map_d_out(fn: Any, f: Any, x: Any) -> Any:
    """The input gradient of an activation that saves its output: fn(1, f(x))."""
    out = np.empty_like(x)
    one = np.float32(1.0)
    for i in range(x.size):
        out[i] = fn(one, f(x[i]))
    return out


_ONE32 = np.float32(1.0)


@numba.njit(error_model="numpy")
def _rsqrt_impl(v: np.float32) -> Any:
    """RMSNorm's rms_inv (main.bend line 1570) on its argument v = mean + eps: 1 / sqrt(v) in float32."""
    return _ONE32 / math.sqrt(v)


@numba.njit
def _sqrt_impl(v: np.float32) -> Any:
    return math.sqrt(v)


_BASE32 = np.float32(ROPE_BASE)


def _pow_impl() -> Any:
    from bendtorch.impl.kernels import libm

    @numba.njit
    def pw(x: np.float32) -> Any:
        return libm.pow32(_BASE32, x)
    return pw


def _impl_lib(func: str) -> Callable[[Any], Any]:
    from bendtorch.impl.kernels import elementwise as E
    from bendtorch.impl.kernels import libm
    from bendtorch.impl.kernels.erf import erf32

    scalar = {"exp": libm.exp32, "log": libm.log32, "tanh": E.tanh_v, "sin": libm.sin32, "cos": libm.cos32,
              "erf": erf32, "sqrt": _sqrt_impl, "rsqrt": _rsqrt_impl, "sigmoid": E.sigmoid_v, "silu": E.silu_v,
              "gelu_tanh": E.gelu_v, "gelu_erf": E.gelu_erf_v}
    if func == "pow":
        scalar["pow"] = _pow_impl()
    if func in scalar:
        f = scalar[func]
        return lambda x: _map1(f, x)
    grad_in = {"dsilu": E.silu_d, "dgelu_tanh": E.gelu_d, "dgelu_erf": E.gelu_erf_d}
    if func in grad_in:
        g = grad_in[func]
        return lambda x: _map_d(g, x)
    d, f = {"dsigmoid": (E.sigmoid_d, E.sigmoid_v), "dtanh": (E.tanh_d, E.tanh_v)}[func]
    return lambda x: _map_d_out(d, f, x)


def _torch_lib(func: str, scalar_path: bool, aten: bool = False) -> Callable[[Any], Any]:
    import warnings

    import torch

    warnings.filterwarnings("ignore", message=".*TF32 acceleration on top of oneDNN.*")
    F = torch.nn.functional
    aten_ops = torch.ops.aten
    fns: dict[str, Callable[[Any], Any]] = {
        "exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "sin": torch.sin, "cos": torch.cos,
        "pow": lambda t: torch.pow(ROPE_BASE, t),
        "erf": torch.erf, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sigmoid": torch.sigmoid, "silu": F.silu,
        "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu_erf": F.gelu,
        "dsigmoid": lambda t: aten_ops.sigmoid_backward(torch.ones_like(t), torch.sigmoid(t)),
        "dtanh": lambda t: aten_ops.tanh_backward(torch.ones_like(t), torch.tanh(t)),
        "dsilu": lambda t: aten_ops.silu_backward(torch.ones_like(t), t),
        "dgelu_tanh": lambda t: aten_ops.gelu_backward(torch.ones_like(t), t, approximate="tanh"),
        "dgelu_erf": lambda t: aten_ops.gelu_backward(torch.ones_like(t), t),
    }
    fn = fns[func]

    def run(x: Any) -> Any:
        with torch.no_grad(), torch.backends.mkldnn.flags(enabled=not aten):
            if scalar_path:
                buf = np.zeros(2 * x.size, dtype=np.float32)
                buf[::2] = x
                t = torch.from_numpy(buf)[::2]  # strided: TensorIterator's basic (scalar) loop
            else:
                t = torch.from_numpy(np.ascontiguousarray(x))
            return np.ascontiguousarray(fn(t).numpy(), dtype=np.float32)
    return run


def _numpy_lib(func: str) -> Callable[[Any], Any]:
    one, half = np.float32(1.0), np.float32(0.5)
    c = np.float32(0.7978845608028654)
    a = np.float32(0.044715)
    a3 = np.float32(np.float32(3.0) * a)

    def sigmoid(x: Any) -> Any:
        return one / (one + np.exp(-x))

    def inner(x: Any) -> Any:
        return c * (x + a * ((x * x) * x))

    def dgelu(x: Any) -> Any:
        th = np.tanh(inner(x))
        return half * (one + th) + ((half * x) * (one - th * th)) * (c * (one + a3 * (x * x)))

    fns: dict[str, Callable[[Any], Any]] = {
        "pow": lambda x: np.power(np.float32(ROPE_BASE), x),
        "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "sqrt": np.sqrt,
        "rsqrt": lambda x: one / np.sqrt(x), "sigmoid": sigmoid, "silu": lambda x: x / (one + np.exp(-x)),
        "gelu_tanh": lambda x: (half * x) * (one + np.tanh(inner(x))),
        "dsigmoid": lambda x: (one - sigmoid(x)) * sigmoid(x),
        "dtanh": lambda x: one - np.tanh(x) * np.tanh(x),
        "dsilu": lambda x: sigmoid(x) * (one + x * (one - sigmoid(x))),
        "dgelu_tanh": dgelu,
    }
    fn = fns[func]

    def run(x: Any) -> Any:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x), dtype=np.float32)
    return run


_CLIB_CACHE: dict[str, Any] = {}


def _clib_lib(func: str) -> Callable[[Any], Any]:
    import ctypes
    import ctypes.util

    if func not in _CLIB_CACHE:
        libm_ = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        cf = getattr(libm_, {"exp": "expf", "log": "logf", "tanh": "tanhf", "sin": "sinf", "cos": "cosf",
                             "erf": "erff", "sqrt": "sqrtf", "pow": "powf"}[func])
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
        _CLIB_CACHE[func] = call
    f = _CLIB_CACHE[func]
    return lambda x: _map1(f, x)


def make_lib(func: str, lib: str) -> Callable[[Any], Any]:
    """The float32 array function of library `lib` for entry `func`."""
    if lib in ("impl", "impl_clib"):
        return _impl_lib(func)
    if lib in ("torch", "torch_scalar", "torch_aten"):
        return _torch_lib(func, lib == "torch_scalar", lib == "torch_aten")
    if lib == "numpy":
        return _numpy_lib(func)
    if lib == "clib":
        return _clib_lib(func)
    if lib == "impl_raw":
        from bendtorch.impl.kernels import portable

        raw = getattr(portable, f"raw_{func}32")
        return lambda x: _map1(raw, x)
    if lib == "impl_exp_array":
        from bendtorch.impl.kernels import libm

        def run(x: Any) -> Any:
            # both calls the kernels make, one row each: apart, and in place
            out = np.empty((2, x.size), dtype=np.float32)
            libm.exp_array(x, out[0])
            out[1] = x
            libm.exp_array(out[1], out[1])
            return out
        return run
    if lib == "torch_gelu_erf_aten":
        from bendtorch.reports.torch_erf import erf_as_np
        return lambda x: np.asarray(erf_as_np(x), dtype=np.float32)
    if lib == "torch_gelu_erf_port":
        from bendtorch.reports.torch_erf import gelu_port_np
        return lambda x: np.asarray(gelu_port_np(x), dtype=np.float32)
    raise KeyError(lib)


# ------------------------------------------------------------------------------------------------------------------
# one chunk: the reference, the hard cases, one library's figures
# ------------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _u2f(b: Any) -> Any:
    return u2f(np.uint32(b))


@numba.njit(cache=True)
def _f2u(x: Any) -> Any:
    return f2u(np.float32(x))


@numba.njit(cache=True)
def _ord(b: Any) -> Any:
    """float32 bits -> an integer that orders the floats (+0 and -0 both 0); adjacent floats differ by 1."""
    v = np.int64(b & np.uint32(0x7FFFFFFF))
    if b >= np.uint32(0x80000000):
        return -v
    return v


@numba.njit(cache=True)
def _hbin(e: float) -> Any:
    if e < 2.0:
        return int(e * 100.0)
    if not (e < math.inf):
        return NB - 1
    eb = np.float64(e).view(np.uint64)
    j: Any = 4 * (np.int64(eb >> np.uint64(52)) - 1024) + np.int64((eb >> np.uint64(50)) & np.uint64(3))
    return NLIN + min(j, NLOG - 1)


@numba.njit(cache=True)
def is_hard(y: float, c: float, s: float) -> bool:
    """y (float64, error <= REL_MARGIN s) too close to the float32 rounding boundary on its side of c = f32(y)?"""
    if not (abs(y) < math.inf) or s == 0.0:
        return False
    ay = abs(y)
    ac = abs(c)
    mid = OVERFLOW_EDGE if ac == math.inf else mid_f32(ay, ac)
    return abs(ay - mid) <= REL_MARGIN * s


@numba.njit
def ref_pass(ref: Any, bits: Any, sym: int, y64: Any, c32: Any, scale: Any, u: Any, hard: Any) -> int:
    """The reference for x = +pattern (first half) and -pattern (second half); an odd or even function's second
    half is the first's mirror (the float32 rounding is symmetric). Returns the number of hard cases."""
    n = bits.size
    nh = 0
    for h in range(2):
        for i in range(n):
            k = h * n + i
            if h == 1 and sym != 0:
                sg = -1.0 if sym == ODD else 1.0
                y64[k] = sg * y64[i]
                c32[k] = np.float32(sg) * c32[i]
                scale[k] = scale[i]
                u[k] = u[i]
                hard[k] = False
                continue
            b = bits[i] | (np.uint32(0x80000000) if h == 1 else np.uint32(0))
            x = np.float64(_u2f(b))
            y, s = ref(x)
            c = np.float32(y)
            y64[k] = y
            c32[k] = c
            scale[k] = s
            u[k] = ulp32_1(y)
            hk = is_hard(y, np.float64(c), s)
            hard[k] = hk
            if hk:
                nh += 1
    return nh


def round32_mp(mpf_fn: Callable[[Any], Any], x: float, scale: float) -> tuple[np.float32, float]:
    """The correctly rounded float32 of f(x), f given in mpmath, decided against the float32 rounding boundary
    with room 2^16 times mpmath's error (taken as 2^-prec of the terms' scale); returns it and f(x) as a float."""
    import mpmath

    prec = MP_START_PREC
    f32max = np.float32(3.4028234663852886e38)
    while True:
        with mpmath.workprec(prec):
            y = mpf_fn(mpmath.mpf(x))
            yf = float(y)
            c = np.float32(yf) if abs(yf) < 3.5e38 else np.float32(math.copysign(math.inf, yf))
            if abs(c) == np.inf:
                c = np.float32(math.copysign(float(f32max), yf))
            with np.errstate(over="ignore"):  # the neighbour of the largest float is inf
                if mpmath.mpf(float(c)) <= y:
                    lo, hi = c, np.nextafter(c, np.float32(np.inf))
                else:
                    lo, hi = np.nextafter(c, np.float32(-np.inf)), c
            if abs(hi) == np.inf or abs(lo) == np.inf:
                edge = mpmath.mpf(OVERFLOW_EDGE)
                m = edge if y > 0 else -edge
            else:
                m = (mpmath.mpf(float(lo)) + mpmath.mpf(float(hi))) / 2  # exact: fits in prec bits
            d = y - m
            if abs(d) > mpmath.mpf(scale) * mpmath.mpf(2) ** (16 - prec):
                return (lo if d < 0 else hi), yf
        prec *= 2
        if prec > 4096:
            raise ArithmeticError(f"f({x!r}) not decided at 4096 bits")


@numba.njit(cache=True)
def stats_pass(bits: Any, r: Any, y64: Any, c32: Any, u: Any, pcs: Any, sym: int, cnt: Any, maxu: Any,
               argb: Any, maxabs: Any, hist: Any, bmax: Any, nanst: Any, symv: Any, spn: Any, spbad: Any,
               submax: Any, miss: Any, miss_want: Any, miss_n: Any) -> None:
    """One library's results r (x = +pattern then -pattern) against the reference: counts per sign and piece
    (n, correctly rounded, within one float32 step of it, faithful), the largest ulp error with its input, the
    largest absolute error, the histogram, the per-x-bin maxima, NaN, symmetry and the special inputs."""
    n = bits.size
    for h in range(2):
        sbit = np.uint32(0x80000000) if h == 1 else np.uint32(0)
        for i in range(n):
            k = h * n + i
            b = bits[i] | sbit
            x = _u2f(b)
            ri = r[k]
            ci = c32[k]
            if x != x:
                if ri != ri:
                    nanst[0] += 1
                else:
                    nanst[1] += 1
                continue
            rb = _f2u(ri)
            cb = _f2u(ci)
            both_nan = ri != ri and ci != ci
            if sym != 0 and h == 1:
                rp = r[i]
                want = _f2u(rp) ^ np.uint32(0x80000000) if sym == ODD else _f2u(rp)
                if rb != want and not (ri != ri and rp != rp):
                    symv[0] += 1
            ax = abs(x)
            if ax == np.inf or x == 0:
                cls = SP_INF if ax == np.inf else SP_ZERO
                spn[cls] += 1
                if rb != cb and not both_nan:
                    spbad[cls] += 1
                if cls == SP_INF:
                    continue
            if ri != ri and ci == ci:
                nanst[2] += 1
            ex = y64[k]
            if both_nan or (ri == ci and abs(ci) == np.inf):
                e = 0.0
            else:
                e = ulp_error1_u(np.float64(ri), ex, u[k])
            if both_nan:
                d = 0
            elif ri != ri or ci != ci:
                d = 2
            else:
                d = abs(_ord(rb) - _ord(cb))
            if ax < np.float32(1.1754944e-38) and x != 0:
                spn[SP_SUB] += 1
                if d != 0:
                    spbad[SP_SUB] += 1
                if e > submax[0]:
                    submax[0] = e
            pc = pcs[i]
            cnt[h, pc, C_N] += 1
            if d == 0:
                cnt[h, pc, C_CR] += 1
            if d <= 1:
                cnt[h, pc, C_W1] += 1
            if e < 1.0:
                cnt[h, pc, C_FAITH] += 1
            if e > maxu[h, pc]:
                maxu[h, pc] = e
                argb[h, pc] = np.int64(b)
            if d != 0:
                if miss_n[0] < miss.size:
                    miss[miss_n[0]] = np.int64(b)
                    miss_want[miss_n[0]] = cb
                miss_n[0] += 1
                a = abs(np.float64(ri) - ex)
                if not (a <= maxabs[0]):
                    maxabs[0] = a if a == a else math.inf
            hist[_hbin(e)] += 1
            xb = int(bits[i] >> np.uint32(XSHIFT))
            if e > bmax[h, xb]:
                bmax[h, xb] = e


@numba.njit
def _pieces(piece_of: Any, bits: Any, out: Any) -> None:
    for i in range(bits.size):
        x = _u2f(bits[i])
        out[i] = piece_of(x) if x == x and x != np.inf else 0


@numba.njit(cache=True)
def _twin_diff(a: Any, b: Any) -> int:
    """The inputs i where some row of b (one per call of the twin) has other bits than a[i] (NaN = NaN)."""
    nd = 0
    for i in range(a.size):
        for j in range(b.shape[0]):
            if _f2u(a[i]) != _f2u(b[j, i]) and not (a[i] != a[i] and b[j, i] != b[j, i]):
                nd += 1
                break
    return nd


def new_acc(npieces: int) -> dict[str, Any]:
    """Empty accumulators (a chunk file's arrays)."""
    return {
        "cnt": np.zeros((2, npieces, 4), dtype=np.int64),
        "maxu": np.full((2, npieces), -1.0),
        "argb": np.zeros((2, npieces), dtype=np.int64),
        "maxabs": np.zeros(1),
        "hist": np.zeros(NB, dtype=np.int64),
        "bmax": np.full((2, NXB), -1.0),
        "nanst": np.zeros(3, dtype=np.int64),
        "symv": np.zeros(1, dtype=np.int64),
        "spn": np.zeros(3, dtype=np.int64),
        "spbad": np.zeros(3, dtype=np.int64),
        "submax": np.full(1, -1.0),
        "twin_diff": np.zeros(1, dtype=np.int64),
    }


_LIB_FNS: dict[tuple[str, str], Callable[[Any], Any]] = {}


HALF_X_RULE = ("f(x) = (x/2)(1 + g(x)) with g odd, of the sign of x and |g(x)| <= 2|x|: where the float64 "
               "reference is exactly x/2 on a float32 midpoint (x/2 subnormal, |x| < 2^-125), f(x) exceeds x/2 by "
               "(x/2) g(x) > 0, at most x^2 < 2^-250, far inside the 2^-150 to either neighbouring rounding boundary, "
               "so f(x) rounds to the float32 above x/2")
F32_TINY = np.float32(2.0 ** -149)  # the float32 spacing below 2^-126


@numba.njit(cache=True)
def half_x_ties(bits: Any, y64: Any, c32: Any, hard: Any) -> Any:
    """HALF_X_RULE on the hard cases of a function f(x) = (x/2)(1 + g(x)) with no symmetry: clears each one it
    decides. Returns [decided, of them where the float64 rounding (to even) was wrong]."""
    n = bits.size
    got = np.zeros(2, dtype=np.int64)
    for k in range(2 * n):
        if not hard[k]:
            continue
        x = np.float64(_u2f(bits[k % n] | (np.uint32(0x80000000) if k >= n else np.uint32(0))))
        y = y64[k]
        if y != 0.5 * x or not abs(x) < 2.0 ** -125:
            continue
        c = np.float32(y)
        if np.float64(c) == y:
            continue
        up = c if np.float64(c) > y else c + F32_TINY  # subnormal: the spacing is 2^-149 and the sum exact
        got[0] += 1
        if up != c:
            got[1] += 1
        c32[k] = up
        hard[k] = False
    return got


@dataclass
class Reference:
    """The correctly rounded float32 of f on the patterns and their negatives (first half +, second half -), with
    the float64 value, its float32 ulp, and how the hard cases were decided."""
    y64: Any
    c32: Any
    u: Any
    hard_bits: Any         # the inputs decided by mpmath (their bits)
    hard_flip: Any         # there, was the float64 rounding wrong?
    f64_err: float         # the largest float64 error seen at a hard case, in units of 2^-52 scale
    by_rule: Any           # HALF_X_RULE: [decided, float64 rounding wrong]


def reference(func: str, bits: Any) -> Reference:
    """Entry `func`'s reference on the positive patterns `bits` (uint32, sign bit clear) and their negatives."""
    ent = ENTRIES[func]
    n = bits.size
    y64 = np.empty(2 * n)
    c32 = np.empty(2 * n, dtype=np.float32)
    scale = np.empty(2 * n)
    u = np.empty(2 * n)
    hard = np.empty(2 * n, dtype=np.bool_)
    ref_pass(ent.ref, bits, ent.sym, y64, c32, scale, u, hard)
    by_rule = np.zeros(2, dtype=np.int64)
    if ent.half_x_ties:
        assert ent.sym == 0
        by_rule = half_x_ties(bits, y64, c32, hard)
    hi = np.flatnonzero(hard)
    hard_x = np.empty(hi.size, dtype=np.int64)
    flips = np.zeros(hi.size, dtype=np.bool_)
    f64err = 0.0
    if hi.size:
        mpf = _mp_funcs()[func]
        for j, k in enumerate(hi):
            b = int(bits[k % n]) | (0x80000000 if k >= n else 0)
            x = float(np.array([b], dtype=np.uint32).view(np.float32)[0])
            r32, yf = round32_mp(mpf, x, float(scale[k]))
            hard_x[j] = b
            flips[j] = r32 != c32[k]
            c32[k] = r32
            if ent.sym != 0 and k < n:
                c32[k + n] = -r32 if ent.sym == ODD else r32
            f64err = max(f64err, abs(yf - float(y64[k])) / (2.0 ** -52 * float(scale[k])))
    return Reference(y64, c32, u, hard_x, flips, f64err, by_rule)


def process_bits(func: str, libs: tuple[str, ...], bits: Any) -> dict[str, dict[str, Any]]:
    """Every figure of each library in `libs` for entry `func` on the positive patterns `bits` (uint32, sign bit
    clear) and their negatives (the reference computed once for all of them)."""
    import mpmath  # noqa: F401  (imported here so a worker fails early if it is missing)

    t0 = time.perf_counter()
    ent = ENTRIES[func]
    bits = np.ascontiguousarray(bits, dtype=np.uint32)
    n = bits.size
    ref = reference(func, bits)
    y64, c32, u = ref.y64, ref.c32, ref.u
    xs = np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)
    pcs = np.zeros(n, dtype=np.int64)
    if ent.piece_of == "erf":
        _pieces(_erf_piece(), bits, pcs)
    t_ref = time.perf_counter() - t0
    res = {}
    for lib in libs:
        t1 = time.perf_counter()
        acc = new_acc(len(ent.pieces))
        miss = np.empty(MISS_CAP, dtype=np.int64)
        miss_want = np.empty(MISS_CAP, dtype=np.uint32)
        miss_n = np.zeros(1, dtype=np.int64)
        r = _lib_fn(func, lib)(xs)
        stats_pass(bits, r, y64, c32, u, pcs, ent.sym, acc["cnt"], acc["maxu"], acc["argb"], acc["maxabs"],
                   acc["hist"], acc["bmax"], acc["nanst"], acc["symv"], acc["spn"], acc["spbad"], acc["submax"],
                   miss, miss_want, miss_n)
        k = int(min(miss_n[0], MISS_CAP))
        acc["miss"], acc["miss_want"], acc["miss_n"] = miss[:k].copy(), miss_want[:k].copy(), miss_n.copy()
        if lib in ent.twins:
            acc["twin_diff"][0] = _twin_diff(r, np.atleast_2d(_lib_fn(func, ent.twins[lib])(xs)))
        acc["hard_bits"] = ref.hard_bits
        acc["hard_flip"] = ref.hard_flip
        acc["hard_f64_err"] = np.array([ref.f64_err])
        if ent.half_x_ties:
            acc["half_x_ties"] = ref.by_rule
        acc["n_patterns"] = np.array([n], dtype=np.int64)
        acc["seconds"] = np.array([t_ref / len(libs) + time.perf_counter() - t1])
        res[lib] = acc
    return res


def _lib_fn(func: str, lib: str) -> Callable[[Any], Any]:
    key = (func, lib)
    if key not in _LIB_FNS:
        _LIB_FNS[key] = make_lib(func, lib)
    return _LIB_FNS[key]


def merge(total: dict[str, Any] | None, acc: dict[str, Any]) -> dict[str, Any]:
    """Fold one chunk's accumulators into the running total (sums, maxima; the first maximum keeps its input)."""
    if total is None:
        return {k: v.copy() for k, v in acc.items()}
    for k in ("cnt", "hist", "nanst", "symv", "spn", "spbad", "n_patterns", "seconds", "twin_diff", "half_x_ties"):
        if k in acc:
            total[k] = total[k] + acc[k]
    upd = acc["maxu"] > total["maxu"]
    total["maxu"] = np.where(upd, acc["maxu"], total["maxu"])
    total["argb"] = np.where(upd, acc["argb"], total["argb"])
    for k in ("maxabs", "bmax", "submax", "hard_f64_err"):
        total[k] = np.maximum(total[k], acc[k])
    for k in ("hard_bits", "hard_flip"):
        total[k] = np.concatenate([total[k], acc[k]])
    if "miss_n" in total and "miss_n" in acc:  # chunks written before the lists existed have none
        total["miss_n"] = total["miss_n"] + acc["miss_n"]
        if total["miss"].size < MISS_LISTED:  # past that, a list is no one's use and only slows the merge
            total["miss"] = np.concatenate([total["miss"], acc["miss"]])[:MISS_LISTED]
            total["miss_want"] = np.concatenate([total["miss_want"], acc["miss_want"]])[:MISS_LISTED]
    else:
        for k in ("miss", "miss_want", "miss_n"):
            total.pop(k, None)
    return total


# ------------------------------------------------------------------------------------------------------------------
# tasks: a local process pool or a Dask cluster; chunk files; resume
# ------------------------------------------------------------------------------------------------------------------

def worker_init() -> None:
    """One thread per worker process (torch's vectorised loops then never split a range)."""
    import torch

    torch.set_num_threads(1)
    numba.set_num_threads(1)


def libm_mode() -> str:
    from bendtorch.impl.kernels import libm
    return str(libm.MODE)


Task = tuple[str, tuple[str, ...], Any]


def run_task(task: Task) -> dict[str, dict[str, Any]]:
    """One task (function, libraries, positive patterns: an array or a (lo, hi) range) -> each library's
    accumulators. An impl library checks that this process's impl.kernels.libm runs the functions it names."""
    func, libs, pats = task
    for lib in libs:
        want = LIB_LIBM_MODE.get(lib)
        if want is not None and libm_mode() != want:
            raise RuntimeError(f"library {lib} needs a worker started with BENDTORCH_LIBM={want} "
                               f"(this one runs {libm_mode()})")
    bits = np.arange(pats[0], pats[1], dtype=np.uint32) if isinstance(pats, tuple) else pats
    return process_bits(func, libs, bits)


def _pool_map(tasks: list[Task], workers: int, mode: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The tasks' results (in completion order) from `workers` spawned processes whose BENDTORCH_LIBM is `mode`."""
    import multiprocessing as mp

    old = os.environ.get("BENDTORCH_LIBM")
    if mode is not None:
        os.environ["BENDTORCH_LIBM"] = mode
    try:
        ctx = mp.get_context("spawn")
        pool = ctx.Pool(workers, initializer=worker_init)
    finally:
        if old is None:
            os.environ.pop("BENDTORCH_LIBM", None)
        else:
            os.environ["BENDTORCH_LIBM"] = old
    with pool:
        yield from pool.imap_unordered(_task_with_key, [(i, t) for i, t in enumerate(tasks)])


def _task_with_key(it: tuple[int, Task]) -> tuple[int, dict[str, dict[str, Any]]]:
    i, t = it
    return i, run_task(t)


def _dask_map(tasks: list[Task], address: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The tasks' results on a Dask cluster: `address` is a scheduler's address, or "local" for a LocalCluster of
    one single-threaded worker process per core."""
    import dask.distributed

    dd: Any = dask.distributed
    Client, LocalCluster, as_completed = dd.Client, dd.LocalCluster, dd.as_completed
    cluster: Any = None
    if address == "local":
        cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        client.run(worker_init)
        futs = client.map(_task_with_key, list(enumerate(tasks)), pure=False)
        for fut in as_completed(futs):
            yield fut.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def task_mode(t: Task) -> str | None:
    """The BENDTORCH_LIBM a task's libraries need (None: any)."""
    modes = {LIB_LIBM_MODE[lib] for lib in t[1] if lib in LIB_LIBM_MODE}
    assert len(modes) <= 1, t[1]
    return modes.pop() if modes else None


def lib_groups(libs: list[str]) -> list[tuple[str, ...]]:
    """The libraries grouped by the BENDTORCH_LIBM they need (one task runs one group on one chunk, computing the
    reference once for the group); the libraries that need none join the first group."""
    groups: dict[str | None, list[str]] = {}
    for lib in libs:
        groups.setdefault(LIB_LIBM_MODE.get(lib), []).append(lib)
    free = groups.pop(None, [])
    out = [list(g) for g in groups.values()] or [[]]
    out[0] += free
    return [tuple(g) for g in out]


def execute(tasks: list[Task], workers: int, dask: str | None,
            on_result: Callable[[int, dict[str, dict[str, Any]]], None], progress: bool, desc: str) -> None:
    """Run the tasks (a local pool per BENDTORCH_LIBM their libraries need), calling on_result(i, {lib: acc})
    for each as it completes; a progress bar counts inputs times libraries."""
    from tqdm import tqdm

    def size(t: Task) -> int:
        p = t[2]
        return 2 * len(t[1]) * (p[1] - p[0] if isinstance(p, tuple) else int(p.size))

    bar = tqdm(total=sum(size(t) for t in tasks), unit="in", unit_scale=True, smoothing=0.05, desc=desc,
               disable=not progress, file=sys.stderr)
    groups: dict[str | None, list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault(task_mode(t), []).append(i)
    for mode, idx in groups.items():
        sub = [tasks[i] for i in idx]
        if dask:
            it: Iterable[tuple[int, dict[str, Any]]] = _dask_map(sub, dask)
        elif workers <= 1 and (mode is None or mode == libm_mode()):
            worker_init()
            it = ((j, run_task(t)) for j, t in enumerate(sub))
        else:
            it = _pool_map(sub, max(1, workers), mode)
        for j, accs in it:
            on_result(idx[j], accs)
            bar.update(size(tasks[idx[j]]))
    bar.close()


def _chunk_path(d: Path, lo: int) -> Path:
    return d / f"chunk_{lo:08x}.npz"


def save_npz_atomic(path: Path, acc: dict[str, Any]) -> None:
    """Arrays into a compressed .npz at path, atomically (records.durable)."""
    from bendtorch.records.durable import write_npz
    write_npz(path, acc)


def _load(path: Path) -> dict[str, Any]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def sweep_range(out: Path, func: str, libs: list[str], lo: int, hi: int, chunk: int, workers: int,
                dask: str | None = None, progress: bool = True) -> dict[str, dict[str, Any]]:
    """Each library on the positive patterns [lo, hi) and their negatives, in chunks, skipping the chunks already
    on disk (OUT/FUNCTION/chunks/LIB/); returns each library's merged accumulators."""
    dirs = {}
    tasks: list[Task] = []
    for lib in libs:
        d = out / func / "chunks" / lib
        d.mkdir(parents=True, exist_ok=True)
        manifest = {"version": VERSION, "function": func, "library": lib, "lo": lo, "hi": hi, "chunk": chunk}
        mpath = d / "manifest.json"
        if mpath.exists():
            old = json.loads(mpath.read_text())
            if old != manifest:
                raise UsageErrorLike(f"{d} holds chunks of another sweep ({old}); use --fresh or another --out")
        else:
            from bendtorch.records.durable import write_json as write
            write(mpath, manifest)
        from bendtorch.records.durable import TMP_PREFIX
        for tmp in d.glob(TMP_PREFIX + "chunk_*"):
            tmp.unlink()
        dirs[lib] = d
    for group in lib_groups(libs):
        for s in range(lo, hi, chunk):
            todo = tuple(lib for lib in group if not _chunk_path(dirs[lib], s).exists())
            if todo:
                tasks.append((func, todo, (s, min(s + chunk, hi))))

    def save(i: int, accs: dict[str, dict[str, Any]]) -> None:
        s = tasks[i][2][0]
        for lib, acc in accs.items():
            save_npz_atomic(_chunk_path(dirs[lib], s), acc)

    execute(tasks, workers, dask, save, progress, f"sweep {func}")
    res = {}
    for lib in libs:
        total: dict[str, Any] | None = None
        for s in range(lo, hi, chunk):
            total = merge(total, _load(_chunk_path(dirs[lib], s)))
        assert total is not None
        res[lib] = total
    return res


def sweep_patterns(func: str, libs: list[str], pats: Any, workers: int, dask: str | None = None,
                   progress: bool = True, pieces: int = 4) -> dict[str, dict[str, Any]]:
    """Each library on the given positive patterns and their negatives (no files): the sample mode."""
    parts = np.array_split(pats, max(1, min(pieces, pats.size // 32)))
    tasks = [(func, g, p) for g in lib_groups(libs) for p in parts]
    got: dict[int, dict[str, dict[str, Any]]] = {}
    execute(tasks, workers, dask, lambda i, accs: got.__setitem__(i, accs), progress, f"sweep {func} (sample)")
    res = {}
    for lib in libs:
        total: dict[str, Any] | None = None
        for i, t in enumerate(tasks):
            if lib in t[1]:
                total = merge(total, got[i][lib])
        assert total is not None
        res[lib] = total
    return res


class UsageErrorLike(Exception):
    """A user's mistake found by the library (the command line turns it into its UsageError)."""


# ------------------------------------------------------------------------------------------------------------------
# sample mode's patterns
# ------------------------------------------------------------------------------------------------------------------

def special_patterns() -> Any:
    """The positive bit patterns of special values: zeros, subnormal ends, the normal range's ends, the erf pieces'
    boundaries and their neighbours, values where functions change regime, inf and NaNs with payloads."""
    from bendtorch.impl.kernels.erf import BOUNDS

    vals = [0.0, 1e-45, 2.8e-45, 1e-40, 1.1754942e-38, 1.17549435e-38, 1e-30, 2.0 ** -12, 1e-3, 0.1, 0.5,
            1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 3.9192, 3.9193, 4.0, 6.0, 10.0, 1e30, 3.4028235e38, np.inf,
            88.72283, 88.72284, 87.33654, 103.97208, 104.0, 9.01, 0.7853982, 1.5707964, 3.1415927, 6.2831855,
            2.3994, 0.75179, 201.0, 1e4, 1e6]
    fs = [np.float32(v) for v in vals]
    for b in BOUNDS:
        x = np.float32(b)
        fs += [x, np.nextafter(x, np.float32(0)), np.nextafter(np.nextafter(x, np.float32(0)), np.float32(0)),
               np.nextafter(x, np.float32(9)), np.nextafter(np.nextafter(x, np.float32(9)), np.float32(9))]
    bits = np.array(fs, dtype=np.float32).view(np.uint32)
    nans = np.array([0x7F800001, 0x7FBFFFFF, 0x7FC00000, 0x7FC12345, 0x7FFFFFFF], dtype=np.uint32)
    return np.unique(np.concatenate([bits, nans]))


def sample_patterns(n: int, with_specials: bool = True) -> Any:
    """n spread inputs: n/2 positive patterns evenly spaced over [0, 2^31) (each also negated), plus the special
    values; the count padded with further spread patterns to a multiple of 32 (torch's whole-vector loops)."""
    m = max(1, n // 2)
    spread = np.unique((np.arange(m, dtype=np.float64) * (FULL_HI / m)).astype(np.int64)).astype(np.uint32)
    allb = np.unique(np.concatenate([spread, special_patterns()])) if with_specials else spread
    pad = (-allb.size) % 32
    k = 1
    while pad:
        extra = np.setdiff1d(np.arange(k * 7919, (k + 1) * 7919 * 64, 7919 * 2, dtype=np.uint32), allb)[:pad]
        allb = np.unique(np.concatenate([allb, extra]))
        pad = (-allb.size) % 32
        k += 1
    return allb


# ------------------------------------------------------------------------------------------------------------------
# figures, JSON and plots
# ------------------------------------------------------------------------------------------------------------------

def _f32(bits: int) -> float:
    return float(np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0])


def figures(tot: dict[str, Any], piece: int | None = None) -> dict[str, Any]:
    """One library's figures (over every piece, or one)."""
    cnt = tot["cnt"] if piece is None else tot["cnt"][:, piece:piece + 1]
    maxu = tot["maxu"] if piece is None else tot["maxu"][:, piece:piece + 1]
    c = cnt.sum(axis=(0, 1))
    k = np.unravel_index(int(np.argmax(maxu)), maxu.shape)
    argb = (tot["argb"] if piece is None else tot["argb"][:, piece:piece + 1])[k]
    n = int(c[C_N])
    out: dict[str, Any] = {
        "finite_inputs": n,
        "max_ulp": float(maxu[k]) if n else 0.0,
        "max_ulp_at": _f32(int(argb)) if n else None,
        "max_ulp_at_bits": f"0x{int(argb) & 0xFFFFFFFF:08x}" if n else None,
        "correctly_rounded": int(c[C_CR]),
        "correctly_rounded_fraction": c[C_CR] / n if n else 1.0,
        "within_one_ulp": int(c[C_W1]),
        "within_one_ulp_fraction": c[C_W1] / n if n else 1.0,
        "faithful_fraction": c[C_FAITH] / n if n else 1.0,
    }
    if piece is not None:
        return out
    spn, spbad = tot["spn"], tot["spbad"]
    out.update({
        "inputs": 2 * int(tot["n_patterns"][0]),
        "nan_inputs": int(tot["nanst"][0] + tot["nanst"][1]),
        "nan_in_nan_out": bool(tot["nanst"][1] == 0),
        "nan_inputs_giving_a_number": int(tot["nanst"][1]),
        "numbers_giving_nan": int(tot["nanst"][2]),
        "infinities": {"inputs": int(spn[SP_INF]), "wrong": int(spbad[SP_INF])},
        "zeros": {"inputs": int(spn[SP_ZERO]), "wrong": int(spbad[SP_ZERO])},
        "subnormals": {"inputs": int(spn[SP_SUB]), "not_correctly_rounded": int(spbad[SP_SUB]),
                       "max_ulp": float(tot["submax"][0]) if spn[SP_SUB] else None},
        "max_abs_error_where_not_correctly_rounded": float(tot["maxabs"][0]),
        "per_sign": {s: {"correctly_rounded_fraction": float(cnt[i].sum(axis=0)[C_CR] /
                                                             max(1, cnt[i].sum(axis=0)[C_N])),
                         "max_ulp": float(maxu[i].max())} for i, s in enumerate(("positive", "negative"))},
        "steps_from_correctly_rounded": {"0": int(c[C_CR]), "1": int(c[C_W1] - c[C_CR]), "more": int(n - c[C_W1])},
        "chunk_seconds_total": float(tot["seconds"][0]),
    })
    out["specials_right"] = bool(out["nan_in_nan_out"] and spbad[SP_INF] == 0 and spbad[SP_ZERO] == 0)
    return out


def build_report(func: str, tots: dict[str, dict[str, Any]], mode: str, command: str,
                 workers: int | str) -> dict[str, Any]:
    ent = ENTRIES[func]
    libs: dict[str, Any] = {}
    for lib, tot in tots.items():
        f = figures(tot)
        if ent.sym:
            f["odd_symmetric" if ent.sym == ODD else "even_symmetric"] = bool(tot["symv"][0] == 0)
            f["symmetry_violations"] = int(tot["symv"][0])
        if len(ent.pieces) > 1:
            f["per_piece"] = {f"{p} {ent.pieces[p]}": figures(tot, p) for p in range(len(ent.pieces))}
        if lib in ent.twins:
            f["twin"] = {"of": ent.twins[lib], "note": LIB_NOTES.get(ent.twins[lib], ""),
                         "bit_differences": int(tot["twin_diff"][0])}
        f["library"] = LIB_NOTES.get(lib, lib)
        if "miss_n" in tot:
            listed = np.sort(tot["miss"].astype(np.int64) & 0xFFFFFFFF)
            f["misrounded_inputs"] = {"count": int(tot["miss_n"][0]), "listed": int(listed.size),
                                      "complete": bool(listed.size == tot["miss_n"][0]),
                                      "first": [f"0x{int(b):08x}" for b in listed[:10]]}
        if lib in ent.claims:
            f["claims"] = check_claims(ent.claims[lib], f)
        libs[lib] = f
    first = next(iter(tots.values()))
    hb, fl = first["hard_bits"], first["hard_flip"]
    per = "patterns (x >= 0; -x mirrors)" if ent.sym else "inputs"
    return {
        "function": func,
        "title": ent.title,
        "mode": mode,
        "command": command,
        "machine": machine(workers, tots),
        "reference": ("float64 formula (glibc) rounded to float32, every input within 2^-46 of its scale from a "
                      "float32 rounding boundary decided by mpmath"),
        "symmetry": {ODD: "odd", EVEN: "even"}.get(ent.sym),
        "fractions_are_of": "finite inputs (NaN and +-inf are checked separately)",
        "hard_cases": {
            "count": int(hb.size), "counted_over": per, "margin_relative": REL_MARGIN,
            "float64_rounding_was_wrong": int(fl.sum()),
            "largest_float64_error_in_units_of_2^-52_scale": float(first["hard_f64_err"][0]),
            "first": [{"x": _f32(int(b)), "bits": f"0x{int(b) & 0xFFFFFFFF:08x}", "float64_rounding_wrong": bool(f)}
                      for b, f in list(zip(hb, fl))[:20]],
            **({"decided_by_rule": {"rule": HALF_X_RULE, "count": int(first["half_x_ties"][0]),
                                    "float64_rounding_was_wrong": int(first["half_x_ties"][1])}}
               if "half_x_ties" in first else {}),
        },
        "libraries": libs,
    }


def check_claims(claims: dict[str, Any], f: dict[str, Any]) -> dict[str, Any]:
    """Each claim against the measured figures: {claim, measured, holds}."""
    out: dict[str, Any] = {"source": claims.get("source")}
    for k, v in claims.items():
        if k == "source":
            continue
        if k == "max_ulp_at_most":
            out[k] = {"claim": v, "measured": f["max_ulp"], "holds": f["max_ulp"] <= v}
        elif isinstance(v, tuple):
            out[k] = {"claim": v[0], "tolerance": v[1], "measured": f[k], "holds": abs(f[k] - v[0]) <= v[1]}
        else:
            out[k] = {"claim": v, "measured": f[k], "holds": f[k] == v}
    return out


def machine(workers: int | str, libs: Iterable[str] = ()) -> dict[str, Any]:
    """The machine record (records.machine) with the measured libraries' facts and the workers."""
    from bendtorch.records.machine import machine as record

    probes = {lib.split("_")[0] for lib in libs} & {"torch", "numpy", "clib"}
    return record(sorted(probes), workers=workers)


def plots(func: str, tots: dict[str, dict[str, Any]], out: Path, title: str, kind: str = "full") -> list[str]:
    """The largest ulp error against |x| per sign (binned over the float32 line) and the ulp-error histogram, one
    line per library; returns the PNG names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lows = np.arange(NXB, dtype=np.int64) << XSHIFT
    with np.errstate(invalid="ignore"):
        xl = lows.astype(np.uint32).view(np.float32).astype(np.float64)
    fig, axes = plt.subplots(1, 3, figsize=(18, 5))
    for j, (lib, tot) in enumerate(tots.items()):
        for s in range(2):
            y = tot["bmax"][s]
            ok = (y >= 0) & np.isfinite(xl) & (xl > 0)
            axes[s].step(xl[ok], np.maximum(y[ok], 1e-3), where="post", label=lib, lw=1.0, color=f"C{j}")
        h = tot["hist"]
        edges = np.concatenate([np.arange(NLIN) / 100.0,
                                np.ldexp(1.0 + (np.arange(NLOG) % 4) / 4.0, 1 + np.arange(NLOG) // 4), [np.inf]])
        xs = edges.copy()
        xs[-1] = 2 * edges[-2]
        nz = h > 0
        axes[2].plot(np.maximum(xs[nz], 1e-3), h[nz], ".-", label=lib, lw=0.8, ms=3, color=f"C{j}")
    for s in range(2):
        axes[s].set_xscale("log")
        axes[s].set_yscale("log")
        axes[s].axhline(0.5, color="grey", ls=":", lw=0.8)
        axes[s].axhline(1.0, color="grey", ls="--", lw=0.8)
        axes[s].set_xlabel("|x|, x > 0" if s == 0 else "|x|, x < 0")
        axes[s].set_ylabel("largest ulp error in the bin (1/32 binade; 0 drawn at 1e-3)")
        axes[s].grid(alpha=0.3)
        axes[s].legend(fontsize=8)
    axes[2].set_xscale("log")
    axes[2].set_yscale("log")
    axes[2].set_xlabel("ulp error (0.01 bins to 2, then quarter octaves; last bin inf)")
    axes[2].set_ylabel("inputs")
    axes[2].grid(alpha=0.3)
    axes[2].legend(fontsize=8)
    fig.suptitle(f"{ENTRIES[func].title}: ulp error against the correctly rounded float32 ({title})")
    fig.tight_layout()
    name = f"{func}_ulp_{kind}.png"
    from bendtorch.records.durable import save_figure
    save_figure(fig, out / name, dpi=100)
    return [name]


def write_json(path: Path, rep: dict[str, Any]) -> None:
    from bendtorch.records.durable import write_json as write
    write(path, {"schema_version": SCHEMA_VERSION, **rep})


# ------------------------------------------------------------------------------------------------------------------
# the run: arguments checked by bendtorch/commands/sweep.py, work here
# ------------------------------------------------------------------------------------------------------------------

def sweep(func: str, libs: list[str] | None, out: Path, sample: int | None = None, lo: int = 0, hi: int = FULL_HI,
          chunk: int = 1 << 21, workers: int = 0, dask: str | None = None, fresh: bool = False,
          plot: bool = True, progress: bool = True, command: str = "") -> dict[str, Any]:
    """Sweep entry `func` with `libs` (default: all of the entry's); writes OUT/FUNCTION/sweep_full.json,
    sweep_sample.json or sweep_range_LO_HI.json (merged with the libraries of an earlier run of the same mode), the
    plots and OUT/ATLAS.md; returns the report."""
    t0 = time.perf_counter()
    ent = ENTRIES[func]
    libs = list(libs or ent.libs)
    workers = workers or os.cpu_count() or 1
    d = out / func
    d.mkdir(parents=True, exist_ok=True)
    if sample is not None:
        kind = "sample"
        tots = sweep_patterns(func, libs, sample_patterns(sample), workers, dask, progress)
        n = 2 * int(next(iter(tots.values()))["n_patterns"][0])
        mode = f"sample ({n} inputs: {sample} spread plus the special values)"
    else:
        if fresh and (d / "chunks").exists():
            import shutil
            shutil.rmtree(d / "chunks")
        tots = sweep_range(out, func, libs, lo, hi, chunk, workers, dask, progress)
        full = lo == 0 and hi == FULL_HI
        mode = "full (all 2^32 bit patterns)" if full else f"range [0x{lo:08x}, 0x{hi:08x}) and negatives"
        kind = "full" if full else f"range_{lo:08x}_{hi:08x}"
    rep = build_report(func, tots, mode, command or f"bendtorch sweep {func}", dask or workers)
    rep["seconds"] = time.perf_counter() - t0
    path = d / f"sweep_{kind}.json"
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("mode") == mode:
            merged = {**old["libraries"], **rep["libraries"]}
            rep["libraries"] = {k: merged[k] for k in sorted(merged, key=_atlas_rank)}
            rep["runs"] = old.get("runs", [{"command": old.get("command"), "seconds": old.get("seconds")}])
            if not plot and "plots" in old:
                rep["plots"] = old["plots"]      # a run without plots keeps the earlier run's
    rep.setdefault("runs", []).append({"command": rep["command"], "libraries": libs, "seconds": rep["seconds"]})
    if plot:
        rep["plots"] = plots(func, tots, d, mode.split(" (")[0], kind)
    rep["json"] = str(path)
    write_json(path, rep)
    write_atlas(out)
    return rep


def write_atlas(out: Path) -> Path:
    """OUT/ATLAS.md: the atlas table of every function swept into OUT so far (rewritten after each sweep)."""
    from bendtorch.records.durable import write_text
    path = Path(out) / "ATLAS.md"
    write_text(path, atlas_markdown(Path(out), link_prefix="."))
    return path


def sample(func: str, n: int, out: Path, libs: list[str] | None = None, command: str = "") -> dict[str, Any]:
    """`sweep` in sample mode (n spread inputs plus the special values) in this process: one worker, no plots, no
    progress bar, the caller's numba and torch thread counts restored afterwards (the worker sets one each). Writes
    OUT/FUNCTION/sweep_sample.json; returns the report."""
    import torch

    threads = numba.get_num_threads(), torch.get_num_threads()
    try:
        return sweep(func, libs, out, sample=n, workers=1, plot=False, progress=False,
                     command=command or f"bendtorch sweep {func} --sample {n}")
    finally:
        numba.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])


RESULTS = Path(__file__).resolve().parent / "results" / "atlas"  # the committed results, one folder per entry


def results_json(func: str, kind: str = "full", results_dir: Path = RESULTS) -> Path:
    """RESULTS_DIR/FUNCTION/sweep_KIND.json: where `bendtorch sweep FUNCTION --out RESULTS_DIR` writes (kind full
    or sample)."""
    return Path(results_dir) / func / f"sweep_{kind}.json"


def pct(frac: float) -> str:
    """A fraction as a percentage with 4 decimals, more where needed so that only a fraction of exactly 1 reads
    100 (1217 misrounded inputs in 2^32 read 99.99997, not 100.0000)."""
    if frac == 1.0:
        return "100"
    for d in range(4, 12):
        t = f"{100 * frac:.{d}f}"
        if not t.startswith("100"):
            return t
    return f"{100 * frac:.12f}"


def summary_line(rep: dict[str, Any], libs: list[str]) -> str:
    parts = []
    for lib in libs:
        f = rep["libraries"][lib]
        parts.append(f"{lib}: max {f['max_ulp']:.4g} ulp, CR {pct(f['correctly_rounded_fraction'])}%, "
                     f"within 1 {pct(f['within_one_ulp_fraction'])}%, specials "
                     f"{'right' if f['specials_right'] else 'WRONG'}")
    return f"{rep['function']} ({rep['mode']}, {rep['seconds']:.1f} s)\n  " + "\n  ".join(parts)


# ------------------------------------------------------------------------------------------------------------------
# the atlas: one table from the per-function JSON files
# ------------------------------------------------------------------------------------------------------------------

ATLAS_LIBS = ("impl", "impl_raw", "impl_clib", "torch", "torch_scalar", "torch_aten", "numpy", "clib",
              "torch_gelu_erf_aten")


def _atlas_rank(lib: str) -> tuple[int, str]:
    """A library's place in a function's JSON and the atlas: ATLAS_LIBS' order, then any other by name."""
    return (ATLAS_LIBS.index(lib), "") if lib in ATLAS_LIBS else (len(ATLAS_LIBS), lib)


def atlas_markdown(results_dir: Path, link_prefix: str | None = None) -> str:
    """REPORT.md's atlas section from RESULTS_DIR/FUNCTION/sweep_full.json and sweep_sample.json: one row per
    function and library (max ulp, correctly rounded %, within one ulp %, specials right; the full sweep where there
    is one, else the sample, marked), then the plots, linked as LINK_PREFIX/FUNCTION/NAME.png (default: RESULTS_DIR
    as given)."""
    results_dir = Path(results_dir)
    prefix = (link_prefix if link_prefix is not None else str(results_dir)).rstrip("/")
    L = ["## The float32 function atlas\n",
         "Every function against its correctly rounded float32 value (float64 reference, mpmath on the inputs too "
         "close to a rounding boundary), `bendtorch sweep FUNCTION`. inputs: \"all 2^32\" = every float32 bit "
         "pattern; \"sample N\" = N spread inputs plus the special values only (not exhaustive). CR = correctly "
         "rounded, of finite inputs; specials = NaN in NaN out and the exact bits at +-inf and +-0.\n",
         "| function | library | inputs | max ulp | at x | CR % | within 1 ulp % | specials |",
         "|---|---|---|---|---|---|---|---|"]
    plots_: list[str] = []
    meta: dict[str, Any] = {}
    commands: list[str] = []
    twins: list[str] = []
    for func in ENTRIES:
        reps = []
        for kind in ("full", "sample"):
            p = results_dir / func / f"sweep_{kind}.json"
            if p.exists():
                reps.append(json.loads(p.read_text()))
        if not reps:
            continue
        rows: dict[str, tuple[str, dict[str, Any]]] = {}
        for rep in reps:
            meta = rep.get("machine", meta)
            n_in = next(iter(rep["libraries"].values()))["inputs"]
            tag = "all 2^32" if rep["mode"].startswith("full") else f"sample {n_in}"
            commands += [r["command"] for r in rep.get("runs", [])]
            for lib, f in rep["libraries"].items():
                if lib not in rows and "twin" in f:
                    of = f["twin"]["of"]
                    twins.append(f"{func}: {lib} against {of} ({LIB_NOTES.get(of) or f['twin']['note']}), {tag} "
                                 f"inputs: {f['twin']['bit_differences']} bit differences")
                rows.setdefault(lib, (tag, f))
            plots_ += [f"{func}/{n}" for n in rep.get("plots", [])]
        order = [x for x in ATLAS_LIBS if x in rows] + [x for x in rows if x not in ATLAS_LIBS]
        for lib in order:
            tag, f = rows[lib]
            sp = "yes" if f["specials_right"] else "no"
            L.append(f"| {ENTRIES[func].title} | {lib} | {tag} | {f['max_ulp']:.4g} | {f['max_ulp_at']!r} | "
                     f"{pct(f['correctly_rounded_fraction'])} | {pct(f['within_one_ulp_fraction'])} | "
                     f"{sp} |")
    if twins:
        L.append("\nTwins, two implementations that must give the same bits:\n")
        L += [f"- {t}" for t in twins]
    if meta:
        from bendtorch.records.machine import describe
        L.append(f"\nMeasured on: {describe(meta, ['torch', 'numpy', 'clib'])}; C library {meta.get('c_library')}. "
                 "Libraries: " + "; ".join(f"{k}: {v}" for k, v in LIB_NOTES.items()) + ".\n")
    if commands:
        L.append("Commands: " + ", ".join(f"`{c}`" for c in dict.fromkeys(commands)) + "\n")
    L += [f"![{p}]({prefix}/{p})" for p in plots_]
    return "\n".join(L) + "\n"
