"""Sealed chunk files: a range sweep's resumable cache, OUT/FUNCTION/chunks/LIB/chunk_LO.npz, one per library and
chunk of positive patterns, and the folder's manifest.json; and the lock that keeps two sweeps out of one folder.

A chunk file holds one library's accumulators on [lo, hi) and a seal (the array `_seal`: JSON naming the checker's
chunk layout version, the function, the library, the digest of the chunks' key (bendtorch.reports.sweep.keys), the
range, and the sha256 of every other array's name, dtype, shape and bytes), the way a checkpoint's manifest seals
its state. A chunk is reused only when every check passes: a regular file of a size a chunk of its range can have,
an .npz read with numpy's loader without pickles, exactly the arrays of the layout with their dtypes and shapes,
and the seal equal to what this sweep expects, digest included. Any other file in a chunk's place (swapped from
another range, truncated, empty, not an .npz, a key missing, another dtype or shape, a directory or a link) is
recomputed, and the sweep says so. The manifest names the range, chunk size and key of the folder's chunks: another
range or chunk size is another sweep's folder (an error naming --fresh); another key discards the chunks; a manifest
that cannot be read is rewritten (each chunk is then checked on its own seal).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from bendtorch.reports.sweep.errors import SweepError, shown
from bendtorch.reports.sweep.kernels import NB, NXB

CHUNK_VERSION = 2
SEAL = "_seal"
LOCK_FILE = ".sweep.lock"
MANIFEST = "manifest.json"
MANIFEST_MAX = 1 << 16         # bytes: a manifest is a few hundred
MISS_CAP = 4096                # misrounded inputs listed per chunk and library (all of them counted)
_FIXED_BYTES = 4 << 20         # a chunk's arrays of fixed size, the .npz's headers and the seal, with room to spare


@dataclass(frozen=True)
class Expect:
    """What a chunk file must be: its function, library, key digest, range, and the function's pieces and ties."""

    function: str
    library: str
    key: str
    lo: int
    hi: int
    npieces: int
    half_x: bool

    def seal(self) -> dict[str, Any]:
        return {"version": CHUNK_VERSION, "function": self.function, "library": self.library, "key": self.key,
                "lo": self.lo, "hi": self.hi}

    def max_bytes(self) -> int:
        """The most bytes a chunk of this range can hold, its arrays uncompressed (the hard cases are at most two
        per pattern: an int64 and a bool each)."""
        return _FIXED_BYTES + 18 * (self.hi - self.lo) + 12 * MISS_CAP


def chunk_path(d: Path, lo: int) -> Path:
    return d / f"chunk_{lo:08x}.npz"


