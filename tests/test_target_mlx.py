"""The conformance target `mlx` (targets/mlx.py) and its sweep library (reports/sweep/libraries/mlx.py):

- each operation against the float64 oracle on small inputs where MLX should agree: exactly where every partial
  result is an exact float32 (Linear on small integers, BF16 rounding, dropout with p = 0), within a few ulps
  elsewhere;
- a missing mlx, or an mlx without its CPU backend, makes the target "not run" with the pip command;
- one column (mx.compile gives the eager bits, so it is no variant of its own), and the record's machine facts;
- the laws' ci profile: no law errs, every failure carries its counterexample, and on the machine and MLX build of
  the committed results the same laws fail."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tests import target_checks as C
from tests.target_checks import ROW_ULPS, f64

from bendtorch.impl.llama import config
from bendtorch.oracle import funcs as OF
from bendtorch.oracle.ulp import normwise
from bendtorch.records.targets import PLAIN, RECORDS
from bendtorch.targets import NotApplicable, NotRun, column, make_target, resolve

try:
    from bendtorch.targets import mlx as M
except NotRun as e:
    pytest.skip(f"not run: {e}", allow_module_level=True)

F32 = np.float32
COMMITTED = Path(__file__).resolve().parent.parent / "reports" / "results" / "conformance" / "mlx.json"



@pytest.fixture(scope="module")
def mlx() -> Any:
    return make_target("mlx")


def test_linear_is_exact_on_small_integers(mlx: Any) -> None:
    C.linear_is_exact_on_small_integers(mlx)


def test_row_operations_agree_with_the_oracle(mlx: Any) -> None:
    C.row_operations_agree_with_the_oracle(mlx)


def test_grouped_causal_attention_and_its_gradient_agree_with_the_oracle(mlx: Any) -> None:
    C.grouped_causal_attention_agrees_with_the_oracle(mlx)


def test_bf16_dropout_and_erf(mlx: Any) -> None:
    C.bf16_and_dropout_zero_are_exact(mlx)
    # erf on [0.5, 4] (MLX's erf is far off for small |x|: the sweep's atlas measures that)
    z = np.linspace(0.5, 4.0, 200, dtype=F32)
    assert normwise(mlx.erf(z), OF.erf(f64(z))) <= ROW_ULPS


def test_threads_are_not_applicable(mlx: Any) -> None:
    with pytest.raises(NotApplicable, match="MLX has no thread-count setting"):
        with mlx.threads(1):
            pass


_FORWARD: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "erf": OF.erf, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "sigmoid": OF.sigmoid, "silu": OF.silu, "gelu_tanh": OF.gelu_tanh,
    "gelu_erf": OF.gelu_erf}
_BACKWARD: dict[str, Callable[[Any, Any], Any]] = {
    "sigmoid": OF.sigmoid_grad, "tanh": OF.tanh_grad, "silu": OF.silu_grad, "gelu_tanh": OF.gelu_tanh_grad,
    "gelu_erf": OF.gelu_erf_grad}


@pytest.mark.parametrize("name", sorted(_FORWARD))
def test_elementwise_functions_and_their_derivatives_agree_with_the_oracle(name: str) -> None:
    """On [-4, 4] (positive for log and the roots), normwise: a function mapped to the wrong MLX call (the erf GELU
    for the tanh one, a sigmoid for a SiLU) is off by far more than ROW_ULPS."""
    x = np.linspace(-4.0, 4.0, 801, dtype=F32)
    if name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + F32(0.01)
    assert M.elementwise(name, x).dtype == F32
    assert normwise(M.elementwise(name, x), _FORWARD[name](f64(x))) <= ROW_ULPS
    if name in _BACKWARD:
        assert normwise(M.derivative(name, x), _BACKWARD[name](f64(x), np.ones(x.size))) <= ROW_ULPS


def test_the_sweep_library_gives_float32_arrays_of_the_input_s_shape() -> None:
    from bendtorch.records.libraries import LIBRARIES
    from bendtorch.reports.sweep.libraries import resolve as resolve_fn
    lib = LIBRARIES["mlx"]
    assert set(lib.functions) == set(_FORWARD) | {f"d{f}" for f in _BACKWARD}
    x = np.array([0.0, -0.0, 0.5, -1.5, 3.0, 1e-40, np.inf, np.nan] * 4, F32)
    for spec in lib.functions.values():
        y = resolve_fn(spec)(x.copy())
        assert isinstance(y, np.ndarray) and y.dtype == F32 and y.shape == x.shape, spec


# ---- not run without the library ----

@pytest.mark.parametrize("blocked, says", [("mlx", "mlx is not installed"),
                                           ("mlx.core", "mlx.core cannot be imported")])
def test_not_run_without_mlx_or_its_cpu_backend(blocked: str, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """mlx missing (find_spec finds nothing), or mlx without mlx-cpu (mlx is found, mlx.core does not import): the
    target says not run, naming the pip command, and every law of its column is not run."""
    monkeypatch.setitem(sys.modules, blocked, None)  # an import of it fails; find_spec of it finds nothing
    monkeypatch.delitem(sys.modules, "bendtorch.targets.mlx")
    hint = RECORDS["mlx"].install_hint()
    with pytest.raises(NotRun, match=says) as e:
        importlib.import_module("bendtorch.targets.mlx")
    assert hint in str(e.value)
    with pytest.raises(NotRun, match=says):
        make_target("mlx")
    t, described = column(resolve("mlx"))
    assert t is None and says in described["not_run"] and hint in described["not_run"]


# ---- one column; the machine record ----

def test_one_column_because_mx_compile_keeps_the_eager_bits(mlx: Any) -> None:
    """The record has no variants: mx.compile (the fused C++ MLX builds on the CPU) gives the tiny Llama's forward
    the eager bits, so a compiled column would repeat the eager one. If a build ever changes that, this fails and
    the record wants a variant."""
    import mlx.core as mx
    assert RECORDS["mlx"].check("cpu") == (PLAIN,) and RECORDS["mlx"].label("cpu") == "mlx"
    cfg = config("tiny")
    m = M.llama(cfg, 3)
    toks = M.ids(np.random.default_rng(4).integers(0, cfg.vocab, (2, cfg.t)))
    eager = M.host(m(toks))
    compiled = M.host(mx.compile(lambda t: m(t))(toks))
    assert np.array_equal(eager.view(np.uint32), compiled.view(np.uint32))


def test_the_machine_record_names_mlx_s_backend_blas_and_compiler() -> None:
    from bendtorch.records.machine import probe
    p = probe("mlx")
    assert p["version"] and p["build"]["cpu"] and p["dispatch"]["device"].startswith("Device(cpu")
    assert any(b.startswith("libblas ") for b in p["build"]["bundled"]), p
    assert p["build"]["cxx"] and p["build"]["compile"] in ("enabled", "disabled")


# ---- the ci profile ----

def test_the_ci_profile_runs_and_reproduces_the_committed_failures(tmp_path: Path) -> None:
    from bendtorch.records.machine import compare_note, machine
    from bendtorch.records.schemas import validate
    out = tmp_path / "mlx.json"
    r = subprocess.run([sys.executable, "-m", "bendtorch", "laws", "--target", "mlx", "--profile", "ci", "--json",
                        str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]  # no law errs
    doc = json.loads(out.read_text())
    validate(doc, "laws")
    results = {r["law"]: r for r in doc["rows"]}
    assert {r["result"] for r in doc["rows"]} <= {"passed", "failed", "not applicable"}
    assert all(r.get("counterexample") for r in doc["rows"] if r["result"] == "failed")
    assert results["threads_1_vs_2"]["result"] == "not applicable"
    committed = json.loads(COMMITTED.read_text())
    note = compare_note(committed["machine"], machine(["mlx"]), "mlx")
    if note is not None:
        pytest.skip(note)
    failed = sorted(r["law"] for r in doc["rows"] if r["result"] == "failed")
    assert failed == sorted(r["law"] for r in committed["rows"] if r["result"] == "failed")
