"""Every layer of DESIGN.md's table against the float64 oracle and PyTorch float32, forward and backward, on random
inputs of several shapes and seeds (reference/ops.py's LAYERS; `bendtorch report` reads the same list).

Each op asserts (reference.ops.judge): impl's normwise error against the oracle within the op's stated ulp bound
(`Op.bound`, its reason in `Op.why`: e.g. Linear 16 ulps because a float32 sum of k products errs by up to
~k 2^-24 sum|terms|), the element-wise max within `Op.bound_elem` where the output is well conditioned element by
element (ReLU 0, Sigmoid/Tanh/SiLU y 4, Dropout 2), impl's p99 and median element-wise errors at most 4x PyTorch's
(+1 / +0.5 ulp), and bit equality with PyTorch where the arithmetic is the same (ReLU y and dx, Dropout y and dx
given impl's mask, Embedding y).
"""

from __future__ import annotations

import numpy as np
import pytest

from bendtorch.reference.compare import check_op, make_inputs, run_lib, run_torch
import bendtorch.impl as IMPL
from bendtorch.reference.ops import LAYERS, Op, op_named


@pytest.mark.parametrize("op", LAYERS, ids=[o.name for o in LAYERS])
def test_layer_against_oracle_and_torch(op: Op) -> None:
    res = check_op(op)
    for k in op.outputs:
        assert res[k]["cases"] == len(op.shapes) * len(op.seeds)


def test_relu_bitwise_including_zeros_and_specials() -> None:
    """ReLU and its gradient are exact, so impl and PyTorch agree bit for bit, also at +-0 and on infinities (the
    gradient at 0 is +0 in both: torch's threshold_backward passes dy only where y > 0)."""
    op = op_named("ReLU")
    x = np.array([[0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, 1e-45, -1e-45]], dtype=np.float32)
    d = {"n": 1, "c": 8}
    dy = np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 8)
    inp = {"x": x, "params": [], "dy": dy}
    ri = run_lib(op, IMPL, d, inp)
    rt = run_torch(op, d, inp)
    assert np.array_equal(ri["y"].view(np.uint32), rt["y"].view(np.uint32))
    assert np.array_equal(ri["dx"].view(np.uint32), rt["dx"].view(np.uint32))


def test_linear_first_gives_zero_dx() -> None:
    """LinearFirst does no dx work: its dx is zeros of x's shape (DESIGN.md), the rest is Linear's, bit for bit."""
    d = {"n": 4, "i": 7, "o": 5}
    inp = make_inputs(op_named("Linear"), d, 3)
    inp["dy"] = np.random.default_rng(9).standard_normal((4, 5)).astype(np.float32)
    a = run_lib(op_named("LinearFirst"), IMPL, d, inp)
    b = run_lib(op_named("Linear"), IMPL, d, inp)
    assert not np.any(a["dx"])
    assert np.array_equal(a["y"], b["y"]) and np.array_equal(a["dp"], b["dp"])
