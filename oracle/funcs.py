"""Element-wise functions in float64 and their derivatives, from the mathematical definitions (main.bend lines
752-761, 1055-1217), written so that no step cancels: 1 - sigmoid(x) is sigmoid(-x), 1 + tanh(u) is 2 sigmoid(2u),
1 - tanh(x)^2 is 1 / cosh(x)^2, 1 + erf(x / sqrt 2) is erfc(-x / sqrt 2). Each value below is then within a few
float64 ulps of the exact function (the libm exp / tanh / cosh / erfc are within an ulp or two), about 2^-29 of a
float32 ulp: far below anything a float32 result is measured against.

NaN in gives NaN out; +-inf gives the limit wherever the formulas below reach it without inf - inf or 0 * inf.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

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


# name -> (value, gradient) for the element-wise activations
ACTIVATIONS: dict[str, tuple[Any, Any]] = {
    "ReLU": (relu, relu_grad),
    "Sigmoid": (sigmoid, sigmoid_grad),
    "Tanh": (tanh, tanh_grad),
    "SiLU": (silu, silu_grad),
    "GELU": (gelu_tanh, gelu_tanh_grad),
    "GELUErf": (gelu_erf, gelu_erf_grad),
}
