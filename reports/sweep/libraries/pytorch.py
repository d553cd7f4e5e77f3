"""PyTorch's float32 CPU functions as sweep libraries: VECTOR (a large contiguous tensor: the vectorised loops, the
library torch), STRIDED (a strided view: the loop a non-contiguous tensor takes, torch_scalar), ATEN (ATen's kernel
with oneDNN disabled, torch_aten) and PORTS (bendtorch.reference.torch_erf's op-by-op ports of the erf inside ATen's
GELU and of that GELU: torch_gelu_erf_aten and the gelu_erf entry's twin) and GPU (a contiguous tensor on the
device gpu_device() names: the library torch_cuda). The derivatives are ATen's backward
kernels with dy = 1."""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np
import torch

from bendtorch.oracle.functions import ROPE_BASE
from bendtorch.reference.torch_erf import erf_as_np, gelu_port_np

Fn = Callable[[Any], Any]

_F = torch.nn.functional
_A = torch.ops.aten

# the call of each function, a float32 tensor in and out (the library torch_compile compiles the same calls)
OPS: dict[str, Fn] = {
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


VECTOR = {f: _run(op, False, False) for f, op in OPS.items()}
STRIDED = {f: _run(op, True, False) for f, op in OPS.items()}
ATEN = {f: _run(op, False, True) for f, op in OPS.items()}

GPU_ENV = "BENDTORCH_SWEEP_GPU"  # the device of the torch_cuda library: cuda (default), or cpu as a stand-in


def gpu_device() -> str:
    """The device torch_cuda runs on; RuntimeError "not run: no GPU" where it is cuda and none is present."""
    dev = os.environ.get(GPU_ENV) or "cuda"
    if dev not in ("cuda", "cpu"):
        raise RuntimeError(f"${GPU_ENV}={dev!r}: cuda or cpu (a stand-in)")
    if dev == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"not run: no GPU (torch.cuda.is_available() is false; ${GPU_ENV}=cpu runs the same path "
                           f"on the CPU as a stand-in)")
    return dev


def _on_gpu(fn: Fn) -> Fn:
    """fn on the device's copy of a chunk (one transfer each way); the chunk is the unit the GPU computes at once."""
    def run(x: Any) -> Any:
        dev = gpu_device()
        with torch.no_grad():
            t = torch.from_numpy(np.ascontiguousarray(x)).to(dev)
            return np.ascontiguousarray(fn(t).cpu().numpy(), dtype=np.float32)
    return run


GPU = {f: _on_gpu(op) for f, op in OPS.items()}

PORTS: dict[str, Fn] = {
    "erf": lambda x: np.asarray(erf_as_np(x), dtype=np.float32),
    "gelu_erf": lambda x: np.asarray(gelu_port_np(x), dtype=np.float32),
}
