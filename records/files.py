"""Bounded reading: every file the harness reads is opened here, as what its format says it is.

- A regular file. A directory, a fifo, a device or a socket is refused (one line naming the file and what it is).
  The type is checked with stat before the file is opened (so a device is never opened) and again with fstat on the
  open descriptor, which is opened with O_NONBLOCK: a fifo put in its place between the two cannot block the open.
- Not through a symbolic link where the format forbids one (`follow=False`: lstat first, then O_NOFOLLOW).
- Its size checked before any byte is read: against an exact size (what a manifest records) or a bound (what a
  header or a model allows). A file over its bound is one line naming the file, its size and the bound; a 64 GiB
  sparse file costs one fstat, never a read.
- Read in pieces of at most PIECE bytes into one buffer of the size fstat gave; a file that grows or shrinks while
  it is read is refused, never returned in part.

Each reader takes the exception type its caller reports (`error=`, a CheckpointError for a checkpoint, a usage
error for a command's option), so a refusal reads as the caller's own. Paths in messages go through `shown`: bytes
that are not UTF-8 and control characters are escaped, so a message stays one printable line.

`available_memory` says how many bytes this process may still allocate (the machine's available memory, the
address-space and data limits of `ulimit`, the control group's limit): the bound a command compares its memory
estimate with before it allocates.
"""

from __future__ import annotations

import hashlib
import os
import resource
import stat
from types import TracebackType

PIECE = 1 << 24  # 16 MiB: the most one read() asks for


class InputError(ValueError):
    """A file the harness refuses to read: one line naming the file and the reason."""


def shown(path: str | bytes | os.PathLike[str]) -> str:
    """path as one printable line: bytes that are not UTF-8 as \\xNN (as the shell's $'...' writes them), control
    characters (a newline in a name) as \\xNN too."""
    raw = path if isinstance(path, bytes) else os.fsencode(path)
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else c.encode(
        "unicode_escape").decode("ascii") for c in text)


def human(n: int) -> str:
    """A byte count for a reader: 68719476736 -> '64.0 GiB'."""
    size, unit = float(n), "bytes"
    for u in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, u
    return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"


