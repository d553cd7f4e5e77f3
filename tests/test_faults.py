"""Fault injection: what the harness trusts is checked, and every fault it is shown is refused with a clear error.

- the corrupted-checkpoint zoo, for every optimizer kind (SGD, momentum, Adam, AdamW, packed BF16 m, packed BF16 m
  and v): truncation at many lengths; a bit flipped in every region of the .bin (parameters, moments, q1 and q2,
  the packed tree's tags, sizes and words) and of the manifest; another kind's file; another model's file; random
  bytes of the right size; NaN and infinity written into each cell (with the manifest left, and re-sealed as a
  forger would, where the numbers themselves must be refused);
- SIGKILL while a checkpoint is being saved: the folder always holds a whole, verified pair;
- two runs into one output folder: the second is kept out by the lock;
- the command line's bad-input table: each mistake is one line on stderr and exit code 2, before any work.

Each zoo test counts the cases tried, refused with a CheckpointError and accepted silently (the goal: none), and
prints the counts (`pytest -s tests/test_faults.py`). The CI slice takes seconds to a minute; BENDTORCH_FAULTS=full
runs the whole (every bit of every manifest, every truncation length, 20 killed saves, two real concurrent runs).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bendtorch.impl.checkpoint import (MANIFEST_FILE, STATE_FILE, CheckpointError, _seal, load_checkpoint,
                                       remove_stale, save_checkpoint, train_dump)
from bendtorch.impl.combinators import Seq
from bendtorch.impl.optim import CAdamWBF16, CMomentum, CSGD, OptCfg, adam, adamw
from bendtorch.impl.train import Train, train_new, train_step
from tests.test_combinators import mse, rnd, scale

FULL = os.environ.get("BENDTORCH_FAULTS", "") == "full"
F32 = np.float32
ROOT = Path(__file__).resolve().parent.parent

KINDS: dict[str, OptCfg] = {
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

WRITER = """
import sys
import numpy as np
from bendtorch.impl.checkpoint import save_checkpoint
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
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], cwd=ROOT, stdout=subprocess.PIPE,
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


# ---------------------------------------------------------------------------------------------------------------
# two runs into one output folder


