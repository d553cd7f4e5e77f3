"""impl's half of the op records: every public layer, combinator and loss constructor of impl, by name, with its kind
and, for an element-wise activation, its entry in `impl.kernels.elementwise.ACTS` (kernels, plain twins, saved
value). The list is the records' (bendtorch.records.ops.CONSTRUCTORS, in their order), so a new op appears here, in
the laws' kinds (laws.catalog) and in the tests' parameter lists from its record alone. The rest of an op's record
(its oracle formula, sample inputs, bounds, law families and gaps) is read from the record itself; PyTorch's function
is reference.ops's.

Kinds: "activation" (element-wise, no parameters), "row" (row-wise: Softmax, LogSoftmax, RMSNorm, LayerNorm),
"layer" (the other layers), "combinator" (composes layers), "loss".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import bendtorch.impl as L
from bendtorch.impl.kernels.elementwise import ActKernel, act_kernel
from bendtorch.impl.layers.activations import Activation
from bendtorch.records.ops import CONSTRUCTORS, IMPL_KINDS, OpRecord, op

KINDS = IMPL_KINDS


@dataclass(frozen=True)
class ImplOp:
    """One constructor of impl: its name (as exported by bendtorch.impl), its kind, the constructor, and for an
    activation its kernel entry."""

    name: str
    kind: str
    make: Callable[..., Any]
    kernel: ActKernel | None = None


def _impl_op(r: OpRecord) -> ImplOp:
    assert r.impl_kind is not None
    if r.impl_kind == "activation":
        return ImplOp(r.name, r.impl_kind, partial(Activation, r.name), act_kernel(r.name))
    return ImplOp(r.name, r.impl_kind, getattr(L, r.name))


IMPL_OPS: tuple[ImplOp, ...] = tuple(_impl_op(r) for r in CONSTRUCTORS)
_BY_NAME = {o.name: o for o in IMPL_OPS}


def impl_op(name: str) -> ImplOp:
    """The entry named `name`; a KeyError for any other (records.ops.op's, naming the records, for a name without a
    record)."""
    if name not in _BY_NAME:
        op(name)
        raise KeyError(f"{name!r} is a composition or an optimizer step, not one of impl's constructors")
    return _BY_NAME[name]
