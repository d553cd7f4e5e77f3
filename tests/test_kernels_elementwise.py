"""The element-wise activations and Dropout (main.bend lines 737-761, 1046-1288): every numba kernel equals its plain
twin bit for bit (random inputs and specials, one thread and two), the seed's special rules (relu(-0) = -0, relu's
gradient +0 where y <= 0, dropout p = 0 is the identity, the kept fraction), and the layers' bookkeeping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from bendtorch.impl.bits import f32_bits, same_bits
from bendtorch.impl.kernels import dropout as D
from bendtorch.impl.kernels import elementwise as E
from bendtorch.impl.kernels import libm
from bendtorch.impl.layers.activations import Activation
from bendtorch.impl.layers.dropout import DropP, Dropout
from bendtorch.impl.optim import CSGD, opt_at
from bendtorch.impl.optstate import NoMom

from tests.bitcheck import same_bits_or_nan  # noqa: E402

F32 = np.float32
Arr = npt.NDArray[np.float32]
OPS = [k.code for k in E.ACTS]
SPECIALS = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -3e-39, 1.1754944e-38, -1.1754942e-38, 1e20, -1e20, 3e38,
                     -3.4028235e38, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 9.0, -9.0, 88.7, -88.7, 104.0,
                     -104.0, 3.92, -3.92, 0.84375, -0.84375], dtype=F32)




def inputs(seed: int) -> tuple[Arr, Arr]:
    """x: normal at three scales (the saturating regions included) and uniform bit patterns; dy: normal."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.standard_normal(1500) * s for s in (0.5, 4.0, 30.0)]).astype(F32)
    words = rng.integers(0, 2**32, 1500, dtype=np.uint64).astype(np.uint32).view(F32)
    x = np.concatenate([x, words[np.isfinite(words)]]).astype(F32)
    dy = rng.standard_normal(x.size).astype(F32)
    return x, dy


# ---------------------------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS, ids=E.NAMES)
def test_activation_kernel_equals_plain(op: int, threads: int) -> None:
    x, dy = inputs(op)
    y = E.act_fwd(op, x)
    assert same_bits(y, E.act_fwd_plain(op, x))
    v = y if E.act_kernel(op).saves_output else x
    assert same_bits(E.act_bwd(op, dy, v), E.act_bwd_plain(op, dy, v))


@pytest.mark.parametrize("op", OPS, ids=E.NAMES)
def test_activation_specials(op: int, threads: int) -> None:
    # every special as x against every special as dy (and a few ordinary ones)
    xs = np.repeat(SPECIALS, SPECIALS.size)
    dys = np.tile(SPECIALS, SPECIALS.size)
    y = E.act_fwd(op, xs)
    assert same_bits(y, E.act_fwd_plain(op, xs))
    v = y if E.act_kernel(op).saves_output else xs
    assert same_bits_or_nan(E.act_bwd(op, dys, v), E.act_bwd_plain(op, dys, v))


@pytest.mark.parametrize("op", OPS, ids=E.NAMES)
def test_each_code_dispatches_to_its_own_kernels(op: int) -> None:
    # numba's dispatch (act_v / act_d over the codes) reaches the entry's own scalar kernels, and the plain twins
    # are the entry's: a branch sending a code to another activation's kernel fails here
    k = E.act_kernel(op)
    assert E.act_kernel(k.name) is k and E.NAMES[E.ACTS.index(k)] == k.name
    x, dy = inputs(100 + op)
    x, dy = x[:64], dy[:64]
    assert same_bits(np.array([E.act_v(op, v) for v in x], F32), np.array([k.v(v) for v in x], F32))
    assert same_bits(np.array([E.act_d(op, a, v) for a, v in zip(dy, x)], F32),
                     np.array([k.d(a, v) for a, v in zip(dy, x)], F32))
    assert same_bits(E.act_fwd_plain(op, x), k.plain_v(x)) and same_bits(E.act_fwd(k.name, x), E.act_fwd(op, x))
    others = [j for j in E.ACTS if j is not k]
    assert all(not same_bits(E.act_fwd(op, x), E.act_fwd(j.code, x)) for j in others)


