"""`bendtorch train --checkpoint-every K` then `--resume` (issue 4): a run stopped after step k and resumed from its
checkpoint ends on the same bits as the run that never stopped, for every optimizer (packed BF16 moments included);
a checkpoint written with other flags, or a file that does not fit, is refused before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from bendtorch.cli import main


def train(out: Path, *extra: str) -> int:
    return main(["train", "--model", "tiny", "--steps", "12", "--no-bar", "--out", str(out), *extra])


@pytest.mark.parametrize("opt", [["--opt", "sgd", "--lr", "0.05"], ["--opt", "momentum", "--lr", "0.01"],
                                 ["--opt", "adam"], ["--opt", "adamw"], ["--opt", "adamw-bf16"],
                                 ["--opt", "adamw-bf16", "--v16"]])
def test_resume_ends_on_the_same_bits(tmp_path: Path, opt: list[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert train(a, "--checkpoint-every", "4", *opt) == 0
    assert train(b, "--resume", str(a / "ckpt_step8.bin"), *opt) == 0
    for f in ("final_params.bin", "final_state.bin"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert (a / "ckpt_step12.bin").read_bytes() == (b / "final_state.bin").read_bytes()


def test_resume_refuses_other_flags_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a"
    assert train(a, "--checkpoint-every", "4") == 0
    assert train(tmp_path / "b", "--resume", str(a / "ckpt_step4.bin"), "--lr", "0.1") == 2
    assert "other flags: --lr" in capsys.readouterr().err
    bad = a / "ckpt_step8.bin"
    bad.write_bytes(bad.read_bytes()[:-8])
    assert train(tmp_path / "c", "--resume", str(bad)) == 2
    err = capsys.readouterr().err
    assert "ckpt_step8.bin" in err and "found" in err
    assert train(tmp_path / "d", "--resume", str(tmp_path / "nope.bin")) == 2
    assert "no checkpoint" in capsys.readouterr().err
