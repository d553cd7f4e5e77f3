"""The GPU's sweep library (torch_cuda) and the prepared GPU run (bench/gpu.sh), with the CPU standing in for the GPU
($BENDTORCH_SWEEP_GPU=cpu): the device is chosen, the chunks go through it, the JSON names the device. Without a GPU
and without the stand-in, torch_cuda is one line ("not run: no GPU") before any work, and no default includes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
HAS_GPU = bool(subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                              capture_output=True, text=True).stdout.strip() == "True")


def test_no_default_sweep_includes_a_gpu_library() -> None:
    from bendtorch.records.libraries import LIBRARIES, providers
    assert LIBRARIES["torch_cuda"].device == "cuda"
    assert all("torch_cuda" not in providers(f) for f in LIBRARIES["torch_cuda"].functions)
    assert "torch" in providers("exp")  # the check above could fail: the CPU column is a default


@pytest.mark.skipif(HAS_GPU, reason="not run: a GPU is present, so torch_cuda runs (the refusal needs none)")
def test_without_a_gpu_torch_cuda_is_one_line_before_any_work(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BENDTORCH_SWEEP_GPU"}
    p = subprocess.run([sys.executable, "-m", "bendtorch", "sweep", "exp", "--lib", "torch_cuda", "--sample", "64",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 2 and "not run: no GPU" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.rglob("*.json"))  # nothing measured


def test_the_stand_in_gives_the_cpu_bits_and_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch.records.machine import probe
    from bendtorch.reports.sweep.libraries import pytorch
    monkeypatch.setenv(pytorch.GPU_ENV, "cpu")
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32) * 30
    for f in ("exp", "erf", "rsqrt"):
        assert np.array_equal(pytorch.GPU[f](x).view(np.uint32), pytorch.VECTOR[f](x).view(np.uint32)), f
    assert probe("torch_cuda")["dispatch"]["device"] == "cpu (stand-in)"
    monkeypatch.setenv(pytorch.GPU_ENV, "tpu")
    with pytest.raises(RuntimeError, match="cuda or cpu"):
        pytorch.gpu_device()


def test_the_prepared_gpu_run_with_the_cpu_standing_in(tmp_path: Path) -> None:
    out = tmp_path / "gpu-out"
    bt = str(Path(sys.executable).with_name("bendtorch"))
    p = subprocess.run(["bash", str(ROOT / "bench" / "gpu.sh"), "--standin", "--sample", "256"], cwd=tmp_path,
                       capture_output=True, text=True, env={**os.environ, "OUT": str(out), "BT": bt}, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    laws = json.loads((out / "torch-cuda.json").read_text())
    rows = laws["rows"]
    assert rows and {r["result"] for r in rows} == ({"passed", "failed"} if HAS_GPU else {"not run"})
    acc = json.loads((out / "accuracy" / "accuracy.json").read_text())
    assert [c["target"] for c in acc["columns"]] == ["torch cuda (TF32 off)", "torch cuda (TF32 on)"]
    cells = {r["status"] for c in acc["columns"] for r in c["rows"]}
    assert ("not run" not in cells) if HAS_GPU else cells == {"not run"}, cells
    for f in ("exp", "log", "tanh", "sin", "cos", "erf", "sqrt", "rsqrt"):
        d = json.loads((out / "atlas" / f / "sweep_sample.json").read_text())
        col = d["libraries"]["torch_cuda"]
        assert col["key"]["library"]["distribution"]["dispatch"]["device"] == "cpu (stand-in)", f
        assert col["finite_inputs"] > 256 and col["max_ulp"] < 2, f  # PyTorch's CPU functions: within 2 ulps
