"""Where the harness puts what it writes when the user names no place: one output folder and one cache folder.

- Outputs (reports, sweeps, training runs) go under `output_root()`: $BENDTORCH_OUT when set, else `bendtorch-out/`
  in the current directory; each command has its sub-folder (`output_dir("report")` -> bendtorch-out/report).
  A relative path a user gives is relative to the current directory, as every command line tool's.
- Caches (hypothesis's example database) go under `cache_root()`: $BENDTORCH_CACHE when set, else the user's cache
  folder (platformdirs: ~/.cache/bendtorch on Linux), never into the current directory."""

from __future__ import annotations

import os
from pathlib import Path

OUT_ENV = "BENDTORCH_OUT"
CACHE_ENV = "BENDTORCH_CACHE"
DEFAULT_OUT = "bendtorch-out"


def output_root() -> Path:
    """The folder default outputs go under (not created here)."""
    return Path(os.environ.get(OUT_ENV) or DEFAULT_OUT)


def output_dir(command: str) -> Path:
    """A command's default output folder: output_root()/command."""
    return output_root() / command


def cache_root() -> Path:
    """The folder caches go under (not created here)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("bendtorch", appauthor=False))


def cache_dir(name: str) -> Path:
    """A cache's folder: cache_root()/name, created when missing."""
    p = cache_root() / name
    p.mkdir(parents=True, exist_ok=True)
    return p
