"""A record's law families are tests, not labels: for every op record (bendtorch.records.ops) and optimizer record
(bendtorch.records.optimizers) tagged with a family, a law of that family runs on it, or the record has a gap that
says why not.

- protocol: the protocol laws run on every kind of laws.catalog.KINDS, which is the records tagged "protocol" (and a
  small Llama), and the catalog builds each of them;
- losses: the loss laws' call contract runs on every record tagged "losses" (and fails on a broken loss);
- batch_invariance: the conformance laws of the family that call a record's conformance operation are run on impl:
  each tagged record is exercised by one of them, or has a gap for impl saying why (CrossEntropy: impl's loss has no
  per-row term), and a gap that is no longer true fails too;
- the other families (dropout, rope, attention, optimizers, checkpoints): a file holding laws of the family uses the
  record's constructor, configuration class or conformance operation.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, find, settings

import bendtorch.impl as L
import bendtorch.laws
from bendtorch.impl import optim as O
from bendtorch.laws import catalog
from bendtorch.records import ops as R
from bendtorch.records.optimizers import CONFORMANCE, OPTIMIZERS, Optimizer
from bendtorch.records.studies import resolve

LAWS_DIR = Path(bendtorch.laws.__file__).parent
OWN = ("protocol", "losses", "batch_invariance")   # the families checked by running their laws, below


def law_files(family: str) -> list[Path]:
    return [f for f in sorted(LAWS_DIR.glob("*.py")) if f'@law("{family}"' in f.read_text()]


# ---- protocol ----------------------------------------------------------------------------------------------------

def test_the_protocol_laws_draw_every_record_tagged_protocol() -> None:
    assert catalog.KINDS == [r.name for r in R.tagged("protocol")] + ["Llama"]
    assert {r.name for r in R.CONSTRUCTORS if r.kind != "loss"} <= set(catalog.KINDS)


@pytest.mark.parametrize("kind", catalog.KINDS)
def test_the_catalog_builds_each_protocol_kind(kind: str) -> None:
    b = find(catalog.of_kind(kind), lambda b: True, settings=settings(database=None, max_examples=5))
    assert isinstance(b.layer, L.Layer) and b.kind == kind


# ---- losses --------------------------------------------------------------------------------------------------------

def test_the_loss_laws_run_on_every_record_tagged_losses() -> None:
    from bendtorch.laws import test_losses as TL
    assert TL.LOSS_OPS == [r.name for r in R.tagged("losses")] and TL.LOSS_OPS


def test_the_loss_call_contract_fails_on_a_broken_loss() -> None:
    from bendtorch.laws.test_losses import check_loss_call
    rec = R.op("MSE")
    d = rec.shapes[0]
    s = R.sample(rec, L, d, 3)
    good = rec.build(L, d)
    check_loss_call(good, s.x, s.t)

    def writes_y(y: Any, t: Any) -> Any:
        out = good(y, t)
        y[0, 0] = np.float32(7.0)
        return out

    def wrong_shape(y: Any, t: Any) -> Any:
        out = good(y, t)
        return L.LossOut(out.loss, out.dy[:, :-1])

    calls = iter(range(10**6))

    def drifts(y: Any, t: Any) -> Any:
        out = good(y, t)
        return L.LossOut(out.loss + np.float32(next(calls)) * np.float32(2.0 ** -20), out.dy)

    for bad in (writes_y, wrong_shape, drifts, lambda y, t: L.LossOut(np.float64(1.0), good(y, t).dy)):
        with pytest.raises(AssertionError):
            check_loss_call(bad, s.x.copy(), s.t.copy())


# ---- batch invariance: the conformance laws on impl ------------------------------------------------------------

@contextlib.contextmanager
def few_examples(fn: Any, n: int) -> Iterator[None]:
    """fn (a hypothesis test) runs n derandomized examples while inside; its own settings are put back after."""
    old = fn._hypothesis_internal_use_settings
    fn._hypothesis_internal_use_settings = settings(old, max_examples=n, derandomize=True, database=None,
                                                    deadline=None, suppress_health_check=list(HealthCheck))
    try:
        yield
    finally:
        fn._hypothesis_internal_use_settings = old


def conformance_laws(family: str, op: str) -> list[Any]:
    """The conformance laws of the family (laws/test_targets.py) that call the targets' operation op."""
    from bendtorch.laws import test_targets as T
    from bendtorch.laws.registry import LAWS
    out = []
    for key, info in LAWS.items():
        mod, _, name = key.partition("::")
        if mod == T.__name__ and info.family == family:
            fn = getattr(T, name)
            if re.search(rf"\btarget\.{op}\b", inspect.getsource(fn)):
                out.append(fn)
    return out


