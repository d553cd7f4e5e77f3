"""Laws of the optimizers (main.bend lines 225-542), over random matrices, gradients, states and configurations."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import assume, example, given
from hypothesis import strategies as st

from bendtorch.impl.bits import same_bits
from bendtorch.impl.optim import CAdamW, CAdamWBF16, CMomentum, CSGD, adam, adamw, beta_ok, opt_at, opt_mat, state_new
from bendtorch.impl.optstate import NoMom, OneMom, OptState, Packed, PNew, TwoMom, state_join, state_split
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import dims, mats

F32 = np.float32


def cfgs() -> st.SearchStrategy[Any]:
    lr = st.floats(float(F32(1e-5)), 1.0, width=32).map(F32)
    wd = st.floats(0.0, 0.5, width=32).map(F32)
    return st.one_of(
        lr.map(CSGD),
        st.tuples(lr, st.floats(0.0, float(F32(0.99)), width=32).map(F32)).map(lambda a: CMomentum(*a)),
        st.tuples(lr, wd).map(lambda a: adam(lr=float(a[0]), wd=float(a[1]))),
        st.tuples(lr, wd).map(lambda a: adamw(lr=float(a[0]), wd=float(a[1]))),
        st.tuples(lr, wd, st.booleans()).map(lambda a: CAdamWBF16(a[0], F32(0.9), F32(0.999), F32(1e-8), a[1],
                                                                   F32(0.1), F32(0.001), a[2])))


@st.composite
def problems(draw: Any, max_abs: float = 1e3) -> Any:
    r, c = draw(dims(1, 6)), draw(dims(1, 7))
    return draw(mats(r, c, max_abs)), draw(mats(r, c, max_abs))


def steps_of(cfg: Any, w: Any, g: Any, k: int) -> Any:
    st_ = state_new(cfg, lambda: np.zeros_like(w))
    q1 = q2 = F32(0.0)
    c1 = getattr(cfg, "c1", F32(0.0))
    c2 = getattr(cfg, "c2", F32(0.0))
    for _ in range(k):
        q1 = F32(q1 + F32(c1 * F32(F32(1.0) - q1)))
        q2 = F32(q2 + F32(c2 * F32(F32(1.0) - q2)))
        r = opt_mat(opt_at(cfg, q1, q2), w, g, st_)
        w, g, st_ = r.p, r.g, r.st
        yield w, g
        g[...] = g + F32(1.0)  # a new gradient for the next step


@law("optimizers", "gradient_zeroed", "bit for bit")
@given(cfgs(), problems(), st.integers(1, 3))
def test_the_gradient_comes_back_zero(cfg: Any, wg: Any, k: int) -> None:
    """Every step hands the gradient back zeroed (line 10), +0.0 in every cell."""
    w, g = wg
    for _, g2 in steps_of(cfg, w.copy(), g.copy(), k):
        assert np.all(g2.view(np.uint32) == 0)


@law("optimizers", "lr_zero_keeps_parameters", "bit for bit, but -0 may become +0")
@given(problems(), st.floats(0.0, 0.5, width=32).map(F32), st.booleans())
@example((np.array([[-0.0]], F32), np.array([[-1.0]], F32)), F32(0.1), True)
def test_lr_zero_leaves_the_parameters(wg: Any, wd: np.float32, use_sgd: bool) -> None:
    """SGD and AdamW with lr = 0 leave the parameters bit for bit, except a -0 weight: the update is then a zero,
    w + (+-0), and IEEE gives -0 + +0 = +0 (found by this law: -lr*g is +0 for a negative g). So: the same bits where
    w is not -0, and equal numbers everywhere."""
    w, g = wg
    cfg = CSGD(F32(0.0)) if use_sgd else CAdamW(F32(0.0), F32(0.9), F32(0.999), F32(1e-8), wd, F32(0.1), F32(0.001))
    w0 = w.copy()
    for w2, _ in steps_of(cfg, w, g.copy(), 2):
        negzero = (w0.view(np.uint32) == 0x80000000)
        assert np.array_equal(w2.view(np.uint32)[~negzero], w0.view(np.uint32)[~negzero])
        assert np.all(w2[negzero] == 0)


@law("optimizers", "mismatched_state_untouched", "bit for bit")
@given(problems(), st.sampled_from(["sgd-state-for-momentum", "one-for-adam", "packed-for-momentum"]))
def test_a_mismatched_state_leaves_the_values(wg: Any, case: str) -> None:
    """A state that does not match the optimizer leaves every value untouched (Opt.mat's fallback, line 432)."""
    w, g = wg
    w0, g0 = w.copy(), g.copy()
    st_: OptState[Any]
    if case == "sgd-state-for-momentum":
        op, st_ = opt_at(CMomentum(F32(0.1), F32(0.9)), F32(0), F32(0)), NoMom()
    elif case == "one-for-adam":
        op, st_ = opt_at(adamw(), F32(0.1), F32(0.001)), OneMom(np.zeros_like(w))
    else:
        op, st_ = opt_at(CMomentum(F32(0.1), F32(0.9)), F32(0), F32(0)), Packed(PNew(True))
    r = opt_mat(op, w, g, st_)
    assert same_bits(r.p, w0) and same_bits(r.g, g0) and r.st is st_


@law("optimizers", "split_join_identity", "bit for bit")
@given(problems(), st.sampled_from(["none", "one", "two", "packed"]))
def test_split_then_join_is_the_identity(wg: Any, kind: str) -> None:
    """OptState.split then OptState.join gives the state back (lines 78-96), for every kind of state."""
    a, b = wg
    st_: Any = {"none": NoMom(), "one": OneMom((a, b)), "two": TwoMom((a, b), (b, a)),
                "packed": Packed(PNew(True))}[kind]
    left, right = state_split(st_)
    back = state_join(left, right)
    if kind == "packed":
        assert isinstance(back, Packed)  # PNew splits into two PNews and joins into a node of them
        return
    assert type(back) is type(st_)
    if isinstance(st_, (OneMom, TwoMom)):
        assert back.m[0] is a and back.m[1] is b  # type: ignore[union-attr]


@law("optimizers", "beta_ok_accepts_one_minus_b", "bit for bit")
@given(st.floats(0.0, 0.9999899864196777, width=32).map(F32), st.integers(-4, 4))
@example(F32(0.999), 0)
def test_beta_ok_accepts_every_c_within_2_23(b: np.float32, k: int) -> None:
    """beta_ok accepts every c within 2^-23 of 1 - b as F32 computes it (lines 514-519): c = fl(1 - b) moved by
    k ulps, as long as that stays within 2^-23 and 0 < c <= 1; and the constant written as the decimal 1 - b."""
    c0 = F32(F32(1.0) - b)
    c = c0
    for _ in range(abs(k)):
        c = np.nextafter(c, F32(np.inf) if k > 0 else F32(0.0))
    assume(F32(0.0) < c <= F32(1.0) and abs(float(c) - float(c0)) <= 2.0 ** -23)
    assert beta_ok(b, c)
    assert beta_ok(b, F32(1.0 - float(b)))


@law("optimizers", "beta_ok_rejects_typos", "bit for bit")
@given(st.sampled_from([(0.9, 0.1), (0.999, 0.001), (0.99, 0.01), (0.95, 0.05)]),
       st.sampled_from(["swap", "x10", "div10"]))
def test_beta_ok_rejects_swapped_or_mistyped_constants(bc: tuple[float, float], typo: str) -> None:
    """A typo (0.01 for 0.001) or c1 and c2 swapped is far above 2^-23 and rejected (line 516)."""
    b, c = bc
    other = {(0.9, 0.1): 0.001, (0.999, 0.001): 0.1, (0.99, 0.01): 0.001, (0.95, 0.05): 0.001}[bc]
    bad = {"swap": other, "x10": c * 10, "div10": c / 10}[typo]
    assert not beta_ok(F32(b), F32(bad))


POISONS = {"c1 x10": ("c1", 10.0), "c1 /10": ("c1", 0.1), "c2 x10": ("c2", 10.0), "c2 /10": ("c2", 0.1),
           "swapped": ("swap", 0.0)}
GOOD: dict[str, Any] = {"adam": adam(lr=0.01), "adamw": adamw(lr=0.01),
        "bf16": CAdamWBF16(F32(0.01), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), False),
        "bf16-v16": CAdamWBF16(F32(0.01), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), True)}


