"""Checkpoints (main.bend lines 2958-3353) on small models built from the protocol alone: the seed's layout, the
resume law for every optimizer kind, atomic writes under a kill, and clear errors for files that do not fit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bendtorch.impl.bits import same_bits
from bendtorch.impl.checkpoint import (CheckpointError, mat_load, params_load, params_save, pt_cells, train_dump,
                             train_restore, train_save)
from bendtorch.impl.combinators import Seq
from bendtorch.impl.optim import CAdamWBF16, CMomentum, CSGD, OptCfg, adam, adamw
from bendtorch.impl.optstate import Packed, PLeaf, PNew, PNode, TwoMom
from bendtorch.impl.train import Train, train_new, train_step
from tests.test_combinators import mse, rnd, scale

F32 = np.float32

CFGS: dict[str, OptCfg] = {
    "sgd": CSGD(F32(0.05)),
    "momentum": CMomentum(F32(0.05), F32(0.9)),
    "adam": adam(lr=1e-2, wd=0.01),
    "adamw": adamw(lr=1e-2),
    "bf16-m": CAdamWBF16(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), False),
    "bf16-mv": CAdamWBF16(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), True),
}


def model() -> Any:
    return Seq(scale(4, 3, "A"), scale(4, 3, "B"))


def p0() -> Any:
    return (rnd(1, 3, seed=1), rnd(1, 3, seed=2))


def run(m: Any, cfg: OptCfg, tr: Train[Any], ks: range) -> Train[Any]:
    for k in ks:
        tr = train_step(m, mse(4, 3), cfg, tr, rnd(4, 3, seed=100 + k), rnd(4, 3, seed=200 + k))
    return tr


@pytest.mark.parametrize("name", list(CFGS))
def test_resume_gives_the_same_bits_as_never_stopping(name: str, tmp_path: Path) -> None:
    cfg, m = CFGS[name], model()
    straight = run(m, cfg, train_new(m, cfg, p0()), range(8))
    first = run(m, cfg, train_new(m, cfg, p0()), range(5))
    path = tmp_path / "ck.bin"
    train_save(m, path, first)
    resumed = train_restore(m, train_new(m, cfg, m.zeros()), path)
    resumed = run(m, cfg, resumed, range(5, 8))
    assert same_bits(m.dump(resumed.p), m.dump(straight.p))
    assert same_bits(train_dump(m, resumed), train_dump(m, straight))


def test_layouts_follow_the_seed(tmp_path: Path) -> None:
    m = model()
    n = m.count()
    for name, extra in (("sgd", 0), ("momentum", n), ("adamw", 2 * n + 2)):
        tr = run(m, CFGS[name], train_new(m, CFGS[name], p0()), range(2))
        train_save(m, tmp_path / name, tr)
        xs = np.fromfile(tmp_path / name, dtype="<f4")
        assert xs.size == n + extra
        assert same_bits(xs[:n], m.dump(tr.p))
        if name == "adamw":
            assert isinstance(tr.st, TwoMom)
            assert same_bits(xs[n:2 * n], m.dump(tr.st.m)) and same_bits(xs[2 * n:3 * n], m.dump(tr.st.v))
            assert same_bits(xs[-2:], np.array([tr.p1, tr.p2], F32))
    tr = run(m, CFGS["bf16-mv"], train_new(m, CFGS["bf16-mv"], p0()), range(2))
    assert isinstance(tr.st, Packed) and isinstance(tr.st.t, PNode) and isinstance(tr.st.t.a, PLeaf)
    train_save(m, tmp_path / "bf16", tr)
    u = np.fromfile(tmp_path / "bf16", dtype="<u4")
    # PNode: 1, PLeaf: 2, n = 3, m's 2 words, v's 2 words, then the second leaf, then q1, q2
    assert list(u[n:n + 4]) == [1, 2, 3, int(tr.st.t.a.m[0])]
    assert u.size == n + pt_cells(tr.st.t) + 2 == n + 1 + 2 * (2 + 4) + 2


def test_params_save_then_mat_load(tmp_path: Path) -> None:
    m, p = model(), p0()
    params_save(m, tmp_path / "p.bin", p)
    assert same_bits(mat_load(1, 3, tmp_path / "p.bin", 12), p[1])
    assert same_bits(m.dump(params_load(m, tmp_path / "p.bin")), m.dump(p))
    with pytest.raises(CheckpointError, match="wrong number of values for this shape: 2 x 3"):
        mat_load(2, 3, tmp_path / "p.bin", 12)


@pytest.mark.parametrize("damage,match", [
    (lambda b: b[:-4], "holds 20 numbers .* found 19"),
    (lambda b: b + b"\0\0\0\0", "found 21"),
    (lambda b: b[:-1], "not a whole number"),
])
def test_bad_files_get_clear_errors_and_leave_the_state(tmp_path: Path, damage: Any, match: str) -> None:
    m, cfg = model(), CFGS["adamw"]
    tr = run(m, cfg, train_new(m, cfg, p0()), range(2))
    path = tmp_path / "ck.bin"
    train_save(m, path, tr)
    path.write_bytes(damage(path.read_bytes()))
    before = train_dump(m, tr).copy()
    with pytest.raises(CheckpointError, match=match) as e:
        train_restore(m, tr, path)
    assert str(path) in str(e.value)
    assert same_bits(train_dump(m, tr), before)


def test_corrupt_or_foreign_packed_trees_are_refused(tmp_path: Path) -> None:
    m, cfg = model(), CFGS["bf16-mv"]
    tr = run(m, cfg, train_new(m, cfg, p0()), range(2))
    path = tmp_path / "ck.bin"
    train_save(m, path, tr)
    u = np.fromfile(path, dtype="<u4")
    bad = u.copy()
    bad[m.count()] = 7  # the root's tag
    path.write_bytes(bad.tobytes())
    with pytest.raises(CheckpointError, match="tag 7"):
        train_restore(m, train_new(m, cfg, m.zeros()), path)
    bad = u.copy()
    bad[m.count() + 2] = 1000  # the first leaf's n
    path.write_bytes(bad.tobytes())
    with pytest.raises(CheckpointError, match="declares 1000 numbers|holds 1000 numbers"):
        train_restore(m, train_new(m, cfg, m.zeros()), path)
    other = Seq(scale(4, 3, "A"), Seq(scale(4, 3, "B"), scale(4, 3, "C")))
    path.write_bytes(u.tobytes())
    with pytest.raises(CheckpointError):
        train_restore(other, train_new(other, cfg, other.zeros()), path)


def test_a_fresh_packed_state_reads_pnew_back(tmp_path: Path) -> None:
    m, cfg = model(), CFGS["bf16-m"]
    tr = train_new(m, cfg, p0())
    assert tr.st == Packed(PNew(False))
    train_save(m, tmp_path / "f.bin", tr)
    back = train_restore(m, train_new(m, cfg, m.zeros()), tmp_path / "f.bin")
    assert back.st == Packed(PNew(False))


WRITER = """
import sys, numpy as np
from bendtorch.records.durable import write_bytes
payload = np.full(40_000_000, float(sys.argv[2]), dtype='<f4').tobytes()
print('ready', flush=True)
while True:
    write_bytes(sys.argv[1], payload)
