"""The atlas's projected cost (bench/atlas_cost.py): a column's pass time scaled from a spread sample to all 2^32
inputs. A library of known cost (it sleeps a fixed time an input) shows the scaling; a figure of speed is never
asserted (speed lives in the benchmarks)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from bendtorch.bench import atlas_cost

SLEEP_PER_INPUT = 2e-7   # 0.2 us an input: 859 s over 2^32 inputs, far above the checker's own ~10-60 ns an input


def costly(x: Any) -> Any:
    """exp's correct results are not wanted here, only a known cost: the input back, after a sleep per input."""
    time.sleep(x.size * SLEEP_PER_INPUT)
    return np.array(x, dtype=np.float32)


def test_a_columns_projection_is_its_cost_per_input_times_every_input() -> None:
    r = atlas_cost.function_cost("exp", 2, 4096, 1, [costly])
    assert r["inputs_swept"] == 2 * 2 * 4096 and r["workers"] == 1
    (col,) = r["columns"].values()
    slept = SLEEP_PER_INPUT * 2 ** 32
    # the sleep is a floor; above it the reference's share and the statistics pass (under 100 ns an input on any
    # machine these run on) and the sleeps' overshoot (two calls)
    assert slept <= col["projected_core_s"] <= slept + 100e-9 * 2 ** 32 + 2 * 1e-3 * 2 ** 31 / 4096
    assert r["projected_wall_s"] == pytest.approx(col["projected_core_s"] + r["fixed_s"], abs=0.2)


def test_a_spread_sample_scales_by_the_patterns_it_leaves_out() -> None:
    # the same cost an input on twice the patterns: the same projection within the sleeps' jitter
    a = atlas_cost.function_cost("exp", 2, 4096, 1, [costly])
    b = atlas_cost.function_cost("exp", 4, 4096, 1, [costly])
    pa, pb = (next(iter(r["columns"].values()))["projected_core_s"] for r in (a, b))
    assert pb == pytest.approx(pa, rel=0.25)


@pytest.mark.parametrize("argv", [["--functions", "no_such_function"], ["--chunks", "0"], ["--patterns", "8"]])
def test_a_bad_request_exits_2_before_any_work(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        atlas_cost.main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("atlas_cost: ")


def test_the_run_times_each_function_beside_its_projection(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # the sweeps themselves stand in for a fake that records its call: the full atlas takes hours
    from bendtorch.reports.sweep import api

    calls: list[tuple[str, Any]] = []

    def fake(function: str, libs: Any, out: Any, **kw: Any) -> dict[str, Any]:
        calls.append((function, out))
        time.sleep(0.05)
        return {"libraries": {"impl": {}, "clib": {}}}

    monkeypatch.setattr(api, "sweep", fake)
    r = atlas_cost.run_atlas(["exp", "tanh"], str(tmp_path), 1, {"exp": 10.0})
    assert [c[0] for c in calls] == ["exp", "tanh"] and all(str(c[1]) == str(tmp_path) for c in calls)
    assert [row["libraries"] for row in r["functions"]] == [["clib", "impl"]] * 2
    assert all(row["full_wall_s"] >= 0.05 for row in r["functions"])
    assert r["functions"][0]["projected_wall_s"] == 10.0 and r["functions"][1]["projected_wall_s"] is None
    assert r["full_atlas_wall_s"] == pytest.approx(sum(row["full_wall_s"] for row in r["functions"]))


def test_a_run_into_a_file_exits_2_before_any_work(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a-file"
    f.write_text("")
    with pytest.raises(SystemExit) as e:
        atlas_cost.main(["--run", str(f)])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith(f"atlas_cost: --run {f}: ")
