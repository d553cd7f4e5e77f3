"""The op table is complete and is the one source: every entry of reference.ops.OPS names its impl half (constructor;
for an activation the kernels and plain twins), its oracle half (formula or constructor), its PyTorch function, its
sample inputs and its bounds with their reasons, and law families that exist; every public layer, combinator and
loss constructor exported by bendtorch.impl is in impl's table (impl.ops.IMPL_OPS) and either has an entry or is
listed, with where it is covered, in COVERED_ELSEWHERE; impl and oracle export the same constructors and name the
layers they build alike."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bendtorch.impl as IMPL
import bendtorch.laws
import bendtorch.oracle as ORACLE
from bendtorch.impl.kernels import elementwise as E
from bendtorch.impl.ops import IMPL_OPS, KINDS, impl_op
from bendtorch.impl.protocol import Layer, Loss
from bendtorch.oracle import funcs
from bendtorch.reference.ops import COVERED_ELSEWHERE, OPS, Op

LAWS_DIR = Path(bendtorch.laws.__file__).parent
# the law families the law suites declare (@law("family", ...) in laws/*.py)
FAMILIES = {m for f in LAWS_DIR.glob("*.py") for m in re.findall(r'@law\("([a-z_0-9]+)"', f.read_text())}
ENTRY_KINDS = ("layer", "loss")
# impl-only options of how to compute, not what (thread use, a speed/accuracy variant): the oracle has no such choice
IMPL_ONLY = {"par", "precise"}


def entry_ops() -> list[Op]:
    return [o for o in OPS if o.kind in ENTRY_KINDS]


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_every_entry_is_complete(op: Op) -> None:
    assert op.shapes and op.seeds and callable(op.x) and callable(op.build), "sample inputs"
    assert callable(op.torch_fn), "PyTorch function"
    assert op.outputs and all(k in op.bound for k in op.outputs), f"a bound for each of {op.outputs}: {op.bound}"
    assert all(k in op.outputs for k in (*op.bound, *op.bound_elem, *op.bitexact)), "bounds of outputs it has"
    assert len(op.why) >= 8, "the bounds' reason"
    assert op.laws and set(op.laws) <= FAMILIES, f"law families {op.laws} among {sorted(FAMILIES)}"
    if op.kind in ENTRY_KINDS:
        im = op.impl
        assert im is not None and im.name == op.name and callable(im.make)
        assert op.oracle is not None, "the oracle's formula or constructor"
        if im.kind == "activation":
            k = im.kernel
            assert k is not None and k.name == op.name
            assert all(callable(f) for f in (k.v, k.d, k.plain_v, k.plain_d)), "kernels and plain twins"
            assert op.oracle is funcs.ACTIVATIONS[op.name] and all(callable(f) for f in op.oracle)
        else:
            assert op.oracle is getattr(ORACLE, op.name)


def test_activation_tables_agree() -> None:
    # impl's kernels, the oracle's formulas and the op table list the same activations, in the same order
    acts = [o.name for o in IMPL_OPS if o.kind == "activation"]
    assert acts == list(E.NAMES) == list(funcs.ACTIVATIONS)
    assert acts == [o.name for o in entry_ops() if o.impl is not None and o.impl.kind == "activation"]


def public_constructors() -> dict[str, Any]:
    """impl's exported callables that build a Layer or a Loss (by their return annotation)."""
    out = {}
    for name in IMPL.__all__:
        f = getattr(IMPL, name)
        if not inspect.isfunction(f) or name == "Activation":
            continue
        ret = str(inspect.signature(f).return_annotation)
        if ret.startswith(("Layer[", "Loss[", "ActLayer")):
            out[name] = f
    return out


def test_every_public_layer_has_an_entry() -> None:
    pub = public_constructors()
    assert all(o.kind in KINDS for o in IMPL_OPS) and len({o.name for o in IMPL_OPS}) == len(IMPL_OPS)
    assert {"Linear", "ReLU", "Seq", "CrossEntropy", "RMSNorm"} <= set(pub)   # the scan sees them
    missing = [n for n in pub if n not in {o.name for o in IMPL_OPS}]
    assert not missing, f"exported by bendtorch.impl but not in impl.ops.IMPL_OPS: {missing}"
    entries = {o.name for o in entry_ops()}
    for o in IMPL_OPS:
        if o.kind in ("combinator",) and o.name in ("Add2", "Mul2"):
            assert o.name in {c.name for c in OPS}
        elif o.name not in entries:
            assert o.name in COVERED_ELSEWHERE, f"{o.name} has no entry in reference.ops and is not COVERED_ELSEWHERE"
    assert set(COVERED_ELSEWHERE) <= {o.name for o in IMPL_OPS}


def test_the_entry_check_fails_on_a_broken_entry() -> None:
    # the completeness test is not vacuous: an entry without a bound, a reason or laws fails it
    from dataclasses import replace
    good = next(o for o in OPS if o.name == "GELUErf")
    for bad in (replace(good, bound={"y": 4.0}), replace(good, why=""), replace(good, laws=("no_such_family",))):
        with pytest.raises(AssertionError):
            test_every_entry_is_complete(bad)
    with pytest.raises(KeyError, match="no op 'Softplus'"):
        impl_op("Softplus")


def small_args(o_name: str) -> tuple[Any, ...]:
    return {"Embedding": (3, 5, 4), "Linear": (3, 4, 5), "LinearFirst": (3, 4, 5), "LinearNB": (3, 4, 5),
            "Dropout": (3, 4, 0.25, 7), "RoPE": (4, 8, 2, 2, 2, 10000.0),
            "Attention": (4, 4, 2, 2, 2, 1, 2, 2, 0.5)}.get(o_name, (3, 4))


def constructors(name: str) -> tuple[Any, Any]:
    """impl's and the oracle's constructor of an op: an activation's through Activation(name, ...) (its named
    constructor, ReLU(n, c), ..., is optional), any other by its name."""
    if impl_op(name).kind == "activation":
        return impl_op(name).make, lambda *a: ORACLE.Activation(name, *a)
    return getattr(IMPL, name), getattr(ORACLE, name)


@pytest.mark.parametrize("name", [o.name for o in IMPL_OPS if o.kind != "combinator"])
def test_impl_and_oracle_agree_on_names_and_argument_checks(name: str) -> None:
    mi, mo = getattr(IMPL, name, None), getattr(ORACLE, name, None)
    assert (mi is None) == (mo is None), "a named constructor in both libraries or in neither"
    if mi is not None and mo is not None:
        assert [p.name for p in inspect.signature(mi).parameters.values() if p.name not in IMPL_ONLY] == \
            [p.name for p in inspect.signature(mo).parameters.values() if p.name not in IMPL_ONLY]
    mi, mo = constructors(name)
    a, b = mi(*small_args(name)), mo(*small_args(name))
    assert isinstance(a, (Layer, Loss)) and a.name == b.name, (a.name, b.name)
    assert a.dtype == np.float32 and b.dtype == np.float64
    bad = list(small_args(name))
    bad[0] = -1
    for m in (mi, mo):
        with pytest.raises(ValueError, match=re.escape(name)):
            m(*bad)
