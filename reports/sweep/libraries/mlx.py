"""MLX's float32 CPU functions as a sweep library (FUNCS): the elementwise calls of bendtorch.targets.mlx
(ELEMENTWISE: mx.exp, mx.log, mx.tanh, mx.sin, mx.cos, mx.erf, mx.sqrt, mx.rsqrt, mx.sigmoid, nn.silu,
nn.gelu_approx for GELU's tanh form, nn.gelu for its erf form) on one array a chunk, and their derivatives through
mx.vjp with the cotangent 1 (dsigmoid, dtanh, dsilu, dgelu_tanh, dgelu_erf). MLX's CPU backend computes on one
thread; a chunk is one call, so the copies in and out are its only fixed cost."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from bendtorch.targets import mlx as M

Fn = Callable[[Any], Any]

FUNCS: dict[str, Fn] = {
    **{f: partial(M.elementwise, f) for f in M.ELEMENTWISE},
    **{f"d{f}": partial(M.derivative, f) for f in ("sigmoid", "tanh", "silu", "gelu_tanh", "gelu_erf")},
}
