"""A library plugs in from outside: the example package of docs/examples/numpy-target (numpy float32 as a
conformance target, and a float32 exp for the sweep), copied into a temporary folder outside the checkout and
installed there with pip (`pip install --no-deps --no-build-isolation --no-index --target SITE`: its code and its
metadata, entry points included, with this environment's setuptools and nothing downloaded), then found through
PYTHONPATH=SITE by a process started in another temporary folder, the way a user's project would run it:

- `bendtorch laws --target numpy-example` (the entry point): exit 0, a laws document that validates, each law's
  outcome as the adapter makes it (what numpy has no operation for is "not applicable" with the adapter's reason;
  the rest hold or fail, none errs), and numpy's BLAS failing batch invariance with a counterexample that says
  where (the row, the batch size, the first differing bits);
- `bendtorch laws --target bendtorch_example_numpy.target:make` (module:attr): the same target, found the other way;
- `pytest --bendtorch-target numpy-example --pyargs bendtorch.laws.test_targets` (the pytest plugin): the same
  laws failed, passed and skipped, the skips saying "not applicable: ...", and hypothesis's folder in the cache, not
  in the current directory;
- a spec naming nothing in the package is one usage error."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "numpy-target"
EP = "numpy-example"
REF = "bendtorch_example_numpy.target:make"
# the laws numpy has no operation for, and the reason its adapter gives
NOT_APPLICABLE = {"attn_par_bwd": "no automatic differentiation", "causal_grad": "no automatic differentiation",
                  "kv_of_group": "no automatic differentiation", "llama_forward": "no model library",
                  "llama_one_token_step": "no model library", "nan_kept": "no bfloat16 type",
                  "round_to_nearest_even": "no bfloat16 type", "resume_same_bits": "no automatic differentiation",
                  "run_to_run": "no automatic differentiation", "threads_1_vs_2": "no automatic differentiation",
                  "p_zero_identity": "no dropout", "bounded": "no erf", "monotone": "no erf", "odd": "no erf",
                  "lr_zero_keeps_parameters": "no optimizers", "zero_grad_sgd_keeps_parameters": "no optimizers"}
WHERE = re.compile(r"row (\d+) in a batch of (\d+) against alone")


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The example installed into SITE outside the checkout; (the folder to run in, the environment to run with)."""
    work = tmp_path_factory.mktemp("outside")
    assert not work.resolve().is_relative_to(ROOT)
    src = work / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = work / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(site), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bendtorch.targets" in next(site.glob("*.dist-info/entry_points.txt")).read_text()
    run = work / "run"
    run.mkdir()
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "BENDTORCH_CACHE": str(work / "cache"), "BENDTORCH_TARGET": ""}
    return run, env


def bendtorch(outside: tuple[Path, dict[str, str]], *argv: str) -> subprocess.CompletedProcess[str]:
    run, env = outside
    return subprocess.run([sys.executable, "-m", "bendtorch", "laws", *argv], cwd=run, env=env, capture_output=True,
                          text=True)


def laws_doc(outside: tuple[Path, dict[str, str]], spec: str, name: str, *argv: str) -> dict[str, Any]:
    """`bendtorch laws --target spec --json FILE`: exit 0, the document validated, every row's outcome checked."""
    from bendtorch.records.schemas import validate
    out = outside[0] / f"{name}.json"
    r = bendtorch(outside, "--target", spec, "--json", str(out), *argv)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"^total: \d+ laws: \d+ passed, \d+ failed, \d+ not applicable", r.stdout, re.M), r.stdout[-500:]
    doc: dict[str, Any] = json.loads(out.read_text())
    validate(doc, "laws")
    assert doc["target"] == spec and doc["targets"][0]["target"] == spec
    assert doc["machine"]["libraries"]["numpy"]["build"]["blas"]  # the BLAS measured, named
    for row in doc["rows"]:
        assert row["suite"] == "conformance" and row["target"] == spec
        if row["law"] in NOT_APPLICABLE:
            assert row["result"] == "not applicable" and NOT_APPLICABLE[row["law"]] in row["reason"], row
            assert "\n" not in row["reason"]
        else:
            assert row["result"] in ("passed", "failed"), row
    return doc


