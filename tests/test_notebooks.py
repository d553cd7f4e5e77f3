"""The error-analysis notebooks (notebooks/0*.py, jupytext percent format, each paired with the committed .ipynb that
`jupytext --to ipynb` makes from it) run headless to the end at the small size, and each one's verdict is the
outcome its first cell states and the one measured when they were written (EXPECTED).

Each notebook is executed with nbclient in a fresh kernel running this interpreter (sys.executable: a kernelspec is
written to a temporary JUPYTER_PATH, so nothing needs installing by hand on a fresh venv), with BENDTORCH_NB_SIZE=small
and the notebooks directory as the working directory. The verdict cell prints `VERDICT_JSON {...}`; the test reads it.
The .ipynb files are committed without outputs and hold their .py's cells; this test checks both (outputs in git would
go stale, and a .py edited without regenerating its .ipynb would run other code than the one reviewed).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("torch")

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"
# what each notebook's verdict came out as at the small size when it was written (and what its first cell says)
EXPECTED = {
    "01_adam_c2.ipynb": False,
    "02_ce_tree_sum.ipynb": True,
    "03_sum_of_squares.ipynb": True,
    "04_logsoftmax_pick.ipynb": True,
    "05_erf.ipynb": True,
    "06_bf16_moments.ipynb": True,
    "07_norm_row_sums.ipynb": True,
    "08_orders_at_scale.ipynb": True,
    "09_two_truths.ipynb": True,
    "10_invariance.ipynb": True,
    "11_function_atlas.ipynb": True,
}
KERNEL = "bendtorch-nb-test"
OUTCOME = re.compile(r"the claim (reproduces|does not reproduce)")


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernelspec that runs this very interpreter (so the kernel sees this venv's packages)."""
    root = tmp_path_factory.mktemp("jupyter")
    kdir = root / "kernels" / KERNEL
    kdir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "bendtorch notebooks (test)", "language": "python"}
    (kdir / "kernel.json").write_text(json.dumps(spec))
    return {"JUPYTER_PATH": str(root)}


def stated_outcome(nb: Any) -> bool:
    m = OUTCOME.search(nb.cells[0].source)
    assert nb.cells[0].cell_type == "markdown" and m, "the first cell must state the measured outcome"
    return m.group(1) == "reproduces"


def verdict_of(nb: Any) -> dict[str, Any]:
    for cell in reversed(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                for line in out.get("text", "").splitlines():
                    if line.startswith("VERDICT_JSON "):
                        v: dict[str, Any] = json.loads(line[len("VERDICT_JSON "):])
                        return v
    raise AssertionError("no VERDICT_JSON line in the notebook's outputs")


def test_every_notebook_is_listed_and_in_sync_with_its_source() -> None:
    jupytext = pytest.importorskip("jupytext")
    found = sorted(p.name for p in NB_DIR.glob("[0-9][0-9]_*.ipynb"))
    assert found == sorted(EXPECTED), found
    assert sorted(p.stem for p in NB_DIR.glob("[0-9][0-9]_*.py")) == sorted(n[:-6] for n in EXPECTED), (
        "a .py source missing")
    for name in EXPECTED:  # the committed .ipynb is its .py's cells, without outputs
        disk = nbformat.read(NB_DIR / name, as_version=4)
        src = jupytext.read(NB_DIR / (name[:-6] + ".py"))
        cells = [(c.cell_type, c.source) for c in disk.cells]
        assert cells == [(c.cell_type, c.source) for c in src.cells], (
            f"{name} differs from {name[:-6]}.py: run `jupytext --to ipynb notebooks/{name[:-6]}.py`")
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in disk.cells if c.cell_type == "code"), f"{name} is committed with outputs"


def test_sync_check_catches_an_edited_source() -> None:
    """The check above compares sources: an edit to one side shows."""
    jupytext = pytest.importorskip("jupytext")
    name = next(iter(EXPECTED))
    src = jupytext.read(NB_DIR / (name[:-6] + ".py"))
    src.cells[-1].source += "\nprint('edited')"
    disk = nbformat.read(NB_DIR / name, as_version=4)
    assert [c.source for c in disk.cells] != [c.source for c in src.cells]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_notebook_runs_and_verdict_matches(name: str, kernel_env: dict[str, str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for key, val in kernel_env.items():
        monkeypatch.setenv(key, val)
    monkeypatch.setenv("BENDTORCH_NB_SIZE", "small")
    nb = nbformat.read(NB_DIR / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name=KERNEL,
                                     resources={"metadata": {"path": str(NB_DIR)}})
    client.execute()  # raises CellExecutionError if any cell fails, so reaching here means it ran to the end
    v = verdict_of(nb)
    assert isinstance(v["reproduces"], bool) and isinstance(v["figure"], float) and v["claim"]
    assert v["reproduces"] == stated_outcome(nb), f"{name}: the verdict {v} contradicts the first cell"
    assert v["reproduces"] == EXPECTED[name], f"{name}: expected reproduces={EXPECTED[name]}, got {v}"
