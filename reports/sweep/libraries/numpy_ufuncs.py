"""numpy's float32 ufuncs as a sweep library (UFUNCS): the function where numpy has one, else the formula in float32
operations."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from bendtorch.oracle.functions import ROPE_BASE

Fn = Callable[[Any], Any]
_ONE, _HALF = np.float32(1.0), np.float32(0.5)
_C = np.float32(0.7978845608028654)
_A = np.float32(0.044715)
_A3 = np.float32(np.float32(3.0) * _A)


def _sigmoid(x: Any) -> Any:
    return _ONE / (_ONE + np.exp(-x))


def _inner(x: Any) -> Any:
    return _C * (x + _A * ((x * x) * x))


def _dgelu(x: Any) -> Any:
    th = np.tanh(_inner(x))
    return _HALF * (_ONE + th) + ((_HALF * x) * (_ONE - th * th)) * (_C * (_ONE + _A3 * (x * x)))


_FNS: dict[str, Fn] = {
    "pow": lambda x: np.power(np.float32(ROPE_BASE), x),
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "sqrt": np.sqrt,
    "rsqrt": lambda x: _ONE / np.sqrt(x), "sigmoid": _sigmoid, "silu": lambda x: x / (_ONE + np.exp(-x)),
    "gelu_tanh": lambda x: (_HALF * x) * (_ONE + np.tanh(_inner(x))),
    "dsigmoid": lambda x: (_ONE - _sigmoid(x)) * _sigmoid(x),
    "dtanh": lambda x: _ONE - np.tanh(x) * np.tanh(x),
    "dsilu": lambda x: _sigmoid(x) * (_ONE + x * (_ONE - _sigmoid(x))),
    "dgelu_tanh": _dgelu,
}


def _run(fn: Fn) -> Fn:
    def run(x: Any) -> Any:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x), dtype=np.float32)
    return run


UFUNCS = {f: _run(fn) for f, fn in _FNS.items()}