@pytest.mark.parametrize("op", OPS, ids=E.NAMES)
def test_the_exp_neg_forms_dispatch_to_their_own_kernels(op: int) -> None:
    # the block forms from e = exp(-x) (act_v_e / act_d_e) reach the entry's own kernels, for exactly the codes its
    # record marks; any other code raises
    k = E.act_kernel(op)
    x, dy = inputs(200 + op)
    x, dy = x[:64], dy[:64]
    e = np.array([libm.expf(F32(-v)) for v in x], F32)
    def v_e(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
        return np.float32(E.act_v_e(op, b, c))

    def d_e(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
        return np.float32(E.act_d_e(op, a, b, c))

    forms = ((k.exp_neg[0], v_e, [k.v(b) for b in x]), (k.exp_neg[1], d_e, [k.d(a, b) for a, b in zip(dy, x)]))
    for flag, call, want in forms:
        if flag:
            assert same_bits(np.array([call(a, b, c) for a, b, c in zip(dy, x, e)], F32), np.array(want, F32))
        else:
            with pytest.raises(ValueError, match="not a function of exp"):
                call(dy[0], x[0], e[0])


def test_the_dispatch_is_cached_under_the_table_it_was_compiled_for() -> None:
    # numba's cache does not see the globals a function reads: the dispatch and the loops carry the records'
    # activation table's digest in their names, so code compiled for another table is never loaded; and each
    # activation's copy of a loop has a name of its own, so one activation's compiled loop is never loaded for another
    import hashlib
    from bendtorch.records.ops import ACTIVATIONS
    digest = hashlib.sha256(repr([(r.name, r.act) for r in ACTIVATIONS]).encode()).hexdigest()[:12]
    loops = [f for k in E.ACTS for run in (k.fwd_into, k.bwd_into) for f in (run.parallel, run.serial)]  # type: ignore
    for f in (E.act_v, E.act_d, E.act_v_e, E.act_d_e, *loops):
        assert digest in f.py_func.__qualname__, f.py_func.__qualname__
    names = [f.py_func.__qualname__ for f in loops]
    assert len(set(names)) == len(names) == 4 * len(E.ACTS), names


_SILU_ONLY = ("import numpy as np; import bendtorch.impl.kernels.warm; "
              "from bendtorch.impl.kernels import elementwise as E; "
              "x = np.linspace(-5, 5, 64, dtype=np.float32); E.act_bwd('SiLU', x, x); E.act_fwd('SiLU', x)")


def test_a_command_compiles_its_activations_kernels_only_and_loads_them_next_time(tmp_path: Path) -> None:
    # SiLU's loops on an empty numba cache compile SiLU's kernels and none of another activation's (a loop taking
    # the code at run time compiled them all: 2.9 s of a cold start); a second process loads every one of them
    from bendtorch.impl.kernels import warm
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), **{warm.SWITCH: "0"})
    compiled = []
    for k in range(2):
        events = tmp_path / f"events{k}.json"
        subprocess.run([sys.executable, "-c", _SILU_ONLY], env=dict(env, **{warm.RECORD: str(events)}), check=True)
        compiled.append([qualname for _, qualname, _ in json.loads(events.read_text())["every"]])
    others = [getattr(k.v, "py_func").__name__.rsplit("_", 1)[0] for k in E.ACTS if k.name != "SiLU"]
    assert any(q.startswith("silu_") for q in compiled[0]), compiled[0]
    assert not [q for q in compiled[0] for stem in others if q.startswith(stem + "_")], compiled[0]
    assert compiled[1] == []


@pytest.mark.parametrize("bad", [len(E.ACTS), -1, 99, "Softplus", "relu"])
def test_an_unknown_activation_raises(bad: int | str) -> None:
    x = np.ones(3, F32)
    for f in (lambda: E.act_fwd(bad, x), lambda: E.act_bwd(bad, x, x), lambda: E.act_fwd_plain(bad, x),
              lambda: E.act_bwd_plain(bad, x, x), lambda: Activation(str(bad), 2, 3)):
        with pytest.raises(ValueError, match="unknown activation"):
            f()
    if isinstance(bad, int):  # the numba dispatch itself raises too (no fallthrough to a last branch)
        with pytest.raises(ValueError, match="unknown activation code"):
            E.act_v(bad, F32(1.0))
        with pytest.raises(ValueError, match="unknown activation code"):
            E.act_d(bad, F32(1.0), F32(1.0))


