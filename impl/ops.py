"""impl's half of the op table: every public layer, combinator and loss constructor of impl, by name, with its kind
and, for an element-wise activation, its entry in `impl.kernels.elementwise.ACTS` (kernels, plain twins, saved
value). The activations come from ACTS, so a new one appears here, in the laws' kinds (laws.catalog) and in the
tests' parameter lists without an edit. The full entry of an op (its oracle formula, its PyTorch function, its
sample inputs, its bounds and the law families that apply) is reference.ops' `OpInfo`, which joins this table; impl
cannot import the oracle or PyTorch.

Kinds: "activation" (element-wise, no parameters), "row" (row-wise: Softmax, LogSoftmax, RMSNorm, LayerNorm),
"layer" (the other layers), "combinator" (composes layers), "loss".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

from bendtorch.impl import combinators as C
from bendtorch.impl import losses as Lo
from bendtorch.impl.kernels.elementwise import ACTS, ActKernel
from bendtorch.impl.layers.activations import Activation
from bendtorch.impl.layers.attention import Attention
from bendtorch.impl.layers.dropout import Dropout
from bendtorch.impl.layers.embedding import Embedding
from bendtorch.impl.layers.linear import Linear, LinearFirst, LinearNB
from bendtorch.impl.layers.rope import RoPE
from bendtorch.impl.layers.rows import LayerNorm, LogSoftmax, RMSNorm, Softmax

KINDS = ("activation", "row", "layer", "combinator", "loss")


@dataclass(frozen=True)
class ImplOp:
    """One constructor of impl: its name (as exported by bendtorch.impl), its kind, the constructor, and for an
    activation its kernel entry."""

    name: str
    kind: str
    make: Callable[..., Any]
    kernel: ActKernel | None = None


IMPL_OPS: tuple[ImplOp, ...] = (
    *(ImplOp(k.name, "activation", partial(Activation, k.name), k) for k in ACTS),
    ImplOp("Softmax", "row", Softmax),
    ImplOp("LogSoftmax", "row", LogSoftmax),
    ImplOp("RMSNorm", "row", RMSNorm),
    ImplOp("LayerNorm", "row", LayerNorm),
    ImplOp("Linear", "layer", Linear),
    ImplOp("LinearFirst", "layer", LinearFirst),
    ImplOp("LinearNB", "layer", LinearNB),
    ImplOp("Dropout", "layer", Dropout),
    ImplOp("Embedding", "layer", Embedding),
    ImplOp("RoPE", "layer", RoPE),
    ImplOp("Attention", "layer", Attention),
    ImplOp("Id", "combinator", C.Id),
    ImplOp("Seq", "combinator", C.Seq),
    ImplOp("Fork", "combinator", C.Fork),
    ImplOp("Both", "combinator", C.Both),
    ImplOp("Tie", "combinator", C.Tie),
    ImplOp("Add2", "combinator", C.Add2),
    ImplOp("Mul2", "combinator", C.Mul2),
    ImplOp("Residual", "combinator", C.Residual),
    ImplOp("CrossEntropy", "loss", Lo.CrossEntropy),
    ImplOp("MSE", "loss", Lo.MSE),
    ImplOp("NLL", "loss", Lo.NLL),
)
_BY_NAME = {o.name: o for o in IMPL_OPS}


def impl_op(name: str) -> ImplOp:
    """The entry named `name`; a KeyError naming the table's entries for any other."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"impl has no op {name!r}; the table has {', '.join(_BY_NAME)}") from None

