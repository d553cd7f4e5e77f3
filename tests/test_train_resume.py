"""`bendtorch train --checkpoint-every K` then `--resume`: a run stopped after step k and resumed from its checkpoint
ends on the same bits as the run that never stopped, for every optimizer (packed BF16 moments included), on the same
data (bound by its SHA-256 in the checkpoint); a checkpoint written with other flags or on other data, a damaged
one, a bare .bin without its manifest, or a folder that is not there is refused before any work, with one line on
stderr and exit code 2. Also: one run per output folder (the lock), a non-finite loss, the summary of a resumed run,
and the memory estimate against a measured run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bendtorch.cli import main
from bendtorch.impl.checkpoint_folder import LOCK_FILE, MANIFEST_FILE, STATE_FILE, load_checkpoint
from bendtorch.records.schemas import validate

FULL = os.environ.get("BENDTORCH_FAULTS", "") == "full"


def train(out: Path, *extra: str) -> int:
    return main(["train", "--model", "tiny", "--steps", "12", "--no-bar", "--out", str(out), *extra])


@pytest.mark.parametrize("opt", [["--opt", "sgd", "--lr", "0.05"], ["--opt", "momentum", "--lr", "0.01"],
                                 ["--opt", "adam"], ["--opt", "adamw"], ["--opt", "adamw-bf16"],
                                 ["--opt", "adamw-bf16", "--v16"]])
def test_resume_ends_on_the_same_bits(tmp_path: Path, opt: list[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert train(a, "--checkpoint-every", "4", *opt) == 0
    assert train(b, "--resume", str(a / "ckpt_step8"), *opt) == 0
    assert (a / "final_params.bin").read_bytes() == (b / "final_params.bin").read_bytes()
    for d in ("final_state", "ckpt_step12"):
        assert (a / d / STATE_FILE).read_bytes() == (b / "final_state" / STATE_FILE).read_bytes(), d
    m = json.loads((a / "ckpt_step8" / MANIFEST_FILE).read_text())
    assert m["step"] == 8 and m["flags"]["opt"] == opt[1] and m["version"] == 2 and m["data"]["bytes"] == 12344
    s = json.loads((b / "summary.json").read_text())  # the resumed run's summary: the steps it ran, 9 to 12
    assert (s["first_step"], s["last_step"], s["steps_run"], s["mean_loss_last_steps"]) == (9, 12, 4, 4)
    assert s["timed_steps"] == 3 and s["mean_loss_last"] == pytest.approx(sum(s["losses"]) / 4)
    validate(s, "summary")


def test_resume_refuses_other_flags_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a"
    assert train(a, "--checkpoint-every", "4") == 0
    capsys.readouterr()
    assert train(tmp_path / "b", "--resume", str(a / "ckpt_step4"), "--lr", "0.1") == 2
    err = capsys.readouterr().err
    assert "other flags: --lr" in err and err.count("\n") == 1, err
    assert train(tmp_path / "b", "--resume", str(a / "ckpt_step4"), "--opt", "adam") == 2
    assert "--opt 'adamw' (now 'adam')" in capsys.readouterr().err
    bad = a / "ckpt_step8" / STATE_FILE
    bad.write_bytes(bad.read_bytes()[:-8])
    assert train(tmp_path / "c", "--resume", str(a / "ckpt_step8")) == 2
    err = capsys.readouterr().err
    assert "state.bin" in err and "bytes" in err and err.count("\n") == 1, err
    bare = tmp_path / "bare.bin"
    bare.write_bytes((a / "ckpt_step4" / STATE_FILE).read_bytes())
    assert train(tmp_path / "d", "--resume", str(bare)) == 2
    assert "without a bendtorch manifest" in capsys.readouterr().err
    assert train(tmp_path / "e", "--resume", str(tmp_path / "nope")) == 2
    assert "no checkpoint" in capsys.readouterr().err
    other = tmp_path / "other.txt"
    other.write_bytes(b"other bytes, long enough for one batch of sixteen tokens and more")
    assert train(tmp_path / "f", "--resume", str(a / "ckpt_step4"), "--data", str(other)) == 2
    err = capsys.readouterr().err
    assert "trained on other data: sha256 " in err and "this run's data is sha256 " in err, err
    assert err.count("\n") == 1 and str(other.resolve()) in err, err
    assert not any((tmp_path / d).exists() and any((tmp_path / d).iterdir()) for d in "cdef")  # nothing done


def test_a_flag_spelled_out_at_its_default_is_the_default(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert train(a, "--checkpoint-every", "6") == 0
    assert train(b, "--resume", str(a / "ckpt_step6"), "--lr", "0.003", "--batch", "4", "--wd", "0.01",
                 "--layers", "2") == 0
    assert (a / "final_state" / STATE_FILE).read_bytes() == (b / "final_state" / STATE_FILE).read_bytes()


# ---------------------------------------------------------------------------------------------------------------
# memory: the estimate made before any allocation, against a measured run


@pytest.mark.parametrize("argv", [["--batch", "256"], ["--model", "smol", "--layers", "1", "--steps", "2"]])
def test_the_memory_estimate_holds_a_measured_run(tmp_path: Path, argv: list[str]) -> None:
    """The estimate (training.memory) is of address space, what `ulimit -v` limits; it is never below what a run
    adds, and not above 1.5 times it (the measured runs gave 1.0 to 1.2)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("not run: the peak address space is read from /proc/self/status (Linux)")
    # fresh processes (the peak address space is a process's whole life's), the first to compile or load the kernels:
    # their first compilation, once per install, is not in the estimate
    for steps, out in (("1", tmp_path / "warm"), ("3", tmp_path)):
        subprocess.run([sys.executable, "-m", "bendtorch", "train", "--steps", steps, "--no-bar", "--out", str(out),
                        *argv], check=True, capture_output=True)
    m = json.loads((tmp_path / "summary.json").read_text())["memory"]
    grown = m["peak_vm_bytes"] - m["baseline_vm_bytes"]
    assert grown <= m["estimate_bytes"] <= 1.5 * grown, (m["estimate_bytes"] >> 20, grown >> 20)


def test_a_run_that_cannot_fit_is_refused_before_it_allocates(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--model", "smol", "--batch", "4096", "--no-bar", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--batch 4096: needs about" in err and "available" in err, err
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------------------------------------------
# two runs into one output folder


def test_a_second_run_into_a_folder_in_use_is_kept_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from filelock import FileLock

    from bendtorch.cli import main
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


@pytest.mark.skipif(not FULL, reason="not run: two real training processes take a minute (BENDTORCH_FAULTS=full runs it)")
def test_two_concurrent_runs_never_mix(tmp_path: Path) -> None:
    from bendtorch import impl
    from bendtorch.impl import llama
    from bendtorch.training.options import TrainOptions, optimizer_config
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


def test_a_slow_first_step_says_it_is_compiling(capsys: pytest.CaptureFixture[str]) -> None:
    # the notice appears once the block has run longer than its delay, and never for a fast block or when the
    # progress display is off
    import time as _time

    from bendtorch.training.run import compile_notice
    with compile_notice(True, after_s=0.05):
        _time.sleep(0.6)
    assert "compiling impl's kernels (once; then cached)" in capsys.readouterr().err
    with compile_notice(True, after_s=5.0):
        pass
    with compile_notice(False, after_s=0.0):
        _time.sleep(0.2)
    assert capsys.readouterr().err == ""