def test_relu_seed_rules() -> None:
    x = np.array([-0.0, 0.0, np.nan, -1e-45, 2.0, -np.inf], dtype=F32)
    y = E.act_fwd("ReLU", x)
    # relu(x) = x unless x < 0: -0 and NaN pass unchanged, negatives give +0
    assert [f32_bits(v) for v in y] == [0x80000000, 0, f32_bits(x[2]), 0, f32_bits(F32(2.0)), 0]
    dy = np.array([5.0, 5.0, 5.0, 5.0, 5.0, 5.0], dtype=F32)
    ys = np.array([-0.0, 0.0, np.nan, -1.0, 1e-45, np.inf], dtype=F32)
    # gradient +0 where y <= 0 (-0 included), dy elsewhere (NaN included, PyTorch's threshold_backward)
    five = f32_bits(F32(5.0))
    assert [f32_bits(v) for v in E.act_bwd("ReLU", dy, ys)] == [0, 0, five, 0, five, five]


def test_constants_and_formulas() -> None:
    # the constant product (3.0 * 0.044715 : F32) is rounded once from the two float32 literals
    assert E._GELU_3A == F32(F32(3.0) * F32(0.044715))
    assert E._INV_SQRT2 == F32(0.70710677)
    # spot values from the formulas written out by hand with the C library's float32 functions
    x = F32(0.75)
    sig = F32(F32(1.0) / F32(F32(1.0) + libm.expf(F32(-x))))
    assert E.act_fwd("Sigmoid", np.array([x]))[0] == sig
    s = sig
    silu_d = F32(F32(F32(2.0) * s) * F32(F32(1.0) + F32(x * F32(F32(1.0) - s))))
    assert E.act_bwd("SiLU", np.array([F32(2.0)]), np.array([x]))[0] == silu_d
    pdf = F32(F32(0.3989422804014327) * libm.expf(F32(F32(x * x) * F32(-0.5))))
    from bendtorch.impl.kernels.erf import erf_plain
    cdf = F32(F32(0.5) * F32(F32(1.0) + erf_plain(F32(x * F32(0.7071067811865476)))))
    assert E.act_bwd("GELUErf", np.array([F32(1.0)]), np.array([x]))[0] == F32(cdf + F32(x * pdf))


@pytest.mark.parametrize("name", E.NAMES)
def test_activation_layers(name: str) -> None:
    lay = Activation(name, 3, 5)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5)).astype(F32)
    x0 = x.copy()
    r = lay.fwd(None, x)
    op = E.act_kernel(name).code
    assert same_bits(r.y, E.act_fwd_plain(op, x))
    assert same_bits(r.s, r.y if E.act_kernel(op).saves_output else x)
    assert r.s is not x and r.s is not r.y          # the saved value is a copy, as the seed's clone
    dy = rng.standard_normal((3, 5)).astype(F32)
    b = lay.bwd(None, r.s, dy, None)
    assert same_bits(b.dx, E.act_bwd_plain(op, dy, r.s))
    assert same_bits(x, x0) and b.g is None and lay.count() == 0 and lay.dump(None).size == 0


# ---------------------------------------------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------------------------------------------

def mix32_int(x: int) -> int:
    """lowbias32 on Python integers (a third spelling of main.bend line 1229)."""
    x ^= x >> 16
    x = (x * 2146121005) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 2221713035) & 0xFFFFFFFF
    return x ^ (x >> 16)


def test_mix32() -> None:
    rng = np.random.default_rng(2)
    words = [0, 1, 0xFFFFFFFF, 0x80000000, 12345] + [int(w) for w in rng.integers(0, 2**32, 200)]
    for w in words:
        assert int(D.mix32(np.uint64(w))) == mix32_int(w)
    assert [int(v) for v in D.mix32_plain(np.array(words, dtype=np.uint32))] == [mix32_int(w) for w in words]


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_dropout_mask_equals_plain(p: float, threads: int) -> None:
    for seed, t in [(0, 0), (12345, 7), (0xFFFFFFFF, 0xFFFFFFFF)]:
        m = D.mask(37, 41, seed, t, F32(p))
        assert same_bits(m, D.mask_plain(37, 41, seed, t, F32(p)))
    # the first factor by hand: key = mix32(seed ^ mix32(t)), h = mix32(key + 0), u = (h >> 8) / 2^24
    key = mix32_int(5 ^ mix32_int(3))
    u = F32(mix32_int(key) >> 8) / F32(16777216.0)
    scale = D.scale_of(F32(p))
    assert D.mask(1, 1, 5, 3, F32(p))[0, 0] == (F32(0.0) if u < F32(p) else scale)


