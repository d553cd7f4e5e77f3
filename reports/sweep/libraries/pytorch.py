"""PyTorch's float32 CPU functions as sweep libraries: VECTOR (a large contiguous tensor: the vectorised loops, the
library torch), STRIDED (a strided view: the loop a non-contiguous tensor takes, torch_scalar), ATEN (ATen's kernel
with oneDNN disabled, torch_aten) and PORTS (bendtorch.reference.torch_erf's op-by-op ports of the erf inside ATen's
GELU and of that GELU: torch_gelu_erf_aten and the gelu_erf entry's twin). The derivatives are ATen's backward
kernels with dy = 1."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import torch

from bendtorch.oracle.functions import ROPE_BASE
from bendtorch.reference.torch_erf import erf_as_np, gelu_port_np

Fn = Callable[[Any], Any]

_F = torch.nn.functional
_A = torch.ops.aten

_OPS: dict[str, Fn] = {
    "exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "sin": torch.sin, "cos": torch.cos,
    "pow": lambda t: torch.pow(ROPE_BASE, t),
    "erf": torch.erf, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sigmoid": torch.sigmoid, "silu": _F.silu,
    "gelu_tanh": lambda t: _F.gelu(t, approximate="tanh"), "gelu_erf": _F.gelu,
    "dsigmoid": lambda t: _A.sigmoid_backward(torch.ones_like(t), torch.sigmoid(t)),
    "dtanh": lambda t: _A.tanh_backward(torch.ones_like(t), torch.tanh(t)),
    "dsilu": lambda t: _A.silu_backward(torch.ones_like(t), t),
    "dgelu_tanh": lambda t: _A.gelu_backward(torch.ones_like(t), t, approximate="tanh"),
    "dgelu_erf": lambda t: _A.gelu_backward(torch.ones_like(t), t),
}


def _run(fn: Fn, strided: bool, aten: bool) -> Fn:
    def run(x: Any) -> Any:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.filterwarnings("ignore", message=".*TF32 acceleration on top of oneDNN.*")
            return _call(fn, x, strided, aten)
    return run


def _call(fn: Fn, x: Any, strided: bool, aten: bool) -> Any:
    with torch.backends.mkldnn.flags(enabled=not aten):
        if strided:
            buf = np.zeros(2 * x.size, dtype=np.float32)
            buf[::2] = x
            t = torch.from_numpy(buf)[::2]  # strided: TensorIterator's basic (scalar) loop
        else:
            t = torch.from_numpy(np.ascontiguousarray(x))
        return np.ascontiguousarray(fn(t).numpy(), dtype=np.float32)


VECTOR = {f: _run(op, False, False) for f, op in _OPS.items()}
STRIDED = {f: _run(op, True, False) for f, op in _OPS.items()}
ATEN = {f: _run(op, False, True) for f, op in _OPS.items()}

PORTS: dict[str, Fn] = {
    "erf": lambda x: np.asarray(erf_as_np(x), dtype=np.float32),
    "gelu_erf": lambda x: np.asarray(gelu_port_np(x), dtype=np.float32),
}
