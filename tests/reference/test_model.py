"""Combinators in small compositions (Seq, Fork, Both, Tie, Residual, Add2, Mul2) against the oracle and PyTorch,
and a small model trained 50 AdamW steps in impl, PyTorch float32 and the oracle from the same initial weights.

Composition bounds (reference/ops.py COMBOS, reasons in Op.why): Add2 and Mul2 correctly rounded and bit for bit
equal to PyTorch; compositions with Linear within Linear's normwise 16 ulps, doubled where two sums are added (Fork)
or a shared weight's two gradients are added (Tie).
"""

from __future__ import annotations

import numpy as np
import pytest

from bendtorch.reference.compare import check_op
from bendtorch.reference.model import model_run, summary
from bendtorch.reference.ops import COMBOS, Op

# Each float32 loss within 2e-5 relative of the oracle's at every one of the 50 steps: one step's forward and
# backward err by ~1e-7 relative (a few ulps, the layers' bounds), AdamW divides by sqrt(v), so the weights' errors
# grow roughly linearly with the steps (50 x a few 1e-7), and the loss is smooth in the weights; measured 3.6e-6 for
# both impl and PyTorch (seeds 0, 1), so 2e-5 leaves a 5x margin. (It is not a fine probe: c2 taken as 1 - b2 in
# float32, 1.3e-5 relative off, moves this run's figure by less than 1e-7.)
LOSS_REL = 2e-5
# impl's final parameters no further from the oracle's than PyTorch's by more than 2x + 4 ulps (normwise): both
# share the float32 rounding of the AdamW decay factor 1 - lr*wd (~9 ulps median after 50 steps).
PARAM_FACTOR = 2.0


@pytest.mark.parametrize("op", COMBOS, ids=[o.name for o in COMBOS])
def test_combinator_against_oracle_and_torch(op: Op) -> None:
    check_op(op)


@pytest.mark.parametrize("seed", [0, 1])
def test_small_model_50_adamw_steps(seed: int) -> None:
    """Linear(12 -> 32), GELUErf, LayerNorm(32), Linear(32 -> 10), CrossEntropy, n = 16, AdamW lr 3e-3, wd 0.01."""
    r = model_run(n=16, i=12, h=32, k=10, steps=50, seed=seed)
    s = summary(r)
    lo = np.array(r["oracle"])
    assert lo[-1] < 0.5 * lo[0], "the model must actually train (the comparison is about a moving trajectory)"
    for lib in ("impl", "torch"):
        assert s[f"{lib}_loss_rel_max"] <= LOSS_REL, (lib, s)
    assert s["impl_param_norm_ulp"] <= PARAM_FACTOR * s["torch_param_norm_ulp"] + 4.0, s
    assert s["impl_param_median_ulp"] <= PARAM_FACTOR * s["torch_param_median_ulp"] + 1.0, s
