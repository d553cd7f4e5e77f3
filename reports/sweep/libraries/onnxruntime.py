"""ONNX Runtime's float32 elementwise operators as a sweep library (OPS): each function one small graph of
bendtorch.targets.onnxruntime (ACTS: Exp, Log, Tanh, Sin, Cos, Erf, Sqrt, Reciprocal(Sqrt(x)), Sigmoid,
x * Sigmoid(x), Gelu with approximate "tanh" and "none") on a float32 vector of any length, run by the CPU provider
with the graph optimisations an InferenceSession gets by default (ORT_ENABLE_ALL: x * Sigmoid(x) is fused into
com.microsoft's QuickGelu) on one thread. One session per function and process, made at its first call; a chunk is
one call, so the session's fixed cost per call is spread over the chunk's 2^22 numbers."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from bendtorch.targets import onnxruntime as O

Fn = Callable[[Any], Any]
_SESSIONS: dict[str, Any] = {}


def _op(function: str) -> Fn:
    def run(x: Any) -> Any:
        s = _SESSIONS.get(function)
        if s is None:
            O.load()
            s = _SESSIONS[function] = O.session(O.act_graph(function), "all", threads=1)
        y = s.run(["y"], {"x": np.ascontiguousarray(x, dtype=np.float32)})[0]
        return np.asarray(y, dtype=np.float32)
    return run


OPS = {f: _op(f) for f in O.ACTS}