def test_dropout_p0_identity_and_p1() -> None:
    lay = Dropout(4, 6, 0.0, 99)
    x = np.concatenate([SPECIALS[:24]]).reshape(4, 6).astype(F32)
    r = lay.fwd(DropP(17), x)
    assert same_bits(r.y, x)                      # factor 1 everywhere: x * 1 keeps every bit (-0, NaN)
    assert np.all(r.s == F32(1.0))
    lay1 = Dropout(4, 6, 1.0, 99)
    r1 = lay1.fwd(DropP(0), np.ones((4, 6), F32))
    assert np.all(r1.s == 0) and np.all(r1.y == 0)


def test_dropout_kept_fraction() -> None:
    n, c, p = 200, 500, 0.3
    k = D.mask(n, c, 2024, 11, F32(p))
    kept = float(np.mean(k != 0))
    # binomial: sd = sqrt(p (1 - p) / 1e5) = 0.00145; 5 sd
    assert abs(kept - (1 - p)) < 5 * 0.00145
    assert set(np.unique(k).tolist()) == {0.0, float(F32(F32(1.0) / F32(F32(1.0) - F32(p))))}
    # another step or another seed gives another mask
    assert not np.array_equal(k, D.mask(n, c, 2024, 12, F32(p)))
    assert not np.array_equal(k, D.mask(n, c, 2025, 11, F32(p)))


def test_the_kept_fraction_law_holds_on_a_fair_draw_and_fails_on_a_broken_mask(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the law (laws/test_dropout.py) on its pinned example: 2 of 256 dropped at p = 1e-4, a fair draw of a
    # Poisson-like count that a bound of 6 standard deviations + 1/N rejected
    import bendtorch.laws.test_dropout as TD

    law = TD.test_the_kept_fraction_is_near_1_minus_p.hypothesis.inner_test  # type: ignore[attr-defined]
    assert int(np.count_nonzero(TD.factors(4, 64, F32(1e-4), 36, 1))) == 254
    assert abs(254 / 256 - (1 - float(F32(1e-4)))) > 6 * np.sqrt(1e-4 / 256) + 1 / 256
    law(4, 64, F32(1e-4), 36, 1)
    # a broken mask, keeping each number with probability p instead of 1 - p, fails it
    monkeypatch.setattr(TD, "factors", lambda n, c, p, seed, t: D.mask(n, c, seed, t, F32(F32(1.0) - p)))
    with pytest.raises(AssertionError):
        law(4, 64, F32(0.3), 5, 1)


def test_dropout_layer() -> None:
    lay = Dropout(3, 4, 0.5, 7)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)).astype(F32)
    d0 = lay.zeros()
    assert d0 == DropP(0) and lay.count() == 1
    r = lay.fwd(d0, x)
    assert same_bits(r.s, D.mask(3, 4, 7, 0, F32(0.5))) and same_bits(r.y, x * r.s)
    dy = rng.standard_normal((3, 4)).astype(F32)
    b = lay.bwd(r.p, r.s, dy, lay.zeros())
    assert same_bits(b.dx, dy * r.s) and b.g == DropP(0)
    st = lay.step(opt_at(CSGD(F32(0.1)), F32(0), F32(0)), DropP(5), DropP(0), NoMom())
    assert st.p == DropP(6)
    assert lay.step(opt_at(CSGD(F32(0.1)), F32(0), F32(0)), DropP(0xFFFFFFFF), DropP(0), NoMom()).p == DropP(0)
    for t in [0, 1, 0x7F800001, 0xFFC00001, 0xFFFFFFFF]:   # NaN bit patterns included
        flat = lay.dump(DropP(t))
        assert flat.dtype == F32 and int(flat.view(np.uint32)[0]) == t
        xs = np.zeros(3, dtype=F32)
        assert lay.store(DropP(t), xs, 1) == 2 and int(xs.view(np.uint32)[1]) == t
        ld = lay.load(DropP(0), xs, 1)
        assert ld.p == DropP(t) and ld.off == 2
    with pytest.raises(ValueError):
        Dropout(2, 2, 0.5, -1)
    with pytest.raises(ValueError):
        Dropout(2, 2, 0.5, 2**32)
