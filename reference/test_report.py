"""`bendtorch report` end to end on a small selection (the CLI's dispatch, the shared op list, the plots, the erf
sample guard): both files are written and parse, and the table's rows are the ops' outputs with their verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from bendtorch.cli import main


def test_report_quick_writes_json_and_markdown(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    code = main(["report", "--out", str(out), "--quick", "--quiet", "--only", "ReLU", "--only", "Linear",
                 "--only", "AdamW", "--erf-sample", "64"])
    rep = json.loads((out / "report.json").read_text())
    md = (out / "REPORT.md").read_text()
    assert code == (0 if rep["all_pass"] else 1)
    rows = {(r["op"], r["output"]): r for r in rep["rows"]}
    assert set(rows) == {("ReLU", "y"), ("ReLU", "dx"), ("Linear", "y"), ("Linear", "dx"), ("Linear", "dp"),
                         ("AdamW", "w1"), ("AdamW", "w10")}
    assert rows[("ReLU", "y")]["bit_equal_torch"] and rows[("ReLU", "y")]["impl"]["max"] == 0.0
    for r in rep["rows"]:
        assert {"max", "p99", "median"} <= set(r["impl"]) and {"max", "p99", "median"} <= set(r["torch"])
        assert r["plot"] and (out / r["plot"]).is_file()
    assert rep["machine"]["cores"] and "torch" in rep["machine"] and rep["command"].startswith("bendtorch report")
    assert "| ReLU | y | pass |" in md and "## erf sweep" in md and "## Small model" in md
    assert rep["erf"]["status"] == "ok" or "erf_sweep" in rep["erf"]["status"]
