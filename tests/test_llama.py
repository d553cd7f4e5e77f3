"""impl.llama's builder and `bendtorch train` (bendtorch/commands/train.py, bendtorch.training): the model's structure
and parameter count (and training.memory's count from the configuration alone), determinism, and a short training run
that lowers the loss; bad flags fail before any work."""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
import pytest

from bendtorch import impl
from bendtorch.cli import main
from bendtorch.commands import train as train_cmd
from bendtorch.impl import llama
from bendtorch.impl.specs import ShapeError
from bendtorch.training.memory import param_count
from bendtorch.training.options import optimizer_config


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    train_cmd.add_arguments(p)
    return p.parse_args(list(argv))


def test_tiny_structure() -> None:
    cfg = llama.config("tiny")
    m = llama.build(impl, cfg, 2)
    w = llama.named(m.names, m.init(0))
    # embedding 256x32 (tied head) + 2 layers x (2 norms + q 32x32 + k, v 16x32 + o 32x32 + gate, up 64x32 + down
    # 32x64) + the final norm
    per_layer = 2 * 32 + 32 * 32 + 2 * 16 * 32 + 32 * 32 + 2 * 64 * 32 + 32 * 64
    assert m.layer.count() == 256 * 32 + 2 * per_layer + 32 == sum(v.size for v in w.values())
    assert len(w) == 1 + 2 * 9 + 1
    assert w["model.layers.1.self_attn.k_proj.weight"].shape == (16, 32)
    assert param_count(cfg) == m.layer.count()
    smol = llama.config("smol", layers=3)
    assert param_count(smol) == llama.build(impl, smol, 1).layer.count()
    with pytest.raises(ShapeError):
        m.layer.fwd(m.init(0), np.zeros(3 * 16, dtype=np.int64))  # built for 2 sequences of 16


def test_forward_deterministic_and_near_uniform() -> None:
    cfg = llama.config("tiny")
    m = llama.build(impl, cfg, 2)
    x = np.arange(32, dtype=np.int64) * 7 % 256
    a = m.layer.fwd(m.init(1), x).y
    b = m.layer.fwd(m.init(1), x).y
    assert a.dtype == np.float32 and np.array_equal(a, b)
    loss = float(m.loss(a, (x + 1) % 256).loss)
    assert abs(loss - np.log(256)) < 0.2  # std 0.02 weights: logits near 0, loss near log(vocab)


def test_config_checks() -> None:
    with pytest.raises(ValueError):
        llama.config("smol", heads=8)  # not a multiple of kv_heads = 3
    with pytest.raises(ValueError):
        llama.config("medium")
    assert llama.config("smol").g == 3 and llama.config("tiny").g == 2


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--b1", "1.5"], ["--lr", "-1"], ["--batch", "0"],
                                  ["--betas", "0.9", "nan"], ["--lr", "0"]])
def test_bad_flags(argv: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", *argv, "--out", str(tmp_path / "o")]) == 2
    assert "error" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing done


def test_adam_constants_are_the_decimals_meant() -> None:
    # c = 1 - b as the decimal the user meant (oracle.hyper.one_minus), not 1 - b in float32 (main.bend 273-275)
    cfg = optimizer_config("adamw", 1e-3, 0.9, 0.999)
    assert cfg.c1 == np.float32(0.1) and cfg.c2 == np.float32(0.001)
    assert cfg.c2 != np.float32(1.0) - np.float32(0.999)


def test_train_tiny_lowers_loss(tmp_path: pathlib.Path) -> None:
    assert train_cmd.run(_args("--steps", "40", "--no-bar", "--out", str(tmp_path))) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert len(s["losses"]) == 40 and s["tokens_per_step"] == 64 and s["steps_run"] == 40
    assert s["mean_loss_last_steps"] == 10 and s["mean_loss_last"] == pytest.approx(np.mean(s["losses"][-10:]))
    assert np.mean(s["losses"][-5:]) < s["losses"][0] - 1.0  # from log(256) = 5.55 to below 4.5 in 40 steps
    assert (tmp_path / "loss.png").stat().st_size > 1000