def arrays_digest(arrays: Mapping[str, Any]) -> str:
    """sha256 over the arrays' names (sorted), dtypes, shapes and bytes."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}\n".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def write_chunk(path: Path, acc: Mapping[str, Any], e: Expect) -> None:
    """One library's accumulators on e's range, sealed, written atomically (records.durable)."""
    from bendtorch.records.durable import write_npz

    seal = {**e.seal(), "arrays_sha256": arrays_digest(acc)}
    clear(path)
    write_npz(path, {**acc, SEAL: np.frombuffer(json.dumps(seal, sort_keys=True).encode(), dtype=np.uint8)})


def clear(path: Path) -> None:
    """Remove what stands in a chunk file's place and is not a file (a directory, a link: never followed)."""
    if os.path.islink(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def _layout(e: Expect) -> dict[str, tuple[str, tuple[int, ...] | None]]:
    """Each array's dtype and shape (None: one dimension, checked against the others below)."""
    p = e.npieces
    fixed: dict[str, tuple[str, tuple[int, ...] | None]] = {
        "cnt": ("i8", (2, p, 4)), "maxu": ("f8", (2, p)), "argb": ("i8", (2, p)), "maxabs": ("f8", (1,)),
        "hist": ("i8", (NB,)), "bmax": ("f8", (2, NXB)), "nanst": ("i8", (3,)), "symv": ("i8", (1,)),
        "spn": ("i8", (3,)), "spbad": ("i8", (3,)), "submax": ("f8", (1,)), "twin_diff": ("i8", (1,)),
        "hard_f64_err": ("f8", (1,)), "n_patterns": ("i8", (1,)), "seconds": ("f8", (1,)), "miss_n": ("i8", (1,)),
        "miss": ("i8", None), "miss_want": ("u4", None), "hard_bits": ("i8", None), "hard_flip": ("b1", None),
        SEAL: ("u1", None)}
    if e.half_x:
        fixed["half_x_ties"] = ("i8", (2,))
    return fixed


def _check_arrays(z: dict[str, Any], e: Expect) -> str | None:
    want = _layout(e)
    if set(z) != set(want):
        missing, extra = sorted(set(want) - set(z)), sorted(set(z) - set(want))
        return f"arrays {'missing ' + ', '.join(missing) if missing else ''}{' ' if missing and extra else ''}" \
               f"{'not of a chunk ' + ', '.join(extra) if extra else ''}"
    for k, (dt, shape) in want.items():
        a = z[k]
        if a.dtype != np.dtype(dt) or (shape is not None and a.shape != shape) or (shape is None and a.ndim != 1):
            return f"array {k} is {a.dtype} {a.shape}, a chunk's is {np.dtype(dt)} {shape or '(n,)'}"
    n = e.hi - e.lo
    k = z["miss"].size
    if int(z["n_patterns"][0]) != n:
        return f"{int(z['n_patterns'][0])} patterns, the range has {n}"
    if z["miss_want"].size != k or k != min(int(z["miss_n"][0]), MISS_CAP):
        return "its list of misrounded inputs does not match its count"
    if z["hard_flip"].size != z["hard_bits"].size or z["hard_bits"].size > 2 * n:
        return "its hard cases do not match"
    return None


def _read_bounded(path: Path, bound: int) -> tuple[bytes | None, str]:
    """A regular file's bytes, at most `bound` of them, opened without following a link or blocking on a fifo."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, "missing"
    except OSError as err:
        return None, f"cannot be read ({err.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return None, "a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file"
    if st.st_size == 0:
        return None, "empty"
    if st.st_size > bound:
        return None, f"{st.st_size} bytes, more than the {bound} it can hold"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None, "not a regular file"
            data = f.read(bound + 1)
    except OSError as err:
        return None, f"cannot be read ({err.strerror})"
    if len(data) > bound:
        return None, f"more than the {bound} bytes it can hold"
    return data, ""


def read_chunk(path: Path, e: Expect) -> tuple[dict[str, Any] | None, str]:
    """(the chunk's accumulators, "") when every check passes, else (None, the first check it fails)."""
    bound = e.max_bytes()
    data, why = _read_bounded(path, bound)
    if data is None:
        return None, why
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            raw = sum(i.file_size for i in zf.infolist())
        if raw > bound:
            return None, f"its arrays take {raw} bytes, more than the {bound} a chunk's can"
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            z = {k: npz[k] for k in npz.files}
    except Exception as err:  # noqa: BLE001  (any way a file fails to be an .npz: it is recomputed)
        return None, f"not a readable .npz ({type(err).__name__})"
    bad = _check_arrays(z, e)
    if bad:
        return None, bad
    try:
        seal = json.loads(z.pop(SEAL).tobytes().decode())
    except (UnicodeDecodeError, ValueError):
        return None, "its seal is not JSON"
    if not isinstance(seal, dict):
        return None, "its seal is not a JSON object"
    want = e.seal()
    for k, v in want.items():
        if seal.get(k) != v:
            got = seal.get(k)
            if k in ("lo", "hi") and isinstance(got, int):
                return None, f"sealed for [0x{seal.get('lo', 0):08x}, 0x{seal.get('hi', 0):08x}), not " \
                             f"[0x{e.lo:08x}, 0x{e.hi:08x})"
            return None, f"sealed with {k} {str(got)[:16]!r}, this sweep's is {str(v)[:16]!r}"
    if seal.get("arrays_sha256") != arrays_digest(z):
        return None, "its arrays do not match their digest"
    return z, ""


def read_json(path: Path, bound: int = MANIFEST_MAX) -> tuple[Any, str]:
    """(a small JSON file's document, "") or (None, why not): bounded, never a traceback."""
    data, why = _read_bounded(path, bound)
    if data is None:
        return None, why
    try:
        return json.loads(data.decode("utf-8")), ""
    except (UnicodeDecodeError, ValueError) as err:
        return None, f"not JSON ({type(err).__name__})"


def open_dir(d: Path, function: str, library: str, key: str, lo: int, hi: int, chunk: int) -> str | None:
    """Prepare a library's chunk folder for a sweep of [lo, hi) in chunks of `chunk` under `key`; returns a note
    for the run's stderr line when its chunks cannot be trusted as they stand (None when they can be checked)."""
    from bendtorch.records.durable import TMP_PREFIX, ensure_dir, write_json

    if os.path.islink(d) or (os.path.lexists(d) and not os.path.isdir(d)):
        os.unlink(d)
    ensure_dir(d)
    manifest = {"version": CHUNK_VERSION, "function": function, "library": library, "lo": lo, "hi": hi,
                "chunk": chunk, "key": key}
    mpath = d / MANIFEST
    old, why = read_json(mpath)
    note = None
    layout = ("function", "library", "lo", "hi", "chunk")
    if why and why != "missing":
        note = f"{library}: its chunk manifest is {why}: rewritten"
        clear(mpath)
    elif isinstance(old, dict) and {k: old.get(k) for k in layout} != {k: manifest[k] for k in layout}:
        was = ", ".join(f"{k} {old.get(k)}" for k in layout[2:])
        raise SweepError(f"{shown(d)} holds chunks of another sweep ({was}); use --fresh or another --out")
    elif old is not None and (not isinstance(old, dict) or old.get("key") != key
                              or old.get("version") != CHUNK_VERSION):
        note = f"{library}: its chunks were made under another key: recomputed"
        for p in d.glob("chunk_*.npz"):
            clear(p)
            if p.is_file():
                p.unlink()
    if old != manifest:
        write_json(mpath, manifest)
    for tmp in d.glob(TMP_PREFIX + "chunk_*"):
        tmp.unlink()
    return note


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold OUT/.sweep.lock for the duration (filelock); SweepError at once when another sweep holds it."""
    from filelock import FileLock, Timeout

    p = out / LOCK_FILE
    if os.path.islink(p) or os.path.isdir(p):
        raise SweepError(f"--out {shown(out)}: {shown(p)} is not a lock file (a link or a folder)")
    lock = FileLock(str(p))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise SweepError(f"--out {shown(out)}: in use by another sweep (lock {shown(p)} is held)") from None
    try:
        yield
    finally:
        lock.release()
