"""torch.compile's float32 CPU functions as a sweep library (FUNCS): each call of the library torch (pytorch.OPS:
torch.exp ... F.gelu, the derivatives ATen's backward ops with dy = 1) in a function of its own, through
torch.compile(backend="inductor", mode="default", dynamic=True) with the conformance target torch_compile's settings
(bendtorch.targets.torch_compile.configure: Inductor's cache folder, a recompile limit whose hit is an error, never a
silent fall back to eager). Inductor generates a C++ loop over at::vec::Vectorized<float> (16 lanes under AVX-512:
Sleef's vector functions, sin and cos its 3.5-ulp ones) built with the machine's g++ -march=native, so its bits are
a fact of the CPU and the compiler (the machine record names both). dynamic=True: one graph per function and process
serves every chunk's length (the sizes 0 and 1, which dynamo specialises, never reach it).

A lane's bits can depend on the other lanes of its vector: compiled sin(-890.659) is 0x3f7ff5fc among neighbours
below 100 and 0x3f7ff5fd beside one of 1e5 (Sleef's u35 sin and cos reduce the whole vector one way, by its largest
lane; docs/FINDINGS.md). The sweep's chunks hold consecutive bit patterns, so a vector's lanes are of one magnitude:
the atlas gives each input's bits among neighbours of its own size."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from bendtorch.reports.sweep.libraries.pytorch import OPS
from bendtorch.targets.torch_compile import MODE, configure

Fn = Callable[[Any], Any]
_COMPILED: dict[str, Fn] = {}


def _compiled(function: str) -> Fn:
    """The function's call compiled, once per process: a new code object per function, so that each is a graph of
    its own instead of one more guard on a shared one."""
    fn = _COMPILED.get(function)
    if fn is None:
        configure()
        op = OPS[function]

        def call(t: torch.Tensor) -> torch.Tensor:
            y: torch.Tensor = op(t)
            return y
        call.__code__ = call.__code__.replace(co_name=f"compiled_{function}")
        fn = _COMPILED[function] = torch.compile(call, backend="inductor", mode=MODE, dynamic=True)
    return fn


def _run(function: str) -> Fn:
    def run(x: Any) -> Any:
        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.size == 1:  # dynamo specialises the size 1 (a scalar loop of C library calls): a vector of its copies
            return run(np.repeat(x, 16))[:1]
        with torch.no_grad():
            return np.ascontiguousarray(_compiled(function)(torch.from_numpy(x)).numpy(), dtype=np.float32)
    return run


FUNCS: dict[str, Fn] = {f: _run(f) for f in OPS}
