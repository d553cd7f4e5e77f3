"""Laws of the checkpoints (main.bend lines 2958-3353): the seed's layout as little-endian float32 files, written and
read back by impl.checkpoint, and the verified checkpoint folder (impl.checkpoint_folder) that binds a state to the
data it was trained on; over models drawn from the catalog (every matrix layer, Dropout with its step counter,
combinators), every optimizer (SGD, Momentum, Adam, AdamW, AdamW with packed BF16 moments, v16 or not), step counts
from 0 (a packed tree still PNew) and parameter values of any bits."""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bendtorch.impl as L
from bendtorch.impl.checkpoint import (CheckpointError, mat_load, params_load, params_save, train_dump, train_restore,
                                       train_save)
from bendtorch.impl.checkpoint_folder import data_record, load_checkpoint, save_checkpoint
from bendtorch.impl.layers.dropout import DropP
from bendtorch.impl.optim import CAdamWBF16, CMomentum, CSGD, adam, adamw
from bendtorch.impl.train import train_new, train_step
from bendtorch.laws.catalog import Built, Src, leaves, mat_layer, seq, tree_copy
from bendtorch.laws.registry import law
from bendtorch.laws.strategies import seeds

F32 = np.float32


def optimizers() -> st.SearchStrategy[Any]:
    return st.sampled_from([
        CSGD(F32(0.05)), CMomentum(F32(0.05), F32(0.9)), adam(lr=0.01, wd=0.01), adamw(lr=0.01),
        CAdamWBF16(F32(0.01), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), False),
        CAdamWBF16(F32(0.01), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), True)])


@st.composite
def models(draw: Any) -> Any:
    """A model n x d -> n x c ending in a Linear, with a Dropout (its counter is part of the parameters) somewhere:
    Seq(f, Seq(Dropout, Linear)), f any catalog layer n x d -> n x h; under CrossEntropy(n, c)."""
    n, d, h, c = (draw(st.integers(1, 5)) for _ in range(4))
    f = draw(mat_layer(n, d, h))
    p = draw(st.sampled_from([0.0, 0.25, 0.5]))
    drop = Built("Dropout", L.Dropout(n, h, p, draw(seeds())), lambda s: DropP(s.u32() & 0xFF))
    lin = Built("Linear", L.Linear(n, h, c), lambda s: L.Lin(s.mat(c, h), s.mat(1, c)))
    return seq(f, seq(drop, lin)), n, d, c


def batches(seed: int, n: int, d: int, c: int, k: int) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, d)).astype(F32), rng.integers(0, c, n)) for _ in range(k)]


def steps(m: Any, loss: Any, cfg: Any, tr: Any, data: list[tuple[Any, Any]]) -> tuple[Any, list[np.float32]]:
    ls = []
    with np.errstate(all="ignore"):
        for x, y in data:
            tr = train_step(m, loss, cfg, tr, x, y)
            ls.append(tr.loss)
    return tr, ls


def bits(a: Any) -> Any:
    return np.ascontiguousarray(a, F32).view(np.uint32)


@law("checkpoints", "save_restore_bits", "bit for bit")
@given(models(), optimizers(), st.integers(0, 3), seeds())
def test_save_then_restore_gives_the_same_bits(mod: Any, cfg: Any, k: int, seed: int) -> None:
    """Save then restore gives the same bits (Train.save, main.bend line 3344; Train.restore, line 3224) for every
    optimizer and packed state: after k steps (k = 0 leaves a packed tree PNew), the restored state's parameters
    (Dropout's counter included), momentum or Adam moments, packed BF16 cells and 1 - b^t powers dump to the same
    32-bit words as the saved state's."""
    b, n, d, c = mod
    m = b.layer
    tr = train_new(m, cfg, b.make_p(Src(seed, special_rate=0.02)))
    tr, _ = steps(m, L.CrossEntropy(n, c), cfg, tr, batches(seed, n, d, c, k))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ck.bin")
        train_save(m, path, tr)
        back = train_restore(m, train_new(m, cfg, m.zeros()), path)
        assert np.array_equal(np.fromfile(path, "<u4"), bits(train_dump(m, tr)))
    assert np.array_equal(bits(train_dump(m, back)), bits(train_dump(m, tr)))
    assert [v for v in leaves(back.p) if not isinstance(v, np.ndarray)] == \
        [v for v in leaves(tr.p) if not isinstance(v, np.ndarray)]


