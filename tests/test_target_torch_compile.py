"""The conformance target `torch_compile` (targets/torch_compile.py): PyTorch's eager target with each operation in
torch.compile (Inductor's C++ backend on the CPU).

- the columns' options reach torch.compile (backend, mode, dynamic), each compiled function is made once per
  operation and kept, and the record caps the laws' examples (every new shape of the static column compiles);
- a compiled operation gives eager PyTorch's results to within a stated number of ulps, and in the dynamic column a
  second batch size runs the graph compiled for the first while the static column compiles another;
- a conformance law that holds on the compiled target fails on it with one operation broken;
- Inductor's on-disk cache is the harness's cache folder's unless the caller chose one;
- the finding the ci profile's few examples can miss: the compiled log-softmax is not batch invariant.

Compilations cost seconds each on a small machine: the tests use few operations on tiny shapes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from tests import target_checks as C

from bendtorch.laws.registry import LawFailure
from bendtorch.oracle.ulp import normwise
from bendtorch.records.targets import RECORDS
from bendtorch.targets import make_target
from bendtorch.targets import torch_compile as TC

F32 = np.float32

L = C.conformance_laws()  # the laws under the conformance tests' profile (target_checks)

# Inductor fuses the row's max, exp, sum and division into its own loops (vectorised, another summation order
# than ATen's kernel): each output is a few roundings from the truth either way, so the two agree to within a few
# ulps of the row's largest value; a wrong axis or a missing max shift is off by thousands
ROW_ULPS = 4.0


def compiled(variant: str) -> Any:
    t = make_target("torch_compile", variant=variant)
    assert isinstance(t, TC.TorchCompile)
    return t


def graphs() -> int:
    """The graphs dynamo has compiled in this process (its counter of unique graphs)."""
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def test_the_columns_options_reach_torch_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each column calls torch.compile(f, backend="inductor", mode="default", dynamic=<its option>) once per
    operation and keeps what it made: the same operation again compiles nothing new, another operation does."""
    seen: list[dict[str, Any]] = []

    def spy(f: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
        seen.append(kw)
        return f  # eager: the options are what this test is about
    monkeypatch.setattr(torch, "compile", spy)
    x = np.ones((3, 5), F32)
    for variant, dyn in (("static", False), ("dynamic", True)):
        seen.clear()
        t = compiled(variant)
        t.softmax(x)
        t.softmax(x[:1])
        t.log_softmax(x)
        assert seen == [{"backend": "inductor", "mode": "default", "dynamic": dyn}] * 2
        assert set(t._fns) == {"softmax", "log_softmax"} and t.versions()["compile"].endswith(f"dynamic={dyn}")


def test_the_record_has_two_columns_and_caps_the_examples() -> None:
    rec = RECORDS["torch_compile"]
    assert [rec.label("cpu", v) for v in rec.check("cpu")] == ["torch_compile (static shapes)",
                                                                "torch_compile (dynamic shapes)"]
    assert [v.options for v in rec.check("cpu")] == [{"dynamic": False}, {"dynamic": True}]
    assert rec.extra is None and rec.max_examples is not None and rec.max_examples < 20


@pytest.mark.parametrize("variant", ["static", "dynamic"])
def test_softmax_agrees_with_eager_and_the_dynamic_column_reuses_its_graph(variant: str) -> None:
    """softmax on 4 x 17, then on 6 x 17: within ROW_ULPS of eager PyTorch's rows (normwise). The static column
    compiles a graph for the second shape; the dynamic one runs the graph it compiled for the first."""
    t, eager = compiled(variant), make_target("torch")
    r = np.random.default_rng(0)
    x = (r.standard_normal((6, 17)) * 4).astype(F32)
    n0 = graphs()
    a = t.softmax(x[:4])
    n1 = graphs()
    b = t.softmax(x)
    n2 = graphs()
    assert n1 == n0 + 1  # compiled, not run eagerly
    assert n2 == n1 + (1 if variant == "static" else 0)
    for got, x_ in ((a, x[:4]), (b, x)):
        want = eager.softmax(x_)
        assert got.shape == want.shape
        assert max(normwise(g, w) for g, w in zip(got, want)) <= ROW_ULPS


def test_a_law_that_holds_fails_on_the_compiled_target_broken() -> None:
    """erf's oddness holds on the compiled erf; with the compiled result moved one ulp up wherever x < 0 (the
    smallest change a bit-for-bit law must see) the law fails with a recorded counterexample."""
    real = compiled("static")

    class Broken(TC.TorchCompile):
        def erf(self, x: Any) -> Any:
            y = real.erf(x)
            return np.where(np.asarray(x) < 0, np.nextafter(y, F32(np.inf)), y).astype(F32)

    L.test_erf_odd(target=real)
    with pytest.raises((LawFailure, BaseExceptionGroup)) as e:
        L.test_erf_odd(target=Broken())
    errs = list(e.value.exceptions) if isinstance(e.value, BaseExceptionGroup) else [e.value]
    assert all(isinstance(x, LawFailure) and x.record.get("what") for x in errs), errs


CACHE = """
import os
from bendtorch.targets import make_target
make_target("torch_compile")
print(os.environ["TORCHINDUCTOR_CACHE_DIR"])
"""


@pytest.mark.parametrize("given", [False, True])
def test_inductor_s_cache_is_the_harness_s_unless_set(tmp_path: Path, given: bool) -> None:
    """Without TORCHINDUCTOR_CACHE_DIR the target puts Inductor's cache in the harness's cache folder (inductor/
    under $BENDTORCH_CACHE); a folder the caller set is left as it is."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env["BENDTORCH_CACHE"] = str(tmp_path / "cache")
    if given:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "mine")
    r = subprocess.run([sys.executable, "-c", CACHE], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    want = tmp_path / ("mine" if given else "cache/inductor")
    assert r.stdout.strip() == str(want)


def test_compiled_log_softmax_is_not_batch_invariant_where_eager_is() -> None:
    """The finding the ci profile's two examples a law can miss: in a batch of 64 rows of 17 (the laws' values from
    seed 0), rows 16, 36 and 45 of the compiled log-softmax (dynamic shapes) differ from the same row computed alone,
    while eager PyTorch gives every row its bits alone. If a PyTorch release makes the compiled rows invariant this
    fails, and the committed findings want measuring again."""
    x = L.values(0, (64, 17), 4.0)
    t, eager = compiled("dynamic"), make_target("torch")

    def differing(f: Callable[[Any], Any]) -> list[int]:
        y = f(x)
        return [i for i in range(64) if not np.array_equal(y[i:i + 1].view(np.uint32), f(x[i:i + 1]).view(np.uint32))]
    assert differing(eager.log_softmax) == []
    assert differing(t.log_softmax) == [16, 36, 45]


# ---- the sweep library (reports/sweep/libraries/torch_compile.py) ----

# Sleef's vector functions Inductor calls are documented at 1.0 ulp (exp, log, tanh: its u10 family) and 3.5 ulps
# (sin, cos: u35), sqrt and 1/sqrt are one or two roundings: a compiled function within 4 ulps on a sample, and the
# right special values; a wrong function (another function's graph, a neighbour's) is off by far more
SWEEP_ULPS = 4.0
# compiled torch.erf is ATen's vectorised erf polynomial (the one inside eager GELU, bendtorch.reference.torch_erf),
# whose error is absolute: 4.3e-7 at most on a sample, so 1.7e7 ulps near zero; a wrong function is off by more
# than 2^-20 somewhere in a sample of 20,000
ERF_ABS = 2.0 ** -20


@pytest.mark.parametrize("function", ["exp", "log", "tanh", "sin", "cos", "sqrt", "rsqrt", "erf"])
def test_sweep_library_within_its_bounds(function: str) -> None:
    from bendtorch.reports.sweep.api import check
    col = check(function, "torch_compile", sample=20_000)
    assert col["specials_right"], function
    if function == "erf":
        worst = col["max_abs_error_where_not_correctly_rounded"]
        assert worst <= ERF_ABS, worst
    else:
        assert col["max_ulp"] <= SWEEP_ULPS, (function, col["max_ulp"])


def test_sweep_library_compiles_each_function_as_a_graph_of_its_own() -> None:
    """Every function of the record is compiled (dynamo's unique graphs grow by one for each, none falls back to
    eager under a shared code object's recompile limit) and the second chunk of another length compiles nothing
    new (dynamic shapes); an input alone gives the bits it has among copies of itself (dynamo's size-1 graph is a
    scalar loop of the C library's calls, which the library does not measure)."""
    from bendtorch.records.libraries import LIBRARIES
    from bendtorch.reports.sweep.libraries import resolve
    from bendtorch.reports.sweep.libraries import torch_compile as SL
    lib = LIBRARIES["torch_compile"]
    assert set(lib.functions) == set(SL.FUNCS) and "d" + "gelu_erf" in lib.functions
    x = np.linspace(-3, 3, 4099, dtype=F32)
    for f, spec in lib.functions.items():
        before = graphs()
        with np.errstate(all="ignore"):
            y = resolve(spec)(x)
            again = resolve(spec)(x[:1000])
        assert y.dtype == F32 and y.shape == x.shape
        assert graphs() - before <= 1 and np.array_equal(again.view(np.uint32), y[:1000].view(np.uint32)), f
        assert SL._compiled(f).__wrapped__.__code__.co_name == f"compiled_{f}"  # type: ignore[attr-defined]
    one = SL.FUNCS["sin"](np.array([-890.659], F32))
    assert one.shape == (1,) and one.view(np.uint32)[0] == SL.FUNCS["sin"](np.full(16, -890.659, F32)).view(
        np.uint32)[0]


def test_sweep_library_runs_where_named_and_says_its_machine() -> None:
    """torch_compile is not among a function's default libraries (it compiles at its first call), `--lib
    torch_compile` runs it, and its machine record names the C++ compiler and the vector ISA Inductor generates for."""
    from bendtorch.records.libraries import ON_REQUEST, providers
    from bendtorch.records.machine import probe
    assert "torch_compile" in ON_REQUEST and "torch_compile" not in providers("exp") and "torch" in providers("exp")
    p = probe("torch_compile")
    assert p["build"]["cxx"] and p["dispatch"]["inductor_lanes"] >= 1 and p["version"] == torch.__version__
