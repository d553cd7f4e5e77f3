"""The bottom layer every writer and result shares: durable output (atomic, never through a link, one JSON encoding),
the machine record (and when two records' figures may be compared), and the JSON Schemas of what the commands
write, each validated on a document a command wrote here."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from bendtorch.cli import main
from bendtorch.records import durable
from bendtorch.records.machine import compare_note, cpu_name, describe, impl_digest, machine
from bendtorch.records.schemas import NAMES, schema, validate


# ---- durable output ----------------------------------------------------------------------------------------------

def test_write_bytes_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    p = tmp_path / "a.bin"
    durable.write_bytes(p, b"old")
    durable.write_bytes(p, b"new contents")
    assert p.read_bytes() == b"new contents"
    assert sorted(os.listdir(tmp_path)) == ["a.bin"]
    assert p.stat().st_mode & 0o777 == durable.output_mode()


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    durable.write_json(p, {"x": 1})
    with pytest.raises(TypeError, match="not JSON: object"):
        durable.write_json(p, {"x": object()})
    assert json.loads(p.read_text()) == {"x": 1}
    assert sorted(os.listdir(tmp_path)) == ["a.json"]


def test_a_link_in_place_of_an_output_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "loss.png"
    link.symlink_to(target)
    with pytest.raises(durable.OutputError, match="symbolic link"):
        durable.write_bytes(link, b"x")
    with pytest.raises(durable.OutputError, match="symbolic link"):
        durable.write_text(link, "x")
    with pytest.raises(durable.OutputError, match="symbolic link"):
        durable.write_json(link, {})
    with pytest.raises(durable.OutputError, match="symbolic link"):
        durable.write_npz(link, {"a": np.zeros(2)})
    with pytest.raises(durable.OutputError, match="loss.png: is a symbolic link"):
        durable.refuse_links(tmp_path, ["summary.json", "loss.png"])
    assert target.read_text() == "keep me" and link.is_symlink()
    durable.refuse_links(tmp_path, ["summary.json"])  # not a link: nothing to refuse


def test_save_figure_writes_a_png_atomically(tmp_path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    durable.save_figure(fig, tmp_path / "f.png", dpi=50)
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(os.listdir(tmp_path)) == ["f.png"]


def test_the_json_encoding_reads_back_numpy_values_and_paths(tmp_path: Path) -> None:
    doc = {"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True), "a": np.arange(3), "p": Path("x/y"),
           "t": (1, 2)}
    assert durable.as_json(doc) == {"i": 3, "f": 0.5, "b": True, "a": [0, 1, 2], "p": "x/y", "t": [1, 2]}


_KILLED = """
import os, sys, signal
from bendtorch.records import durable
orig = os.replace
def die(a, b):
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = die
durable.write_bytes(sys.argv[1], b"new" * 1000)
"""


def test_a_writer_killed_before_the_rename_leaves_the_old_file(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_bytes(b"old")
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(p)], capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    assert p.read_bytes() == b"old"
    assert [n for n in os.listdir(tmp_path) if n != "r.json"][0].startswith(durable.TMP_PREFIX)


# ---- the machine record ------------------------------------------------------------------------------------------

def test_the_machine_record_names_the_cpu_the_libraries_and_impl() -> None:
    m = machine(["torch", "clib"], workers=2)
    validate(m, "machine")
    assert m["cpu"]["model"] and m["cpu"]["arch"] and m["workers"] == 2
    assert m["libraries"]["torch"]["dispatch"]["cpu_capability"]
    assert m["libraries"]["numpy"]["dispatch"]["baseline"]
    assert m["libraries"]["clib"]["version"].startswith(("glibc", "musl", "unknown"))
    assert len(m["impl_digest"]) == 64 and m["impl_digest"] == impl_digest()
    assert all("filepath" not in p for p in m["thread_pools"])  # no paths of this machine in a result
    assert cpu_name(m) in describe(m, ["torch"])


def test_figures_of_another_library_compare_only_on_the_same_machine() -> None:
    here = machine(["torch"])
    assert compare_note(here, here, "torch") is None
    intel = json.loads(json.dumps(here))
    intel["cpu"].update(model="Intel(R) Xeon(R) Platinum 8488C", vendor="GenuineIntel", family=6, model_number=143)
    note = compare_note(intel, here, "torch")
    assert note is not None and note.startswith("not compared: committed on Intel(R) Xeon(R) Platinum 8488C")
    assert note.endswith(f"this is {cpu_name(here)}")
    other_build = json.loads(json.dumps(here))
    # a dispatch level other than this machine's own (an AVX2-only CPU dispatches AVX2 already)
    level = next(c for c in ("AVX2", "AVX512") if c != here["libraries"]["torch"]["dispatch"]["cpu_capability"])
    other_build["libraries"]["torch"]["dispatch"]["cpu_capability"] = level
    assert level in (compare_note(other_build, here, "torch") or "")
    assert compare_note(other_build, here) is None  # the same CPU: a figure of no particular library compares
    old = {"platform": "Linux-x86_64", "processor": "x86_64", "cpus": 2}  # a record from before the CPU was kept
    assert (compare_note(old, here, "torch") or "").startswith("not compared: committed on an unrecorded CPU")


_NOISY_MODULE = """import os
os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\\n")
os.write(2, b"I0000 00:00:1796646096.815782   27361 port.cc:153] oneDNN custom operations are on.\\n")
os.write(2, b"E0000 00:00:1796646096.9   27361 cuda.cc:12] a real error\\n")
os.write(2, b"plain text\\n")
if os.environ.get("NOISY_RAISE"):
    raise ImportError("noisy: broken")
