"""bench/bands.py: a library's cost by band of the float32 line, each band's inputs as a sweep's chunk hands them
over (bench.checker.chunk_inputs), and a clear refusal of a library or function that is not there (before any
work)."""

from __future__ import annotations

import numpy as np
import pytest

from bendtorch.bench import bands as B
from bendtorch.bench.checker import chunk_inputs


def test_each_band_is_its_patterns_then_their_negatives() -> None:
    x = chunk_inputs(0x3F800000, 3)
    assert x.tolist() == [1.0, np.nextafter(np.float32(1), np.float32(2)), float(np.uint32(0x3F800002).view(
        np.float32)), -1.0, -float(np.nextafter(np.float32(1), np.float32(2))),
        -float(np.uint32(0x3F800002).view(np.float32))]
    assert chunk_inputs(0, 4)[:4].view(np.uint32).tolist() == [0, 1, 2, 3]   # the first band: the subnormals


def test_a_row_per_function_and_a_figure_per_band() -> None:
    res = B.bands("numpy", ["exp", "tanh"], patterns=256, repeats=1)
    assert list(res["ns_per_input"]) == ["exp", "tanh"]
    assert all(len(v) == len(B.STARTS) and all(t >= 0 for t in v) for v in res["ns_per_input"].values())
    assert res["starts"][0] == 0.0 and res["starts"] == sorted(res["starts"])
    assert B.table(res).splitlines()[2].startswith("exp")


def test_an_unknown_library_or_function_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="no built-in library 'nope'"):
        B.bands("nope")
    with pytest.raises(ValueError, match="numpy has no erf_cubed"):
        B.bands("numpy", ["exp", "erf_cubed"])
    with pytest.raises(SystemExit) as e:
        B.main(["--lib", "nope"])
    assert e.value.code == 2 and "nope" in capsys.readouterr().err