def record(data: list[tuple[Any, Any]]) -> dict[str, Any]:
    """The data record of a run's batches (their bytes in order), as a checkpoint's manifest binds it."""
    blob = b"".join(np.ascontiguousarray(a).tobytes() for xy in data for a in xy)
    return data_record(hashlib.sha256(blob).hexdigest(), len(blob), "batches")


@law("checkpoints", "resume_same_bits", "bit for bit")
@given(models(), optimizers(), st.integers(2, 5), st.data(), seeds())
def test_stopped_and_resumed_gives_the_same_bits(mod: Any, cfg: Any, total: int, data: Any, seed: int) -> None:
    """A run stopped after k steps and resumed from its checkpoint computes the same bits as one that never stopped
    (main.bend lines 2960-2961), Dropout's counter included (its masks follow the step): the losses of the steps after
    k and the final state (parameters, counters, moments, packed cells, powers) are bit for bit the same, resumed from
    the seed's .bin or from the verified folder bound to the run's data; the folder is refused for other data."""
    b, n, d, c = mod
    m, loss = b.layer, L.CrossEntropy(n, c)
    k = data.draw(st.integers(0, total))
    p0 = b.make_p(Src(seed, special_rate=0.02))
    xs = batches(seed, n, d, c, total)
    full, lf = steps(m, loss, cfg, train_new(m, cfg, tree_copy(p0)), xs)
    part, lp = steps(m, loss, cfg, train_new(m, cfg, tree_copy(p0)), xs[:k])
    other = [(x + F32(1), y) for x, y in xs]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ck.bin")
        train_save(m, path, part)
        resumed = train_restore(m, train_new(m, cfg, m.zeros()), path)
        folder = save_checkpoint(m, cfg, part, os.path.join(tmp, "ck"), k, {}, record(xs))
        verified, step = load_checkpoint(m, cfg, folder, {}, allow_nonfinite=True, data=record(xs),
                                         check_data_record=True)
        with pytest.raises(CheckpointError, match="trained on other data"):
            load_checkpoint(m, cfg, folder, {}, allow_nonfinite=True, data=record(other), check_data_record=True)
    assert step == k
    for back in (resumed, verified):
        back, lr = steps(m, loss, cfg, back, xs[k:])
        assert np.array_equal(bits(np.array(lp + lr, F32)), bits(np.array(lf, F32)))
        assert np.array_equal(bits(train_dump(m, back)), bits(train_dump(m, full)))


@law("checkpoints", "params_save_mat_load", "bit for bit")
@given(models(), seeds())
def test_params_save_then_mat_load(mod: Any, seed: int) -> None:
    """Params.save then Mat.load reads the same values (Params.save, main.bend line 3295: every parameter in dump
    order; Mat.load, line 1014: an r x c matrix of little-endian float32 from byte off): each matrix of the parameters,
    read at its byte offset in dump order, has the same bits (raw 32-bit patterns: NaN payloads, both zeros,
    infinities), a counter reads back as its 32 bits, and the whole file loads back as the parameters."""
    b, n, d, c = mod
    m = b.layer
    p = b.make_p(Src(seed, bits=True))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.bin")
        params_save(m, path, p)
        off = 0
        for v in leaves(p):
            if isinstance(v, np.ndarray):
                r, cc = v.shape
                assert np.array_equal(bits(mat_load(r, cc, path, off)), bits(v))
                off += 4 * v.size
            else:
                assert int(bits(mat_load(1, 1, path, off))[0, 0]) == v
                off += 4
        assert off == os.path.getsize(path) == 4 * m.count()
        assert np.array_equal(bits(m.dump(params_load(m, path))), bits(m.dump(p)))