def runs_on_impl(fn: Any) -> bool:
    """True when the law runs on impl's target (and holds: a failure is raised), False when impl says "not
    applicable"."""
    from bendtorch.targets import make_target
    with few_examples(fn, 3):
        try:
            fn(target=make_target("impl"))
        except pytest.skip.Exception as e:
            if str(e).startswith("not applicable"):
                return False
            raise
    return True


@pytest.mark.parametrize("rec", R.tagged("batch_invariance"), ids=[r.name for r in R.tagged("batch_invariance")])
def test_every_batch_invariance_tag_is_a_law_run_on_impl_or_a_gap(rec: R.OpRecord) -> None:
    laws = [fn for op in rec.conformance for fn in conformance_laws("batch_invariance", op)]
    assert laws, f"{rec.name}: no batch_invariance law calls any of its conformance operations {rec.conformance}"
    ran = [fn.__name__ for fn in laws if runs_on_impl(fn)]
    gap = rec.gap("batch_invariance", "impl")
    if gap is None:
        assert ran, f"{rec.name}: tagged batch_invariance, but impl runs none of {[f.__name__ for f in laws]}"
    else:
        assert not ran, f"{rec.name}: its gap for impl ({gap.reason}) no longer holds: {ran} ran on impl"
        assert gap.seed.startswith("main.bend line"), "the gap cites the seed's line"


def test_the_cross_entropy_gap_is_found() -> None:
    # the check above is not vacuous: CrossEntropy's tag without its gap is the disagreement it finds
    from dataclasses import replace
    rec = R.op("CrossEntropy")
    assert rec.gap("batch_invariance", "impl") is not None
    with pytest.raises(AssertionError, match="impl runs none"):
        test_every_batch_invariance_tag_is_a_law_run_on_impl_or_a_gap(replace(rec, gaps=()))


# ---- the other families: their laws use the record's names ---------------------------------------------------

def optimizer_names(o: Optimizer) -> set[str]:
    """The names a law can build an optimizer's configuration by: its class and impl.optim's functions that return
    one (adam, adamw)."""
    cls = resolve(o.config)
    made_by = {n for n, f in vars(O).items()
               if inspect.isfunction(f) and inspect.signature(f).return_annotation in (cls, cls.__name__)}
    return {cls.__name__} | made_by


def uses(family: str, names: set[str], ops: tuple[str, ...] = ()) -> bool:
    pat = "|".join([rf"\b{re.escape(n)}\b" for n in names] + [rf"\btarget\.{op}\b" for op in ops])
    return any(re.search(pat, f.read_text()) for f in law_files(family))


OTHER = [(r.name, f) for r in R.OPS if r.kind != "optimizer" for f in r.laws if f not in OWN]


@pytest.mark.parametrize("name,family", OTHER)
def test_every_other_tag_names_laws_that_use_the_op(name: str, family: str) -> None:
    rec = R.op(name)
    assert law_files(family), f"{name}: no law of family {family}"
    assert uses(family, {name}, rec.conformance), f"{name}: no {family} law uses it"


@pytest.mark.parametrize("o", OPTIMIZERS, ids=[o.name for o in OPTIMIZERS])
def test_every_optimizer_tag_names_laws_that_use_its_configuration(o: Optimizer) -> None:
    names = optimizer_names(o)
    for family in o.laws:
        assert uses(family, names), f"{o.name}: no {family} law builds {sorted(names)}"


def test_an_optimizer_step_record_has_its_optimizers_families() -> None:
    for r in R.OPTIMIZER_STEPS:
        assert any(o.title == r.name and o.laws == r.laws for o in OPTIMIZERS)
    assert not uses("optimizers", {"NoSuchOptimizer"})


def test_the_optimizer_registry_names_impl_and_the_targets() -> None:
    import typing
    from bendtorch.targets import OPTS
    assert set(typing.get_args(O.OptCfg)) == {resolve(o.config) for o in OPTIMIZERS}
    assert tuple(OPTS) == CONFORMANCE
    for o in OPTIMIZERS:
        assert f"line {o.seed_line}" in (resolve(o.config).__doc__ or ""), o.config
