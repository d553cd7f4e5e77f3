"""Checkpoints (main.bend lines 2958-3353) on small models built from the protocol alone: the seed's layout, the
resume law for every optimizer kind, atomic writes under a kill, and clear errors for files that do not fit; then
the verified checkpoint folder (impl.checkpoint_folder): the corrupted-checkpoint zoo, for every optimizer kind (SGD,
momentum, Adam, AdamW, packed BF16 m, packed BF16 m and v): truncation at many lengths; a bit flipped in every region
of the .bin (parameters, moments, q1 and q2, the packed tree's tags, sizes and words) and of the manifest; another
kind's file; another model's file; random bytes of the right size; NaN and infinity written into each cell (with the
manifest left, and re-sealed as a forger would, where the numbers themselves must be refused); SIGKILL while a
checkpoint is being saved; the data record and version 1 manifests; files that are not what the format says.

Each zoo test counts the cases tried, refused with a CheckpointError and accepted silently (the goal: none), and
prints the counts (`pytest -s tests/test_checkpoint.py`). BENDTORCH_FAULTS=full runs the whole (every bit of every
manifest, every truncation length, 20 killed saves); the default runs a slice in seconds."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bendtorch.impl.bits import same_bits
from bendtorch.impl.checkpoint import (CheckpointError, mat_load, params_load, params_save, pt_cells, train_dump,
                                       train_restore, train_save)
from bendtorch.impl.checkpoint_folder import (MANIFEST_FILE, STATE_FILE, _seal, check_data, data_record,
                                              load_checkpoint, read_manifest, remove_stale, save_checkpoint)
from bendtorch.records.durable import OutputError
from bendtorch.impl.combinators import Seq
from bendtorch.impl.optim import CAdamWBF16, CMomentum, CSGD, OptCfg, adam, adamw
from bendtorch.impl.optstate import Packed, PLeaf, PNew, PNode, TwoMom
from bendtorch.impl.train import Train, train_new, train_step
from tests.test_combinators import mse, rnd, scale

F32 = np.float32
FULL = os.environ.get("BENDTORCH_FAULTS", "") == "full"
ROOT = Path(__file__).resolve().parent.parent
CFGS: dict[str, OptCfg] = {
    "sgd": CSGD(F32(0.05)),
    "momentum": CMomentum(F32(0.05), F32(0.9)),
    "adam": adam(lr=1e-2, wd=0.01),
    "adamw": adamw(lr=1e-2),
    "bf16-m": CAdamWBF16(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), False),
    "bf16-mv": CAdamWBF16(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), True),
}
FLAGS = {"model": "zoo", "seed": 0}


def model(c: int = 3) -> Any:
    return Seq(scale(4, c, "A"), scale(4, c, "B"))


KINDS = CFGS


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
    (lambda b: b + b"\0\0\0\0", "84 bytes, over the bound of 80 bytes"),
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


# ---------------------------------------------------------------------------------------------------------------
# the verified folder: the corrupted-checkpoint zoo


def trained(kind: str, c: int = 3, steps: int = 3) -> tuple[Any, Train[Any]]:
    m, cfg = model(c), KINDS[kind]
    tr = train_new(m, cfg, (rnd(1, c, seed=1), rnd(1, c, seed=2)))
    for k in range(steps):
        tr = train_step(m, mse(4, c), cfg, tr, rnd(4, c, seed=100 + k), rnd(4, c, seed=200 + k))
    return m, tr


class Tally:
    """Cases tried, refused with a CheckpointError, accepted silently (with what)."""

    def __init__(self, name: str) -> None:
        self.name, self.counts, self.accepted = name, Counter[str](), list[str]()

    def case(self, what: str, m: Any, cfg: OptCfg, folder: Path, **kw: Any) -> None:
        self.counts["tried"] += 1
        try:
            load_checkpoint(m, cfg, folder, flags=FLAGS, **kw)
        except CheckpointError as e:
            assert "\n" not in str(e) and str(e), what  # one clear line
            self.counts["refused"] += 1
            return
        self.counts["accepted"] += 1
        self.accepted.append(what)

    def report(self) -> None:
        c = self.counts
        print(f"\nFAULTS {self.name}: tried {c['tried']}, refused {c['refused']}, accepted silently {c['accepted']}"
              + (f" ({self.accepted[:5]})" if self.accepted else ""))


def pair(tmp: Path, kind: str, c: int = 3) -> tuple[Any, Path, bytes, bytes]:
    m, tr = trained(kind, c)
    d = Path(save_checkpoint(m, KINDS[kind], tr, tmp / f"ck-{kind}-{c}", 3, FLAGS))
    return m, d, (d / STATE_FILE).read_bytes(), (d / MANIFEST_FILE).read_bytes()


def put(folder: Path, state: bytes, manifest: bytes) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / STATE_FILE).write_bytes(state)
    (folder / MANIFEST_FILE).write_bytes(manifest)
    return folder


def reseal(state: bytes, manifest: bytes) -> bytes:
    """A forger's manifest: the body unchanged but for the .bin's size and SHA-256, sealed again."""
    body = {k: v for k, v in json.loads(manifest).items() if k != "manifest_sha256"}
    body["bin"] = {**body["bin"], "bytes": len(state), "sha256": hashlib.sha256(state).hexdigest()}
    return _seal(body)


def flip(b: bytes, bit: int) -> bytes:
    a = bytearray(b)
    a[bit // 8] ^= 1 << (bit % 8)
    return bytes(a)


# ---------------------------------------------------------------------------------------------------------------


def test_an_untouched_checkpoint_loads_for_every_kind(tmp_path: Path) -> None:
    # the zoo's refusals mean something only if the untouched pair is accepted, bit for bit
    for kind, cfg in KINDS.items():
        m, tr = trained(kind)
        d = save_checkpoint(m, cfg, tr, tmp_path / kind, 3, FLAGS)
        back, step = load_checkpoint(m, cfg, d, flags=FLAGS)
        assert step == 3 and train_dump(m, back).tobytes() == train_dump(m, tr).tobytes(), kind
        assert oct(os.stat(Path(d) / STATE_FILE).st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_bit_flip_in_the_bin_or_its_manifest_is_refused(tmp_path: Path, kind: str) -> None:
    m, d, state, man = pair(tmp_path, kind)
    cfg = KINDS[kind]
    t = Tally(f"bit flips, {kind} (.bin {len(state)} bytes, manifest {len(man)} bytes)")
    work = tmp_path / "work"
    # the full run: every bit of the .bin (parameters, moments, q1 q2, packed tree cells) and of the manifest;
    # CI: every 5th bit of the .bin (every cell) and every 41st of the manifest
    for bit in range(0, 8 * len(state), 1 if FULL else 5):
        t.case(f"bin bit {bit}", m, cfg, put(work, flip(state, bit), man))
    for bit in range(0, 8 * len(man), 1 if FULL else 41):
        t.case(f"manifest bit {bit}", m, cfg, put(work, state, flip(man, bit)))
    t.report()
    assert t.counts["accepted"] == 0, t.accepted[:10]


@pytest.mark.parametrize("kind", list(KINDS))
def test_truncations_are_refused(tmp_path: Path, kind: str) -> None:
    m, d, state, man = pair(tmp_path, kind)
    cfg = KINDS[kind]
    t = Tally(f"truncations, {kind}")
    work = tmp_path / "work"
    lengths = range(len(state)) if FULL else sorted({0, 1, 3, 4, 5, len(state) // 2, len(state) - 4, len(state) - 1})
    for n in lengths:
        t.case(f"bin cut to {n}", m, cfg, put(work, state[:n], man))
        t.case(f"bin cut to {n}, resealed", m, cfg, put(work, state[:n], reseal(state[:n], man)))
    for n in (range(len(man)) if FULL else range(0, len(man), 37)):
        t.case(f"manifest cut to {n}", m, cfg, put(work, state, man[:n]))
    (work / STATE_FILE).unlink()
    t.case("bin missing", m, cfg, work)
    put(work, state, man)
    (work / MANIFEST_FILE).unlink()
    t.case("manifest missing", m, cfg, work)
    t.case("a bare .bin", m, cfg, work / STATE_FILE)
    t.report()
    assert t.counts["accepted"] == 0, t.accepted[:10]


# Adam and AdamW keep the same numbers in the same layout: only the manifest says which wrote a file, so a manifest
# re-sealed by hand to say the other cannot be told from a true one (a SHA-256 without a key proves integrity, not
# origin). Those two swaps are counted apart, as forgeries the format cannot catch; every other swap is refused.
SAME_LAYOUT = {frozenset({"adam", "adamw"})}


def test_another_kinds_or_another_models_file_is_refused(tmp_path: Path) -> None:
    t = Tally("another kind's or another model's file")
    forged = Tally("another kind's .bin with a hand-resealed manifest, same layout (Adam <-> AdamW)")
    pairs = {k: pair(tmp_path, k) for k in KINDS}
    others = {k: pair(tmp_path, k, c=5) for k in KINDS}
    work = tmp_path / "work"
    for a, b in itertools.product(KINDS, KINDS):
        if a == b:
            continue
        m, _, state_a, man_a = pairs[a]
        _, _, state_b, man_b = pairs[b]
        t.case(f"{b}'s .bin under {a}'s manifest", m, KINDS[a], put(work, state_b, man_a))
        t.case(f"{b}'s checkpoint read as {a}", m, KINDS[a], put(work, state_b, man_b))
        (forged if frozenset({a, b}) in SAME_LAYOUT else t).case(
            f"{b}'s .bin, {a}'s manifest resealed", m, KINDS[a], put(work, state_b, reseal(state_b, man_a)))
    for k in KINDS:
        m, _, state, man = pairs[k]
        _, _, state5, man5 = others[k]
        t.case(f"{k}: another model's checkpoint", m, KINDS[k], put(work, state5, man5))
        t.case(f"{k}: another model's .bin, manifest resealed", m, KINDS[k], put(work, state5, reseal(state5, man)))
    t.report()
    forged.report()
    assert t.counts["accepted"] == 0, t.accepted[:10]
    assert forged.counts["tried"] == 2


@pytest.mark.parametrize("kind", list(KINDS))
def test_random_bytes_and_nonfinite_cells_are_refused(tmp_path: Path, kind: str) -> None:
    m, d, state, man = pair(tmp_path, kind)
    cfg = KINDS[kind]
    t = Tally(f"random bytes and NaN/inf cells, {kind}")
    work = tmp_path / "work"
    rng = np.random.default_rng(0)
    for i in range(200 if FULL else 20):
        junk = rng.integers(0, 256, len(state), dtype=np.uint8).tobytes()
        t.case(f"random bytes {i}", m, cfg, put(work, junk, man))
    cells = len(state) // 4
    for cell, bad in itertools.product(range(cells), (np.nan, np.inf, -np.inf)):
        a = np.frombuffer(state, "<f4").copy()
        a[cell] = bad
        forged = a.tobytes()
        t.case(f"cell {cell} = {bad}", m, cfg, put(work, forged, man))
        t.case(f"cell {cell} = {bad}, resealed", m, cfg, put(work, forged, reseal(forged, man)))
    t.report()
    assert t.counts["accepted"] == 0, t.accepted[:10]


def test_negative_second_moments_are_refused_even_resealed(tmp_path: Path) -> None:
    m, d, state, man = pair(tmp_path, "adam")
    n = m.count()
    a = np.frombuffer(state, "<f4").copy()
    a[2 * n] = -1.0  # v's first cell
    with pytest.raises(CheckpointError, match="negative"):
        load_checkpoint(m, KINDS["adam"], put(tmp_path / "w", a.tobytes(), reseal(a.tobytes(), man)), flags=FLAGS)


def test_the_flags_are_checked_both_ways(tmp_path: Path) -> None:
    m, d, state, man = pair(tmp_path, "adamw")
    with pytest.raises(CheckpointError, match="other flags: --seed 0 \\(now 1\\)"):
        load_checkpoint(m, KINDS["adamw"], d, flags={**FLAGS, "seed": 1})
    with pytest.raises(CheckpointError, match="--extra '<absent>'"):
        load_checkpoint(m, KINDS["adamw"], d, flags={**FLAGS, "extra": 1})
    with pytest.raises(CheckpointError, match="--seed 0 \\(now '<absent>'\\)"):
        load_checkpoint(m, KINDS["adamw"], d, flags={"model": "zoo"})


# ---------------------------------------------------------------------------------------------------------------
# SIGKILL while saving

CKPT_WRITER = """
import sys
import numpy as np
from bendtorch.impl.checkpoint_folder import save_checkpoint
from bendtorch.impl.optim import adamw
from bendtorch.impl.train import train_new
from tests.test_combinators import scale
from bendtorch.impl.combinators import Seq
c = 400_000
m = Seq(scale(4, c, "A"), scale(4, c, "B"))
cfg = adamw(lr=1e-2)
states = [train_new(m, cfg, (np.full((1, c), v, np.float32), np.full((1, c), v, np.float32))) for v in (1.0, 2.0)]
save_checkpoint(m, cfg, states[0], sys.argv[1], 0, {})
print("ready", flush=True)
i = 0
while True:
    i += 1
    save_checkpoint(m, cfg, states[i % 2], sys.argv[1], i % 2, {})