"""


@pytest.mark.parametrize("raises", [False, True])
def test_a_quiet_import_leaves_out_the_start_up_notes_and_keeps_the_rest(tmp_path: Path, raises: bool) -> None:
    (tmp_path / "noisy.py").write_text(_NOISY_MODULE)
    code = ("import sys\nfrom bendtorch.records.machine import import_quietly\n"
            "try:\n    import_quietly('noisy')\nexcept ImportError as e:\n    print('raised', e)\n"
            "sys.stderr.write('after\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), **({"NOISY_RAISE": "1"} if raises else {})}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert r.stderr == "E0000 00:00:1796646096.9   27361 cuda.cc:12] a real error\nplain text\nafter\n"
    assert r.stdout == ("raised noisy: broken\n" if raises else "")
    plain = subprocess.run([sys.executable, "-c", "import noisy"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert "absl::InitializeLog" in plain.stderr and "port.cc" in plain.stderr  # the notes are there to leave out


def test_tensorflow_imports_without_its_start_up_notes() -> None:
    """TensorFlow 2.16 and later write absl's notes at import whatever TF_CPP_MIN_LOG_LEVEL says."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("not run: tensorflow is not installed (pip install 'bendtorch[tensorflow]')")
    code = "from bendtorch.records.machine import probe\nprint(probe('tensorflow')['version'])"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() and r.stdout.strip() != "None"
    assert "absl::InitializeLog" not in r.stderr and "port.cc" not in r.stderr, r.stderr


# ---- the schemas, on documents the commands wrote ------------------------------------------------------------------

def test_every_schema_is_a_valid_json_schema() -> None:
    for name in NAMES:
        jsonschema.Draft202012Validator.check_schema(schema(name))
        assert schema(name)["$id"].endswith(f"/{name}.schema.json")


def _reject(doc: dict[str, Any], name: str) -> None:
    """The schema refuses the document without its schema version, with another, and without a machine."""
    for bad in ({k: v for k, v in doc.items() if k != "schema_version"}, {**doc, "schema_version": 999},
                {k: v for k, v in doc.items() if k != "machine"}):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad, name)


