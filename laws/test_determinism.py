"""Determinism: the same inputs give the same bits, in two runs and with numba on 1 or 2 threads, for a full
training step of the seed's `tiny` Llama (impl.llama: t = 16, d = 32, 4 heads over 2 key/value heads, 2 layers,
bytes as tokens; main.bend lines 2120-2742 and the combinators): forward, cross-entropy, backward and one optimizer
step, over batch sizes 1, 2, 3 (not a power of two), weight seeds, token batches and every optimizer.

Each example runs the step on 2 threads once and on 1 thread twice; on a loaded machine a 2-thread step waits for a
busy core at every parallel launch, so the law runs a fifth of the profile's examples (at least 2; ci and deep keep
their ratio of 100)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from bendtorch import impl
from bendtorch.impl.checkpoint import train_dump
from bendtorch.impl.llama import build, config
from bendtorch.impl.optim import CAdamWBF16, CMomentum, CSGD, adam, adamw
from bendtorch.impl.train import train_new, train_step
from bendtorch.laws.registry import law, need_threads, scaled
from bendtorch.laws.strategies import seeds

F32 = np.float32

CFGS: dict[str, Any] = {
    "sgd": CSGD(F32(0.1)), "momentum": CMomentum(F32(0.05), F32(0.9)), "adam": adam(lr=1e-3), "adamw": adamw(lr=1e-3),
    "adamw-bf16": CAdamWBF16(F32(1e-3), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), True)}


def run(b: int, seed: int, cfg_name: str, steps: int, threads: int) -> tuple[Any, Any]:
    """`steps` training steps of tiny at batch b from seed's weights and tokens, on `threads` numba threads: the
    whole training state's words (train_dump) and the losses' words."""
    need_threads(threads)
    numba.set_num_threads(threads)
    m = build(impl, config("tiny"), b)
    cfg = CFGS[cfg_name]
    tr = train_new(m.layer, cfg, m.init(seed & 0xFFFF))
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        x = rng.integers(0, m.cfg.vocab, m.n)
        y = rng.integers(0, m.cfg.vocab, m.n)
        tr = train_step(m.layer, m.loss, cfg, tr, x, y)
        losses.append(tr.loss)
    return train_dump(m.layer, tr).view(np.uint32).copy(), np.array(losses, F32).view(np.uint32)


@law("determinism", "tiny_step_same_bits", "bit for bit")
@given(st.integers(1, 3), seeds(), st.sampled_from(sorted(CFGS)), st.integers(1, 2))
@scaled(5)
def test_the_same_inputs_give_the_same_bits(b: int, seed: int, cfg_name: str, steps: int) -> None:
    """The same inputs give the same bits in two runs and with 1 or 2 threads (DESIGN.md: one documented order for
    every sum, prange only over independent outputs; main.bend's parallel attention tree, lines 2692-2699, gives the
    sequences' bits in order): a full tiny Llama training step (and a second one) gives the same parameters,
    optimizer state and losses, word for word, on 2 threads and on 1 thread, run twice."""
    old = numba.get_num_threads()
    try:
        s2, l2 = run(b, seed, cfg_name, steps, 2)
        s1, l1 = run(b, seed, cfg_name, steps, 1)
        t1, k1 = run(b, seed, cfg_name, steps, 1)
    finally:
        numba.set_num_threads(old)
    assert np.all(np.isfinite(l1.view(F32)))
    assert np.array_equal(s1, t1) and np.array_equal(l1, k1)
    assert np.array_equal(s2, s1) and np.array_equal(l2, l1)
