"""`bendtorch report` end to end on a small selection (the command's dispatch, the shared op list, the plots, the erf
sample): report.json validates against its schema (records/schemas/report.schema.json) and carries its schema version, every selected row
passes, and REPORT.md shows the rows; an unknown --only name is refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bendtorch.cli import main
from bendtorch.records.machine import machine
from bendtorch.records.schemas import validate
from bendtorch.reports.report import SCHEMA_VERSION


def test_report_quick_validates_against_its_schema(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    code = main(["report", "--out", str(out), "--quick", "--quiet", "--only", "ReLU", "--only", "Linear",
                 "--only", "AdamW", "--erf-sample", "64"])
    rep = json.loads((out / "report.json").read_text())
    validate(rep, "report")
    assert rep["schema_version"] == SCHEMA_VERSION
    # these three ops pass their bounds on this machine, and the erf sample runs: the report's verdict is a pass
    assert rep["errors"] == [] and rep["all_pass"] and code == 0, rep["errors"]
    rows = {(r["op"], r["output"]): r for r in rep["rows"]}
    assert set(rows) == {("ReLU", "y"), ("ReLU", "dx"), ("Linear", "y"), ("Linear", "dx"), ("Linear", "dp"),
                         ("AdamW", "w1"), ("AdamW", "w10")}
    assert rows[("ReLU", "y")]["bit_equal_torch"] and rows[("ReLU", "y")]["impl"]["max"] == 0.0
    assert all((out / r["plot"]).is_file() for r in rep["rows"])
    assert rep["erf"]["status"] == "ok"
    md = (out / "REPORT.md").read_text()
    assert "| ReLU | y | pass |" in md and "## erf sweep" in md and "## Small model" in md
    # the committed results' sections: the conformance table, the atlas, the findings with their plots
    for head in ("## Conformance", "## The float32 function atlas", "## Where the seed's orders lose to PyTorch",
                 "## Adam's c2, settled"):
        assert head in md, head
    assert "not available" not in md.split("## Conformance")[1], md.split("## Conformance")[1][:2000]
    assert (out / "findings" / "orders.png").is_file()


def test_the_schema_rejects_a_report_with_a_row_missing_its_verdict(tmp_path: Path) -> None:
    row = {"op": "ReLU", "kind": "layer", "output": "y", "why": [], "cases": 1, "values": 4,
           "impl": {"max": 0, "p99": 0, "median": 0, "norm": 0}, "torch": {"max": 0, "p99": 0, "median": 0, "norm": 0},
           "bit_equal_torch": True, "n_differ_torch": 0, "bound_norm": 1.0, "bound_elem": None,
           "bitexact_required": False, "factor": None, "bound_why": "", "plot": None}
    base = {"schema_version": SCHEMA_VERSION, "command": "bendtorch report", "mode": "quick", "written": "now",
            "machine": machine(), "seconds": 1.0,
            "rows": [{**row, "pass": True}], "errors": [], "model": "skipped", "optimizer_study": "",
            "optimizer_study_rows": [], "erf": {"status": "ok"}, "erf_full": {"status": "none"}, "drift": "skipped",
            "laws": {"status": "skipped"}, "conformance": "", "atlas": "", "findings": "", "all_pass": True}
    validate(base, "report")
    with pytest.raises(jsonschema.ValidationError):
        validate({**base, "rows": [row]}, "report")
    with pytest.raises(jsonschema.ValidationError):
        validate({**base, "schema_version": SCHEMA_VERSION + 1}, "report")
    with pytest.raises(jsonschema.ValidationError):  # a machine record without its CPU
        validate({**base, "machine": {k: v for k, v in machine().items() if k != "cpu"}}, "report")


def test_an_unknown_op_name_is_an_error_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert main(["report", "--out", str(out), "--quick", "--only", "ReLU", "--only", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'bogus'" in err and "ReLU" in err, err
    assert not out.exists()
