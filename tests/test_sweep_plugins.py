"""Sweep libraries from outside the project: a Python function given to `check`, `--lib NAME=pkg.mod:attr` (a function,
or a mapping providing several) run in the process pool (each worker imports the module by name), an entry point of
the group bendtorch.sweep_libraries, a bad spec refused on one line before any work, and a library that fails during
the work one line with exit code 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bendtorch.reports import sweep as S
from tests.bitcheck import without_run_details

ROOT = Path(__file__).resolve().parent.parent

FUNCS = '''
import numpy as np

def exp32(x):
    """exp through float64, rounded once to float32 (correctly rounded but for double rounding)."""
    with np.errstate(all="ignore"):
        return np.exp(x.astype(np.float64)).astype(np.float32)

def tanh32(x):
    return np.tanh(x.astype(np.float64)).astype(np.float32)

LIB = {"exp": exp32, "tanh": tanh32}
NOT_CALLABLE = 3

def bad_shape(x):
    return x[:1]

def fails_on_big(x):
    if x.size > 1000:
        raise ValueError("too many numbers")
    return exp32(x)
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the package mypkg and a distribution publishing, as entry points of
    bendtorch.sweep_libraries, mypkg.funcs:LIB (two functions) as the library "mine" and mypkg.funcs:exp32 (one
    function) as "single"."""
    d = tmp_path_factory.mktemp("site")
    (d / "mypkg").mkdir()
    (d / "mypkg" / "__init__.py").write_text("")
    (d / "mypkg" / "funcs.py").write_text(FUNCS)
    info = d / "mypkg_sweep-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg-sweep\nVersion: 0.1\n")
    (info / "top_level.txt").write_text("mypkg\n")
    (info / "entry_points.txt").write_text("[bendtorch.sweep_libraries]\nmine = mypkg.funcs:LIB\n"
                                          "single = mypkg.funcs:exp32\n")
    return d


def _cli(site: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "bendtorch.cli", "sweep", *args], cwd=site, env=env,
                          capture_output=True, text=True, timeout=600)


def exp_through_float64(x: Any) -> Any:
    with np.errstate(all="ignore"):
        return np.exp(x.astype(np.float64)).astype(np.float32)


def test_check_takes_a_python_function_or_a_name() -> None:
    mine = S.check("exp", exp_through_float64, sample=4000)
    assert mine["library_name"] == "exp_through_float64" and mine["inputs"] >= 4000
    assert mine["within_one_ulp_fraction"] == 1.0 and mine["specials_right"]
    assert mine["key"]["library"]["function"] == f"{__name__}:exp_through_float64"   # found again by its name
    local = S.check("exp", lambda x: exp_through_float64(x), sample=4000)          # a lambda: this process only
    assert local["key"]["library"]["function"].startswith("<local>:")
    keep = ("correctly_rounded", "max_ulp", "max_ulp_at_bits", "within_one_ulp")
    assert {k: mine[k] for k in keep} == {k: local[k] for k in keep}
    numpy = S.check("exp", "numpy", sample=4000)
    assert numpy["library_name"] == "numpy" and numpy["correctly_rounded"] < mine["correctly_rounded"]
    with pytest.raises(S.SweepError, match="gave a float32 array of shape"):
        S.check("exp", lambda x: x[:3])


def test_a_function_from_outside_runs_in_the_process_pool(site: Path, tmp_path: Path) -> None:
    rng = ["--lo", "0x3f800000", "--hi", hex(0x3F800000 + 4096), "--chunk", "2048", "--no-plots", "--quiet"]
    p = _cli(site, ["exp", "--lib", "mine=mypkg.funcs:exp32", "--lib", "impl", "--workers", "2", "--out",
                    str(tmp_path), *rng])
    assert p.returncode == 0, p.stderr
    rep = json.loads((tmp_path / "exp" / "sweep_range_3f800000_3f801000.json").read_text())
    col = rep["libraries"]["mine"]
    assert col["key"]["library"]["function"] == "mypkg.funcs:exp32" and "mypkg.funcs" in col["key"]["library"]["code"]
    assert not col["same_everywhere"] and col["finite_inputs"] == 2 * 4096
    sys.path.insert(0, str(site))
    try:
        here = S.check("exp", "mypkg.funcs:exp32", lo=0x3F800000, hi=0x3F800000 + 4096)
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("mypkg.funcs", None)
        sys.modules.pop("mypkg", None)
    drop = ("key", "library", "library_name", "machine", "hard_cases", "mode")
    assert without_run_details({k: v for k, v in here.items() if k not in drop}) == \
        without_run_details({k: v for k, v in col.items() if k not in drop})


@pytest.mark.parametrize("lib", ["mine=mypkg.funcs:LIB", "mine"])
def test_a_library_of_several_functions_by_spec_or_entry_point(lib: str, site: Path, tmp_path: Path) -> None:
    p = _cli(site, ["tanh", "--lib", lib, "--sample", "2000", "--workers", "1", "--out", str(tmp_path), "--quiet",
                    "--no-plots"])
    assert p.returncode == 0, p.stderr
    col = json.loads((tmp_path / "tanh" / "sweep_sample.json").read_text())["libraries"]["mine"]
    assert col["key"]["library"]["function"] == "mypkg.funcs:LIB.tanh" and col["odd_symmetric"]


