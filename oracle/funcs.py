"""Element-wise functions in float64 and their derivatives, from the mathematical definitions (main.bend lines
752-761, 1055-1217), written so that no step cancels: 1 - sigmoid(x) is sigmoid(-x), 1 + tanh(u) is 2 sigmoid(2u),
1 - tanh(x)^2 is 1 / cosh(x)^2, 1 + erf(x / sqrt 2) is erfc(-x / sqrt 2). Each value below is then within a few
float64 ulps of the exact function (the libm exp / tanh / cosh / erfc are within an ulp or two), about 2^-29 of a
float32 ulp: far below anything a float32 result is measured against.

NaN in gives NaN out; +-inf gives the limit wherever the formulas below reach it without inf - inf or 0 * inf.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import mpmath

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, param_free
from bendtorch.impl.specs import MatSpec
from bendtorch.records.ops import ACTIVATIONS as ACT_RECORDS, OpRecord

F64 = npt.NDArray[np.float64]
ActLayer = Layer[None, F64, F64, F64]

__all__ = ["Activation", "ReLU", "Sigmoid", "Tanh", "SiLU", "GELU", "GELUErf"]

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)   # GELU's tanh-form constant (the seed writes 0.7978845608028654)
GELU_A = 0.044715                           # its cubic coefficient, as written (line 1089)
INV_SQRT2 = math.sqrt(0.5)                  # 1 / sqrt(2) for erf(x / sqrt 2)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

_erfc = np.frompyfunc(math.erfc, 1, 1)
_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x: F64) -> F64:
    """math.erf element-wise (glibc's double erf, within an ulp)."""
    return np.asarray(_erf(x), dtype=np.float64)


def erfc(x: F64) -> F64:
    """math.erfc element-wise: full relative precision in the tail where 1 - erf would cancel."""
    return np.asarray(_erfc(x), dtype=np.float64)


def sigmoid(x: F64) -> F64:
    """1 / (1 + exp(-x)), as exp(-|x|) / (1 + exp(-|x|)) for x < 0, so neither side overflows or cancels."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(x))
        r = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return np.asarray(r, dtype=np.float64)


def relu(x: F64) -> F64:
    """x unless x < 0 (relu(NaN) = NaN, relu(-0) = -0), main.bend line 754."""
    return np.asarray(np.where(x < 0, 0.0, x), dtype=np.float64)


def relu_grad(x: F64, dy: F64) -> F64:
    """dy where x > 0 or x is NaN, +0 where x <= 0 (PyTorch's threshold_backward on y <= 0, line 757; y <= 0 exactly
    when x <= 0)."""
    return np.asarray(np.where(x <= 0, 0.0, dy), dtype=np.float64)


def sigmoid_grad(x: F64, dy: F64) -> F64:
    """dy sigma(x) sigma(-x): sigma' = sigma (1 - sigma) with 1 - sigma(x) = sigma(-x), no cancellation."""
    return np.asarray(dy * (sigmoid(x) * sigmoid(-x)), dtype=np.float64)


def tanh(x: F64) -> F64:
    return np.asarray(np.tanh(x), dtype=np.float64)


def tanh_grad(x: F64, dy: F64) -> F64:
    """dy (1 - tanh(x)^2) = dy / cosh(x)^2 (cosh overflows to inf past |x| = 710, giving the limit 0)."""
    with np.errstate(over="ignore"):
        c = np.cosh(x)
        r = dy / (c * c)
    return np.asarray(r, dtype=np.float64)


def silu(x: F64) -> F64:
    """x sigma(x) (line 1076)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(x * sigmoid(x), dtype=np.float64)


def silu_grad(x: F64, dy: F64) -> F64:
    """dy (sigma(x) + x sigma(x) sigma(-x)) = dy sigma(x) (1 + x (1 - sigma(x))) (line 1079)."""
    s = sigmoid(x)
    with np.errstate(invalid="ignore"):
        return np.asarray(dy * (s + x * (s * sigmoid(-x))), dtype=np.float64)


def _gelu_u(x: F64) -> F64:
    return np.asarray(SQRT_2_OVER_PI * (x + GELU_A * (x * x * x)), dtype=np.float64)


def gelu_tanh(x: F64) -> F64:
    """0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3) (PyTorch's approximate="tanh", line 1086), computed
    as x sigma(2u): 1 + tanh(u) = 2 sigma(2u) exactly, and sigma(2u) does not cancel where tanh(u) -> -1."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(x * sigmoid(2.0 * _gelu_u(x)), dtype=np.float64)


def gelu_tanh_grad(x: F64, dy: F64) -> F64:
    """d/dx [x sigma(2u)] = sigma(2u) + 2 x sigma(2u) sigma(-2u) u', u' = sqrt(2/pi) (1 + 3 0.044715 x^2)
    (the same derivative as line 1094's dleft + dright: 0.5 (1 - tanh^2 u) = 2 sigma(2u) sigma(-2u))."""
    with np.errstate(invalid="ignore", over="ignore"):
        u2 = 2.0 * _gelu_u(x)
        s, sm = sigmoid(u2), sigmoid(-u2)
        du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_A * (x * x))
        return np.asarray(dy * (s + 2.0 * x * (s * sm) * du), dtype=np.float64)