def test_a_second_run_into_a_folder_in_use_is_kept_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from filelock import FileLock

    from bendtorch.cli import main
    from bendtorch.reports.training import LOCK_FILE
    out = tmp_path / "run"
    out.mkdir()
    with FileLock(str(out / LOCK_FILE)):
        assert main(["train", "--steps", "2", "--no-bar", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in use by another run" in err, err
    assert not (out / "final_state").exists()
    (out / ".tmp-ckpt-stale-123").mkdir()  # what a killed run leaves
    (out / ".tmp-summary.json-abc").write_bytes(b"x")
    assert main(["train", "--steps", "2", "--no-bar", "--out", str(out)]) == 0
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.skipif(not FULL, reason="two real training processes take a minute: BENDTORCH_FAULTS=full")
def test_two_concurrent_runs_never_mix(tmp_path: Path) -> None:
    from bendtorch import impl
    from bendtorch.impl import llama
    from bendtorch.reports.training import TrainOptions, optimizer_config
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "bendtorch.cli", "train", "--no-bar", "--checkpoint-every", "10", "--out", str(out)]
    mm = llama.build(impl, llama.config("tiny"), 4)
    cfg = optimizer_config("adamw", 3e-3, wd=0.01)
    tries, kept_out, pairs = 5, 0, 0
    for i in range(tries):
        # run a trains "for ever" into out; run b, with another seed, starts once a has written a checkpoint
        a = subprocess.Popen(cmd + ["--steps", "1000000", "--seed", "1"], cwd=tmp_path, stderr=subprocess.DEVNULL)
        while not list(out.glob("ckpt_step*")) and a.poll() is None:
            time.sleep(0.05)
        b = subprocess.run(cmd + ["--steps", "1000000", "--seed", "2"], cwd=tmp_path, capture_output=True, text=True)
        a.send_signal(signal.SIGKILL)  # a dies mid-run, perhaps mid-save
        a.wait()
        assert "Traceback" not in b.stderr
        if b.returncode == 2 and "in use by another run" in b.stderr and b.stderr.count("\n") == 1:
            kept_out += 1
        for d in sorted(out.glob("ckpt_step*")):  # every published pair is whole, verified and run a's
            load_checkpoint(mm.layer, cfg, d, flags=TrainOptions(out=out, seed=1, steps=1000000).flags())
            pairs += 1
        shutil.rmtree(out)
    print(f"\nFAULTS two runs into one folder: {tries} tries, the second kept out {kept_out} times, {pairs} "
          f"checkpoints of the first verified after it was killed, 0 mixed pairs")
    assert kept_out == tries


# ---------------------------------------------------------------------------------------------------------------
# the command line's bad input: one line on stderr, exit code 2, no work done


def _bad_inputs(tmp: Path) -> list[tuple[str, list[str], str]]:
    a_file = tmp / "a-file"
    a_file.write_text("x")
    empty, five = tmp / "empty.txt", tmp / "five.txt"
    empty.write_bytes(b"")
    five.write_bytes(b"hello")
    bare = tmp / "bare.bin"
    bare.write_bytes(b"\0" * 64)
    out = str(tmp / "o")
    t = ["train", "--steps", "2", "--no-bar"]
    return [
        ("read-only --out", t + ["--out", "/proc/self/fdinfo"], "not writable"),
        ("--out naming a file", t + ["--out", str(a_file)], "not a directory"),
        ("--out under a file", t + ["--out", str(a_file / "sub")], "not a directory"),
        ("empty --data", t + ["--data", str(empty), "--out", out], "0 bytes"),
        ("5-byte --data", t + ["--data", str(five), "--out", out], "5 bytes"),
        ("missing --data", t + ["--data", str(tmp / "nope.txt"), "--out", out], "no such file"),
        ("--data with smol", ["train", "--model", "smol", "--data", str(five), "--out", out], "tiny only"),
        ("--seed -1", t + ["--seed", "-1", "--out", out], "--seed"),
        ("--layers 100000", t + ["--layers", "100000", "--out", out], "--layers"),
        ("--layers 0", t + ["--layers", "0", "--out", out], "--layers"),
        ("--lr 1e30", t + ["--lr", "1e30", "--out", out], "--lr"),
        ("--lr nan", t + ["--lr", "nan", "--out", out], "--lr"),
        ("--lr 0", t + ["--lr", "0", "--out", out], "--lr"),
        ("--steps 0", t + ["--steps", "0", "--out", out], "--steps"),
        ("--steps abc", t + ["--steps", "abc", "--out", out], "--steps"),
        ("--batch 0", t + ["--batch", "0", "--out", out], "--batch"),
        ("--b1 1.0", t + ["--b1", "1.0", "--out", out], "b1"),
        ("--betas 0.9 nan", t + ["--betas", "0.9", "nan", "--out", out], "--betas"),
        ("--eps -1", t + ["--eps", "-1", "--out", out], "--eps"),
        ("--v16 without adamw-bf16", t + ["--v16", "--out", out], "--v16"),
        ("--checkpoint-every -1", t + ["--checkpoint-every", "-1", "--out", out], "--checkpoint-every"),
        ("--resume missing", t + ["--resume", str(tmp / "nope"), "--out", out], "no checkpoint"),
        ("--resume a bare .bin", t + ["--resume", str(bare), "--out", out], "without a bendtorch manifest"),
        ("--opt bogus", t + ["--opt", "bogus", "--out", out], "--opt"),
        ("laws --json into a missing directory", ["laws", "--json", str(tmp / "no" / "laws.json")],
         "does not exist"),
        ("laws --json naming a directory", ["laws", "--json", str(tmp)], "is a directory"),
        ("bench --json into a missing directory", ["bench", "--json", str(tmp / "no" / "b.json")], "does not exist"),
        ("bench --repeats 2", ["bench", "--repeats", "2"], "--repeats"),
        ("bench --threads 0", ["bench", "--threads", "0"], "--threads"),
        ("erf-sweep --chunk 0", ["erf-sweep", "--chunk", "0", "--out", out], "--chunk"),
        ("erf-sweep --chunk 33", ["erf-sweep", "--chunk", "33", "--out", out], "multiple of 32"),
        ("erf-sweep --sample 0", ["erf-sweep", "--sample", "0", "--out", out], "--sample"),
        ("erf-sweep --sample -5", ["erf-sweep", "--sample", "-5", "--out", out], "--sample"),
        ("erf-sweep --workers 0", ["erf-sweep", "--workers", "0", "--out", out], "--workers"),
        ("erf-sweep --lo 5 --hi 5", ["erf-sweep", "--lo", "5", "--hi", "5", "--out", out], "below --hi"),
        ("erf-sweep --out naming a file", ["erf-sweep", "--sample", "8", "--out", str(a_file)], "not a directory"),
        ("report --only bogus", ["report", "--only", "bogus", "--out", out], "'bogus'"),
        ("report --erf-sample -1", ["report", "--erf-sample", "-1", "--out", out], "--erf-sample"),
        ("report --erf-full missing", ["report", "--erf-full", str(tmp / "nope.json"), "--out", out],
         "no such file"),
        ("an unknown command", ["frobnicate"], "invalid choice"),
        ("no command", [], "required"),
    ]


def test_the_bad_input_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bendtorch.cli import main
    table = _bad_inputs(tmp_path)
    refused = 0
    for name, argv, needle in table:
        code = main(argv)  # an exception here is a traceback a user would see: the test fails on it
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and needle in err and err.startswith("bendtorch"), (name, err)
        refused += 1
        assert not (tmp_path / "o").exists(), name  # nothing made before the error
    print(f"\nFAULTS command line: {len(table)} bad inputs tried, {refused} refused with one line and exit code 2, "
          f"0 tracebacks, 0 accepted")


def test_a_nonfinite_loss_stops_the_run_and_keeps_the_last_checkpoint(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from bendtorch.cli import main
    out = tmp_path / "o"
    argv = ["train", "--opt", "sgd", "--lr", "100", "--steps", "20", "--no-bar", "--checkpoint-every", "2"]
    assert main(argv + ["--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "the loss is nan at step 5" in err and "ckpt_step4" in err and "--allow-nonfinite" in err, err
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("ckpt")) == ["ckpt_step2", "ckpt_step4"]
    assert not (out / "final_state").exists()
    assert main(argv + ["--out", str(tmp_path / "p"), "--allow-nonfinite"]) == 0


@pytest.mark.parametrize("change, needle", [
    (lambda b: {**b, "step": "abc"}, "step must be an integer"),
    (lambda b: {**b, "step": -3}, "step must be an integer"),
    (lambda b: {**b, "step": True}, "step must be an integer"),
    (lambda b: {k: v for k, v in b.items() if k != "step"}, "step must be an integer"),
    (lambda b: {k: v for k, v in b.items() if k != "flags"}, "'flags' missing"),
    (lambda b: {**b, "flags": ["a"]}, "'flags' missing or not a JSON dict"),
    (lambda b: {**b, "version": 2}, "manifest version 2"),
    (lambda b: {**b, "format": "other"}, "format is 'other'"),
])
def test_a_sealed_manifest_with_bad_fields_is_refused(tmp_path: Path, change: Callable[[dict[str, Any]], Any],
                                                      needle: str) -> None:
    # the resume sidecar's old failures (not JSON, a list, no step, "step": "abc" or -3, no flags), now in a manifest
    # sealed correctly, so that the field checks themselves are what refuses it
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