def test_an_entry_point_of_one_function_is_that_function(site: Path, tmp_path: Path) -> None:
    p = _cli(site, ["exp", "--lib", "single", "--lib", "impl", "--sample", "2000", "--workers", "1", "--out",
                    str(tmp_path), "--quiet", "--no-plots"])
    assert p.returncode == 0, p.stderr
    cols = json.loads((tmp_path / "exp" / "sweep_sample.json").read_text())["libraries"]
    assert list(cols) == ["impl", "single"] and cols["single"]["key"]["library"]["function"] == "mypkg.funcs:exp32"
    assert cols["single"]["key"]["library"]["distribution"]["name"] == "mypkg-sweep"
    assert cols["single"]["key"]["library"]["distribution"]["version"] == "0.1"


@pytest.mark.parametrize("spec, says", [
    ("nosuchlib", "no such library"),
    ("mypkg.funcs:exp32", "not a library name"),
    ("mine=nosuch.module:exp", "cannot import nosuch.module"),
    ("mine=mypkg.funcs:nosuch", "has no nosuch"),
    ("mine=mypkg.funcs:NOT_CALLABLE", "neither a function nor a library"),
    ("mine=mypkg.funcs:bad_shape", "gave a float32 array of shape (1,)"),
    ("mine=mypkg.funcs:LIB", "provides no sin"),
    ("mine=not a spec", "is not module:attr"),
])
def test_a_bad_library_spec_is_one_line_before_any_work(spec: str, says: str, site: Path, tmp_path: Path) -> None:
    func = "sin" if spec == "mine=mypkg.funcs:LIB" else "exp"
    p = _cli(site, [func, "--lib", spec, "--sample", "64", "--out", str(tmp_path), "--quiet"])
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert says in p.stderr, p.stderr
    assert not list(tmp_path.rglob("*.json"))


def test_a_library_failing_during_the_work_is_one_line_and_exit_1(site: Path, tmp_path: Path) -> None:
    p = _cli(site, ["exp", "--lib", "mine=mypkg.funcs:fails_on_big", "--sample", "20000", "--workers", "1",
                    "--out", str(tmp_path), "--quiet"])
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "a library failed during the sweep" in p.stderr and "too many numbers" in p.stderr


def test_the_extending_docs_example_runs(tmp_path: Path) -> None:
    # docs/extending.md's sweep library, as written there
    text = (ROOT / "docs" / "extending.md").read_text()
    start = text.index("```python\n# mylib/sweep.py")
    code = text[start + len("```python\n"):text.index("```", start + 10)]
    pkg = tmp_path / "mylib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sweep.py").write_text(textwrap.dedent(code))
    sys.path.insert(0, str(tmp_path))
    try:
        got = S.check("exp", "mylib.sweep:exp32", sample=2000)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mylib.sweep", None)
        sys.modules.pop("mylib", None)
    assert got["within_one_ulp_fraction"] == 1.0


def test_a_function_record_from_outside_is_checked() -> None:
    # a SweepFunction of one's own (here exp again, under another name, with the oracle's reference) and a library
    # for it: the same figures as the built-in record's
    from bendtorch.records.functions import FUNCTIONS, SweepFunction

    rec = SweepFunction("myexp", "my exp(x)", FUNCTIONS["exp"].reference, FUNCTIONS["exp"].mpmath)
    mine = S.check(rec, exp_through_float64, sample=2000)
    built_in = S.check("exp", exp_through_float64, sample=2000)
    keep = ("correctly_rounded", "max_ulp", "max_ulp_at_bits", "within_one_ulp", "specials_right")
    assert {k: mine[k] for k in keep} == {k: built_in[k] for k in keep}
    assert mine["key"]["function"]["name"] == "myexp"


def test_the_example_package_s_exp_is_swept_from_outside(tmp_path: Path) -> None:
    # docs/examples/numpy-target, pip-installed into a folder outside the checkout, publishes its float32 exp as the
    # sweep library "numpy-example" (one function); `bendtorch sweep exp --lib numpy-example` run from another folder
    # measures it in the process pool beside impl, its column keyed by the package's version
    import shutil

    example = ROOT / "docs" / "examples" / "numpy-target"
    if not example.is_dir():
        pytest.skip(f"not run: no example package at {example}")
    src, site, run = tmp_path / "src", tmp_path / "site", tmp_path / "run"
    shutil.copytree(example, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(site), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    run.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run([sys.executable, "-m", "bendtorch", "sweep", "exp", "--lib", "numpy-example", "--lib", "impl",
                        "--lo", "0x3f800000", "--hi", hex(0x3F800000 + 4096), "--chunk", "2048", "--workers", "2",
                        "--no-plots", "--quiet", "--out", "out"], cwd=run, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    rep = json.loads((run / "out" / "exp" / "sweep_range_3f800000_3f801000.json").read_text())
    col = rep["libraries"]["numpy-example"]
    assert col["key"]["library"]["function"] == "bendtorch_example_numpy.exp:exp32"
    assert col["key"]["library"]["distribution"] == {"name": "bendtorch-example-numpy", "version": "0.1.0"}
    assert col["finite_inputs"] == 2 * 4096 and 0.5 <= col["max_ulp"] < 8 and col["specials_right"]
    assert rep["libraries"]["impl"]["correctly_rounded_fraction"] == 1.0
