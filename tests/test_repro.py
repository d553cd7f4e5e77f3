"""The reproductions of conformance failures (bendtorch.laws.repro): each committed script is what the generator makes
from its committed failure record, and computes, in its library alone, the bits the target's adapter computes on
the same inputs, on this machine, whatever its CPU. Where this machine is the one that found the failure, the
adapter also gives the committed counterexample's bits. A large input sits beside its script as a .npy file, the
bytes the generator makes. A script whose operation is written wrong is caught."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from bendtorch.laws.repro import (INLINE_MAX, RECIPES, file_name, inputs_of, recipe, reproduction, run_recipe,
                                  sidecars, write_reproductions)
from bendtorch.laws.run import load_results, prepare
from bendtorch.laws.verdict import differ, encode
from bendtorch.records.machine import compare_note, describe, machine
from bendtorch.targets.base import NotRun, Opt, Target

RESULTS = pathlib.Path(__file__).resolve().parents[1] / "reports" / "results" / "conformance"
F32 = np.float32
MAX_LINES = 600  # the most lines a file of the project may have
# torch_compile's scripts each compile their operation with Inductor in a fresh process (tens of seconds apiece on
# two cores): they run with BENDTORCH_REPRO=all
SLOW = {"torch_compile": "each script compiles its operation with Inductor in a fresh process (tens of seconds); "
                         "BENDTORCH_REPRO=all runs them"}


def failures() -> list[tuple[dict[str, Any], dict[str, Any], str | None]]:
    """(document, row, column variant) of every committed failure that has a reproduction."""
    out: list[tuple[dict[str, Any], dict[str, Any], str | None]] = []
    for doc in load_results(RESULTS):
        variants = {d["target"]: d.get("variant") for d in doc.get("targets", [])}
        for r in doc["rows"]:
            rec = recipe(r["family"], r["law"])
            if r.get("result") == "failed" and rec is not None and rec.can_run(r.get("counterexample", {})):
                out.append((doc, r, variants.get(r["target"])))
    return out


FAILURES = failures()
COLUMNS = sorted({(d["target"], r["target"], v or "") for d, r, v in FAILURES})


def make(spec: str, variant: str) -> Target:
    try:
        t = prepare(spec, "cpu", variant or None).columns[0].target
    except NotRun as e:
        pytest.skip(f"not run: {e}")
    if t is None:
        pytest.skip(f"not run: {spec} ({variant}) cannot run here")
    return t


def ops_of(t: Target) -> dict[str, Any]:
    """The adapter's operations under the names the recipes call."""
    ops = {op: getattr(t, op) for rec in RECIPES.values() for op in rec.ops if op != "opt_steps"}
    ops["opt_steps"] = lambda o, ps, gs: t.opt_steps(Opt(**o), ps, gs)
    return ops


def run_scripts(paths: list[pathlib.Path], out: pathlib.Path, check: bool = True) -> tuple[dict[str, Any], str]:
    """Each script run in one fresh Python process (the library alone imported by the script), its got and want
    saved: {stem: (got, want)} and the printed lines; with check=False, a process that fails gives ({}, stderr)."""
    driver = ("import runpy, sys, numpy as np\n"
              "res = {}\n"
              "for i, p in enumerate(sys.argv[2:]):\n"
              "    g = runpy.run_path(p, run_name='__main__')\n"
              "    res[f'{i}_got'] = np.asarray(g['got'], np.float32)\n"
              "    res[f'{i}_want'] = np.asarray(g['want'], np.float32)\n"
              "np.savez(sys.argv[1], **res)\n")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    p = subprocess.run([sys.executable, "-c", driver, str(out), *map(str, paths)], capture_output=True, text=True,
                       env=env, timeout=900)
    if not check and p.returncode != 0:
        return {}, p.stderr
    assert p.returncode == 0, p.stderr[-3000:]
    with np.load(out, allow_pickle=False) as z:
        got = {paths[i].stem: (z[f"{i}_got"], z[f"{i}_want"]) for i in range(len(paths))}
    return got, p.stdout


def same_bits(a: Any, b: Any) -> bool:
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    return a.shape == b.shape and bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))


def test_every_recipe_is_a_conformance_law_on_target_operations() -> None:
    from bendtorch.laws.registry import LAWS
    import bendtorch.laws.test_targets  # noqa: F401  (registers the conformance laws)
    laws = {(i.family, i.name) for k, i in LAWS.items() if k.startswith("bendtorch.laws.test_targets::")}
    assert set(RECIPES) <= laws, set(RECIPES) - laws
    for rec in RECIPES.values():
        assert all(callable(getattr(Target, op, None)) for op in rec.ops)


