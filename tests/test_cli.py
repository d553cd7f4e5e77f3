"""The command line is thin: `bendtorch --help`, every `bendtorch COMMAND --help` and every `bendtorch study NAME
--help` load neither numba nor torch (nor numpy, nor any library module), each command module imports only
bendtorch.commands.args and a few standard modules at its top, the lists a command module repeats for its --help
agree with the library's, and a mistake is one line on stderr with exit code 2: in the arguments, and in the outputs
the report and the bench are told to write (a file where a folder belongs, a folder that cannot be written, a name
that is not UTF-8, a link in place of a file), found before any work. `--version` and `python -m bendtorch` work;
the report's default folder is records.paths'; the bench's JSON validates against its schema."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bendtorch import cli
from bendtorch.records.studies import STUDIES

HEAVY = ("numba", "torch", "numpy", "matplotlib", "bendtorch.impl", "bendtorch.oracle", "bendtorch.reports",
         "bendtorch.laws", "bendtorch.bench", "bendtorch.reference")

PROBE = """
import sys
from bendtorch.cli import build_parser, main
build_parser()
argv = sys.argv[1:]
if argv:
    try:
        main(argv)
    except SystemExit:
        pass
print("LOADED:" + ",".join(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in HEAVY))))
""".replace("HEAVY", repr(HEAVY))


@pytest.mark.parametrize("argv", [[], ["--help"], *[[c, "--help"] for c in cli.COMMANDS],
                                  *[["study", s.name, "--help"] for s in STUDIES]])
def test_help_imports_no_heavy_module(argv: list[str]) -> None:
    # a fresh process: this one has numba and torch loaded already
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    loaded = r.stdout.strip().splitlines()[-1]
    assert loaded == "LOADED:", f"bendtorch {' '.join(argv)} loaded {loaded}"


def test_the_probe_sees_a_heavy_import() -> None:
    # the check above could fail: importing a library module shows up
    code = PROBE.replace("build_parser()", "build_parser(); import bendtorch.impl.train")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "numpy" in r.stdout and "bendtorch.impl.train" in r.stdout


def test_command_modules_import_only_argparse_and_args_at_top() -> None:
    # bendtorch.records' registries (optimizers, targets) import the standard library alone; the probe above checks
    # that building the parser loads no library
    allowed = {"__future__", "argparse", "bendtorch.commands.args", "bendtorch.records", "pathlib", "typing", "os",
               "sys"}
    folder = Path(cli.__file__).parent / "commands"
    for f in sorted(folder.glob("*.py")):
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {node.module or ""}
            else:
                continue
            if f.name == "args.py":  # the shared helpers: the standard library only
                assert all(n.split(".")[0] in sys.stdlib_module_names for n in names), names
            else:
                assert names <= allowed, f"{f.name} imports {names - allowed} at its top"


def test_every_command_has_a_module_with_add_arguments_and_run() -> None:
    import importlib
    for name, (module, help_text) in cli.COMMANDS.items():
        m = importlib.import_module(module)
        assert callable(m.add_arguments) and callable(m.run) and help_text, name


def test_lists_repeated_for_help_agree_with_the_library() -> None:
    from bendtorch.commands import sweep as sweep_cmd
    from bendtorch.commands import train as train_cmd
    from bendtorch.reports import sweep
    from bendtorch.training import options as training
    assert train_cmd.OPTS == training.OPTS and train_cmd.MAX_LAYERS == training.MAX_LAYERS
    assert sweep_cmd.FULL_HI == sweep.FULL_HI and sweep_cmd.FUNCTIONS == tuple(sweep.ENTRIES)


def test_a_usage_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["train", "--steps", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bendtorch train: error: argument --steps"), err
    assert cli.main(["nonsense"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice" in err, err
    assert cli.main([]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert cli.main(["--help"]) == 0
    assert "train" in capsys.readouterr().out


# ---- the commands' outputs: a user's mistake about them is one line and exit code 2, before any work --------------

def _bad_name(folder: Path) -> str:
    """A path under folder whose name is not valid UTF-8 (Linux allows any bytes but / and NUL)."""
    return os.fsdecode(os.fsencode(folder) + b"/out-\xff")


def test_report_and_bench_refuse_a_bad_output_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    victim = tmp_path / "victim.md"
    victim.write_text("keep me")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "REPORT.md").symlink_to(victim)
    (tmp_path / "b.json").symlink_to(victim)
    cases = [
        (["report", "--out", str(a_file)], "exists and is not a directory"),
        (["report", "--out", "/proc/bendtorch-none/report"], "not writable"),
        (["report", "--out", _bad_name(tmp_path)], "is not valid UTF-8"),
        (["report", "--only", "bogus"], "no op named 'bogus'"),
        (["report", "--erf-full", str(tmp_path)], "no such file"),
        (["report", "--erf-full", _bad_name(tmp_path)], "is not valid UTF-8"),
        (["report", "--out", str(linked), "--quick"], "REPORT.md: is a symbolic link"),
        (["report", "--quick", "--erf-sample", "-1"], "argument --erf-sample"),
        (["bench", "--json", str(tmp_path)], "is a directory"),
        (["bench", "--json", str(tmp_path / "none" / "b.json")], "does not exist"),
        (["bench", "--json", _bad_name(tmp_path)], "is not valid UTF-8"),
        (["bench", "--json", str(tmp_path / "b.json")], "is a symbolic link"),
        (["bench", "--repeats", "2"], "argument --repeats"),
        (["bench", "--rounds", "0"], "argument --rounds"),
        (["bench", "--models", "huge"], "argument --models"),
    ]
    for argv, want in cases:
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and want in err and "Traceback" not in err, (argv, err)
    assert victim.read_text() == "keep me" and sorted(os.listdir(tmp_path)) == ["a-file", "b.json", "linked",
                                                                                 "victim.md"]
    assert sorted(os.listdir(linked)) == ["REPORT.md"]  # refused before any work


def test_the_report_writes_under_the_default_folder_or_the_one_named(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch.reports import report as R

    seen: list[tuple[Path, Path]] = []

    def fake(out: Path, *a: object, **k: object) -> dict[str, object]:
        shown = k["shown_out"]
        assert isinstance(shown, Path)
        seen.append((out, shown))
        return {"all_pass": True, "errors": []}
    monkeypatch.setattr(R, "report", fake)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENDTORCH_OUT", raising=False)
    assert cli.main(["report"]) == 0
    monkeypatch.setenv("BENDTORCH_OUT", "elsewhere")
    assert cli.main(["report", "--quick"]) == 0
    assert cli.main(["report", "--out", "mine/rep"]) == 0
    # the work gets an absolute folder (its laws run in a subprocess with another working directory); the
    # messages name the folder as the user gave it
    assert seen == [(tmp_path / "bendtorch-out" / "report", Path("bendtorch-out/report")),
                    (tmp_path / "elsewhere" / "report", Path("elsewhere/report")),
                    (tmp_path / "mine" / "rep", Path("mine/rep"))]


def test_version_and_python_m_bendtorch(tmp_path: Path) -> None:
    from bendtorch import __version__

    r = subprocess.run([sys.executable, "-m", "bendtorch", "--version"], cwd=tmp_path, capture_output=True,
                       text=True, check=True)
    assert r.stdout.strip() == f"bendtorch {__version__}" and __version__ != "0+unknown"
    r = subprocess.run([sys.executable, "-m", "bendtorch", "--help"], cwd=tmp_path, capture_output=True, text=True,
                       check=True)
    assert all(c in r.stdout for c in cli.COMMANDS) and r.stdout.startswith("usage: bendtorch")
    r = subprocess.run([sys.executable, "-m", "bendtorch", "report", "--out", "/proc/bendtorch-none"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


_ENDING = """
import atexit, sys, threading, time
from pathlib import Path
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
def late():
    time.sleep(0.3)
    (out / "thread").write_text("done")
