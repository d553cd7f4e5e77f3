"""The optimizers' element loops (impl.kernels.optim, main.bend lines 238-295) equal their plain twins bit for bit:
random weights, gradients and moments (with zeros of both signs, subnormals, huge and tiny values), every
configuration kind (SGD, Momentum, Adam, AdamW), one thread and two, above and below the serial cut-off."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bendtorch.impl.bits import same_bits
from bendtorch.impl.kernels import optim as K
from bendtorch.impl.kernels.serial import SERIAL_BELOW

from tests.bitcheck import same_bits_or_nan

F32 = np.float32


def arrays(seed: int, n: int, k: int) -> list[Any]:
    """k float32 arrays of n numbers: normal values at three scales with specials mixed in."""
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 3e38, -3e38, 1e-20, 1.0, -1.0], F32)
    out = []
    for _ in range(k):
        a = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)).astype(F32)
        pick = rng.random(n) < 0.05
        a[pick] = rng.choice(specials, int(pick.sum()))
        out.append(a)
    return out


SIZES = [1, 7, 1000, SERIAL_BELOW + 3]


@pytest.mark.parametrize("n", SIZES)
def test_sgd_equals_plain(n: int, threads: int) -> None:
    w, g = arrays(1, n, 2)
    w2, g2 = w.copy(), g.copy()
    K.sgd(w, g, F32(0.01))
    K.sgd_plain(w2, g2, F32(0.01))
    assert same_bits(w, w2) and same_bits(g, g2) and not np.any(g)


@pytest.mark.parametrize("n", SIZES)
def test_momentum_equals_plain(n: int, threads: int) -> None:
    w, g, m = arrays(2, n, 3)
    w2, g2, m2 = w.copy(), g.copy(), m.copy()
    K.momentum(w, g, m, F32(0.01), F32(0.9))
    K.momentum_plain(w2, g2, m2, F32(0.01), F32(0.9))
    assert same_bits(w, w2) and same_bits(m, m2) and same_bits(g, g2)


@pytest.mark.parametrize("dec", [False, True], ids=["Adam", "AdamW"])
@pytest.mark.parametrize("n", SIZES)
def test_adam_equals_plain(n: int, dec: bool, threads: int) -> None:
    w, g, m, v = arrays(3 + dec, n, 4)
    v = np.abs(v)
    args = (F32(1e-3), F32(0.1), F32(0.999), F32(0.001), F32(1e-8), F32(0.01), dec, F32(0.01), F32(0.0316))
    w2, g2, m2, v2 = w.copy(), g.copy(), m.copy(), v.copy()
    with np.errstate(all="ignore"):
        K.adam(w, g, m, v, *args)
        K.adam_plain(w2, g2, m2, v2, *args)
    assert same_bits_or_nan(w, w2) and same_bits_or_nan(m, m2) and same_bits_or_nan(v, v2) and same_bits(g, g2)


def test_the_twin_check_fails_on_another_order() -> None:
    # not vacuous: AdamW's decay applied after the update instead of before differs from the kernel
    w, g, m, v = arrays(9, 1000, 4)
    v = np.abs(v)
    args = (F32(1e-3), F32(0.1), F32(0.999), F32(0.001), F32(1e-8), F32(0.01), True, F32(0.01), F32(0.0316))
    w2 = w.copy()
    with np.errstate(all="ignore"):
        K.adam(w, g.copy(), m.copy(), v.copy(), *args)
        K.adam_plain(w2, g.copy(), m.copy(), v.copy(), *args[:6], False, *args[7:])
    assert not same_bits(w, w2)