@pytest.mark.parametrize("spec,label,variant", COLUMNS, ids=[c[1] for c in COLUMNS])
def test_scripts_compute_the_adapters_bits(spec: str, label: str, variant: str, tmp_path: pathlib.Path) -> None:
    """Every committed failure of the column: its committed script and data files are the generator's output, and
    running it (its data files beside it) gives the adapter's got and want bit for bit; on the machine that found
    it, the committed first difference too."""
    if spec in SLOW and os.environ.get("BENDTORCH_REPRO") != "all":
        pytest.skip(f"not run: {SLOW[spec]}")
    t = make(spec, variant)
    here = machine()
    rows = [(d, r) for d, r, v in FAILURES if r["target"] == label]
    paths, want = [], {}
    for doc, r in rows:
        name = file_name(label, r["family"], r["law"])
        srcs = {op: t.source(op) for op in RECIPES[(r["family"], r["law"])].ops}
        assert all(s is not None for s in srcs.values()), f"{label} gives no source for {name}"
        made = reproduction(label, r, srcs, describe(doc.get("machine")))  # type: ignore[arg-type]
        committed = RESULTS / "repro" / name
        assert committed.is_file() and committed.read_text() == made.text, f"{committed} is not the generator's output"
        assert len(made.text.splitlines()) <= MAX_LINES, f"{name}: over {MAX_LINES} lines"
        files = made.files()
        assert [p.name for p in sidecars(RESULTS / "repro", name)] == sorted(files), f"{name}: its data files"
        for data_name, data in files.items():
            assert (RESULTS / "repro" / data_name).read_bytes() == data, f"{data_name} is not the generator's output"
            (tmp_path / data_name).write_bytes(data)
        (tmp_path / name).write_text(made.text)
        paths.append(tmp_path / name)
        rec = RECIPES[(r["family"], r["law"])]
        want[pathlib.Path(name).stem] = (doc, r, rec, run_recipe(rec, ops_of(t), inputs_of(r["counterexample"], rec)))
    got, printed = run_scripts(paths, tmp_path / "out.npz")
    for stem, (doc, r, rec, (g, w)) in want.items():
        sg, sw = got[stem]
        assert same_bits(sg, g) and same_bits(sw, w), f"{stem}: the script's bits are not the adapter's"
        n = int(np.sum(differ(g, w, rec.nan_equal, rec.zero_sign)))
        assert f"{n} of {np.asarray(g).size} elements differ" in printed
        versions = next(d.get("versions") for d in doc["targets"] if d["target"] == label)
        if compare_note(doc.get("machine"), here) is None and versions == t.versions():
            # the machine and the library that found the failure: the adapter finds it again, bit for bit
            ce = r["counterexample"]
            first = tuple(ce["first"]["index"])
            assert n == ce["differ"] and f"{np.asarray(g, F32)[first].view(np.uint32):08x}" == ce["first"]["got_bits"]


def test_a_script_with_a_wrong_operation_is_caught(tmp_path: pathlib.Path) -> None:
    """LayerNorm's script with eps ten times the adapter's computes other bits than the adapter: the comparison the
    test above makes fails on it."""
    t = make("torch", "")
    r = np.random.default_rng(3)
    x, w, b = (r.standard_normal(s).astype(F32) for s in ((4, 17), (17,), (17,)))
    ce: dict[str, Any] = {"what": "a made-up record",
                          "inputs": {k: encode(v) for k, v in {"x": x, "i": 1, "w": w, "b": b}.items()}}
    row = {"family": "batch_invariance", "law": "layer_norm", "target": "torch", "counterexample": ce}
    rec = RECIPES[("batch_invariance", "layer_norm")]
    g, wt = run_recipe(rec, ops_of(t), inputs_of(ce, rec))
    src = t.source("layer_norm")
    assert src is not None
    for broken, caught in ((src, False), (src.replace("w, b, eps)\n", "w, b, eps * 10)\n", 1), True)):
        path = tmp_path / f"broken{caught}.py"
        path.write_text(reproduction("torch", row, {"layer_norm": broken}, "this machine").text)
        got, _ = run_scripts([path], tmp_path / "out.npz")
        sg, sw = got[path.stem]
        assert (not (same_bits(sg, g) and same_bits(sw, wt))) == caught


