"""The op records are complete and are the one source (bendtorch.records.ops): every record names its impl half
(constructor; for an activation the kernels and plain twins), its oracle half (formula or constructor), and, where
it is compared with PyTorch in the op table, PyTorch's function, its sample inputs and its bounds with their reasons;
its law families exist and each gap says why; every public layer, combinator and loss constructor exported by
bendtorch.impl has a record; impl and the oracle export the same constructors, name the layers they build alike and
refuse the same bad dimensions."""

from __future__ import annotations

import inspect
import re
from dataclasses import replace
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
from bendtorch.records import ops as R
from bendtorch.records.ops import OpRecord
from bendtorch.reference.ops import OPS, TORCH, impl_half, oracle_half

LAWS_DIR = Path(bendtorch.laws.__file__).parent
# the law families the law suites declare (@law("family", ...) in laws/*.py)
FAMILIES = {m for f in LAWS_DIR.glob("*.py") for m in re.findall(r'@law\("([a-z_0-9]+)"', f.read_text())}
AXES = FAMILIES | {"torch", "sweep"}
# impl-only options of how to compute, not what (thread use, a speed/accuracy variant): the oracle has no such choice
IMPL_ONLY = {"par", "precise"}


def check_record(op: OpRecord) -> None:
    """One record's completeness (raises AssertionError naming what is missing)."""
    assert op.kind in R.KINDS and op.impl_kind in (*R.IMPL_KINDS, None), (op.kind, op.impl_kind)
    assert set(op.laws) <= FAMILIES, f"law families {op.laws} among {sorted(FAMILIES)}"
    assert op.laws or op.impl_kind is None, "a constructor's record names the law families that state its properties"
    for g in op.gaps:
        assert g.axis in AXES and len(g.reason) >= 8, f"a gap on a known axis, with its reason: {g}"
    if op.compared:
        assert op.shapes and op.seeds and callable(op.build), "sample inputs"
        assert op.kind == "optimizer" or op.name in TORCH, "PyTorch function"
        assert op.outputs and all(k in op.bound for k in op.outputs), f"a bound for each of {op.outputs}: {op.bound}"
        assert all(k in op.outputs for k in (*op.bound, *op.bound_elem, *op.bitexact)), "bounds of outputs it has"
        assert len(op.why) >= 8, "the bounds' reason"
    else:
        covered = op.gap("torch")
        assert covered is not None and covered.covered, "where it is compared instead"
    if op.impl_kind is not None:
        im = impl_half(op)
        assert im is not None and im.name == op.name and callable(im.make)
        assert oracle_half(op) is not None, "the oracle's formula or constructor"
        assert op.small is not None, "small dims, for the layer zoo and the laws"
    if op.impl_kind == "activation":
        a, k = op.act, impl_op(op.name).kernel
        assert a is not None and k is not None and k.name == op.name and k.code == a.code
        assert all(callable(f) for f in (k.v, k.d, k.plain_v, k.plain_d)), "kernels and plain twins"
        assert oracle_half(op) is funcs.ACTIVATIONS[op.name] and all(callable(f) for f in oracle_half(op))
        assert (a.sweep is None) == (op.gap("sweep") is not None), "atlas names, or a gap saying why not"
    else:
        assert op.act is None


@pytest.mark.parametrize("op", R.OPS, ids=[o.name for o in R.OPS])
def test_every_record_is_complete(op: OpRecord) -> None:
    check_record(op)


def test_the_compared_ops_are_the_records_without_a_torch_gap() -> None:
    assert [o.name for o in OPS] == [o.name for o in R.OPS if o.compared]
    assert set(TORCH) == {o.name for o in OPS if o.kind != "optimizer"}, "one PyTorch function per compared op"


def test_activation_tables_agree() -> None:
    # impl's kernels, the oracle's formulas and the records list the same activations, in code order 0, 1, ...
    acts = [o.name for o in R.ACTIVATIONS]
    assert acts == [o.name for o in IMPL_OPS if o.kind == "activation"] == list(E.NAMES) == list(funcs.ACTIVATIONS)
    assert [o.act.code for o in R.ACTIVATIONS if o.act] == list(range(len(acts))) == [k.code for k in E.ACTS]
    assert [o.act.exp_neg for o in R.ACTIVATIONS if o.act] == [k.exp_neg for k in E.ACTS]
    assert list(E.EXP_NEG_FWD) == [k.exp_neg[0] for k in E.ACTS] and list(E.SAVES_OUTPUT) == \
        [o.act.saves_output for o in R.ACTIVATIONS if o.act]


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


def test_every_public_layer_has_a_record() -> None:
    pub = public_constructors()
    assert all(o.kind in KINDS for o in IMPL_OPS) and len({o.name for o in R.OPS}) == len(R.OPS)
    assert {"Linear", "ReLU", "Seq", "CrossEntropy", "RMSNorm"} <= set(pub)   # the scan sees them
    missing = [n for n in pub if n not in {o.name for o in IMPL_OPS}]
    assert not missing, f"exported by bendtorch.impl but without a record in bendtorch.records.ops: {missing}"


def test_the_record_check_fails_on_a_broken_record() -> None:
    # the completeness check is not vacuous: a record without a bound, a reason, laws or a gap's reason fails it
    good = R.op("GELUErf")
    broken = (replace(good, bound={"y": 4.0}), replace(good, why=""), replace(good, laws=("no_such_family",)),
              replace(good, laws=()), replace(good, gaps=(R.Gap("sweep", "?"),)),
              replace(R.op("RoPE"), gaps=()), replace(good, act=replace(good.act, sweep=None)))  # type: ignore
    for bad in broken:
        with pytest.raises(AssertionError):
            check_record(bad)
    with pytest.raises(KeyError, match="no op 'Softplus'"):
        impl_op("Softplus")
    with pytest.raises(KeyError, match="no op 'Softplus'"):
        R.op("Softplus")


@pytest.mark.parametrize("name", [o.name for o in R.CONSTRUCTORS if o.impl_kind != "combinator"])
def test_impl_and_oracle_agree_on_names_and_argument_checks(name: str) -> None:
    mi, mo = getattr(IMPL, name, None), getattr(ORACLE, name, None)
    assert (mi is None) == (mo is None), "a named constructor in both libraries or in neither"
    if mi is not None and mo is not None:
        assert [p.name for p in inspect.signature(mi).parameters.values() if p.name not in IMPL_ONLY] == \
            [p.name for p in inspect.signature(mo).parameters.values() if p.name not in IMPL_ONLY]
    rec = R.op(name)
    assert rec.small is not None
    d = rec.small(3, 4, 5)
    a, b = rec.build(IMPL, d), rec.build(ORACLE, d)
    assert isinstance(a, (Layer, Loss)) and a.name == b.name, (a.name, b.name)
    assert a.dtype == np.float32 and b.dtype == np.float64
    for lib in (IMPL, ORACLE):
        with pytest.raises(ValueError, match=re.escape(name)):
            rec.build(lib, {**d, "n": -1})