"""


def test_sigkill_while_saving_leaves_a_whole_verified_pair(tmp_path: Path) -> None:
    from bendtorch.impl.optim import adamw as _adamw
    c = 400_000
    m = Seq(scale(4, c, "A"), scale(4, c, "B"))
    cfg = _adamw(lr=1e-2)
    target = tmp_path / "ck"
    runs = 20 if FULL else 3
    rng = np.random.default_rng(1)
    t = Tally(f"SIGKILL during save ({runs} runs)")
    stale = 0
    for r in range(runs):
        proc = subprocess.Popen([sys.executable, "-c", CKPT_WRITER, str(target)], cwd=ROOT, stdout=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(float(rng.uniform(0.0, 0.4)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        tr, step = load_checkpoint(m, cfg, target, flags={})  # never torn: this must not raise
        v = float(tr.p[0][0, 0])
        assert (step, v) in ((0, 1.0), (1, 2.0)) and np.all(tr.p[0] == v) and np.all(tr.p[1] == v)
        t.counts["tried"] += 1
        stale += len(remove_stale(tmp_path))
    assert not [p for p in tmp_path.iterdir() if p.name != "ck"]  # remove_stale took every temporary
    print(f"\nFAULTS SIGKILL during save: {runs} runs, {runs} whole verified pairs after the kill, "
          f"{stale} stale temporaries removed")


@pytest.mark.parametrize("change, needle", [
    (lambda b: {**b, "step": "abc"}, "step must be an integer"),
    (lambda b: {**b, "step": -3}, "step must be an integer"),
    (lambda b: {**b, "step": True}, "step must be an integer"),
    (lambda b: {k: v for k, v in b.items() if k != "step"}, "step must be an integer"),
    (lambda b: {k: v for k, v in b.items() if k != "flags"}, "'flags' missing"),
    (lambda b: {**b, "flags": ["a"]}, "'flags' missing or not a JSON dict"),
    (lambda b: {**b, "version": 3}, "manifest version 3, this bendtorch reads versions 1 and 2"),
    (lambda b: {**b, "version": True}, "manifest version True"),
    (lambda b: {k: v for k, v in b.items() if k != "data"}, "'data' missing"),
    (lambda b: {**b, "data": {"sha256": "x", "bytes": 1, "path": "p"}}, "'data' missing or not a record"),
    (lambda b: {**b, "format": "other"}, "format is 'other'"),
])
def test_a_sealed_manifest_with_bad_fields_is_refused(tmp_path: Path, change: Callable[[dict[str, Any]], Any],
                                                      needle: str) -> None:
    # each manifest is sealed correctly, so that the field checks themselves are what refuses it
    m, d, state, man = pair(tmp_path, "adamw")
    body = {k: v for k, v in json.loads(man).items() if k != "manifest_sha256"}
    w = put(tmp_path / "w", state, _seal(change(body)))
    with pytest.raises(CheckpointError, match=needle):
        load_checkpoint(m, KINDS["adamw"], w, flags=FLAGS)


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"", "\u00e9t\u00e9".encode()])
def test_a_manifest_that_is_not_a_json_object_is_refused(tmp_path: Path, raw: bytes) -> None:
    m, d, state, man = pair(tmp_path, "adamw")
    with pytest.raises(CheckpointError, match="not a manifest"):
        load_checkpoint(m, KINDS["adamw"], put(tmp_path / "w", state, raw), flags=FLAGS)


# ---------------------------------------------------------------------------------------------------------------
# the data record, version 1 manifests, and files that are not what the format says


def test_the_data_record_binds_a_checkpoint_to_its_data(tmp_path: Path) -> None:
    m, tr = trained("adamw")
    a = data_record(hashlib.sha256(b"corpus a").hexdigest(), 8, "/data/a.txt")
    b = data_record(hashlib.sha256(b"corpus b").hexdigest(), 8, "/data/a.txt")
    d = save_checkpoint(m, KINDS["adamw"], tr, tmp_path / "ck", 3, FLAGS, a)
    moved = {**a, "path": "/elsewhere/a.txt"}  # the same bytes under another path are the same data
    back, _ = load_checkpoint(m, KINDS["adamw"], d, flags=FLAGS, data=moved, check_data_record=True)
    assert train_dump(m, back).tobytes() == train_dump(m, tr).tobytes()
    with pytest.raises(CheckpointError, match=f"trained on other data: sha256 {a['sha256']} .* data is sha256 "
                                              f"{b['sha256']}"):
        load_checkpoint(m, KINDS["adamw"], d, flags=FLAGS, data=b, check_data_record=True)
    with pytest.raises(CheckpointError, match="this run has no data file"):
        load_checkpoint(m, KINDS["adamw"], d, flags=FLAGS, data=None, check_data_record=True)
    nodata = save_checkpoint(m, KINDS["adamw"], tr, tmp_path / "nodata", 3, FLAGS)
    load_checkpoint(m, KINDS["adamw"], nodata, flags=FLAGS, data=None, check_data_record=True)


def test_a_version_1_manifest_is_read_but_its_data_cannot_be_checked(tmp_path: Path) -> None:
    m, d, state, man = pair(tmp_path, "adam")
    body = {k: v for k, v in json.loads(man).items() if k not in ("manifest_sha256", "data")}
    w = put(tmp_path / "v1", state, _seal({**body, "version": 1}))
    folder, got = read_manifest(w)
    assert got["version"] == 1 and "data" not in got
    back, step = load_checkpoint(m, KINDS["adam"], w, flags=FLAGS)
    assert step == 3 and train_dump(m, back).tobytes() == state
    with pytest.raises(CheckpointError, match="manifest version 1 records no digest of the training data"):
        check_data(str(w / MANIFEST_FILE), got, None)


def test_a_link_or_a_file_where_a_checkpoint_goes_is_refused_before_writing(tmp_path: Path) -> None:
    m, tr = trained("sgd")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "x").write_bytes(b"keep me")
    (tmp_path / "ln").symlink_to(kept)
    (tmp_path / "file").write_bytes(b"a file")
    for name, needle in (("ln", "is a symbolic link"), ("file", "exists and is not a directory")):
        with pytest.raises(OutputError, match=needle):
            save_checkpoint(m, KINDS["sgd"], tr, tmp_path / name, 3, FLAGS)
    assert [p.name for p in kept.iterdir()] == ["x"] and (tmp_path / "file").read_bytes() == b"a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "kept", "ln"]  # no temporary left


def test_files_that_are_not_what_the_format_says_are_refused_without_reading(tmp_path: Path) -> None:
    m, d, state, man = pair(tmp_path, "adamw")
    cfg = KINDS["adamw"]
    cases: list[tuple[str, Callable[[Path], None], str]] = [
        ("state.bin a fifo", lambda w: os.mkfifo(w / STATE_FILE), "state.bin: is a fifo, not a regular file"),
        ("manifest a fifo", lambda w: os.mkfifo(w / MANIFEST_FILE), "manifest.json: is a fifo"),
        ("state.bin a directory", lambda w: (w / STATE_FILE).mkdir(), "is a directory"),
        ("state.bin a link to its copy", lambda w: (w / STATE_FILE).symlink_to(d / STATE_FILE), "symbolic link"),
        ("manifest a link to /dev/zero", lambda w: (w / MANIFEST_FILE).symlink_to("/dev/zero"), "symbolic link"),
        ("state.bin 64 GiB, sparse", lambda w: _sparse(w / STATE_FILE, 64 << 30),
         f"state.bin: 68719476736 bytes, the manifest says {len(state)}"),
        ("manifest 1 GiB, sparse", lambda w: _sparse(w / MANIFEST_FILE, 1 << 30),
         "manifest.json: 1.0 GiB, over the bound of 1.0 MiB for a checkpoint manifest"),
    ]
    for i, (name, damage, needle) in enumerate(cases):
        w = tmp_path / f"case{i}"
        w.mkdir()
        for f, blob in ((STATE_FILE, state), (MANIFEST_FILE, man)):
            (w / f).write_bytes(blob)
        target = w / (STATE_FILE if "state" in name else MANIFEST_FILE)
        target.unlink()
        damage(w)
        with pytest.raises(CheckpointError, match=needle):
            load_checkpoint(m, cfg, w, flags=FLAGS)
    forged = tmp_path / "forged"
    put(forged, state, man)
    _sparse(forged / STATE_FILE, 64 << 30)
    (forged / MANIFEST_FILE).write_bytes(_seal({**{k: v for k, v in json.loads(man).items() if k != "manifest_sha256"},
                                                "bin": {**json.loads(man)["bin"], "bytes": 64 << 30}}))
    with pytest.raises(CheckpointError, match=f"bin.bytes is 68719476736; this model's state takes at most "
                                              f"{len(state)} bytes"):
        load_checkpoint(m, cfg, forged, flags=FLAGS)
    # the seed-format readers: the same checks, against the model's count
    os.mkfifo(tmp_path / "fifo.bin")
    _sparse(tmp_path / "big.bin", 64 << 30)
    for read in (lambda p: train_restore(m, train_new(m, cfg, m.zeros()), p), lambda p: params_load(m, p),
                 lambda p: mat_load(2, 3, p, 0)):
        with pytest.raises(CheckpointError, match="is a fifo, not a regular file"):
            read(tmp_path / "fifo.bin")
    with pytest.raises(CheckpointError, match="over the bound"):
        train_restore(m, train_new(m, cfg, m.zeros()), tmp_path / "big.bin")
    with pytest.raises(CheckpointError, match="has 6 parameters \\(24 bytes\\), the file holds 68719476736 bytes"):
        params_load(m, tmp_path / "big.bin")


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)