"""


def test_a_process_killed_while_saving_leaves_a_whole_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "ck.bin"
    old = np.full(40_000_000, 1.0, dtype="<f4")
    path.write_bytes(old.tobytes())
    root = Path(__file__).resolve().parent.parent
    for delay in (0.05, 0.2, 0.4):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "2.0"], cwd=root, stdout=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": str(root)})
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        xs = np.fromfile(path, dtype="<f4")
        assert xs.size == old.size  # never a partial file
        assert np.all(xs == xs[0]) and xs[0] in (1.0, 2.0)
    leftovers = [p for p in tmp_path.iterdir() if p.name != "ck.bin"]
    for p in leftovers:  # a killed writer may leave its temporary file; the checkpoint itself is whole
        assert p.name.startswith(".tmp-ck.bin-")


def test_a_packed_tree_1000_deep_is_refused_where_the_seed_would_misread_it(tmp_path: Path) -> None:
    # main.bend lines 3095-3114 read the tree with fuel 1000: a part at depth 1000 becomes PNew{False} and its
    # cells are read as what follows. impl refuses such a file with a clear error (docs/checkpoints.md).
    from bendtorch.impl.checkpoint import _pt_parse
    deep = np.array([1] * 1000 + [0, 0] + [0, 0] * 1000, np.uint32)
    with pytest.raises(CheckpointError, match="1000 deep"):
        _pt_parse("f", deep, 0)
    ok = np.array([1] * 999 + [0, 0] + [0, 0] * 999, np.uint32)
    t, end = _pt_parse("f", ok, 0)
    assert end == ok.size
