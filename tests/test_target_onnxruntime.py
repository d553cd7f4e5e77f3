"""The onnxruntime target (bendtorch.targets.onnxruntime) and its sweep library: the graphs compute the operations
the laws name (against the float64 oracle, in ulps), the two graph-optimisation levels are two columns whose level
reaches the session, sessions are cached per shape, a missing extra makes the target "not run" with the pip command,
and the ci profile of its laws runs with every law answered.

Skipped with "not run: ..." where onnx or onnxruntime is not installed."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tests import target_checks as C

from bendtorch.laws.verdict import exact_rne
from bendtorch.oracle.ulp import normwise, ulp_error
from bendtorch.records.targets import RECORDS
from bendtorch.targets import NotApplicable, NotRun, Target, make_target

F32 = np.float32
F64 = np.float64
_erf = np.vectorize(math.erf, otypes=[F64])   # float64 erf (the C library's: within a float64 ulp or two)


def ort_target(variant: str = "opt-all") -> Any:
    try:
        return make_target("onnxruntime", variant=variant)
    except NotRun as e:
        pytest.skip(f"not run: {e}")


@pytest.fixture(scope="module")
def ort() -> Any:
    return ort_target()


def rows(seed: int, shape: tuple[int, int], scale: float = 3.0) -> Any:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


def _softmax64(z: Any) -> Any:
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# The row operations against float64 on normal inputs, normwise (in ulps of the row's largest exact value): each
# output is a few roundings (the 33-term sum, exp, the division, the square root) away from the truth, each at most a
# few ulps of that value; a graph wired wrong (the axis, the weight's orientation, eps, the gain) is off by far more
# than 2^10 ulps.
ROW_ULPS = 8


def test_row_operations_against_the_oracle(ort: Target) -> None:
    x, w, b, g = rows(0, (6, 33)), rows(1, (5, 33), 1.0), rows(2, (1, 5), 1.0)[0], rows(3, (1, 33), 1.0)[0]
    X = x.astype(F64)
    lab = np.array([0, 32, 7, 1, 16, 5])
    lsm = X - X.max(-1, keepdims=True) - np.log(np.exp(X - X.max(-1, keepdims=True)).sum(-1, keepdims=True))
    cases = {
        "linear": (ort.linear(x, w, b), X @ w.T.astype(F64) + b),
        "matmul": (ort.linear(x, w, None), X @ w.T.astype(F64)),
        "rms_norm": (ort.rms_norm(x, g, 1e-5), X / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-5) * g),
        "layer_norm": (ort.layer_norm(x, g, g, 1e-5),
                       (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + 1e-5) * g + g),
        "softmax": (ort.softmax(x), _softmax64(X)),
        "log_softmax": (ort.log_softmax(x), lsm),
        "ce_rows": (ort.ce_rows(x, lab), -lsm[np.arange(6), lab]),
    }
    for name, (got, exact) in cases.items():
        assert got.dtype == F32 and got.shape == exact.shape, name
        assert normwise(got, exact) <= ROW_ULPS, (name, normwise(got, exact))


def test_attention_against_the_oracle(ort: Target) -> None:
    """Causal grouped-query attention (query head a reads key/value head a // 2), normwise against float64."""
    q, k, v = (rows(s, (2 * h * 5, 4), 1.0).reshape(2, h, 5, 4) for s, h in ((4, 4), (5, 2), (6, 2)))
    Q, K, V = (np.repeat(a.astype(F64), 2, axis=1) if a is not q else a.astype(F64) for a in (q, k, v))
    s = np.einsum("bhtd,bhsd->bhts", Q, K) * 0.5
    s = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
    exact = np.einsum("bhts,bhsd->bhtd", _softmax64(s), V)
    assert normwise(ort.attention(q, k, v, 0.5), exact) <= ROW_ULPS


# Elementwise, on -5 <= x <= 5: each function is a vectorised polynomial or a libm call within a few ulps there; a
# wrong operator or attribute (Gelu's approximation, the SiLU's product) is off by thousands. Sigmoid, SiLU and the
# GELUs are taken from x = -1 up: below, 1 + erf(x) and 1 + exp(-x)'s reciprocal lose their low bits to the sum (the
# relative error of their negative tails is the atlas's to measure).
ACT_ULPS = 4
ACT_REFS: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "erf": _erf, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu_erf": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
}


