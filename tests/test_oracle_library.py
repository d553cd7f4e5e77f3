"""The oracle as a library: its rules for labels and shapes, NaN and Inf propagating through its arithmetic,
training steps (and the configuration the seed poisons), Dropout's counter, float64 layers whose dump, load and
store round trip, from_impl's exact conversion, the protocol's ownership rule, and what oracle/ imports (no torch,
no impl numerics)."""

from __future__ import annotations

import ast
import copy
import json
import math
import pathlib
import subprocess
import sys
from typing import Any, NamedTuple

import numpy as np
import pytest

import bendtorch.oracle as L
from bendtorch.impl.optim import CAdamW, CMomentum, CSGD, cfg_ok
from bendtorch.impl.optstate import NoMom, OneMom, TwoMom
from bendtorch.impl.protocol import Layer
from bendtorch.impl.specs import MatSpec, ShapeError
from bendtorch.oracle import funcs, hyper
from bendtorch.oracle.layers import softmax
from bendtorch.oracle.optim import opt_at_step
from tests.test_oracle_math import leaves, rand_params, rng

ROOT = pathlib.Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------------------------
# Inputs: labels, shapes, NaN and Inf
# ---------------------------------------------------------------------------------------------------------------


def test_label_rules() -> None:
    y = rng(23).standard_normal((3, 4))
    for loss in (L.CrossEntropy(3, 4), L.NLL(3, 4)):
        with pytest.raises(ValueError, match=r"(CrossEntropy|NLL).*label -1"):
            loss(y, np.array([0, -1, 2]))
        with pytest.raises(ValueError, match="integers"):
            loss(y, np.array([0.0, 1.0, 2.0]))
        with pytest.raises(ValueError, match="3 integers"):
            loss(y, np.array([0, 1]))
    # a label past the last class (main.bend lines 2864, 2931)
    ce = L.CrossEntropy(3, 4)(y, np.array([0, 9, 2]))
    good = L.CrossEntropy(3, 4)(y, np.array([0, 0, 2]))
    row0 = L.CrossEntropy(1, 4)(y[0:1], np.array([0])).loss
    row2 = L.CrossEntropy(1, 4)(y[2:3], np.array([2])).loss
    assert abs(ce.loss - (row0 + (-math.log(1e-12)) + row2) / 3) <= 1e-15 * ce.loss
    assert np.allclose(ce.dy[1], softmax(y)[1] / 3, rtol=1e-15, atol=0)
    assert np.array_equal(ce.dy[[0, 2]], good.dy[[0, 2]])
    nll = L.NLL(3, 4)(y, np.array([1, 4, 3]))
    assert np.all(nll.dy[1] == 0.0) and nll.dy[0, 1] == -1.0 / 3
    assert nll.loss == -(y[0, 1] + y[2, 3]) / 3
    with pytest.raises(ShapeError):
        L.MSE(3, 4)(y, np.zeros((3, 5)))


def test_nan_and_inf_propagate() -> None:
    x = np.array([[np.nan, 1.0, -np.inf, np.inf]])
    assert np.isnan(funcs.relu(x)[0, 0]) and funcs.relu(x)[0, 2] == 0.0 and funcs.relu(x)[0, 3] == np.inf
    assert np.isnan(funcs.gelu_erf(x)[0, 0]) and funcs.sigmoid(x)[0, 3] == 1.0 and funcs.sigmoid(x)[0, 2] == 0.0
    assert np.all(np.isnan(softmax(x))) and np.all(np.isnan(softmax(np.array([[np.inf, 0.0, 1.0]]))))
    lo = L.CrossEntropy(1, 4)(x, np.array([1]))
    assert np.isnan(lo.loss) and np.all(np.isnan(lo.dy))


# ---------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------


