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
