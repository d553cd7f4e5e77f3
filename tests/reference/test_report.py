"""`bendtorch report` end to end on a small selection (the command's dispatch, the shared op list, the plots, the erf
sample): report.json validates against its schema (records/schemas/report.schema.json) and carries its schema
version, every selected row passes, REPORT.md shows the rows, every file it links is beside it (the folder moves),
an error is counted in the headline, printed as one line on stderr and sets the exit code, and an unknown --only
name is refused before any work. The parts the small selection skips are checked on their own: the laws' subprocess
from another directory (its JSON validated), the conformance table's torch column measured here beside the
committed one, and the batch-size groups of the invariance study compared with the committed study."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bendtorch.cli import main
from bendtorch.records.machine import compare_note, machine
from bendtorch.records.schemas import validate
from bendtorch.reports import findings as F
from bendtorch.reports import report as R
from bendtorch.reports.report import SCHEMA_VERSION

LINK = re.compile(r"\]\(([^)\s]+)\)")


def links(md: str) -> list[str]:
    return LINK.findall(md)


def test_report_quick_validates_against_its_schema_and_its_folder_moves(tmp_path: Path) -> None:
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
    assert rep["erf"]["status"] == "ok" and rep["live"] == {"status": "skipped (--only)"}
    md = (out / "REPORT.md").read_text()
    assert "| ReLU | y | pass |" in md and "## erf sweep" in md and "## Small model" in md
    assert "**7 of 7 rows pass; 0 errors.**" in md
    # the op-accuracy matrix, default columns impl and torch, over the selected ops it measures (Linear)
    acc = rep["accuracy"]
    assert [c["target"] for c in acc["columns"]] == ["impl", "torch"] and acc["impl_failures"] == []
    assert [(r["op"], r["output"], r["status"]) for r in acc["columns"][0]["rows"]] == [("Linear", "y", "ok")]
    assert "## Op accuracy by target" in md and "| Linear | y (linear) | " in md
    # the committed results' sections: the conformance table, the atlas, the findings with their plots
    for head in ("## Conformance", "## The float32 function atlas", "## Where the seed's orders lose to PyTorch",
                 "## Adam's c2, settled"):
        assert head in md, head
    assert "not available" not in md.split("## Conformance")[1], md.split("## Conformance")[1][:2000]
    # every section with another library's figures names a machine; the committed ones say whose
    assert md.count("measured on ") + md.count("Committed figures, impl's only") >= 6
    # every link is a file inside the folder: the folder moves (or is shared) with its links intact
    found = links(md)
    assert any(x.startswith("findings/") for x in found) and any(x.startswith("erf_full/") for x in found)
    assert not [x for x in found if x.startswith("/") or ".." in Path(x).parts or "://" in x]
    moved = tmp_path / "elsewhere" / "shared"
    moved.parent.mkdir()
    shutil.move(out, moved)
    assert [x for x in found if not (moved / x).is_file()] == []
    assert str(tmp_path) not in md.replace(f"--out {out}", "")  # no path of this machine but the one typed


def test_the_schema_rejects_a_report_with_a_row_missing_its_verdict(tmp_path: Path) -> None:
    row = {"op": "ReLU", "kind": "layer", "output": "y", "why": [], "cases": 1, "values": 4,
           "impl": {"max": 0, "p99": 0, "median": 0, "norm": 0}, "torch": {"max": 0, "p99": 0, "median": 0, "norm": 0},
           "bit_equal_torch": True, "n_differ_torch": 0, "bound_norm": 1.0, "bound_elem": None,
           "bitexact_required": False, "factor": None, "bound_why": "", "plot": None}
    base = {"schema_version": SCHEMA_VERSION, "command": "bendtorch report", "mode": "quick", "written": "now",
            "machine": machine(), "seconds": 1.0,
            "rows": [{**row, "pass": True}], "errors": [], "model": "skipped", "optimizer_study": "",
            "optimizer_study_rows": [], "erf": {"status": "ok"}, "erf_full": {"status": "none"}, "drift": "skipped",
            "laws": {"status": "skipped"}, "live": {"status": "skipped (--no-live)"}, "conformance": "",
            "atlas": "", "findings": "", "all_pass": True, "accuracy": {"status": "skipped"}}
    validate(base, "report")
    with pytest.raises(jsonschema.ValidationError):
        validate({**base, "rows": [row]}, "report")
    with pytest.raises(jsonschema.ValidationError):
        validate({**base, "schema_version": SCHEMA_VERSION + 1}, "report")
    with pytest.raises(jsonschema.ValidationError):  # a machine record without its CPU
        validate({**base, "machine": {k: v for k, v in machine().items() if k != "cpu"}}, "report")
    with pytest.raises(jsonschema.ValidationError):  # a law run that says ok must carry its rows and counts
        validate({**base, "laws": {"status": "ok"}}, "report")
    with pytest.raises(jsonschema.ValidationError):  # live measurements that say ok must carry them
        validate({**base, "live": {"status": "ok"}}, "report")
    with pytest.raises(jsonschema.ValidationError):  # the op-accuracy matrix, or a status saying why not
        validate({k: v for k, v in base.items() if k != "accuracy"}, "report")


def test_an_error_is_counted_in_the_headline_one_line_on_stderr_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import bendtorch.reference.model as model

    def broken(steps: int) -> None:
        raise RuntimeError("the model run broke\non two lines")
    monkeypatch.setattr(model, "model_run", broken)
    out = tmp_path / "rep"
    code = main(["report", "--out", str(out), "--quick", "--quiet", "--only", "ReLU", "--erf-sample", "0",
                 "--no-plots"])
    cap = capsys.readouterr()
    assert code == 1
    err = [ln for ln in cap.err.splitlines() if ln.startswith("bendtorch report: error:")]
    assert err == ["bendtorch report: error: model: RuntimeError: the model run broke on two lines"], cap.err
    assert "2 of 2 rows pass; 1 error;" in cap.out
    rep = json.loads((out / "report.json").read_text())
    validate(rep, "report")
    assert not rep["all_pass"] and len(rep["errors"]) == 1
    md = (out / "REPORT.md").read_text()
    assert "**2 of 2 rows pass; 1 error.**" in md and "## Errors" in md


def test_an_unknown_op_name_is_an_error_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert main(["report", "--out", str(out), "--quick", "--only", "ReLU", "--only", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'bogus'" in err and "ReLU" in err, err
    assert not out.exists()


def test_the_laws_run_from_any_directory_into_a_relative_folder(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # the report's law table runs `bendtorch laws` in a subprocess whose working directory is the output folder:
    # a folder named relative to the caller's directory must still receive the rows, and nothing else is written
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("BENDTORCH_CACHE", str(tmp_path / "cache"))
    (elsewhere / "rel").mkdir()
    res = R.law_run(Path("rel"), select="test_erf_is_odd")
    assert res["status"] == "ok" and res["all_pass"], res
    assert [(r["family"], r["law"], r["suite"]) for r in res["rows"]] == [("erf", "odd", "impl")]
    assert res["counts"] == {"passed": 1, "failed": 0, "error": 0, "not applicable": 0, "not run": 0, "total": 1}
    validate(json.loads((elsewhere / "rel" / "laws.json").read_text()), "laws")
    assert sorted(os.listdir(elsewhere)) == ["rel"] and sorted(os.listdir(elsewhere / "rel")) == ["laws.json"]
    assert (tmp_path / "cache" / "hypothesis").is_dir()  # hypothesis's database went to the cache folder


def _committed_torch() -> dict[str, Any]:
    docs = json.loads((R.RESULTS / "conformance" / "torch.json").read_text())
    assert isinstance(docs, dict)
    return docs


def test_the_torch_column_measured_here_stands_beside_the_committed_one(tmp_path: Path) -> None:
    here = machine(["torch"])
    doc = _committed_torch()
    rows = copy.deepcopy(doc["rows"])
    flip = next(r for r in rows if r["suite"] == "conformance" and r["result"] == "passed")
    flip["result"] = "failed"
    live = {"status": "ok", "seconds": 1.0, "machine": here, "targets": doc["targets"], "rows": rows}
    md, cmp_ = R.conformance(live, here)
    assert "| torch (committed) | torch (here) |" in md
    assert cmp_["differ"] == [f"{flip['family']}/{flip['law']}: committed passed, here failed"]
    assert cmp_["same_machine"] is False and cmp_["machine_note"] == compare_note(doc.get("machine"), here, "torch")
    assert "measured on an unrecorded CPU" in md  # the committed column's machine is named
    md0, cmp0 = R.conformance({**live, "rows": doc["rows"]}, here)
    assert cmp0["differ"] == [] and "| torch (here) |" in md0.splitlines()[0]
    md1, cmp1 = R.conformance({"status": "skipped (--no-live)"}, here)
    assert "torch (here)" not in md1 and cmp1["status"].startswith("not measured here")
    # with an output folder, the reproductions are copied beside the report with the data files they load
    R.conformance({"status": "skipped (--no-live)"}, here, out=tmp_path)
    repro = R.RESULTS / "conformance" / "repro"
    committed = sorted(p.name for p in repro.iterdir() if p.suffix in (".py", ".npy"))
    copied = tmp_path / "conformance" / "repro"
    assert any(n.endswith(".npy") for n in committed) and sorted(p.name for p in copied.iterdir()) == committed
    assert all((copied / n).read_bytes() == (repro / n).read_bytes() for n in committed)


def test_batch_groups_and_their_differences_from_the_committed_study(monkeypatch: pytest.MonkeyPatch) -> None:
    committed = json.loads((F.RESULTS / "invariance.json").read_text())
    assert committed["max_batch"] == F.LIVE_MAX_BATCH  # live and committed compare batch size for batch size
    torch_linear = committed["targets"]["torch"]["linear (x·Wᵀ + b)"]
    assert F.batch_groups(torch_linear) == "as alone: B = 1; as at B = 64: 16-64; other bits: 2-15"
    assert F.batch_groups(committed["targets"]["impl"]["softmax"]) == "same bits for B = 1..64"
    assert F.invariance_differences(committed, committed) == []
    other = copy.deepcopy(committed)
    other["targets"]["torch"]["linear (x·Wᵀ + b)"]["rows_differing_from_the_largest_batch"][3] = 0
    other["targets"]["impl"]["softmax"]["rows_changed"][5] = 1
    diff = F.invariance_differences(other, committed)
    assert len(diff) == 2 and diff[0].startswith("impl softmax: here ") and diff[1].startswith("torch linear")
    md = "\n".join(F.invariance(committed, {**other, "status": "ok"}, here="this box"))
    assert "| impl (here) | torch (here) | torch (committed) |" in md and "differ:" in md and "this box" in md
    # impl's bits are the same on every machine: the report counts a difference from the committed study an error
    monkeypatch.setattr(F, "live_invariance", lambda: {**other, "groups": {}})
    errors: list[str] = []
    res = R.live_invariance(errors)
    assert res["status"] == "ok" and len(res["impl_differs"]) == 1
    assert errors == [f"impl's batch invariance differs from the committed study: {diff[0]}"]
