"""The conformance target `tensorflow` (targets/tensorflow.py) and its sweep library
(reports/sweep/libraries/tensorflow.py):

- each operation against the float64 oracle on small inputs where TensorFlow should agree: exactly where every
  partial result is an exact float32 (Linear on small integers, BF16 rounding, dropout with p = 0), within a few
  ulps elsewhere; dropout in training mode drops;
- Adam and AdamW are PyTorch's (torch.optim's bits to within an ulp or two where Keras's Adam is far off), and the
  checkpoint's round trip keeps every bit;
- the finding behind the optimizer laws' failures: TensorFlow's CPU kernels flush subnormals to zero;
- a missing tensorflow makes the target "not run" with the pip command; its two columns (eager, tf.function) and
  the machine record naming the build;
- the laws' ci profile: no law errs, every failure carries its counterexample, and on the machine and TensorFlow
  build of the committed results the same laws fail.

Skipped with "not run: ..." where tensorflow is not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tests import target_checks as C
from tests.target_checks import ROW_ULPS, f64

from bendtorch.oracle import funcs as OF
from bendtorch.oracle.ulp import normwise
from bendtorch.records.targets import RECORDS
from bendtorch.targets import NotRun, Opt, make_target
from bendtorch.targets import tensorflow as T

F32 = np.float32
COMMITTED = Path(__file__).resolve().parent.parent / "reports" / "results" / "conformance" / "tensorflow.json"



def tf_made(variant: str = "eager") -> Any:
    try:
        return make_target("tensorflow", variant=variant)
    except NotRun as e:
        pytest.skip(f"not run: {e}")


@pytest.fixture(scope="module", params=["eager", "tf-function"])
def tf_target(request: pytest.FixtureRequest) -> Any:
    """The target in each of its columns: every operation eager, and in a tf.function."""
    return tf_made(request.param)


@pytest.fixture(scope="module")
def eager() -> Any:
    """The eager column (the sweep library's functions are its eager calls)."""
    return tf_made("eager")


def test_the_tf_function_column_runs_graphs() -> None:
    """In the tf.function column an operation is a tf.function traced once per input shape and kept; the eager
    column keeps none."""
    x = np.ones((3, 8), F32)
    eager, graph = tf_made("eager"), tf_made("tf-function")
    assert np.array_equal(eager.softmax(x), graph.softmax(x))
    assert not eager._fns and graph._fns["softmax"].experimental_get_tracing_count() == 1
    graph.softmax(x + F32(1))
    assert graph._fns["softmax"].experimental_get_tracing_count() == 1   # the same shape: no new trace
    graph.softmax(np.ones((4, 8), F32))
    assert graph._fns["softmax"].experimental_get_tracing_count() == 2


def test_linear_is_exact_on_small_integers(tf_target: Any) -> None:
    C.linear_is_exact_on_small_integers(tf_target)


def test_row_operations_agree_with_the_oracle(tf_target: Any) -> None:
    C.row_operations_agree_with_the_oracle(tf_target)


def test_grouped_causal_attention_and_its_gradient_agree_with_the_oracle(tf_target: Any) -> None:
    C.grouped_causal_attention_agrees_with_the_oracle(tf_target)


def test_bf16_dropout_and_erf(tf_target: Any) -> None:
    C.bf16_and_dropout_zero_are_exact(tf_target)
    z = np.linspace(-4.0, 4.0, 801, dtype=F32)
    assert normwise(tf_target.erf(z), OF.erf(f64(z))) <= ROW_ULPS


def test_dropout_is_training_mode(tf_target: Any) -> None:
    """p = 0.5 drops elements and scales the kept ones by 2: tf.nn.dropout always drops (no inference mode)."""
    y = tf_target.dropout(np.ones((8, 64), F32), 0.5)
    assert set(np.unique(y)) == {F32(0.0), F32(2.0)} and 0.3 < float(np.mean(y == 0)) < 0.7


def test_threads_are_not_run(tf_target: Any) -> None:
    with pytest.raises(NotRun, match="sizes its intra-op thread pool when its runtime initialises"):
        with tf_target.threads(1):
            pass


# ---- the optimizers and the checkpoint ----

def _torch_steps(opt: Opt, p: Any, gs: list[Any]) -> Any:
    import torch
    w = torch.nn.Parameter(torch.tensor(p))
    cls = torch.optim.Adam if opt.name == "adam" else torch.optim.AdamW
    o = cls([w], lr=opt.lr, betas=(opt.b1, opt.b2), eps=opt.eps, weight_decay=opt.wd, foreach=False)
    for g in gs:
        w.grad = torch.tensor(g)
        o.step()
    return w.detach().numpy()


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_adam_is_pytorch_s_not_keras_s(tf_target: Any, name: str) -> None:
    """Gradients near eps, where the optimizers differ most: three steps give torch.optim's parameters to within 2
    ulps of their size; Keras's Adam (eps before the bias correction) moves them by a different amount, about a
    quarter of lr a step off here."""
    tf, keras = T.tf, T.keras
    r = np.random.default_rng(5)
    p = r.standard_normal((4, 8)).astype(F32)
    gs = [(r.standard_normal((4, 8)) * 1e-8).astype(F32) for _ in range(3)]
    opt = Opt(name, 1e-3, wd=0.01 if name == "adamw" else 0.0)  # Adam's L2 term would swamp the tiny gradients
    want = _torch_steps(opt, p, gs)
    got = tf_target.opt_steps(opt, [p], [[g] for g in gs])[0]
    assert normwise(got, want) <= 2.0
    v = tf.Variable(p)
    kopt = (keras.optimizers.Adam(1e-3) if name == "adam" else keras.optimizers.AdamW(1e-3, weight_decay=0.01))
    for g in gs:
        kopt.apply_gradients([(tf.constant(g), v)])
    assert float(np.max(np.abs(v.numpy() - want))) > 1e-4


def test_the_checkpoint_keeps_every_bit() -> None:
    """tf.io.serialize_tensor and parse_tensor give the variables back bit for bit: NaN payloads, -0, subnormals."""
    T.load()
    u = np.array([0x7FC00001, 0xFFA00000, 0x80000000, 0x00000001, 0x3F800000, 0x00800000], np.uint32)
    back = T.saved_and_loaded([T.tf.Variable(u.view(F32)), T.tf.Variable(np.arange(3, dtype=np.int64))])
    assert np.array_equal(back[0].numpy().view(np.uint32), u)
    assert back[1].dtype == T.tf.int64 and list(back[1].numpy()) == [0, 1, 2]


def test_cpu_kernels_flush_subnormals(tf_target: Any) -> None:
    """The finding behind lr_zero_keeps_parameters and zero_grad_sgd_keeps_parameters failing: x + 0 and x * 1 on
    TensorFlow's CPU kernels give zero for a subnormal x (flush to zero, denormals as zero), so a parameter that is
    subnormal does not survive an optimizer step that should leave it. If a build ever stops flushing, this fails
    and the committed results want measuring again."""
    tf = T.tf
    x = np.array([1e-45, -1e-40, 1.2e-38, 1.0], F32)  # two subnormals, the smallest normals' order, one
    assert np.array_equal((tf.constant(x) + 0.0).numpy(), np.array([0.0, 0.0, 1.2e-38, 1.0], F32))
    assert np.array_equal((tf.constant(x) * 1.0).numpy(), np.array([0.0, 0.0, 1.2e-38, 1.0], F32))
    out = tf_target.opt_steps(Opt("sgd", 0.0), [x], [[np.ones_like(x)]])[0]
    assert out[0] == 0 and out[3] == 1.0


# ---- the elementwise functions and the sweep library ----

_FORWARD: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "erf": OF.erf, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "sigmoid": OF.sigmoid, "silu": OF.silu, "gelu_tanh": OF.gelu_tanh,
    "gelu_erf": OF.gelu_erf}
