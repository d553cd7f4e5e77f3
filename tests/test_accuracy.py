"""The op-accuracy matrix (bendtorch.reports.accuracy): on impl it gives reference.compare's figures, a target
whose softmax is wrong is reported beyond impl's bound, an operation a target does not have is a "not applicable"
cell (never a figure), and `bendtorch report --target` refuses an unknown target in one line before any work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bendtorch.cli import main
from bendtorch.records import ops as R
from bendtorch.records.schemas import validate
from bendtorch.reference.compare import run_op
from bendtorch.reports import accuracy as A
from bendtorch.targets import NotRun
from bendtorch.targets.impl import Impl

SOFTMAX = [R.op("Softmax")]


def _row(col: dict[str, Any], op: str, out: str) -> dict[str, Any]:
    return next(r for r in col["rows"] if (r["op"], r["output"]) == (op, out))


def test_impl_figures_are_reference_compares() -> None:
    # the same inputs (records.ops.sample), the same impl layer, the same oracle: the same numbers, exactly
    got = _row(A.accuracy(Impl(), quick=True, ops=SOFTMAX), "Softmax", "y")
    want = run_op(SOFTMAX[0], quick=True)["y"]["impl"]
    assert got["status"] == "ok" and got["cases"] == 1
    assert (got["max"], got["p99"], got["median"], got["norm"], got["values"]) == \
        (want["max"], want["p99"], want["median"], want["norm"], want["n"])
    assert got["bound_norm"] == 16.0 and not got["beyond_impl_bound"]
    assert got["worst"]["ulps"] == got["max"] and 0 <= got["worst"]["index"] < got["values"]


class Identity(Impl):
    """A broken softmax: x itself, not a distribution."""

    name = "identity"

    def softmax(self, x: Any) -> Any:
        return np.array(x, dtype=np.float32)


class OneUlp(Impl):
    """impl's softmax moved one float32 step up."""

    name = "one-ulp"

    def softmax(self, x: Any) -> Any:
        y = super().softmax(x)
        return np.nextafter(y, np.float32(np.inf)).astype(np.float32)


class NoSoftmax(Impl):
    name = "no-softmax"

    def softmax(self, x: Any) -> Any:
        raise NotRun("no-softmax: the softmax is off")


def test_a_broken_softmax_is_beyond_impls_bound_and_one_ulp_is_not() -> None:
    bad = _row(A.accuracy(Identity(), ops=SOFTMAX), "Softmax", "y")
    assert bad["beyond_impl_bound"] and bad["norm"] > 16.0
    assert A.cell(bad).endswith("(norm <= 16: beyond)")
    base = _row(A.accuracy(Impl(), ops=SOFTMAX), "Softmax", "y")
    one = _row(A.accuracy(OneUlp(), ops=SOFTMAX), "Softmax", "y")
    # one float32 step up moves each value by the ulp of its own binade: 1 ulp of the exact value's binade, 2 where
    # the value sits one binade above its exact value, so the max grows by at most 2 ulps; a value at or above its
    # exact value is now at least 1 ulp off; and the figure stays within the bound of 16
    assert 1.0 <= one["max"] <= base["max"] + 2.0 and not one["beyond_impl_bound"]
    # impl's bounds fail impl only: the broken library's row is a measurement, impl's own column a failure
    cols = [{"target": "identity", "rows": [bad], "errors": []}, {"target": "impl", "rows": [bad], "errors": []}]
    assert A.impl_failures(cols) == [A.impl_failures(cols[1:])[0]] and "impl Softmax.y" in A.impl_failures(cols)[0]


def test_not_applicable_and_not_run_are_cells_never_figures() -> None:
    col = A.accuracy(Impl(), ops=[R.op("CrossEntropy")])
    (ce,) = col["rows"]
    assert ce["status"] == "not applicable" and "max" not in ce and "beyond_impl_bound" not in ce
    assert A.cell(ce).startswith("not applicable: impl cross-entropy") and col["errors"] == []
    (nr,) = A.accuracy(NoSoftmax(), ops=SOFTMAX)["rows"]
    assert nr["status"] == "not run" and A.cell(nr) == "not run: no-softmax: the softmax is off"


def test_an_unknown_target_is_one_line_and_exit_2_before_any_work(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "never"
    for spec in ("nosuch", "impl,nosuch", "impl,"):
        assert main(["report", "--out", str(out), "--target", spec, "--accuracy-only"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("bendtorch report: error: --target"), err
    assert not out.exists()


def test_a_device_its_targets_lack_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--device names the matrix's device: a target without it, or --device without --target, is a usage error
    before any work; "all" on cuda is the targets that run there (torch's two TF32 columns)."""
    out = tmp_path / "never"
    for args, says in ((["--target", "jax", "--device", "cuda"], "--target: target jax runs on cpu, not cuda"),
                       (["--device", "cuda"], "--device: names the device of the --target columns")):
        assert main(["report", "--out", str(out), *args, "--accuracy-only"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"bendtorch report: error: {says}"), err
    assert not out.exists()
    assert [c.label for c in A.columns(["all"], "cuda")] == ["torch cuda (TF32 off)", "torch cuda (TF32 on)"]


def test_accuracy_only_writes_a_matrix_that_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"{__name__}:Identity"
    code = main(["report", "--out", str(tmp_path), "--quick", "--only", "Softmax", "--target", "impl",
                 "--target", spec, "--accuracy-only"])
    doc = json.loads((tmp_path / "accuracy.json").read_text())
    validate(doc, "accuracy")
    assert code == 0 and doc["impl_failures"] == [] and [c["target"] for c in doc["columns"]] == ["impl", spec]
    md = (tmp_path / "ACCURACY.md").read_text()
    assert "# Op accuracy by target" in md and "(norm <= 16: beyond) |" in md and "(norm <= 16: holds) |" in md