def kind(mode: int) -> str:
    """What a stat mode says a path is, as a message says it."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a fifo"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str | os.PathLike[str], label: str = "", follow: bool = True,
                  error: type[Exception] = InputError) -> os.stat_result:
    """The stat of path if it is a regular file (through links unless follow=False); error(one line) otherwise:
    missing, a directory, a fifo, a device, a socket, a link where none may be, or unreadable metadata."""
    name = f"{label}{shown(path)}"
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        dangling = follow and os.path.islink(path)
        raise error(f"{name}: {'a symbolic link to nothing' if dangling else 'no such file'}") from None
    except OSError as e:
        raise error(f"{name}: cannot read: {e.strerror or e}") from None
    if stat.S_ISLNK(st.st_mode):
        raise error(f"{name}: is a symbolic link; this file is read only as a regular file, never through a link")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name}: is {kind(st.st_mode)}, not a regular file")
    return st


class Reader:
    """A regular file opened for reading (see the module's docstring); its size is fstat's at opening."""

    def __init__(self, path: str | os.PathLike[str], label: str, follow: bool, error: type[Exception]) -> None:
        self.name = f"{label}{shown(path)}"
        self.error = error
        check_regular(path, label, follow, error)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        if not follow:
            flags |= getattr(os, "O_NOFOLLOW", 0)
        try:
            self.fd = os.open(path, flags)
        except OSError as e:
            raise error(f"{self.name}: cannot open: {e.strerror or e}") from None
        st = os.fstat(self.fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the stat and the open
            os.close(self.fd)
            raise error(f"{self.name}: is {kind(st.st_mode)}, not a regular file")
        self.size = st.st_size

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def fail(self, problem: str) -> Exception:
        """The caller's error type with one line about this file."""
        return self.error(f"{self.name}: {problem}")

    def bound(self, most: int, what: str) -> Reader:
        """This reader, if the file holds at most `most` bytes; an error naming its size and the bound otherwise."""
        if self.size > most:
            raise self.fail(f"{human(self.size)}, over the bound of {human(most)} for {what}")
        return self

    def expect(self, size: int, why: str) -> Reader:
        """This reader, if the file holds exactly `size` bytes; an error naming both sizes otherwise."""
        if self.size != size:
            raise self.fail(f"{self.size} bytes, {why} {size}")
        return self

    def read_at(self, offset: int, n: int) -> bytearray:
        """n bytes from offset, in pieces of at most PIECE, into one buffer (no second copy); the range must lie
        inside the size seen at opening."""
        if offset < 0 or n < 0 or offset + n > self.size:
            raise self.fail(f"bytes {offset} to {offset + n} lie outside the file's {self.size} bytes")
        buf = bytearray(n)
        view = memoryview(buf)
        done = 0
        while done < n:
            try:
                got = os.preadv(self.fd, [view[done:done + PIECE]], offset + done)
            except OSError as e:
                raise self.fail(f"cannot read: {e.strerror or e}") from None
            if got == 0:
                raise self.fail(f"ended at byte {offset + done} while being read (it was {self.size} bytes)")
            done += got
        return buf

    def read_all(self) -> bytearray:
        """The whole file (its size already checked by the caller), refused if it grew while being read."""
        data = self.read_at(0, self.size)
        if os.pread(self.fd, 1, self.size):
            raise self.fail(f"grew past {self.size} bytes while being read")
        return data

    def sha256(self) -> str:
        """SHA-256 of the whole file, read in pieces (memory: one piece)."""
        h = hashlib.sha256()
        for off in range(0, self.size, PIECE):
            h.update(self.read_at(off, min(PIECE, self.size - off)))
        return h.hexdigest()


def open_regular(path: str | os.PathLike[str], label: str = "", follow: bool = True,
                 error: type[Exception] = InputError) -> Reader:
    """path opened as a regular file (a Reader; use it in a with block). label prefixes the name in messages
    (an option, `--data `); follow=False refuses a symbolic link; error is the exception type raised."""
    return Reader(path, label, follow, error)


def read_bounded(path: str | os.PathLike[str], most: int, what: str, label: str = "", follow: bool = True,
                 error: type[Exception] = InputError) -> bytearray:
    """The bytes of a regular file of at most `most` bytes (what: the kind of file the bound is for)."""
    with open_regular(path, label, follow, error) as f:
        return f.bound(most, what).read_all()


def read_exact(path: str | os.PathLike[str], size: int, why: str, label: str = "", follow: bool = True,
               error: type[Exception] = InputError) -> bytearray:
    """The bytes of a regular file that must hold exactly `size` bytes (why: who says so, e.g. 'the manifest
    says')."""
    with open_regular(path, label, follow, error) as f:
        return f.expect(size, why).read_all()


# ---------------------------------------------------------------------------------------------------------------
# what this process may still allocate
# ---------------------------------------------------------------------------------------------------------------


def _cgroup_room() -> int | None:
    """The control group's memory limit less its use (cgroup v2), or None where there is none."""
    try:
        with open("/proc/self/cgroup", "rb") as f:
            line = next((x for x in f.read(1 << 16).splitlines() if x.startswith(b"0::")), None)
        if line is None:
            return None
        base = "/sys/fs/cgroup" + os.fsdecode(line[3:].strip())
        with open(os.path.join(base, "memory.max"), "rb") as f:
            most = f.read(64).strip()
        if most == b"max":
            return None
        with open(os.path.join(base, "memory.current"), "rb") as f:
            used = int(f.read(64).strip())
        return int(most) - used
    except (OSError, ValueError):
        return None


def available_memory() -> tuple[int, str]:
    """(the bytes this process may still allocate, what sets that figure): the least of the machine's available
    memory (psutil), the address-space limit (`ulimit -v`) and the data-segment limit (`ulimit -d`) less what the
    process holds of each, and the control group's limit less its use."""
    import psutil

    rooms = [(int(psutil.virtual_memory().available), "available memory")]
    mem = psutil.Process().memory_info()
    for lim, used, what in ((resource.RLIMIT_AS, mem.vms, "the address-space limit (ulimit -v)"),
                            (resource.RLIMIT_DATA, getattr(mem, "data", 0), "the data-size limit (ulimit -d)")):
        soft = resource.getrlimit(lim)[0]
        if soft != resource.RLIM_INFINITY:
            rooms.append((max(0, soft - int(used)), what))
    cg = _cgroup_room()
    if cg is not None:
        rooms.append((max(0, cg), "the control group's memory limit"))
    return min(rooms)
