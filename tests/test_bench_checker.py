"""bench/checker.py: the checker's own cost, measured with a library that costs nothing (the correct results looked
up): the chunks spread over the positive patterns, the looked-up results the reference's, a figure per function with
its repeats, impl's own call beside its column, and a clear refusal (one line, exit 2) of a function, a library or
sizes that are not there, before any work."""

from __future__ import annotations

import numpy as np
import pytest

from bendtorch.bench import checker as C
from bendtorch.records.functions import FUNCTIONS
from bendtorch.reports.sweep.chunkpass import reference


def test_chunks_are_spread_over_the_positive_patterns_and_stay_inside_them() -> None:
    assert C.chunk_starts(4, 16) == [0, 1 << 29, 1 << 30, 3 << 29]
    starts = C.chunk_starts(32, 1 << 20)
    assert len(starts) == 32 and starts == sorted(starts) and starts[-1] + (1 << 20) <= 1 << 31
    assert C.chunk_starts(2, 1 << 31)[-1] == 0   # one chunk that is the whole line: no pattern past it


def test_the_library_that_costs_nothing_answers_the_correct_results() -> None:
    C.prepare("tanh", 0x3F000000, 0x3F000000 + 100)
    x = C.chunk_inputs(0x3F000000, 100)
    want = reference(FUNCTIONS["tanh"], np.arange(0x3F000000, 0x3F000000 + 100, dtype=np.uint32)).c32
    assert np.array_equal(C.answers(x).view(np.uint32), want.view(np.uint32))
    C.ANSWERS.clear()
    with pytest.raises(KeyError):
        C.answers(x)


def test_a_figure_per_function_with_its_repeats_and_impls_own_call() -> None:
    own = C.measure("exp", C.LIBRARY, chunks=2, patterns=1 << 10, repeats=2)
    assert own["inputs"] == 2 * 2 * (1 << 10) and len(own["repeats"]) == 2 and own["ns_per_input"] > 0
    assert "own_ns_per_input" not in own and not C.ANSWERS   # the stored answers are dropped after the timing
    col = C.measure("exp", "impl", chunks=2, patterns=1 << 10, repeats=1)
    assert col["library"] == "impl" and col["own_ns_per_input"] > 0


@pytest.mark.parametrize("args, says", [
    (["--functions", "exp,cube"], "no sweep function 'cube'"),
    (["--lib", "nope"], "no built-in library 'nope'"),
    (["--lib", "clib", "--functions", "silu"], "clib has no silu"),
    (["--lib", "impl_clib", "--functions", "exp"], "runs with BENDTORCH_LIBM=clib"),
    (["--chunks", "0"], "each must be at least 1"),
    (["--chunks", "4", "--patterns", str(1 << 30)], "at most 2^31"),
])
def test_a_mistake_is_refused_in_one_line_before_any_work(args: list[str], says: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        C.main(args)
    out = capsys.readouterr()
    assert e.value.code == 2 and says in out.err and out.err.count("\n") == 1 and out.out == ""
