"""Every loss (CrossEntropy, NLL, MSE) against the oracle and PyTorch float32: the mean loss and its gradient dy, on
several shapes and seeds (reference/ops.py's LOSSES, the same list `bendtorch report` runs).

Bounds (Op.bound / Op.bound_elem, reasons in Op.why): the loss within 4 ulps (a tree or left-to-right sum of n
same-sign row losses and one division), NLL's dy = -1/n within 0.5 ulp (one correctly rounded division), MSE's dy
within 2 ulps (two roundings), CrossEntropy's dy within 8 ulps normwise (softmax - onehot cancels at the label).
"""

from __future__ import annotations

import pytest

from bendtorch.reference.compare import check_op
from bendtorch.reference.ops import LOSSES, Op


@pytest.mark.parametrize("op", LOSSES, ids=[o.name for o in LOSSES])
def test_loss_against_oracle_and_torch(op: Op) -> None:
    check_op(op)
