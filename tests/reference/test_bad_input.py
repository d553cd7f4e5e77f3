"""Bad input: each case gets either the seed's behaviour or a clear error, and each test shows
which, in impl and in the oracle (and PyTorch where it has the same case).

  shapes that do not meet        ShapeError at composition time, naming both layers and both shapes
  a value of the wrong shape      ShapeError from the layer's checked fwd / bwd / loss call
  label count != batch            ValueError naming the loss
  negative / non-integer labels   ValueError naming the loss and the bad label
  a label >= c                    the seed's behaviour: CrossEntropy picks probability 0 clamped at 1e-12 (the row
                                  adds -log(1e-12) = 27.63 to the sum), NLL picks 0.0 and leaves the row's gradient 0
  NaN / Inf in inputs             no error; they propagate as the arithmetic makes them, the same positions as in
                                  the oracle
  Adam c1, c2 not 1 - b1, 1 - b2  impl.optim.cfg_check raises ConfigError naming the fields; Train.new with it
                                  poisons the state: the first loss is finite, every later loss is NaN

and at the command line: each mistake is one line on stderr and exit code 2, before any work (the table at the end;
tests/test_faults.py runs the files' faults in child processes under a memory limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bendtorch import oracle
from bendtorch.impl import optim as O
from bendtorch.impl import train as IT
from bendtorch.impl.optstate import ConfigError
from bendtorch.impl.specs import ShapeError
import bendtorch.impl as IMPL
import bendtorch.oracle as ORACLE

F32 = np.float32
LIBS = [IMPL, ORACLE]


@pytest.mark.parametrize("L", LIBS, ids=["impl", "oracle"])
def test_seq_shapes_that_do_not_meet(L: Any) -> None:
    a, b = L.Linear(4, 7, 5), L.ReLU(4, 6)
    with pytest.raises(ShapeError) as e:
        L.Seq(a, b)
    msg = str(e.value)
    assert a.name in msg and b.name in msg and "Mat[4 x 5]" in msg and "Mat[4 x 6]" in msg, msg


@pytest.mark.parametrize("L", LIBS, ids=["impl", "oracle"])
def test_fork_and_tie_shapes_that_do_not_meet(L: Any) -> None:
    with pytest.raises(ShapeError, match="Fork"):
        L.Fork(L.Linear(4, 7, 5), L.Linear(4, 6, 5))
    with pytest.raises(ShapeError, match="Tie"):
        L.Tie(L.Linear(4, 6, 6), L.Tanh(4, 5), L.Linear(4, 6, 6))
    with pytest.raises(ShapeError, match="Residual"):
        L.Residual(L.Linear(4, 6, 5))


def test_impl_and_oracle_layers_do_not_mix() -> None:
    with pytest.raises(ShapeError, match="do not mix"):  # mypy refuses the mix too (float32 vs float64)
        IMPL.Seq(IMPL.Linear(4, 7, 5), ORACLE.ReLU(4, 5))  # type: ignore[misc]


@pytest.mark.parametrize("L", LIBS, ids=["impl", "oracle"])
def test_wrong_shape_at_call_time(L: Any) -> None:
    lay = L.Linear(4, 7, 5)
    with pytest.raises(ShapeError, match="input x"):
        lay.fwd(lay.zeros(), np.zeros((4, 6), L.DTYPE))
    with pytest.raises(ShapeError, match="float"):
        lay.fwd(lay.zeros(), np.zeros((4, 7), np.float32 if L is ORACLE else np.float64))
    loss = L.CrossEntropy(4, 3)
    with pytest.raises(ShapeError):
        loss(np.zeros((4, 2), L.DTYPE), np.zeros(4, np.int64))


@pytest.mark.parametrize("L", LIBS, ids=["impl", "oracle"])
@pytest.mark.parametrize("name", ["CrossEntropy", "NLL"])
def test_label_count_mismatch(L: Any, name: str) -> None:
    loss = getattr(L, name)(4, 3)
    with pytest.raises(ValueError, match=name):
        loss(np.zeros((4, 3), L.DTYPE), np.array([0, 1, 2], np.int64))


@pytest.mark.parametrize("L", LIBS, ids=["impl", "oracle"])
@pytest.mark.parametrize("name", ["CrossEntropy", "NLL"])
def test_negative_and_non_integer_labels(L: Any, name: str) -> None:
    loss = getattr(L, name)(4, 3)
    y = np.zeros((4, 3), L.DTYPE)
    with pytest.raises(ValueError, match=rf"{name}.*-2"):
        loss(y, np.array([0, -2, 1, 2], np.int64))
    with pytest.raises(ValueError, match=name):
        loss(y, np.array([0.0, 1.0, 1.5, 2.0]))
    with pytest.raises(ValueError, match=name):
        loss(y, np.array([[0, 1], [1, 2]], np.int64))


def test_label_past_the_last_class_gets_the_seeds_behaviour() -> None:
    """CrossEntropy: a label >= c picks probability 0 clamped at 1e-12 (main.bend lines 2859-2864): that row adds
    -log(1e-12) = 27.631 to the sum, its gradient is softmax / n (no class hit). NLL: picks 0.0, its gradient row
    is zero (line 2931). impl and oracle agree (within the losses' bounds); PyTorch raises instead (an index error),
    which is the one place the seed chose to differ."""
    rng = np.random.default_rng(0)
    n, c = 4, 3
    z = rng.standard_normal((n, c)).astype(F32)
    lab = np.array([0, 5, 2, 1], np.int64)
    ri = IMPL.CrossEntropy(n, c)(z, lab)
    ro = ORACLE.CrossEntropy(n, c)(z.astype(np.float64), lab)
    good = np.array([0, 2, 1])
    zz = z.astype(np.float64)[[0, 2, 3]]
    lse = np.log(np.sum(np.exp(zz), 1))
    expect = (np.sum(lse - zz[np.arange(3), good]) - np.log(1e-12)) / n
    assert abs(float(ro.loss) - expect) <= 1e-12 * abs(expect)
    assert abs(float(ri.loss) - expect) <= 4 * 2.0 ** -23 * abs(expect)  # CrossEntropy's 4-ulp loss bound
    sm = np.exp(z[1].astype(np.float64)) / np.sum(np.exp(z[1].astype(np.float64)))
    assert np.allclose(ri.dy[1], sm / n, rtol=1e-6, atol=0) and np.allclose(ro.dy[1], sm / n, rtol=1e-12, atol=0)
    lp = np.log(sm).astype(F32)[None, :].repeat(n, 0)
    ni = IMPL.NLL(n, c)(lp, lab)
    no = ORACLE.NLL(n, c)(lp.astype(np.float64), lab)
    assert not np.any(ni.dy[1]) and not np.any(no.dy[1])
    assert abs(float(ni.loss) - float(no.loss)) <= 4 * 2.0 ** -23 * abs(float(no.loss))
    import torch
    import torch.nn.functional as tf
    with pytest.raises((IndexError, RuntimeError)):
        tf.cross_entropy(torch.tensor(z), torch.tensor(lab))


NAN_LAYERS = [("Linear", lambda L: L.Linear(3, 4, 5)), ("ReLU", lambda L: L.ReLU(3, 4)),
              ("GELUErf", lambda L: L.GELUErf(3, 4)), ("Tanh", lambda L: L.Tanh(3, 4)),
              ("Softmax", lambda L: L.Softmax(3, 4)), ("LogSoftmax", lambda L: L.LogSoftmax(3, 4)),
              ("LayerNorm", lambda L: L.LayerNorm(3, 4)), ("RMSNorm", lambda L: L.RMSNorm(3, 4))]


@pytest.mark.parametrize("name,mk", NAN_LAYERS, ids=[n for n, _ in NAN_LAYERS])
def test_nan_and_inf_propagate_as_in_the_oracle(name: str, mk: object) -> None:
    """A NaN in row 0 and a +Inf in row 1: no error; impl's output has NaN and infinities at exactly the oracle's
    positions (ulp_error counts NaN against NaN and equal infinities as 0), and its finite values stay within the
    layer's normal accuracy (row 2 is clean and must stay so)."""
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(F32)
    x[0, 1] = np.nan
    x[1, 2] = np.inf
    out = {}
    for L in LIBS:
        lay = mk(L)  # type: ignore[operator]
        p = lay.zeros()
        if lay.count():
            fl = np.random.default_rng(2).uniform(0.5, 1.0, lay.count()).astype(F32).astype(L.DTYPE)
            p = lay.load(p, fl, 0).p
        with np.errstate(all="ignore"):
            f = lay.fwd(p, x.astype(L.DTYPE))
            dy = np.ones_like(f.y)
            b = lay.bwd(f.p, f.s, dy, lay.zeros())
        out[L.__name__.rsplit(".", 1)[-1]] = (f.y, b.dx)
    for k in (0, 1):
        yi, yo = out["impl"][k], out["oracle"][k]
        assert np.array_equal(np.isnan(yi), np.isnan(yo)), (name, k, yi, yo)
        assert np.array_equal(np.isposinf(yi), np.isposinf(yo)) and np.array_equal(np.isneginf(yi), np.isneginf(yo))
        assert np.all(np.isfinite(yi[2])), (name, k, yi)
    assert np.isnan(out["impl"][0][0]).any(), "a NaN input must show in its row's output"


@pytest.mark.parametrize("name", ["CrossEntropy", "MSE"])
def test_nan_in_a_loss_input_gives_a_nan_loss(name: str) -> None:
    for L in LIBS:
        y = np.zeros((2, 3), L.DTYPE)
        y[1, 1] = np.nan
        t = np.array([0, 1], np.int64) if name == "CrossEntropy" else np.zeros((2, 3), L.DTYPE)
        with np.errstate(all="ignore"):
            r = getattr(L, name)(2, 3)(y, t)
        assert np.isnan(r.loss), (L.__name__, name)


def test_adam_c1_c2_disagreeing_with_b1_b2() -> None:
    """cfg_check raises ConfigError naming the fields; the seed's own message's example (0.9, 0.999 with 0.1,
    0.001) passes. A training state built from the bad configuration anyway is poisoned as the seed does (q1 = q2
    = NaN, main.bend line 906): the first loss is finite (computed before any step), every later one NaN. The
    oracle does the same."""
    bad = O.CAdamW(F32(1e-3), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.001), F32(0.1))  # c1, c2 swapped
    with pytest.raises(ConfigError) as e:
        O.cfg_check(bad)
    assert "c1" in str(e.value) and "c2" in str(e.value) and "b1" in str(e.value)
    only_c2 = O.adam(c2=0.01)
    with pytest.raises(ConfigError) as e2:
        O.cfg_check(only_c2)
    assert "c2 = " in str(e2.value) and "is not 1 - b1" not in str(e2.value)
    O.cfg_check(O.adamw())  # the defaults pass
    assert not O.cfg_ok(bad) and O.cfg_ok(O.adamw())

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(F32)
    t = np.array([0, 1, 2, 1], np.int64)
    for L, train in ((IMPL, IT), (ORACLE, oracle)):
        m = L.Linear(4, 3, 3)
        p = m.load(m.zeros(), rng.uniform(-0.5, 0.5, m.count()).astype(F32).astype(L.DTYPE), 0).p
        loss = L.CrossEntropy(4, 3)
        tr = train.train_new(m, bad, p)
        losses = []
        with np.errstate(all="ignore"):
            for _ in range(4):
                tr = train.train_step(m, loss, bad, tr, x.astype(L.DTYPE), t)
                losses.append(float(tr.loss))
        assert np.isfinite(losses[0]) and all(np.isnan(v) for v in losses[1:]), (L.__name__, losses)


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
        ("--data a directory", t + ["--data", str(tmp), "--out", out], "is a directory, not a regular file"),
        ("--data /dev/zero", t + ["--data", "/dev/zero", "--out", out], "is a character device, not a regular"),
        ("--data not UTF-8", t + ["--data", str(tmp / "c\udcff"), "--out", out], "c\\xff: no such file"),
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