def test_train_steps_and_poison() -> None:
    n = 4
    m = L.Seq(L.Linear(n, 3, 5), L.Seq(L.GELUErf(n, 5), L.Linear(n, 5, 3)))
    loss = L.CrossEntropy(n, 3)
    x = rng(25).standard_normal((n, 3))
    lab = np.array([0, 2, 1, 1])
    cfg = L.adamw(lr=0.05)
    tr = L.train_new(m, cfg, rand_params(m, 26))
    losses = []
    for _ in range(20):
        tr = L.train_step(m, loss, cfg, tr, x, lab)
        losses.append(float(tr.loss))
    assert tr.t == 20 and tr.p1 == hyper.one_minus_pow(np.float32(0.9), 20)
    assert losses[-1] < 0.5 * losses[0]                   # it trains
    # the same steps by hand: fwd, loss, bwd, opt_mat on each matrix
    p = rand_params(m, 26)
    st = L.state_new(cfg, m.zeros)
    g = m.zeros()
    for t in range(1, 3):
        f = m.fwd(p, x)
        lo = loss(f.y, lab)
        b = m.bwd(f.p, f.s, lo.dy, g)
        r = m.step(opt_at_step(cfg, t), b.p, b.g, st)
        p, g, st = r.p, r.g, r.st
    tr2 = L.train_new(m, cfg, rand_params(m, 26))
    tr2 = L.train_step(m, loss, cfg, L.train_step(m, loss, cfg, tr2, x, lab), x, lab)
    assert np.array_equal(m.dump(tr2.p), m.dump(p))
    # a configuration the seed poisons: c1 a typo for 1 - b1
    bad = CAdamW(*(np.float32(v) for v in (0.01, 0.9, 0.999, 1e-8, 0.0, 0.01, 0.001)))
    assert not cfg_ok(bad) and not L.cfg_ok(bad)
    tb = L.train_new(m, bad, rand_params(m, 26))
    assert math.isnan(tb.p1) and math.isnan(tb.p2)
    tb = L.train_step(m, loss, bad, tb, x, lab)
    assert math.isfinite(tb.loss) and np.all(np.isnan(m.dump(tb.p)))
    tb = L.train_step(m, loss, bad, tb, x, lab)
    assert math.isnan(tb.loss)
    for good in (CSGD(np.float32(0.1)), CMomentum(np.float32(0.1), np.float32(0.9)), L.adam()):
        assert cfg_ok(good) == L.cfg_ok(good)


# ---------------------------------------------------------------------------------------------------------------
# Dropout's counter
# ---------------------------------------------------------------------------------------------------------------


def test_dropout_counter_step_dump_load() -> None:
    lay = L.Dropout(2, 3, 0.5, 1)
    st = lay.step(L.opt_at(L.adamw(), 0.1, 0.001), L.DropP(2 ** 32 - 1), L.DropP(0), NoMom())
    assert st.p == L.DropP(0)                           # a U32 counter wraps
    for t in (0, 1, 5, 2 ** 23, 2 ** 31 + 3, 0x7FC00001, 2 ** 32 - 1):
        xs = np.zeros(3)
        assert lay.store(L.DropP(t), xs, 1) == 2
        assert np.array_equal(xs[1:2], lay.dump(L.DropP(t)), equal_nan=True)
        assert lay.load(L.DropP(0), xs, 1).p == L.DropP(t)
    assert np.uint32(5).view(np.float32) == np.float32(lay.dump(L.DropP(5))[0])   # the seed's bitcast (line 1273)


# ---------------------------------------------------------------------------------------------------------------
# Protocol: dtypes, dump / load / store, from_impl, imports
# ---------------------------------------------------------------------------------------------------------------


def all_layers() -> list[Layer[Any, Any, Any, Any]]:
    return [L.Linear(2, 3, 4), L.LinearFirst(2, 3, 4), L.LinearNB(2, 3, 4), L.ReLU(2, 3), L.Sigmoid(2, 3),
            L.Tanh(2, 3), L.SiLU(2, 3), L.GELU(2, 3), L.GELUErf(2, 3), L.Dropout(2, 3, 0.1, 5), L.Softmax(2, 3),
            L.LogSoftmax(2, 3), L.RMSNorm(2, 3), L.LayerNorm(2, 3), L.Embedding(2, 5, 3)]


def test_layers_are_float64_and_round_trip() -> None:
    for lay in all_layers():
        assert lay.dtype is np.float64
        p = rand_params(lay, 28) if not lay.name.startswith("Dropout") else L.DropP(9)
        d = lay.dump(p)
        assert d.dtype == np.float64 and d.size == lay.count()
        xs = np.zeros(d.size + 2)
        assert lay.store(p, xs, 2) == d.size + 2 and np.array_equal(xs[2:], d)
        q = lay.load(lay.zeros(), xs, 2)
        assert q.off == d.size + 2 and np.array_equal(lay.dump(q.p), d)
        if isinstance(lay.x_spec, MatSpec):
            with pytest.raises(ShapeError):
                lay.fwd(p, np.zeros((lay.x_spec.r, lay.x_spec.c), dtype=np.float32))