def where_it_fails(doc: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(law, row, batch size) of each batch-invariance failure; each with the first differing bits."""
    out = []
    for row in doc["rows"]:
        if row["result"] == "failed":
            assert row["family"] == "batch_invariance", row
            ce = row["counterexample"]
            m = WHERE.search(ce["what"])
            assert m is not None and ce["first"]["got_bits"] != ce["first"]["want_bits"], ce
            assert ce["inputs"]["x"]["shape"][0] == int(m.group(2)), ce  # the batch's shape, bits included
            out.append((row["law"], int(m.group(1)), int(m.group(2))))
    return out


def test_a_target_from_an_entry_point(outside: tuple[Path, dict[str, str]]) -> None:
    doc = laws_doc(outside, EP, "entry-point")
    assert doc["origin"] == "entry point" and doc["machine"]["libraries"]["threadpoolctl"]["version"]
    assert len(doc["rows"]) == 27 and sum(r["result"] == "not applicable" for r in doc["rows"]) == len(NOT_APPLICABLE)
    fails = where_it_fails(doc)
    # numpy's matmul runs a batch of rows through the BLAS's matrix product and one row through its matrix-vector
    # product: the two kernels sum in different orders
    assert {law for law, _, _ in fails} & {"linear", "matmul"}, doc["rows"]


def test_a_target_from_module_attr(outside: tuple[Path, dict[str, str]]) -> None:
    doc = laws_doc(outside, REF, "module-attr", "-k", "batch_invariant")
    assert doc["origin"] == "module:attr"
    assert {r["family"] for r in doc["rows"]} == {"batch_invariance"} and len(doc["rows"]) == 10
    assert {law for law, _, _ in where_it_fails(doc)} & {"linear", "matmul"}


def test_the_pytest_plugin_in_another_project(outside: tuple[Path, dict[str, str]]) -> None:
    run, env = outside
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfs", "--bendtorch-target", EP,
                        "--bendtorch-profile", "ci", "--pyargs", "bendtorch.laws.test_targets"],
                       cwd=run, env=env, capture_output=True, text=True)
    out = r.stdout
    assert r.returncode == 1, out[-3000:] + r.stderr[-2000:]  # the failing laws fail the session
    failed = re.findall(r"^FAILED \S*::(test_\w+)", out, re.M)
    assert failed and set(failed) <= {f"test_{law}_batch_invariant" for law in
                                      ("linear", "matmul", "rms_norm", "layer_norm", "softmax", "log_softmax",
                                       "ce_rows", "attention")}, failed
    assert WHERE.search(out) and "LawFailure" in out
    skips = re.findall(r"^SKIPPED \[(\d+)\] .*?: (not applicable: .*)$", out, re.M)  # equal reasons grouped
    assert sum(int(n) for n, _ in skips) == len(NOT_APPLICABLE), skips
    assert "not applicable: numpy dropout: numpy has no dropout" in {why for _, why in skips}
    assert re.search(rf"{len(failed)} failed, {27 - len(failed) - len(NOT_APPLICABLE)} passed, "
                     rf"{len(NOT_APPLICABLE)} skipped", out), out[-500:]
    assert not (run / ".hypothesis").exists() and (Path(env["BENDTORCH_CACHE"]) / "hypothesis").is_dir()


def test_a_spec_naming_nothing_in_the_package_is_a_usage_error(outside: tuple[Path, dict[str, str]]) -> None:
    r = bendtorch(outside, "--target", "bendtorch_example_numpy.target:nope")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "module bendtorch_example_numpy.target has no attribute 'nope'" in r.stderr
    r = bendtorch(outside, "--target", EP, "--device", "cuda")
    assert r.returncode == 2 and "target numpy runs on cpu, not cuda" in r.stderr, r.stderr


def test_the_packages_exp_is_published_for_the_sweep(outside: tuple[Path, dict[str, str]]) -> None:
    """The sweep-library entry point loads a float32 exp (the sweep's own check of it runs in its suite)."""
    run, env = outside
    code = ("import numpy as np; from importlib.metadata import entry_points; "
            f"f = entry_points(group='bendtorch.sweep_libraries')[{EP!r}].load(); "
            "x = np.linspace(-80, 80, 10001, dtype=np.float32); y = f(x); "
            "e = np.abs(y.astype(np.float64) - np.exp(x.astype(np.float64))) / np.spacing(y); "
            "print(y.dtype, float(e.max()))")
    r = subprocess.run([sys.executable, "-c", code], cwd=run, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dtype, worst = r.stdout.split()
    assert dtype == "float32" and float(worst) < 2.0  # within 2 ulps: a degree-7 polynomial after the reduction