@pytest.mark.parametrize("function", sorted(ACT_REFS))
def test_elementwise_against_the_oracle(ort: Any, function: str) -> None:
    x = np.linspace(-5, 5, 1001, dtype=F32)
    if function in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + F32(1e-3)
    if function in ("sigmoid", "silu", "gelu_erf", "gelu_tanh"):
        x = x[x >= -1]
    got = ort.act(function, x)
    assert got.dtype == F32 and got.shape == x.shape
    assert float(ulp_error(got, ACT_REFS[function](x.astype(F64))).max()) <= ACT_ULPS, function


def test_exact_operations(ort: Any) -> None:
    """Where the answer is exact: Sqrt is IEEE's correctly rounded square root (numpy's float32 sqrt); dropout with
    p = 0 in training mode returns its input's bits (NaN payloads too); the bfloat16 cast rounds to nearest even."""
    x = np.abs(rows(7, (4, 64))) + F32(1e-3)
    assert np.array_equal(ort.act("sqrt", x), np.sqrt(x))
    u = np.random.default_rng(8).integers(0, 2 ** 32, (5, 7), dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(ort.dropout(u.view(F32), 0.0).view(np.uint32), u)
    w = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00008000, 0x80000000, 0xFF800000], np.uint32)
    assert np.array_equal(ort.bf16_bits(w.view(F32)), np.array([exact_rne(int(a)) for a in w], np.uint16))


def test_dropout_is_training_mode(ort: Target) -> None:
    """p = 0.5 drops elements and scales the kept ones by 2: the operator's training mode, not its identity."""
    y = ort.dropout(np.ones((8, 64), F32), 0.5)
    assert set(np.unique(y)) == {F32(0.0), F32(2.0)} and 0.3 < float(np.mean(y == 0)) < 0.7


def test_what_an_inference_runtime_does_not_have(ort: Target) -> None:
    from bendtorch.impl.llama import config
    from bendtorch.targets import Opt
    q = np.zeros((1, 1, 2, 4), F32)
    for call in (lambda: ort.attention_grad(q, q, q, q, 1.0),
                 lambda: ort.train(config("tiny"), 0, Opt("sgd", 0.1), []),
                 lambda: ort.opt_steps(Opt("adam", 1e-3), [q], [[q]])):
        with pytest.raises(NotApplicable, match="ONNX Runtime has no .*inference runtime"):
            call()


# ---- the variants, the sessions, the threads ----

def test_variants_are_columns_of_their_own() -> None:
    rec = RECORDS["onnxruntime"]
    vs = rec.check("cpu")
    assert [rec.label("cpu", v) for v in vs] == ["onnxruntime (ORT_ENABLE_ALL)", "onnxruntime (ORT_DISABLE_ALL)"]
    made = [ort_target(v.name) for v in vs]
    assert [t.level for t in made] == ["all", "none"]
    assert [t.versions()["graph_optimization_level"] for t in made] == ["ORT_ENABLE_ALL", "ORT_DISABLE_ALL"]
    assert {t.versions()["opset"] for t in made} == {"24"}


def test_the_level_reaches_the_session(tmp_path: Path) -> None:
    """ORT_ENABLE_ALL fuses x * Sigmoid(x) into com.microsoft's QuickGelu; ORT_DISABLE_ALL runs the graph as written."""
    ort_target()
    import onnx

    from bendtorch.targets import onnxruntime as O
    graph = O.act_graph("silu")
    ops = {}
    for level in ("all", "none"):
        O.session(graph, level, save_to=str(tmp_path / f"{level}.onnx"))
        ops[level] = [(n.domain, n.op_type) for n in onnx.load(str(tmp_path / f"{level}.onnx")).graph.node]
    assert ops == {"all": [("com.microsoft", "QuickGelu")], "none": [("", "Sigmoid"), ("", "Mul")]}