def gelu_erf(x: F64) -> F64:
    """x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's default GELU, line 1201), as 0.5 x erfc(-x / sqrt 2)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(0.5 * x * erfc(-x * INV_SQRT2), dtype=np.float64)


def gelu_erf_grad(x: F64, dy: F64) -> F64:
    """dy (Phi(x) + x phi(x)), Phi(x) = 0.5 erfc(-x / sqrt 2), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) (line 1212)."""
    with np.errstate(invalid="ignore", over="ignore"):
        cdf = 0.5 * erfc(-x * INV_SQRT2)
        pdf = INV_SQRT_2PI * np.exp(-0.5 * (x * x))
        return np.asarray(dy * (cdf + x * pdf), dtype=np.float64)


# ---- the same functions to any precision (mpmath, the working precision of the caller's mpmath.workdps), from
# the textbook forms: the tests check the float64 rewritings above against them ----


def relu_mp(v: Any) -> Any:
    return v if not v < 0 else mpmath.mpf(0)


def sigmoid_mp(v: Any) -> Any:
    return 1 / (1 + mpmath.exp(-v))


def tanh_mp(v: Any) -> Any:
    return mpmath.tanh(v)


def silu_mp(v: Any) -> Any:
    return v / (1 + mpmath.exp(-v))


def gelu_tanh_mp(v: Any) -> Any:
    return v / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (v + mpmath.mpf("0.044715") * v ** 3)))


def gelu_erf_mp(v: Any) -> Any:
    return v / 2 * (1 + mpmath.erf(v / mpmath.sqrt(2)))


class OracleAct(NamedTuple):
    """The oracle's half of an activation's entry: its value and gradient in float64 (gradient(x, dy)), and its
    value to any precision (mpmath) for the tests."""

    f: Callable[[F64], F64]
    grad: Callable[[F64, F64], F64]
    mp: Callable[[Any], Any]


def _formulas(r: OpRecord) -> OracleAct:
    """The oracle's half of an activation's record: its formulas, found in this module by the record's stem."""
    assert r.act is not None
    g = globals()
    stem = r.act.formula
    return OracleAct(g[stem], g[f"{stem}_grad"], g[f"{stem}_mp"])


# name -> the oracle's formulas, for every activation of the records (bendtorch.records.ops.ACTIVATIONS), in order
ACTIVATIONS: dict[str, OracleAct] = {r.name: _formulas(r) for r in ACT_RECORDS}


# ---------------------------------------------------------------------------------------------------------------
# the oracle's activation layers (the same names and arguments as impl's)
# ---------------------------------------------------------------------------------------------------------------

def Activation(name: str, n: int, c: int) -> ActLayer:
    """The oracle's layer of the activation `name` (an entry of ACTIVATIONS): y = f(x), dx = f'(x) dy."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; the oracle has {', '.join(ACTIVATIONS)}")
    check_dims(name, n=n, c=c)
    f, d, _ = ACTIVATIONS[name]

    def fwd(p: None, x: F64) -> Fwd[None, F64, F64]:
        """y = f(x); saves x (the exact derivative is a function of x)."""
        return Fwd(None, np.ascontiguousarray(f(x), dtype=np.float64), x)

    def bwd(p: None, s: F64, dy: F64, g: None) -> Bwd[None, F64]:
        """dx = f'(x) dy."""
        return Bwd(None, np.ascontiguousarray(d(s, dy), dtype=np.float64), None)

    return param_free(layer_name(name, n, c), MatSpec(n, c), MatSpec(n, c), np.float64, fwd, bwd)


def ReLU(n: int, c: int) -> ActLayer:
    """max(x, 0) with relu(NaN) = NaN; gradient dy where x > 0 (and where x is NaN), +0 where x <= 0 (line 752)."""
    return Activation("ReLU", n, c)


def Sigmoid(n: int, c: int) -> ActLayer:
    """1 / (1 + exp(-x)); gradient dy sigma(x) sigma(-x) (line 1055)."""
    return Activation("Sigmoid", n, c)


def Tanh(n: int, c: int) -> ActLayer:
    """tanh(x); gradient dy / cosh(x)^2 (line 1065)."""
    return Activation("Tanh", n, c)


def SiLU(n: int, c: int) -> ActLayer:
    """x sigma(x); gradient dy sigma(x) (1 + x sigma(-x)) (line 1074)."""
    return Activation("SiLU", n, c)


def GELU(n: int, c: int) -> ActLayer:
    """GELU, tanh form (PyTorch's approximate="tanh", line 1086): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return Activation("GELU", n, c)


def GELUErf(n: int, c: int) -> ActLayer:
    """GELU, exact: x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); gradient Phi(x) + x phi(x) (line 1201). float64 erfc."""
    return Activation("GELUErf", n, c)
