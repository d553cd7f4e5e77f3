"""The optimizer state's bytes for a model: F32 Adam's two moments against AdamW's packed BF16 moments
(CAdamWBF16, v16 True and False), measured on the state one real training step leaves behind (the packed leaves are
created on a matrix's first step, main.bend line 54, so a state is only full after a step).

    bendtorch study state_bytes [--model smol|tiny] [--layers N]
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def state_bytes(st: Any) -> int:
    """Bytes held by the arrays of an optimizer state (OptState and its packed tree), counted once each."""
    from bendtorch.impl.optstate import OneMom, Packed, PLeaf, PLeafV, PNode, TwoMom

    seen: set[int] = set()

    def arrays(x: Any) -> int:
        if isinstance(x, np.ndarray):
            if id(x) in seen:
                return 0
            seen.add(id(x))
            return int(x.nbytes)
        if isinstance(x, tuple):
            return sum(arrays(v) for v in x)
        return 0

    def tree(t: Any) -> int:
        if isinstance(t, (PLeaf, PLeafV)):
            return arrays(t.m) + arrays(t.v)
        if isinstance(t, PNode):
            return tree(t.a) + tree(t.b)
        return 0

    if isinstance(st, TwoMom):
        return arrays(st.m) + arrays(st.v)
    if isinstance(st, OneMom):
        return arrays(st.m)
    if isinstance(st, Packed):
        return tree(st.t)
    return 0


def measure(model: str = "smol", layers: int | None = None) -> dict[str, Any]:
    """One AdamW step of the model with F32 moments, packed BF16 m, and packed BF16 m and v; each state's bytes."""
    from bendtorch import impl
    from bendtorch.impl import llama
    from bendtorch.impl.optim import CAdamWBF16, OptCfg, adamw
    from bendtorch.impl.train import train_new, train_step

    cfg = llama.config(model, **({"layers": layers} if layers else {}))
    m = llama.build(impl, cfg, 1)
    rng = np.random.default_rng(0)
    x, y = llama.batch_at(rng.integers(0, cfg.vocab, 4 * cfg.t), 1, cfg.t, rng)
    f32 = np.float32
    cfgs: dict[str, OptCfg] = {
        "adamw_f32": adamw(),
        "adamw_bf16_m": CAdamWBF16(f32(1e-3), f32(0.9), f32(0.999), f32(1e-8), f32(0.01), f32(0.1), f32(0.001),
                                   False),
        "adamw_bf16_mv": CAdamWBF16(f32(1e-3), f32(0.9), f32(0.999), f32(1e-8), f32(0.01), f32(0.1), f32(0.001),
                                    True)}
    out: dict[str, Any] = {"model": model, "layers": cfg.layers, "parameters": m.layer.count(),
                           "parameter_bytes": 4 * m.layer.count()}
    for name, c in cfgs.items():
        tr = train_new(m.layer, c, m.init(0))
        tr = train_step(m.layer, m.loss, c, tr, x, y)
        out[name] = state_bytes(tr.st)
        del tr
    out["bf16_mv_over_f32"] = out["adamw_bf16_mv"] / out["adamw_f32"]
    out["bf16_m_over_f32"] = out["adamw_bf16_m"] / out["adamw_f32"]
    return out


def text(r: dict[str, Any]) -> str:
    """The figures, as JSON."""
    return json.dumps(r, indent=1)
