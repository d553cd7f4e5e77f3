"""The project installs as one namespace (bendtorch.impl, bendtorch.oracle, ...). A module importable under two names
would load twice and give two identities to each of its classes (isinstance and except clauses then fail across
them), so every import goes through `bendtorch.` and no folder of the checkout is importable on its own."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPING: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
FOLDERS = sorted({src.split("/")[0] for pkg, src in MAPPING.items() if pkg != "bendtorch"})

_PROBE = """
import importlib, importlib.util, json, pkgutil, sys
import bendtorch
bare = {f: importlib.util.find_spec(f) is not None for f in FOLDERS}
for m in pkgutil.walk_packages(bendtorch.__path__, "bendtorch."):
    importlib.import_module(m.name)
import bendtorch.impl, bendtorch.oracle, bendtorch.laws, bendtorch.reference, bendtorch.reports, bendtorch.bench
seen = {}
for name, mod in list(sys.modules.items()):
    f = getattr(mod, "__file__", None)
    if f and any(name == n or name.startswith(n + ".") for n in ["bendtorch"] + FOLDERS):
        seen.setdefault(f, []).append(name)
print(json.dumps({"bare": bare, "twice": {f: n for f, n in seen.items() if len(n) > 1},
                  "count": sum(1 for k in sys.modules if k.startswith("bendtorch."))}))
"""


def test_every_module_has_one_name(tmp_path: Path) -> None:
    """From outside the checkout: the folders are not top-level packages, and importing every module of the
    namespace (walk_packages over bendtorch.*, the package's mapped sub-packages included) loads each file once."""
    code = f"FOLDERS = {FOLDERS!r}\n" + _PROBE
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(got["bare"].values()), f"importable outside the namespace: {got['bare']}"
    assert got["twice"] == {}, f"modules loaded under two names: {got['twice']}"
    assert got["count"] > 40, got["count"]   # the walk did reach the mapped folders


def test_the_probe_catches_a_second_name(tmp_path: Path) -> None:
    """The check above can fail: with the checkout on the path, `import impl` loads impl/protocol.py a second time."""
    code = ("import sys, json; sys.path.insert(0, %r); import bendtorch.impl.protocol, impl.protocol; "
            "print(json.dumps(bendtorch.impl.protocol.__file__ == impl.protocol.__file__ and "
            "bendtorch.impl.protocol.Layer is not impl.protocol.Layer))") % str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) is True


def test_a_test_file_name_is_in_one_suite_only() -> None:
    """tests/ (unit and integration tests), tests/reference/ (the comparisons with PyTorch) and laws/ (the laws as
    properties) name their files by what they hold: no file name stands in two of them."""
    names = [p.name for d in ("tests", "laws") for p in sorted((ROOT / d).rglob("test_*.py"))]
    assert len(names) > 40, names
    assert sorted({n for n in names if names.count(n) > 1}) == []


def _sources() -> list[Path]:
    # the skipped folders are pruned, not walked: the environment is large, and CI builds the wheel under build/
    # while the tests run (a folder removed during a walk would end it)
    skip = {".venv", "build", ".git", "node_modules"}
    out = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in skip)
        out += [Path(d) / f for f in sorted(files) if f.endswith(".py")]
    return out


def test_no_source_imports_a_folder_by_its_bare_name() -> None:
    """Statically, in every Python file of the repository (tests and notebooks included): `import impl`,
    `from oracle.ulp import ...` and the like never appear; `bendtorch.impl` is the one name."""
    bad = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                     else [])
            bad += [f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {n}" for n in names if n.split(".")[0] in FOLDERS]
    assert not bad, "\n".join(bad)