@law("optimizers", "poisoned_config_nan_losses", "bit for bit")
@given(st.sampled_from(sorted(GOOD)), st.sampled_from(sorted(POISONS)), st.integers(2, 4), st.integers(0, 2**32 - 1),
       st.data())
@example("adamw", "c2 x10", 2, 0, None)
def test_a_poisoned_configuration_makes_every_later_loss_nan(kind: str, poison: str, k: int, seed: int,
                                                            data: Any) -> None:
    """A poisoned configuration makes every loss after the first NaN (q_start, main.bend lines 905-911): an Adam
    configuration whose c1 or c2 is not 1 - b1 or 1 - b2 (a typo x10 or /10, or the two swapped; OptCfg.ok, line 523)
    starts 1 - b^t at NaN, so the first step's lr / (1 - b1^t) is NaN and turns every parameter NaN: the first loss
    is the model's (finite), every later one NaN. The same model (Seq(Linear, any catalog layer)) and data with the
    right constants keep every loss finite."""
    from bendtorch.impl import CrossEntropy, Seq
    from bendtorch.impl.optim import cfg_ok
    from bendtorch.impl.train import train_new, train_step
    from bendtorch.laws.catalog import Src, leaves, linear, mat_layer, tree_copy

    n, d, h, c = 3, 4, 5, 3
    head = linear("Linear", n, d, h)
    tail = data.draw(mat_layer(n, h, c)) if data is not None else linear("Linear", n, h, c)
    m = Seq(head.layer, tail.layer)
    src = Src(seed, special_rate=0.0)
    p0 = (head.make_p(src), tail.make_p(src))
    good = GOOD[kind]
    which, f = POISONS[poison]
    if which == "swap":
        bad = replace(good, c1=good.c2, c2=good.c1)
    else:
        bad = replace(good, **{which: F32(getattr(good, which) * F32(f))})
    assert cfg_ok(good) and not cfg_ok(bad)
    rng = np.random.default_rng(seed)
    batches = [(rng.standard_normal((n, d)).astype(F32), rng.integers(0, c, n)) for _ in range(k)]
    for cfg, poisoned in ((good, False), (bad, True)):
        tr = train_new(m, cfg, tree_copy(p0))
        losses = []
        with np.errstate(all="ignore"):
            for x, y in batches:
                tr = train_step(m, CrossEntropy(n, c), cfg, tr, x, y)
                losses.append(tr.loss)
        assert np.isfinite(losses[0])
        if poisoned:
            assert all(np.isnan(v) for v in losses[1:])
            assert all(np.all(np.isnan(a)) for a in leaves(tr.p) if isinstance(a, np.ndarray))
        else:
            assert all(np.isfinite(v) for v in losses)