def test_conformance_links_each_failure_to_its_script() -> None:
    """CONFORMANCE.md names every committed script beside its failure, every script is of a committed failure, and
    every data file is one that its script loads."""
    text = (RESULTS / "CONFORMANCE.md").read_text()
    names = {file_name(r["target"], r["family"], r["law"]) for _, r, _ in FAILURES}
    on_disk = {p.name for p in (RESULTS / "repro").glob("*.py")}
    assert on_disk == names
    for n in names:
        assert f"(repro/{n})" in text
    for p in (RESULTS / "repro").glob("*.npy"):
        owner = RESULTS / "repro" / (p.name.split(".")[0] + ".py")
        assert owner.is_file() and f"HERE / {p.name!r}" in owner.read_text(), f"{p.name}: no script loads it"


def test_write_reproductions_skips_a_target_that_cannot_be_made(tmp_path: pathlib.Path) -> None:
    """A document of a target from nowhere writes no script and says why."""
    doc = json.loads((RESULTS / "torch.json").read_text())
    doc["target"] = "no_such_module_here:make"
    fails = [r for r in doc["rows"] if r.get("result") == "failed" and recipe(r["family"], r["law"])]
    if not fails:
        pytest.skip("not run: the committed torch document has no failure with a recipe")
    (tmp_path / "x.json").write_text(json.dumps(doc))
    done = write_reproductions(tmp_path)
    assert done and all(v.startswith("not written") for v in done.values())
    assert not list((tmp_path / "repro").glob("*.py"))


def test_a_large_input_sits_beside_its_script(tmp_path: pathlib.Path) -> None:
    """A record whose input has more than INLINE_MAX elements: the script loads it from its .npy file (no pickle),
    stays within MAX_LINES, computes the adapter's bits with the file beside it, and fails naming the file
    without it; a small input stays inline."""
    t = make("torch", "")
    r = np.random.default_rng(5)
    x, w, b = r.standard_normal((32, 40)).astype(F32), r.standard_normal(40).astype(F32), np.zeros(40, F32)
    assert x.size > INLINE_MAX >= w.size
    ce: dict[str, Any] = {"what": "a made-up record",
                          "inputs": {k: encode(v) for k, v in {"x": x, "i": 3, "w": w, "b": b}.items()}}
    row = {"family": "batch_invariance", "law": "layer_norm", "target": "torch", "counterexample": ce}
    rec = RECIPES[("batch_invariance", "layer_norm")]
    src = t.source("layer_norm")
    assert src is not None
    made = reproduction("torch", row, {"layer_norm": src}, "this machine")
    name = file_name("torch", "batch_invariance", "layer_norm")
    data_name = f"{pathlib.Path(name).stem}.x.npy"
    assert list(made.files()) == [data_name] and same_bits(made.data[data_name], x)
    assert f"x = np.load(HERE / {data_name!r}, allow_pickle=False)" in made.text and "w = f32(" in made.text
    assert len(made.text.splitlines()) <= MAX_LINES
    (tmp_path / name).write_text(made.text)
    (tmp_path / data_name).write_bytes(made.files()[data_name])
    g, wt = run_recipe(rec, ops_of(t), inputs_of(ce, rec))
    got, _ = run_scripts([tmp_path / name], tmp_path / "out.npz")
    assert same_bits(got[pathlib.Path(name).stem][0], g) and same_bits(got[pathlib.Path(name).stem][1], wt)
    (tmp_path / data_name).unlink()
    got, err = run_scripts([tmp_path / name], tmp_path / "out.npz", check=False)
    assert got == {} and data_name in err and "FileNotFoundError" in err


def test_the_bit_pattern_helper_is_there_only_where_an_input_uses_it() -> None:
    """f32(hexbits, shape) is defined in a script whose input is written by its bits, and left out of one whose
    every float32 input is a data file (an unused helper is noise to a reader)."""
    t = make("torch", "")
    r = np.random.default_rng(6)
    big, small = r.standard_normal((32, 40)).astype(F32), r.standard_normal(40).astype(F32)
    src = t.source("layer_norm")
    assert src is not None

    def script(w: np.ndarray) -> str:
        ins = {"x": big, "i": 3, "w": w, "b": w}
        ce = {"what": "a made-up record", "inputs": {k: encode(v) for k, v in ins.items()}}
        row = {"family": "batch_invariance", "law": "layer_norm", "target": "torch", "counterexample": ce}
        return reproduction("torch", row, {"layer_norm": src}, "this machine").text

    assert "def f32(" in script(small) and "w = f32(" in script(small)
    everything_a_file = script(np.tile(small, 40))
    assert "f32(" not in everything_a_file and "np.load(HERE" in everything_a_file
