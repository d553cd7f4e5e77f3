"""The checks' fast forms agree with the checks that name what is wrong: a layer call runs `param_check`,
`value_check` and `state_fits` and works out a message only when one fails, so a fast form that said yes where its
*_diff says no would let a wrong value reach a kernel. For every layer of the op records (impl and the oracle), every
array of its parameters, inputs, outputs and optimizer states, and every mutation of the zoo's (narrow, wide,
float64, int, list, non-contiguous, scalar) plus whole-value ones (another container, another length, a counter out of
range), each fast form must give exactly `*_diff(...) is None` (state_fits: True only where state_diff finds nothing).
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pytest

from bendtorch.impl.optstate import NoMom, OneMom, TwoMom, state_diff, state_fits
from bendtorch.impl.specs import (IdsSpec, MatSpec, PairSpec, check_value, param_check, param_diff, skeleton,
                                  structure_check, structure_diff, value_check)
from bendtorch.records.ops import load_params, op, sample
from tests.test_layer_zoo import KINDS, MUTATIONS, arrays, mutate, replace_at

F32 = np.float32


def variants(v: Any) -> Iterator[Any]:
    """v itself, v with each of its arrays mutated every way, and v replaced or reshaped as a whole."""
    yield v
    for path, a in arrays(v):
        for how in MUTATIONS[1:]:
            yield replace_at(v, path, mutate(a, how))
    yield [v]
    yield None
    yield 3
    yield -1
    yield 2 ** 32
    yield True
    yield np.uint32(7)
    if isinstance(v, tuple):
        yield tuple(v)          # a record's fields in a plain tuple
        yield (*v, v[0]) if v else (0,)
        yield v[:-1]
        yield list(v)


def sample_of(kind: str, lib: str) -> tuple[Any, Any, Any, Any]:
    """The record's layer in impl or the oracle (float64), with its sample's parameters, x and dy."""
    import importlib
    L = importlib.import_module(f"bendtorch.{lib}")
    rec = op(kind)
    assert rec.small is not None
    dims = rec.small(2, 3, 4)
    lay = rec.build(L, dims)
    s = sample(rec, L, dims, 0)
    p = load_params(lay, s.params, lay.dtype)
    return lay, p, in_dtype(s.x, lay.dtype), in_dtype(s.dy, lay.dtype)


def in_dtype(v: Any, dtype: Any) -> Any:
    """A sample's floats in the layer's dtype (the records draw float32), its ids as they are."""
    if isinstance(v, tuple):
        return tuple(in_dtype(x, dtype) for x in v)
    return v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v


# every layer in impl and in the oracle (float64), but Id in the oracle: its record builds it from a MatSpec, which
# the oracle's namespace does not export
CASES = [(k, "impl") for k in KINDS] + [(k, "oracle") for k in KINDS if k != "Id"]


@pytest.mark.parametrize(("kind", "lib"), CASES)
def test_param_check_is_param_diff(kind: str, lib: str) -> None:
    lay, p, _, _ = sample_of(kind, lib)
    skel = lay.p_skel
    refused = 0
    for depth in (-1, 0, 1, 2):
        ok = param_check(skel, depth)
        for v in variants(p):
            want = param_diff(v, skel, depth=depth) is None
            assert ok(v) == want, (kind, depth, v, param_diff(v, skel, depth=depth))
            refused += not want
    assert refused > 0  # the cases include wrong ones


def _counters(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, tuple) and any(map(_counters, v)))


@pytest.mark.parametrize(("kind", "lib"), CASES)
def test_structure_check_is_structure_diff(kind: str, lib: str) -> None:
    # a backward pass asks structure_diff(g, p) only where structure_check(p_skel) says no: the predicate must say
    # yes only where structure_diff finds nothing, and (with no counter in p, where it always says no) exactly there
    lay, p, _, _ = sample_of(kind, lib)
    refused = 0
    for depth in (-1, 0, 1, 2):
        ok = structure_check(lay.p_skel, depth)
        for v in variants(p):
            want = structure_diff(v, p, depth=depth) is None
            assert ok(v) == want if not _counters(p) else (not ok(v) or want), (kind, depth, v)
            refused += not want
    assert refused > 0


@pytest.mark.parametrize(("kind", "lib"), CASES)
def test_value_check_is_check_value(kind: str, lib: str) -> None:
    lay, p, x, dy = sample_of(kind, lib)
    refused = 0
    for spec, v in ((lay.x_spec, x), (lay.y_spec, dy), (lay.y_spec, lay.fwd(p, x).y)):
        for grad in (False, True):
            ok = value_check(spec, lay.dtype, grad)
            for w in [*variants(v), np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, bool)]:
                want = check_value(w, spec, lay.dtype, grad) is None
                assert ok(w) == want, (kind, spec, grad, w, check_value(w, spec, lay.dtype, grad))
                refused += not want
    assert refused > 0


@pytest.mark.parametrize(("kind", "lib"), CASES)
def test_state_fits_only_what_state_diff_accepts(kind: str, lib: str) -> None:
    lay, p, _, _ = sample_of(kind, lib)
    skel = lay.p_skel
    for depth in (-1, 1):
        ok = param_check(skel, depth)
        for m in variants(p):
            for st in (NoMom(), OneMom(m), TwoMom(m, p), TwoMom(p, m), object()):
                want = state_diff(st, skel, depth) is None
                # exact for the states of unpacked buffers, one way (True only if accepted) for the rest
                got = state_fits(st, ok)
                assert got == want if isinstance(st, (OneMom, TwoMom)) else (not got or want), (kind, st)


def test_the_fast_forms_see_what_the_diffs_see() -> None:
    """A few values by hand, so the agreement above is not two functions agreeing to accept everything."""
    a = np.zeros((2, 3), F32)
    ok = param_check(skeleton((a, (a[:1], 0))))
    assert ok((a, (a[:1].copy(), 5)))
    assert not ok((a, (a[:1].copy(), -1)))            # counter out of range
    assert not ok((a[:, :2], (a[:1].copy(), 5)))       # shape
    assert not ok((np.zeros((2, 4), F32)[:, :3], (a[:1].copy(), 5)))  # strided view
    assert not ok((a.astype(np.float64), (a[:1].copy(), 5)))          # dtype
    assert ok((np.zeros((2, 3), F32), (np.zeros((2, 3), F32)[:1], 5)))  # one row of a bigger array: contiguous
    spec = PairSpec(MatSpec(2, 3), IdsSpec(4))
    assert value_check(spec, F32)((a, np.arange(4)))
    assert not value_check(spec, F32)((a, np.arange(4.0)))
    assert value_check(spec, F32, grad=True)((a, np.arange(0)))
    g_ok = structure_check(skeleton((a, (a[:1], None))))
    assert g_ok((a, (a[:1], None)))
    assert g_ok((np.zeros((4, 3), F32)[::2], (a[:1], None)))  # a strided gradient has p's structure
    assert not g_ok((a, (a, None)))                            # shape
    assert not g_ok((a, [a[:1], None]))                        # a list for a tuple
    assert not g_ok((a, (a[:1], a)))                           # an array where p has none
    assert not g_ok((a.astype(np.float64), (a[:1], None)))     # dtype
    assert not structure_check(skeleton((a, 3)))((a, 3))       # a counter: structure_diff is asked


def test_a_backward_pass_refuses_a_gradient_unlike_p() -> None:
    # the layer's backward pass holds the g its raw function returns to p's structure (structure_check, then
    # structure_diff for the message): a gradient of another shape is refused with the layer named
    import dataclasses

    from bendtorch.impl.protocol import Bwd
    from bendtorch.impl.specs import ShapeError

    lay, p, x, dy = sample_of("Linear", "impl")
    r = lay.fwd(p, x)
    lay.bwd(p, r.s, dy, lay.zeros())  # the layer as built: accepted

    def bad_bwd(p_: Any, s: Any, dy_: Any, g: Any) -> Any:
        good = lay.f_bwd(p_, s, dy_, g)
        return Bwd(p=good.p, dx=good.dx, g=tuple(a[:1] for a in good.g) if isinstance(good.g, tuple) else good.g[:1])

    broken = dataclasses.replace(lay, f_bwd=bad_bwd)
    with pytest.raises(ShapeError, match="g must have p's structure"):
        broken.bwd(p, r.s, dy, broken.zeros())
