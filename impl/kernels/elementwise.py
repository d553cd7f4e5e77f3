"""Element-wise activations (main.bend lines 737-761 and 1046-1217): each value f(x) and each input gradient d(dy, v)
as the seed writes them, every operation rounded once to float32 in the seed's order (no fused multiply-add: numba
without fastmath never contracts), exp and tanh impl.kernels.libm's exp32 / tanh32 (impl's portable functions unless
BENDTORCH_LIBM=clib selects the C library's expf / tanhf).

    ReLU     f = x unless x < 0 (relu(-0) = -0, relu(NaN) = NaN)       d(dy, y) = +0 where y <= 0, else dy
    Sigmoid  f = 1 / (1 + exp(-x))                                     d(dy, y) = (dy * (1 - y)) * y
    Tanh     f = tanh(x)                                               d(dy, y) = dy * (1 - y*y)
    SiLU     f = x / (1 + exp(-x))                                     d(dy, x) = (dy*s) * (1 + x*(1 - s)), s = sigmoid(x)
    GELU     f = (0.5*x) * (1 + tanh(inner)),
             inner = 0.7978845608028654 * (x + 0.044715 * ((x*x)*x))   d(dy, x): see `gelu_d`
    GELUErf  f = (x*0.5) * (1 + erf(x * 0.7071067811865476))           d(dy, x) = dy * (cdf + x*pdf)

ReLU, Sigmoid and Tanh save their output (ActOut, line 749), so d takes y; SiLU, GELU and GELUErf save their input
(ActIn, line 1052), so d takes x. The constants are np.float32 of the seed's decimal literals; the seed's constant
product (3.0 * 0.044715 : F32) (line 1098) is rounded once to float32, as the seed computes it.

The loops (`act_fwd`, `act_bwd`) are flat over the n*c numbers, in index order; each output depends on its own
input only, so they run under prange. The activation is chosen by its entry in the table `ACTS` (a code or a name;
any other raises). The plain twins (`act_fwd_plain`, `act_bwd_plain`) compute the same expressions with numpy float32
array operations (one rounding each) and the same functions through `impl.kernels.libm`.

Every kernel is compiled with error_model="numpy": a float division by zero gives the IEEE infinity or NaN, as the
seed's F32 division does, instead of numba's default ZeroDivisionError (same bits otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, cast

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import sized

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.erf import erf32, erf_plain

F = npt.NDArray[np.float32]
F32 = np.float32

RELU = 0
SIGMOID = 1
TANH = 2
SILU = 3
GELU = 4
GELU_ERF = 5

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_NEG_HALF = np.float32(-0.5)                       # F32.neg(0.5), line 1213
_SQRT_2_OVER_PI = np.float32(0.7978845608028654)   # lines 1089, 1098
_GELU_A = np.float32(0.044715)                     # line 1089
_GELU_3A = np.float32(np.float32(3.0) * _GELU_A)   # (3.0 * 0.044715 : F32), line 1098, rounded once
_INV_SQRT2 = np.float32(0.7071067811865476)        # lines 1207, 1210
_INV_SQRT_2PI = np.float32(0.3989422804014327)     # line 1213


# ---------------------------------------------------------------------------------------------------------------
# the scalar functions, forward and backward side by side
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def relu_v(x: np.float32) -> np.float32:
    """relu_v, main.bend line 754: pick(x < 0, 0, x)."""
    return _ZERO if x < _ZERO else x


@numba.njit(cache=True, error_model="numpy")
def relu_d(dy: np.float32, y: np.float32) -> np.float32:
    """relu_d, line 757: pick(y <= 0, 0, dy) (PyTorch's threshold_backward: NaN passes)."""
    return _ZERO if y <= _ZERO else dy


@numba.njit(cache=True, error_model="numpy", inline="always")
def _sigmoid_e(e: np.float32) -> np.float32:
    """sigmoid given e = exp(-x): 1 / (1 + e)."""
    return _ONE / (_ONE + e)


@numba.njit(cache=True, error_model="numpy")
def sigmoid_v(x: np.float32) -> np.float32:
    """sigmoid_v, line 1055: 1 / (1 + exp(-x))."""
    return _sigmoid_e(libm.exp32(-x))


@numba.njit(cache=True, error_model="numpy")
def sigmoid_d(dy: np.float32, y: np.float32) -> np.float32:
    """sigmoid_d, line 1059: (dy * (1 - y)) * y."""
    return (dy * (_ONE - y)) * y


@numba.njit(cache=True, error_model="numpy")
def tanh_v(x: np.float32) -> np.float32:
    """tanh_v, line 1065: tanhf(x)."""
    return np.float32(libm.tanh32(x))


@numba.njit(cache=True, error_model="numpy")
def tanh_d(dy: np.float32, y: np.float32) -> np.float32:
    """tanh_d, line 1068: dy * (1 - (y*y))."""
    return dy * (_ONE - y * y)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _silu_e(x: np.float32, e: np.float32) -> np.float32:
    """SiLU given e = exp(-x): x / (1 + e)."""
    return x / (_ONE + e)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _silu_d_e(dy: np.float32, x: np.float32, e: np.float32) -> np.float32:
    """SiLU's gradient given e = exp(-x): s = 1 / (1 + e); (dy*s) * (1 + (x*(1 - s)))."""
    s = _sigmoid_e(e)
    return (dy * s) * (_ONE + x * (_ONE - s))


@numba.njit(cache=True, error_model="numpy")
def silu_v(x: np.float32) -> np.float32:
    """silu_v, line 1076: x / (1 + exp(-x)) (PyTorch's CPU kernel)."""
    return _silu_e(x, libm.exp32(-x))


@numba.njit(cache=True, error_model="numpy")
def silu_d(dy: np.float32, x: np.float32) -> np.float32:
    """silu_d, line 1079: s = sigmoid_v(x); (dy*s) * (1 + (x*(1 - s)))."""
    return _silu_d_e(dy, x, libm.exp32(-x))


@numba.njit(cache=True, error_model="numpy")
def gelu_inner(x: np.float32) -> np.float32:
    """gelu_inner, line 1088: 0.7978845608028654 * (x + (0.044715 * ((x*x)*x)))."""
    return _SQRT_2_OVER_PI * (x + _GELU_A * ((x * x) * x))


@numba.njit(cache=True, error_model="numpy")
def gelu_v(x: np.float32) -> np.float32:
    """gelu_v, line 1091: (0.5*x) * (1 + tanh(gelu_inner(x)))."""
    return (_HALF * x) * (_ONE + libm.tanh32(gelu_inner(x)))


@numba.njit(cache=True, error_model="numpy")
def gelu_d(dy: np.float32, x: np.float32) -> np.float32:
    """gelu_d, line 1094: th = tanh(inner); left = 0.5*x; dleft = 0.5*(1 + th);
    dright = (left*(1 - th*th)) * (0.7978845608028654 * (1 + (3*0.044715)*(x*x))); dy * (dleft + dright)."""
    th = libm.tanh32(gelu_inner(x))
    left = _HALF * x
    dleft = _HALF * (_ONE + th)
    dright = (left * (_ONE - th * th)) * (_SQRT_2_OVER_PI * (_ONE + _GELU_3A * (x * x)))
    return dy * (dleft + dright)


@numba.njit(cache=True, error_model="numpy")
def gelu_erf_cdf(x: np.float32) -> np.float32:
    """gelu_erf_cdf, line 1206: 0.5 * (1 + erf(x * 0.7071067811865476))."""
    return _HALF * (_ONE + erf32(x * _INV_SQRT2))


@numba.njit(cache=True, error_model="numpy")
def gelu_erf_v(x: np.float32) -> np.float32:
    """gelu_erf_v, line 1209: (x*0.5) * (1 + erf(x * 0.7071067811865476)) (PyTorch's CPU order)."""
    return (x * _HALF) * (_ONE + erf32(x * _INV_SQRT2))


@numba.njit(cache=True, error_model="numpy")
def gelu_erf_d(dy: np.float32, x: np.float32) -> np.float32:
    """gelu_erf_d, line 1212: pdf = 0.3989422804014327 * exp((x*x) * -0.5); dy * (cdf(x) + (x*pdf))."""
    pdf = _INV_SQRT_2PI * libm.exp32((x * x) * _NEG_HALF)
    return dy * (gelu_erf_cdf(x) + x * pdf)


@numba.njit(cache=True, error_model="numpy")
def act_v(op: int, x: np.float32) -> np.float32:
    """The activation of code op on one number: numba's dispatch over the table's codes (ACTS below; a test checks
    that each entry's code reaches its own kernel)."""
    if op == RELU:
        return relu_v(x)
    if op == SIGMOID:
        return sigmoid_v(x)
    if op == TANH:
        return tanh_v(x)
    if op == SILU:
        return silu_v(x)
    if op == GELU:
        return gelu_v(x)
    if op == GELU_ERF:
        return gelu_erf_v(x)
    raise ValueError("act_v: unknown activation code")


@numba.njit(cache=True, error_model="numpy")
def act_d(op: int, dy: np.float32, v: np.float32) -> np.float32:
    """The input gradient of code op on one number; v is the saved output (ActOut) or input (ActIn)."""
    if op == RELU:
        return relu_d(dy, v)
    if op == SIGMOID:
        return sigmoid_d(dy, v)
    if op == TANH:
        return tanh_d(dy, v)
    if op == SILU:
        return silu_d(dy, v)
    if op == GELU:
        return gelu_d(dy, v)
    if op == GELU_ERF:
        return gelu_erf_d(dy, v)
    raise ValueError("act_d: unknown activation code")


@numba.njit(cache=True, error_model="numpy")
def act_v_e(op: int, x: np.float32, e: np.float32) -> np.float32:
    """The activation of code op given x and e = exp(-x), for the codes whose entry says so (exp_neg)."""
    if op == SIGMOID:
        return _sigmoid_e(e)
    if op == SILU:
        return _silu_e(x, e)
    raise ValueError("act_v_e: not a function of exp(-x)")


@numba.njit(cache=True, error_model="numpy")
def act_d_e(op: int, dy: np.float32, x: np.float32, e: np.float32) -> np.float32:
    """The input gradient of code op given dy, x and e = exp(-x), for the codes whose entry says so (exp_neg)."""
    if op == SILU:
        return _silu_d_e(dy, x, e)
    raise ValueError("act_d_e: not a function of exp(-x)")


# ---------------------------------------------------------------------------------------------------------------
# the loops (Ew.map / Ew.zip, lines 166-196): flat, index order, independent outputs
# ---------------------------------------------------------------------------------------------------------------

_BLOCK = 4096  # numbers per block of the exp(-x) form: one libm.exp_array call each, blocks under prange


@numba.njit(cache=True, error_model="numpy", inline="always")
def _exp_neg_block(x: F, out: F, b: int) -> tuple[int, int]:
    """out[t] = exp(-x[t]) over block b (numbers lo..hi-1, returned), by libm.exp_array."""
    lo = b * _BLOCK
    hi = min(lo + _BLOCK, x.size)
    for t in range(lo, hi):
        out[t] = -x[t]
    libm.exp_array(out[lo:hi], out[lo:hi])
    return lo, hi


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def act_fwd_into(op: int, x: F, y: F) -> None:
    """y[t] = f(x[t]) over flat arrays (Ew.map, line 182). An activation of x and exp(-x) (Sigmoid, SiLU) takes
    exp(-x) of a block at once (libm.exp_array: exp32's bits, vectorised) into y, then f from it: the same
    operations on each number as f(x[t])."""
    n = x.size
    if 0 <= op < EXP_NEG_FWD.size and EXP_NEG_FWD[op]:
        for b in numba.prange((n + _BLOCK - 1) // _BLOCK):
            lo, hi = _exp_neg_block(x, y, b)
            for t in range(lo, hi):
                y[t] = act_v_e(op, x[t], y[t])
    else:
        for t in numba.prange(n):
            y[t] = act_v(op, x[t])


@sized
@numba.njit(cache=True, parallel=True, error_model="numpy")
def act_bwd_into(op: int, dy: F, v: F, dx: F) -> None:
    """dx[t] = d(dy[t], v[t]) over flat arrays (Ew.zip, line 193); SiLU's, a function of x and exp(-x), takes
    exp(-x) a block at a time into dx first, as act_fwd_into does."""
    n = dy.size
    if 0 <= op < EXP_NEG_BWD.size and EXP_NEG_BWD[op]:
        for b in numba.prange((n + _BLOCK - 1) // _BLOCK):
            lo, hi = _exp_neg_block(v, dx, b)
            for t in range(lo, hi):
                dx[t] = act_d_e(op, dy[t], v[t], dx[t])
    else:
        for t in numba.prange(n):
            dx[t] = act_d(op, dy[t], v[t])


def act_fwd(op: int | str, x: F) -> F:
    """The activation op (a code or a name of ACTS) over a float32 array of any shape; a new array."""
    k = act_kernel(op)
    xc = np.ascontiguousarray(x, dtype=F32)
    y = np.empty_like(xc)
    act_fwd_into(k.code, xc.reshape(-1), y.reshape(-1))
    return y


def act_bwd(op: int | str, dy: F, v: F) -> F:
    """The input gradient of op, from dy and the saved v (same shape); a new array."""
    k = act_kernel(op)
    dyc = np.ascontiguousarray(dy, dtype=F32)
    vc = np.ascontiguousarray(v, dtype=F32)
    if dyc.shape != vc.shape:
        raise ValueError(f"{k.name}: dy {dyc.shape} and the saved value {vc.shape} differ in shape")
    dx = np.empty_like(dyc)
    act_bwd_into(k.code, dyc.reshape(-1), vc.reshape(-1), dx.reshape(-1))
    return dx


# ---------------------------------------------------------------------------------------------------------------
# plain twins: numpy float32 array operations (one rounding each), the same functions through libm
# ---------------------------------------------------------------------------------------------------------------

def lib_map(f: Callable[[np.float32], np.float32], a: F) -> F:
    """f (a float32 function from impl.kernels.libm, or erf_plain) on every number of a, one call per
    number: the plain twins' exp, log, tanh, erf."""
    flat = np.ascontiguousarray(a, dtype=F32).reshape(-1)
    out = np.array([f(v) for v in flat], dtype=F32)
    return out.reshape(np.shape(a))


def _sigmoid_plain(x: F) -> F:
    return _ONE / (_ONE + lib_map(libm.expf, -x))


def _inner_plain(x: F) -> F:
    return _SQRT_2_OVER_PI * (x + _GELU_A * ((x * x) * x))


def _cdf_plain(x: F) -> F:
    return _HALF * (_ONE + lib_map(erf_plain, x * _INV_SQRT2))


def _relu_plain(x: F) -> F:
    return np.where(x < _ZERO, _ZERO, x).astype(F32)


def _relu_d_plain(dy: F, y: F) -> F:
    return np.where(y <= _ZERO, _ZERO, dy).astype(F32)


def _sigmoid_d_plain(dy: F, y: F) -> F:
    return (dy * (_ONE - y)) * y


def _tanh_plain(x: F) -> F:
    return lib_map(libm.tanhf, x)


def _tanh_d_plain(dy: F, y: F) -> F:
    return dy * (_ONE - y * y)


def _silu_plain(x: F) -> F:
    return x / (_ONE + lib_map(libm.expf, -x))


def _silu_d_plain(dy: F, x: F) -> F:
    s = _sigmoid_plain(x)
    return cast(F, (dy * s) * (_ONE + x * (_ONE - s)))


def _gelu_plain(x: F) -> F:
    return (_HALF * x) * (_ONE + lib_map(libm.tanhf, _inner_plain(x)))


def _gelu_d_plain(dy: F, x: F) -> F:
    th = lib_map(libm.tanhf, _inner_plain(x))
    left = _HALF * x
    dleft = _HALF * (_ONE + th)
    dright = (left * (_ONE - th * th)) * (_SQRT_2_OVER_PI * (_ONE + _GELU_3A * (x * x)))
    return cast(F, dy * (dleft + dright))


def _gelu_erf_plain(x: F) -> F:
    return (x * _HALF) * (_ONE + lib_map(erf_plain, x * _INV_SQRT2))


def _gelu_erf_d_plain(dy: F, x: F) -> F:
    pdf = _INV_SQRT_2PI * lib_map(libm.expf, (x * x) * _NEG_HALF)
    return dy * (_cdf_plain(x) + x * pdf)


def act_fwd_plain(op: int | str, x: F) -> F:
    """act_fwd's expressions as numpy float32 array operations (the entry's plain twin)."""
    k = act_kernel(op)
    with np.errstate(all="ignore"):
        return k.plain_v(np.asarray(x, dtype=F32))


def act_bwd_plain(op: int | str, dy: F, v: F) -> F:
    """act_bwd's expressions as numpy float32 array operations (the entry's plain twin)."""
    k = act_kernel(op)
    with np.errstate(all="ignore"):
        return k.plain_d(np.asarray(dy, dtype=F32), np.asarray(v, dtype=F32))


# ---------------------------------------------------------------------------------------------------------------
# the table: impl's half of each activation's entry (reference.opinfo joins it with the oracle, PyTorch, bounds)
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ActKernel:
    """One activation in impl: its name (the layer constructor's), its code (numba's dispatch in act_v / act_d),
    whether its backward pass reads the saved output (ActOut, main.bend line 749) or the input (ActIn, line 1052),
    its scalar kernels, their plain twins, and the seed's lines."""

    name: str
    code: int
    saves_output: bool
    v: Callable[..., Any]
    d: Callable[..., Any]
    plain_v: Callable[[F], F]
    plain_d: Callable[[F, F], F]
    seed_lines: str
    exp_neg: tuple[bool, bool] = (False, False)  # f, d a function of x and exp(-x) (act_v_e, act_d_e)?


ACTS: tuple[ActKernel, ...] = (
    ActKernel("ReLU", RELU, True, relu_v, relu_d, _relu_plain, _relu_d_plain, "752-761"),
    ActKernel("Sigmoid", SIGMOID, True, sigmoid_v, sigmoid_d, _sigmoid_plain, _sigmoid_d_plain, "1055-1063",
              (True, False)),
    ActKernel("Tanh", TANH, True, tanh_v, tanh_d, _tanh_plain, _tanh_d_plain, "1065-1072"),
    ActKernel("SiLU", SILU, False, silu_v, silu_d, _silu_plain, _silu_d_plain, "1074-1084", (True, True)),
    ActKernel("GELU", GELU, False, gelu_v, gelu_d, _gelu_plain, _gelu_d_plain, "1086-1102"),
    ActKernel("GELUErf", GELU_ERF, False, gelu_erf_v, gelu_erf_d, _gelu_erf_plain, _gelu_erf_d_plain, "1201-1217"),
)
NAMES = tuple(k.name for k in ACTS)
EXP_NEG_FWD = np.array([any(k.code == c and k.exp_neg[0] for k in ACTS) for c in range(len(ACTS))])
EXP_NEG_BWD = np.array([any(k.code == c and k.exp_neg[1] for k in ACTS) for c in range(len(ACTS))])
SAVES_OUTPUT = tuple(k.saves_output for k in ACTS)
_BY_CODE = {k.code: k for k in ACTS}
_BY_NAME = {k.name: k for k in ACTS}


def act_kernel(op: int | str) -> ActKernel:
    """The entry of an activation code or name; a ValueError for any other."""
    k = _BY_NAME.get(op) if isinstance(op, str) else _BY_CODE.get(op)
    if k is None:
        raise ValueError(f"unknown activation {op!r}; the table has {', '.join(NAMES)}")
    return k
