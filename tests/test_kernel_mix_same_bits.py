"""Same inputs, same bits: a few training steps of a model that uses every kind of kernel (products, element-wise,
row-wise, loss, optimizer), run twice, with numba on 1 thread and on 2."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

import bendtorch.impl as L
from bendtorch.impl.bits import same_bits
from bendtorch.impl.checkpoint import train_dump

F32 = np.float32


def build() -> Any:
    n = 24
    return (L.Seq(L.Linear(n, 13, 40), L.Seq(L.GELUErf(n, 40), L.Seq(L.LayerNorm(n, 40),
            L.Seq(L.Dropout(n, 40, 0.1, 7), L.Seq(L.RMSNorm(n, 40), L.Linear(n, 40, 11)))))), L.CrossEntropy(n, 11))


def train(threads: int) -> Any:
    numba.set_num_threads(threads)
    try:
        m, loss = build()
        r = np.random.default_rng(5)
        p = m.load(m.zeros(), (r.standard_normal(m.count()) * 0.2).astype(F32), 0).p
        tr = L.train_new(m, L.adamw(lr=1e-2), p)
        for k in range(4):
            x = r.standard_normal((24, 13)).astype(F32)
            y = r.integers(0, 11, 24)
            tr = L.train_step(m, loss, L.adamw(lr=1e-2), tr, x, y)
        return train_dump(m, tr), tr.loss
    finally:
        numba.set_num_threads(int(getattr(numba.config, "NUMBA_NUM_THREADS")))


def test_two_runs_and_two_thread_counts_give_the_same_bits() -> None:
    a, la = train(2)
    b, lb = train(2)
    c, lc = train(1)
    assert np.isfinite(la)
    assert same_bits(a, b) and same_bits(a, c)
    assert same_bits(np.array([la]), np.array([lb])) and same_bits(np.array([la]), np.array([lc]))