class Lin(NamedTuple):      # impl's record of the same name and fields (impl/layers is another module)
    w: np.ndarray[Any, Any]
    b: np.ndarray[Any, Any]


def test_from_impl() -> None:
    w32 = rng(29).standard_normal((3, 2)).astype(np.float32)
    b32 = rng(30).standard_normal((1, 3)).astype(np.float32)
    p = ((Lin(w32, b32), None), w32[:, :1])
    q = L.from_impl(p)
    assert isinstance(q[0][0], L.Lin) and q[0][1] is None
    assert q[0][0].w.dtype == np.float64 and np.array_equal(q[0][0].w, w32) and q[0][0].w is not w32
    assert q[1].flags["C_CONTIGUOUS"]
    st = L.from_impl(TwoMom((w32, None), (w32, None)))
    assert isinstance(st, TwoMom) and st.m[0].dtype == np.float64
    assert isinstance(L.from_impl(OneMom(w32)), OneMom)
    assert L.from_impl(np.float32(0.1)) == float(np.float32(0.1))
    ids = np.array([1, 2], dtype=np.int64)
    assert np.array_equal(L.from_impl(ids), ids)
    assert L.to_f64_params(p)[0][0].b.dtype == np.float64


ALLOWED_IMPL = {"bendtorch.impl.protocol", "bendtorch.impl.specs", "bendtorch.impl.optstate",
                "bendtorch.impl.combinators", "bendtorch.impl.optim"}
CONFIG_NAMES = {"CSGD", "CMomentum", "CAdam", "CAdamW", "CAdamWBF16", "adam", "adamw", "OptCfg"}


def test_oracle_imports_no_torch_and_no_impl_numerics() -> None:
    """Statically: oracle/*.py import from impl only its protocol (impl.protocol, impl.specs, impl.optstate),
    impl.combinators and impl.optim's configuration classes (and their two constructors), and never torch.
    Dynamically: importing oracle loads no torch and no impl module beyond what those modules load themselves."""
    for path in sorted((ROOT / "oracle").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            mods: list[tuple[str, list[str]]] = []
            if isinstance(node, ast.Import):
                mods = [(a.name, []) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods = [(node.module, [a.name for a in node.names])]
            for mod, names in mods:
                assert not mod.startswith("torch"), f"{path.name} imports {mod}"
                if mod == "bendtorch.impl" or mod.startswith("bendtorch.impl."):
                    if mod == "bendtorch.impl":
                        assert set(names) <= {"combinators", "protocol"}, f"{path.name}: from impl import {names}"
                    else:
                        assert mod in ALLOWED_IMPL, f"{path.name} imports {mod}"
                    if mod == "bendtorch.impl.optim":
                        assert set(names) <= CONFIG_NAMES, f"{path.name}: from impl.optim import {names}"
    code = ("import sys, json; import {m}; "
            "print(json.dumps(sorted(k for k in sys.modules if k.startswith('bendtorch.impl') or k.split('.')[0] == 'torch')))")
    base = set(json.loads(subprocess.run([sys.executable, "-c", code.format(m="bendtorch.impl.optim, bendtorch.impl.combinators")],
                                         capture_output=True, text=True, check=True, cwd=ROOT).stdout))
    got = set(json.loads(subprocess.run([sys.executable, "-c", code.format(m="bendtorch.oracle")], capture_output=True,
                                        text=True, check=True, cwd=ROOT).stdout))
    assert not any(k.split(".")[0] == "torch" for k in got)
    assert got <= base, f"oracle loads more of impl than its allowed imports do: {sorted(got - base)}"


def test_fwd_bwd_do_not_write_inputs() -> None:
    """fwd and bwd never write into x, s or dy (the protocol's ownership rule)."""
    for lay in all_layers():
        p = rand_params(lay, 31) if not lay.name.startswith("Dropout") else L.DropP(3)
        x: Any = (np.array([0, 4], dtype=np.int64) if lay.name.startswith("Embedding")
                  else rng(32).standard_normal((2, 3)))
        x0 = copy.deepcopy(x)
        f = lay.fwd(p, x)
        s0 = copy.deepcopy(f.s)
        dy = rng(33).standard_normal(f.y.shape)
        dy0 = dy.copy()
        lay.bwd(f.p, f.s, dy, lay.zeros())
        assert np.array_equal(x, x0) and np.array_equal(dy, dy0)
        assert all(np.array_equal(a, b) for a, b in zip(leaves(f.s), leaves(s0)))
