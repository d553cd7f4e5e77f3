"""The checker's one error type and how it shows a path in a message or a document."""

from __future__ import annotations

import os


class SweepError(Exception):
    """A sweep that cannot start or go on for a reason the user can act on (a bad library, a folder in use or holding
    another sweep's chunks, an unreachable Dask scheduler, a request larger than the memory): one line. The command
    line shows it as a usage error (exit code 2)."""


def shown(path: str | os.PathLike[str]) -> str:
    """A path as text that any output can carry: bytes that are not UTF-8 (a file name with b'\\xff') become \\xff."""
    return os.fspath(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
