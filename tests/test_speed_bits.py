"""Pins the bits of whole training runs across the speed work of issue 8 (the kernels were made faster without
changing a single bit): the sha256 of the dump of a tiny Llama's parameters after 3 AdamW steps from a fixed seed,
and of a 2-layer smol's after 1 step at t = 32. The constants were recorded BEFORE any kernel was changed."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

import impl
from impl import llama, optim
from impl.train import train_new, train_step

TINY_3_STEPS = "73922818d81a872ab726f773e0f1f83660876ad1bd6cf8634bd0239f239d225e"
SMOL_2L_T32_1_STEP = "b8619f157722531ae52bbf3ad828110fde4724aead93fe5f77414accefb2a936"


def _run(name: str, steps: int, b: int, **changes: Any) -> str:
    cfg = llama.config(name, **changes)
    ocfg = optim.CAdamW(np.float32(1e-3), np.float32(0.9), np.float32(0.999), np.float32(1e-8),
                        np.float32(0.01), np.float32(0.1), np.float32(0.001))
    rng = np.random.default_rng(0)
    x, y = llama.batch_at(rng.integers(0, cfg.vocab, size=10 * cfg.t), b, cfg.t, rng)
    model = llama.build(impl, cfg, b)
    tr = train_new(model.layer, ocfg, model.init(0))
    for _ in range(steps):
        tr = train_step(model.layer, model.loss, ocfg, tr, x, y)
    dump = np.ascontiguousarray(model.layer.dump(tr.p), dtype=np.float32)
    return hashlib.sha256(dump.tobytes()).hexdigest()


def test_tiny_three_adamw_steps_keep_their_bits() -> None:
    assert _run("tiny", 3, 4) == TINY_3_STEPS


def test_smol_two_layers_one_step_keeps_its_bits() -> None:
    assert _run("smol", 1, 1, layers=2, t=32) == SMOL_2L_T32_1_STEP
