"""Lay out the installed namespace as a tree of links, for the tools that read packages from the file system
(mypy, import-linter): build/layout/bendtorch/impl/... -> impl/..., as pyproject's package-dir maps them. Each
directory is real and each file a link, so a tool walking the tree sees the installed layout; the tree is made anew
on every call (files added since are picked up). Prints the tree's root, for MYPYPATH / PYTHONPATH."""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = ROOT / "build" / "layout"
    shutil.rmtree(out, ignore_errors=True)
    for pkg, src in cfg["package-dir"].items():
        dst = out.joinpath(*pkg.split("."))
        dst.mkdir(parents=True, exist_ok=True)
        for f in sorted((ROOT / src).iterdir()):
            if f.suffix in (".py", ".pyi", ".json", ".txt"):
                os.symlink(f, dst / f.name)
            elif f.is_dir() and f.name not in ("__pycache__",) and any(f.rglob("*.py")):
                # a sub-package without its own package-dir entry keeps its place under its parent
                if f"{pkg}.{f.name}" not in cfg["package-dir"]:
                    for g in sorted(f.rglob("*")):
                        if g.suffix in (".py", ".pyi") and "__pycache__" not in g.parts:
                            t = dst / g.relative_to(ROOT / src)
                            t.parent.mkdir(parents=True, exist_ok=True)
                            os.symlink(g, t)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