def test_laws_json_validates(tmp_path: Path) -> None:
    out = tmp_path / "laws.json"
    assert main(["laws", "-k", "test_p_zero_is_the_identity", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [(r["law"], r["result"]) for r in doc["rows"]] == [(doc["rows"][0]["law"], "passed")]
    validate(doc, "laws")
    _reject(doc, "laws")


def test_sweep_json_validates(tmp_path: Path) -> None:
    assert main(["sweep", "exp", "--lib", "impl", "--sample", "64", "--workers", "1", "--no-plots", "--quiet",
                 "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "exp" / "sweep_sample.json").read_text())
    validate(doc, "sweep")
    _reject(doc, "sweep")


def test_training_summary_validates(tmp_path: Path) -> None:
    assert main(["train", "--steps", "2", "--no-bar", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "summary.json").read_text())
    validate(doc, "summary")
    _reject(doc, "summary")


def test_a_study_and_a_bench_document_validate(tmp_path: Path) -> None:
    from bendtorch.reference.findings import write_json

    write_json({"command": "bendtorch study orders", "figure": 1.0}, tmp_path / "s.json")
    doc = json.loads((tmp_path / "s.json").read_text())
    validate(doc, "findings")
    _reject(doc, "findings")
    assert main(["bench", "--models", "tiny", "--repeats", "5", "--no-startup", "--json", str(tmp_path / "b.json")]) == 0
    bench = json.loads((tmp_path / "b.json").read_text())
    validate(bench, "bench")
    _reject(bench, "bench")


# ---- default places ----------------------------------------------------------------------------------------------

def test_default_outputs_and_caches_have_one_place_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch.records import paths

    monkeypatch.delenv(paths.OUT_ENV, raising=False)
    assert paths.output_dir("report") == Path("bendtorch-out") / "report"
    monkeypatch.setenv(paths.OUT_ENV, str(tmp_path / "o"))
    assert paths.output_dir("atlas") == tmp_path / "o" / "atlas"
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "c"))
    assert paths.cache_dir("hypothesis") == tmp_path / "c" / "hypothesis" and (tmp_path / "c" / "hypothesis").is_dir()
    monkeypatch.delenv(paths.CACHE_ENV)
    assert not str(paths.cache_root()).startswith(str(Path.cwd()))  # never the current directory


def test_a_library_of_an_extra_is_installed_when_its_module_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # each extra's library is judged by the module it imports (TensorFlow's CPU build is the distribution
    # tensorflow-cpu, so a distribution's name would call it missing); a module that cannot be found is missing
    import importlib.util

    from bendtorch.records import libraries
    for name, (_, module) in libraries.EXTRAS.items():
        assert libraries.installed(name) == (importlib.util.find_spec(module) is not None), name
    monkeypatch.setitem(libraries.EXTRAS, "tensorflow", ("tensorflow", "no_such_module_for_the_test"))
    assert not libraries.installed("tensorflow") and libraries.installed("numpy")


def _sweep_problems(acts: Any) -> list[str]:
    """Each activation record's atlas functions (value, derivative) must be sweep functions that impl's library
    provides (its KERNEL table is built from the same records), or the record has a gap on the sweep axis."""
    from bendtorch.records.functions import FUNCTIONS
    from bendtorch.records.libraries import LIBRARIES
    bad = []
    for op in acts:
        if op.act.sweep is None:
            bad += [] if any(g.axis == "sweep" for g in op.gaps) else [f"{op.name}: no sweep names and no gap"]
            continue
        bad += [f"{op.name}: {n}" for n in op.act.sweep if n not in FUNCTIONS or n not in LIBRARIES["impl"].functions]
    return bad


def test_every_activation_reaches_the_atlas_from_its_record() -> None:
    import dataclasses

    from bendtorch.records.ops import ACTIVATIONS
    from bendtorch.reports.sweep.libraries import impl
    assert _sweep_problems(ACTIVATIONS) == []
    swept = [op for op in ACTIVATIONS if op.act and op.act.sweep]
    named = {n for op in swept for n in op.act.sweep}  # type: ignore[union-attr]
    assert named <= set(impl.KERNEL) and len(named) == 2 * len(swept)  # a value and a derivative each, none shared
    op = next(o for o in ACTIVATIONS if o.name == "SiLU")
    assert op.act is not None
    broken = dataclasses.replace(op, act=dataclasses.replace(op.act, sweep=("silu", "dsilu_nosuch")))
    assert _sweep_problems([broken]) == ["SiLU: dsilu_nosuch"]
    relu = next(o for o in ACTIVATIONS if o.name == "ReLU")
    assert _sweep_problems([dataclasses.replace(relu, gaps=())]) == ["ReLU: no sweep names and no gap"]