def test_one_session_per_shape_and_level() -> None:
    t = ort_target()
    x = rows(9, (3, 8))
    t.softmax(x)
    n = len(t._cache)
    t.softmax(rows(10, (3, 8)))        # the same shape: the same session
    assert len(t._cache) == n
    t.softmax(rows(10, (4, 8)))        # another shape: another session
    with t.threads(2):
        t.softmax(x)                   # another thread count: another session
    assert len(t._cache) == n + 2 and t.nthreads == 1
    w = rows(11, (2, 8))
    t.linear(x, w, None)
    t.linear(x, w + F32(1), None)      # other weights (initializers): another session
    assert len(t._cache) == n + 4


# ---- the sweep library ----

def test_sweep_library_is_the_targets_graphs() -> None:
    ort = ort_target()
    from bendtorch.records.libraries import LIBRARIES
    from bendtorch.reports.sweep.libraries import check_provides, resolve
    lib = LIBRARIES["onnxruntime"]
    assert set(lib.functions) == set(ACT_REFS) and not any(f.startswith("d") for f in lib.functions)
    x = np.concatenate([np.linspace(-9, 9, 4099, dtype=F32), np.array([0.0, -0.0, 1e-40, np.inf, -np.inf, np.nan],
                                                                       F32)])
    for f, spec in lib.functions.items():
        check_provides(lib, f)
        with np.errstate(all="ignore"):
            y = resolve(spec)(x)
        assert y.dtype == F32 and y.shape == x.shape
        assert np.array_equal(y.view(np.uint32), ort.act(f, x).view(np.uint32)), f


# ---- a missing extra, and the laws' ci profile ----

def test_not_run_when_onnxruntime_is_missing() -> None:
    """The module imports without its library; making the target says not run, naming the extra, and so does the
    column."""
    says = "onnxruntime is not installed (pip install 'bendtorch[onnx]')"
    assert C.not_run_without("onnxruntime", "onnxruntime") == [f"NotRun: {says}", says]


def test_laws_ci_profile(tmp_path: Path) -> None:
    """`bendtorch laws --target onnxruntime --profile ci`: both columns, every law answered (no error, nothing not
    run), the laws needing a gradient, a training step or an optimizer not applicable."""
    ort_target()
    out = tmp_path / "ort.json"
    r = subprocess.run([sys.executable, "-m", "bendtorch", "laws", "--target", "onnxruntime", "--profile", "ci",
                        "--json", str(out)], capture_output=True, text=True,
                       env={**os.environ, "BENDTORCH_TARGET": ""})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert [d["target"] for d in doc["targets"]] == ["onnxruntime (ORT_ENABLE_ALL)", "onnxruntime (ORT_DISABLE_ALL)"]
    results = {(row["target"], row["family"], row["law"]): row["result"] for row in doc["rows"]}
    assert set(results.values()) <= {"passed", "failed", "not applicable"}
    na = {k[1:] for k, v in results.items() if v == "not applicable"}
    assert ("determinism", "run_to_run") in na and ("optimizers", "lr_zero_keeps_parameters") in na
    assert ("batch_invariance", "linear") not in na and ("dropout", "p_zero_identity") not in na
    for row in doc["rows"]:
        if row["result"] == "failed":
            assert row.get("counterexample", {}).get("inputs"), row


def test_a_sweep_without_the_extra_leaves_the_library_out(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Where onnxruntime is not installed, a function's default libraries leave it out, saying so on stderr (the
    other columns still run); where it is, it is among them."""
    from bendtorch.records.libraries import providers
    from bendtorch.reports.sweep.api import default_libraries
    assert "onnxruntime" in providers("exp")
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:  # the module is not found, as if not installed
        return None if name == "onnxruntime" else real(name, package)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert default_libraries("exp") == [n for n in providers("exp") if n != "onnxruntime"]
    assert capsys.readouterr().err == ("sweep: exp without onnxruntime (not installed; onnxruntime: pip install "
                                       "'bendtorch[onnx]')\n")
    monkeypatch.undo()
    if importlib.util.find_spec("onnxruntime") is not None:
        assert default_libraries("exp") == list(providers("exp"))
