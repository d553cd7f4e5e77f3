"""Durable output: every file the harness writes goes through this module, so every writer has the same guarantees.

- Atomic: the bytes go to a temporary file in the destination's folder (its name starts with TMP_PREFIX), are
  flushed and fsynced, the file is renamed over the destination, and the folder is fsynced, so a reader (or a crash)
  sees the old file or the new one, never a part. The temporary file is removed on any error, Ctrl-C included.
- Never through a link: a destination that is a symbolic link is refused (OutputError, one line naming the file)
  before anything is written; `refuse_links` checks a whole output folder up front, before work, and
  `check_targets` checks what a command will write there: no link, a file where a file goes, a folder where a
  folder goes.
- A destination whose folder does not exist is refused naming the folder (not the temporary file).
- One JSON encoding (`jsonable`): numpy scalars and arrays, paths and tuples become JSON, anything else is an error
  rather than a silent `str()`.
- Files get the mode open() would give them under the process's umask (mkstemp's 0600 would hide a committed result
  from other users).
"""

from __future__ import annotations

import io
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from bendtorch.records.files import shown

TMP_PREFIX = ".tmp-"  # every temporary file or folder the harness writes starts with it


class OutputError(Exception):
    """An output the harness refuses to write (a symbolic link in its place, a folder where a file belongs): one
    line naming the path and the reason."""


def output_mode(directory: bool = False) -> int:
    """The mode a file (or folder) created with open() (mkdir) gets under the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


def refuse_link(path: str | os.PathLike[str], what: str = "output") -> None:
    """OutputError if path is a symbolic link (a write there would replace or follow it) or a folder."""
    p = os.fspath(path)
    if os.path.islink(p):
        raise OutputError(f"{what} {shown(p)}: is a symbolic link; refusing to write through it")
    if os.path.isdir(p):
        raise OutputError(f"{what} {shown(p)}: is a directory, not a file")


def refuse_links(folder: str | os.PathLike[str], names: Iterable[str]) -> None:
    """OutputError for the first of folder/NAME that is a symbolic link: the check a command makes before any work
    on every file and folder it will write there."""
    for name in names:
        p = os.path.join(os.fspath(folder), name)
        if os.path.islink(p):
            raise OutputError(f"output {shown(p)}: is a symbolic link; refusing to write through it")


def check_targets(folder: str | os.PathLike[str], files: Iterable[str] = (), folders: Iterable[str] = ()) -> None:
    """OutputError for the first of folder/NAME that cannot be written as planned: a symbolic link (a write would
    follow or replace it), something other than a regular file where a file will be written (a directory, a fifo,
    a device, a socket), something other than a directory where a folder will be published. Absent is fine."""
    base = os.fspath(folder)
    for name, want_dir in [(n, False) for n in files] + [(n, True) for n in folders]:
        p = os.path.join(base, name)
        try:
            mode = os.lstat(p).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(mode):
            raise OutputError(f"output {shown(p)}: is a symbolic link; refusing to write through it")
        if want_dir and not stat.S_ISDIR(mode):
            raise OutputError(f"output {shown(p)}: exists and is not a directory")
        if not want_dir and not stat.S_ISREG(mode):
            raise OutputError(f"output {shown(p)}: exists and is not a regular file")


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync a folder, so a rename in it is durable."""
    fd = os.open(os.fspath(folder), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """data into path, atomically, never through a link (see the module's docstring)."""
    target = os.fspath(path)
    refuse_link(target)
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise OutputError(f"output {shown(target)}: folder {shown(folder)} "
                          f"{'is not a directory' if os.path.lexists(folder) else 'does not exist'}")
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX + os.path.basename(target) + "-", dir=folder)
    try:
        os.chmod(tmp, output_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """text (UTF-8) into path, atomically."""
    write_bytes(path, text.encode("utf-8"))


def jsonable(o: Any) -> Any:
    """The JSON encoder's `default`: numpy booleans, integers, floats and arrays, and paths; a TypeError naming the
    type for anything else (a value that cannot be read back is a bug, not a string)."""
    import numpy as np

    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    raise TypeError(f"not JSON: {type(o).__name__}")


def json_text(doc: Any, indent: int | None = 1) -> str:
    """doc as JSON text with the one encoder (jsonable), ending in a newline."""
    return json.dumps(doc, indent=indent, default=jsonable) + "\n"


def as_json(doc: Any) -> Any:
    """doc as a reader of its JSON sees it (tuples lists, numpy values plain): what a schema validates."""
    return json.loads(json_text(doc, indent=None))


def write_json(path: str | os.PathLike[str], doc: Any, indent: int | None = 1) -> None:
    """doc as JSON into path, atomically. A document the harness publishes carries `schema_version` (its schema is
    records/schemas/NAME.schema.json); this function writes what it is given."""
    write_bytes(path, json_text(doc, indent).encode("utf-8"))


def write_npz(path: str | os.PathLike[str], arrays: Mapping[str, Any], compressed: bool = True) -> None:
    """Arrays into an .npz at path, atomically (numpy's format; read back with allow_pickle=False)."""
    import numpy as np

    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    write_bytes(path, buf.getvalue())


def save_figure(fig: Any, path: str | os.PathLike[str], dpi: int = 110) -> None:
    """A matplotlib figure as PNG at path, atomically (rendered in memory, then written), and closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    write_bytes(path, buf.getvalue())


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """path as a folder (made with its parents when missing); OutputError if it exists as something else."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"output {p}: exists and is not a directory")
    p.mkdir(parents=True, exist_ok=True)
    return p
