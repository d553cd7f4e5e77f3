"""The command line is thin: `bendtorch --help`, every `bendtorch COMMAND --help` and every `bendtorch study NAME
--help` load neither numba nor torch (nor numpy, nor any library module), each command module imports only
bendtorch.commands.args and a few standard modules at its top, the lists a command module repeats for its --help
agree with the library's, and a mistake is one line on stderr with exit code 2."""

from __future__ import annotations

import ast
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
    allowed = {"__future__", "argparse", "bendtorch.commands.args", "pathlib", "typing", "os", "sys"}
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