if sys.argv[2] == "thread":
    threading.Thread(target=late).start()   # not a daemon: the process must wait for it
sys.argv[1:] = ["--version"]
from bendtorch.cli import run_command
run_command()
"""


@pytest.mark.parametrize("thread", ["none", "thread"])
def test_the_command_ends_after_its_exit_handlers_streams_and_threads(tmp_path: Path, thread: str) -> None:
    """run_command ends the process without the interpreter's teardown: the exit handlers have run, what was
    printed reaches the pipe, main's code is the exit code, and a thread that is not a daemon is waited for."""
    from bendtorch import __version__

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a pipe's output waits in a buffer
    r = subprocess.run([sys.executable, "-c", _ENDING, str(tmp_path), thread], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == f"bendtorch {__version__}", (r.returncode, r.stdout, r.stderr)
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").exists() == (thread == "thread")


def test_the_bench_json_validates_against_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bendtorch.records.schemas import validate

    p = tmp_path / "bench.json"
    assert cli.main(["bench", "--models", "tiny", "--repeats", "5", "--rounds", "2", "--no-startup", "--json",
                     str(p)]) == 0
    doc = json.loads(p.read_text())
    validate(doc, "bench")
    assert [r["model"] for r in doc["results"]] == ["tiny"] and doc["machine"]["cpu"]["model"]
    (r,) = doc["results"]
    lo, hi = r["ratio_range"]  # the median of two rounds lies within their range
    assert len(r["rounds"]) == 2 and lo <= r["ratio_impl_over_torch"] <= hi
    assert f"wrote {p}" in capsys.readouterr().out


def test_a_librarys_peak_alone_is_measured_in_a_fresh_process() -> None:
    from bendtorch.bench import bench as B

    mib = B.peak_alone("impl", "tiny", None, steps=1)
    assert 100 < mib < 4096  # the interpreter, numpy, numba, torch and the tiny model: hundreds of MiB
    with pytest.raises(subprocess.CalledProcessError):  # a library the bench does not know is refused
        B.peak_alone("jax", "tiny", None, steps=1)