# tf.nn.gelu's tanh form has no gradient kernel of its own: the tape differentiates its float32 ops one by one
# (the cube, the tanh, 1 + tanh), which leaves GELU' about 14 ulps (normwise) from the exact one on [-4, 4]; the erf
# GELU's derivative for the tanh one is off by thousands
DERIV_ULPS = {"gelu_tanh": 32.0}
_BACKWARD: dict[str, Callable[[Any, Any], Any]] = {
    "sigmoid": OF.sigmoid_grad, "tanh": OF.tanh_grad, "silu": OF.silu_grad, "gelu_tanh": OF.gelu_tanh_grad,
    "gelu_erf": OF.gelu_erf_grad}


@pytest.mark.parametrize("name", sorted(_FORWARD))
def test_elementwise_functions_and_their_derivatives_agree_with_the_oracle(eager: Any, name: str) -> None:
    """On [-4, 4] (positive for log and the roots), normwise: a function mapped to the wrong TF call (the erf GELU
    for the tanh one, a sigmoid for a SiLU) is off by far more than ROW_ULPS."""
    x = np.linspace(-4.0, 4.0, 801, dtype=F32)
    if name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + F32(0.01)
    assert T.elementwise(name, x).dtype == F32
    assert normwise(T.elementwise(name, x), _FORWARD[name](f64(x))) <= ROW_ULPS
    if name in _BACKWARD:
        bound = DERIV_ULPS.get(name, ROW_ULPS)
        assert normwise(T.derivative(name, x), _BACKWARD[name](f64(x), np.ones(x.size))) <= bound


