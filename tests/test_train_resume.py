"""`bendtorch train --checkpoint-every K` then `--resume`: a run stopped after step k and resumed from its checkpoint
ends on the same bits as the run that never stopped, for every optimizer (packed BF16 moments included); a checkpoint
written with other flags, a damaged one, a bare .bin without its manifest, or a folder that is not there is refused
before any work, with one line on stderr and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bendtorch.cli import main
from bendtorch.impl.checkpoint import MANIFEST_FILE, STATE_FILE


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
    assert m["step"] == 8 and m["flags"]["opt"] == opt[1]


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
    assert not any((tmp_path / d).exists() and any((tmp_path / d).iterdir()) for d in "cde")  # nothing done
