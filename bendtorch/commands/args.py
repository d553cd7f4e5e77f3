"""Argument types and checks shared by every subcommand. A user's mistake is a `UsageError`: the command line prints
it as one line on stderr and exits with code 2, before any work is done."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Callable


class UsageError(Exception):
    """A bad argument, file or directory named by the user: one line on stderr, exit code 2, no traceback."""


def int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi] (hi = None: no upper bound)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise argparse.ArgumentTypeError(f"{v} is out of range: must be {rng}")
        return v
    parse.__name__ = "integer"
    return parse


def float_in(lo: float, hi: float, lo_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite float in [lo, hi] ((lo, hi] with lo_open)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
            raise argparse.ArgumentTypeError(f"{text} is out of range: must be in {'(' if lo_open else '['}{lo}, {hi}]")
        return v
    parse.__name__ = "number"
    return parse


def utf8_path(path: Path, what: str) -> Path:
    """path itself, or a UsageError when its name is not valid UTF-8 (bytes the file system allows but the reports,
    JSON documents and messages that name the path cannot hold)."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = ascii(os.fsencode(path))[2:-1]
        raise UsageError(f"{what} {shown}: the path is not valid UTF-8; choose a UTF-8 name") from None
    return path


def default_out(path: Path | None, command: str) -> Path:
    """The --out given, or the command's default output folder (records.paths.output_dir: bendtorch-out/COMMAND,
    or $BENDTORCH_OUT/COMMAND)."""
    if path is not None:
        return path
    from bendtorch.records.paths import output_dir

    return output_dir(command)


def writable_dir(path: Path, what: str = "--out") -> Path:
    """Create path (and its parents) if missing and probe that a file can be written there; UsageError otherwise."""
    utf8_path(path, what)
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{what} {path}: exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".bendtorch-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{what} {path}: not writable ({e.strerror or e})") from None
    return path


def json_target(path: Path, what: str = "--json") -> Path:
    """A JSON file to be written: its directory must exist and be writable; UsageError otherwise."""
    utf8_path(path, what)
    parent = path.parent if str(path.parent) else Path(".")
    if os.path.isdir(path):
        raise UsageError(f"{what} {path}: is a directory, not a file")
    if os.path.islink(path):
        raise UsageError(f"{what} {path}: is a symbolic link; refusing to write through it")
    if not os.path.isdir(parent):
        raise UsageError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{what} {path}: directory {parent} is not writable")
    return path


def will_be_writable(path: Path, what: str = "--out") -> Path:
    """writable_dir without creating anything: path is a writable directory, or the nearest part of it that exists
    is one (probed with a file written and removed there); UsageError otherwise."""
    utf8_path(path, what)
    base = path
    while not os.path.exists(base) and base != base.parent:  # os.path: False, not an error, where access is denied
        base = base.parent
    if not os.path.isdir(base):
        raise UsageError(f"{what} {path}: {base} exists and is not a directory")
    try:
        probe = base / f".bendtorch-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{what} {path}: {base} is not writable ({e.strerror or e})") from None
    return path