def test_the_sweep_library_gives_float32_arrays_of_the_input_s_shape(eager: Any) -> None:
    from bendtorch.records.libraries import LIBRARIES
    from bendtorch.reports.sweep.libraries import resolve as resolve_fn
    lib = LIBRARIES["tensorflow"]
    assert set(lib.functions) == set(_FORWARD) | {f"d{f}" for f in _BACKWARD}
    x = np.array([0.0, -0.0, 0.5, -1.5, 3.0, 1e-40, np.inf, np.nan] * 4, F32)
    for f, spec in lib.functions.items():
        y = resolve_fn(spec)(x.copy())
        assert isinstance(y, np.ndarray) and y.dtype == F32 and y.shape == x.shape, spec
        if not f.startswith("d"):
            assert np.array_equal(y.view(np.uint32), T.elementwise(f, x).view(np.uint32)), f


# ---- not run without the library; one column; the machine record ----

def test_not_run_when_tensorflow_is_missing() -> None:
    """The module imports without its library; making the target says not run, naming the extra, and so does the
    column."""
    says = "tensorflow is not installed (pip install 'bendtorch[tensorflow]')"
    assert C.not_run_without("tensorflow", "tensorflow") == [f"NotRun: {says}", says]


def test_two_columns_eager_and_tf_function_and_the_machine_record() -> None:
    from bendtorch.records.machine import probe
    rec = RECORDS["tensorflow"]
    assert [rec.label("cpu", v) for v in rec.check("cpu")] == ["tensorflow (eager)", "tensorflow (tf.function)"]
    made = [tf_made(v.name) for v in rec.check("cpu")]
    assert [t.function for t in made] == [False, True]
    assert [t.versions()["execution"] for t in made] == ["eager", "tf.function"]
    v = made[0].versions()
    assert v["tensorflow"] == v["tensorflow-cpu"]
    p = probe("tensorflow")
    assert p["version"] == v["tensorflow"] and p["build"]["cuda"] is False and p["build"]["dist"] == "tensorflow-cpu"
    assert isinstance(p["build"]["onednn"], bool) and p["dispatch"]["onednn"]


# ---- the ci profile ----

def test_the_ci_profile_runs_and_reproduces_the_committed_failures(tmp_path: Path) -> None:
    from bendtorch.records.machine import compare_note, machine
    from bendtorch.records.schemas import validate
    tf_made()
    out = tmp_path / "tensorflow.json"
    r = subprocess.run([sys.executable, "-m", "bendtorch", "laws", "--target", "tensorflow", "--profile", "ci",
                        "--json", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]  # no law errs
    doc = json.loads(out.read_text())
    validate(doc, "laws")
    columns = ["tensorflow (eager)", "tensorflow (tf.function)"]
    assert [d["target"] for d in doc["targets"]] == columns
    results = {(r["target"], r["law"]): r["result"] for r in doc["rows"]}
    assert set(results.values()) <= {"passed", "failed", "not run"}
    assert all(r.get("counterexample") for r in doc["rows"] if r["result"] == "failed")
    assert sorted(k for k, v in results.items() if v == "not run") == [(c, "threads_1_vs_2") for c in columns]
    assert all(results[(c, "lr_zero_keeps_parameters")] == "failed" for c in columns)  # the subnormal flush
    committed = json.loads(COMMITTED.read_text())
    note = compare_note(committed["machine"], machine(["tensorflow"]), "tensorflow")
    if note is not None:
        pytest.skip(note)
    failed = sorted((r["target"], r["law"]) for r in doc["rows"] if r["result"] == "failed")
    assert failed == sorted((r["target"], r["law"]) for r in committed["rows"] if r["result"] == "failed")
