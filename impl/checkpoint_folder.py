"""Verified checkpoints (beyond the seed): the seed's .bin with a manifest, published together, verified before use.

A checkpoint is a folder holding `state.bin` (impl.checkpoint.train_dump's bytes, the seed's layout unchanged) and
`manifest.json` (format and version, the optimizer's kind and configuration, a digest of the model's structure, the
step, the caller's flags, the training data's SHA-256 and size, the .bin's size and SHA-256, and the manifest's own
SHA-256). The pair is written into a fresh temporary folder beside the target and published by one rename, so a
reader sees both files or neither, and a crash leaves the previous checkpoint as it was. `load_checkpoint` verifies
all of it before any state changes; both files are read as regular files, never through a link, their sizes
checked before a byte is read (the manifest against MANIFEST_BOUND, the .bin against the size its manifest records
and the most the model's state can take). docs/checkpoints.md has the format and the order of the checks.

One run per output folder: `hold_folder` takes a file lock there (OUT/.bendtorch.lock) for the whole run, and
`remove_stale` clears what a killed run left (temporary names starting with TMP_PREFIX) once the lock is held.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from contextlib import contextmanager
from typing import Any, Iterator, TypeVar

import numpy as np
import numpy.typing as npt

from bendtorch.impl.checkpoint import (CheckpointError, le_bytes, max_state_bytes, restore_from, train_dump,
                                       train_dump_parts)
from bendtorch.impl.protocol import Layer, Packed, PLeaf, PLeafV, PNode, PTree, TwoMom
from bendtorch.impl.train import Train, train_new
from bendtorch.records import files
from bendtorch.records.durable import TMP_PREFIX, OutputError, check_targets, fsync_dir, output_mode

P = TypeVar("P")

FORMAT = "bendtorch-checkpoint"
FORMAT_VERSION = 2  # 2: the manifest records the training data ("data"); version 1 did not
READS = (1, 2)  # the versions read_manifest accepts (a version 1 manifest has no "data" field)
STATE_FILE = "state.bin"
MANIFEST_FILE = "manifest.json"
MANIFEST_BOUND = 1 << 20  # a manifest is a few KB; its flags and data path are bounded by the system's path length
CKPT_TMP_PREFIX = TMP_PREFIX + "ckpt-"
LOCK_FILE = ".bendtorch.lock"
_HEX64 = re.compile(r"[0-9a-f]{64}")


class FolderInUse(RuntimeError):
    """Another process holds the output folder's lock."""


def structure_digest(m: Layer[P, Any, Any, Any]) -> str:
    """SHA-256 of the model's description, its parameter count and the structure of its parameters (nesting,
    shapes, dtypes): two models with the same digest read the same .bin the same way."""
    h = hashlib.sha256()
    h.update(m.name.encode())
    h.update(f"|count={m.count()}|".encode())

    def walk(x: Any) -> None:
        if isinstance(x, np.ndarray):
            h.update(f"A{x.shape}{x.dtype.str};".encode())
        elif isinstance(x, tuple):
            h.update(b"(")
            for y in x:
                walk(y)
            h.update(b")")
        else:
            h.update(f"{type(x).__name__};".encode())

    walk(m.zeros())
    return h.hexdigest()


def optimizer_record(cfg: Any) -> dict[str, Any]:
    """The optimizer's kind and its configuration, each number as its float32 bits (exact) and as a decimal (for
    the reader)."""
    fields: dict[str, Any] = {}
    for k, v in sorted(vars(cfg).items()):
        if isinstance(v, (bool, np.bool_)):
            fields[k] = bool(v)
        else:
            fields[k] = {"bits": f"{int(np.float32(v).view(np.uint32)):08x}", "value": float(v)}
    return {"kind": type(cfg).__name__, "config": fields}


def data_record(sha256: str, size: int, path: str) -> dict[str, Any]:
    """What a manifest records of the training data: the SHA-256 and size of its bytes (what is compared), and
    where they were read from (for the message only: the same bytes under another path are the same data)."""
    return {"sha256": sha256, "bytes": int(size), "path": path}


def _canonical(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n").encode()


def _seal(body: dict[str, Any]) -> bytes:
    """The manifest's bytes: the body and the SHA-256 of the body's canonical bytes, itself in canonical form."""
    return _canonical({**body, "manifest_sha256": hashlib.sha256(_canonical(body)).hexdigest()})


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system has no such call."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return int(fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)) == 0


def save_checkpoint(m: Layer[P, Any, Any, Any], cfg: Any, tr: Train[P], path: str | os.PathLike[str], step: int,
                    flags: dict[str, Any] | None = None, data: dict[str, Any] | None = None) -> str:
    """The training state as a checkpoint folder at path (state.bin in the seed's layout, manifest.json), published
    atomically: written into a fresh temporary folder beside path, then renamed onto it (an existing checkpoint at
    path is swapped out in one step where the system allows, then removed). data: the training data's record
    (data_record), or None for a state trained on no file. A symbolic link or a file at path is refused
    (OutputError) before anything is written. Returns the folder's path."""
    target = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(target)
    check_targets(parent, folders=[os.path.basename(target)])
    body = {"format": FORMAT, "version": FORMAT_VERSION, "step": int(step), "optimizer": optimizer_record(cfg),
            "state": type(tr.st).__name__, "model": {"structure_sha256": structure_digest(m), "count": m.count()},
            "flags": dict(flags or {}), "data": data}
    tmp = tempfile.mkdtemp(prefix=CKPT_TMP_PREFIX + os.path.basename(target) + "-", dir=parent)
    try:
        os.chmod(tmp, output_mode(directory=True))
        h, size = hashlib.sha256(), 0
        with open(os.path.join(tmp, STATE_FILE), "wb") as f:  # one part of the state at a time, hashed as written
            for part in train_dump_parts(m, tr):
                cells = le_bytes(part)
                f.write(cells)
                h.update(cells)
                size += cells.nbytes
            f.flush()
            os.fsync(f.fileno())
        body["bin"] = {"file": STATE_FILE, "bytes": size, "sha256": h.hexdigest()}
        with open(os.path.join(tmp, MANIFEST_FILE), "wb") as f:
            f.write(_seal(body))
            f.flush()
            os.fsync(f.fileno())
        for name in (STATE_FILE, MANIFEST_FILE):
            os.chmod(os.path.join(tmp, name), output_mode())
        fsync_dir(tmp)
        if not os.path.lexists(target):
            os.rename(tmp, target)  # fails rather than merge if another writer got there first
        elif os.path.islink(target):  # planted since the check above: never swap a link in
            raise OutputError(f"output {files.shown(target)}: is a symbolic link; refusing to write through it")
        elif _exchange(tmp, target):
            shutil.rmtree(tmp)  # tmp now holds the old checkpoint
        else:  # no atomic swap on this system: the old checkpoint moves aside, then the new one takes its name
            old = tempfile.mkdtemp(prefix=CKPT_TMP_PREFIX + "old-", dir=parent)
            os.rmdir(old)
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(parent)
    return target


def _folder_of(name: str) -> str:
    """The checkpoint folder a --resume path names: the folder itself, or the folder of its state.bin or
    manifest.json."""
    if os.path.isdir(name):
        return name
    if not os.path.lexists(name):
        raise CheckpointError(f"{files.shown(name)}: no checkpoint there")
    mode = os.stat(name).st_mode if os.path.exists(name) else os.lstat(name).st_mode
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"{files.shown(name)}: is {files.kind(mode)}, not a checkpoint folder")
    folder = os.path.dirname(os.path.abspath(name))
    if os.path.basename(name) not in (STATE_FILE, MANIFEST_FILE) or \
            not os.path.lexists(os.path.join(folder, MANIFEST_FILE)):
        raise CheckpointError(f"{files.shown(name)}: a bare file without a bendtorch manifest: its numbers cannot be "
                              f"verified (a checkpoint is a folder with {STATE_FILE} and {MANIFEST_FILE}; "
                              f"impl.checkpoint.train_restore reads a bare seed-format file, verifying nothing)")
    return folder


def read_manifest(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """(the checkpoint folder, its verified manifest body) for a checkpoint folder or a file inside one. Every
    check that fails raises CheckpointError with one line naming the file and the field. A version 1 manifest is
    read too; its body has no "data" (the caller decides what that means)."""
    folder = _folder_of(os.fspath(path))
    mpath = os.path.join(folder, MANIFEST_FILE)
    shown = files.shown(mpath)
    raw = files.read_bounded(mpath, MANIFEST_BOUND, "a checkpoint manifest", follow=False, error=CheckpointError)
    try:
        doc = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CheckpointError(f"{shown}: not a manifest: not ASCII JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"{shown}: not a manifest: a JSON {type(doc).__name__}, not an object")
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"{shown}: not a manifest: format is {doc.get('format')!r:.80}, not {FORMAT!r}")
    if doc.get("version") not in READS or isinstance(doc.get("version"), bool):
        raise CheckpointError(f"{shown}: manifest version {doc.get('version')!r:.80}, this bendtorch reads versions "
                              f"{' and '.join(map(str, READS))}")
    try:
        canonical = _canonical(doc)
    except ValueError:
        canonical = b""
    if canonical != raw:
        raise CheckpointError(f"{shown}: the manifest's bytes were changed (they are not the canonical form "
                              f"bendtorch writes)")
    body = {k: v for k, v in doc.items() if k != "manifest_sha256"}
    if doc.get("manifest_sha256") != hashlib.sha256(_canonical(body)).hexdigest():
        raise CheckpointError(f"{shown}: manifest_sha256 does not match the manifest's contents")
    step = body.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise CheckpointError(f"{shown}: step must be an integer >= 0, found {step!r:.80}")
    for key, typ in (("optimizer", dict), ("model", dict), ("flags", dict), ("bin", dict), ("state", str)):
        if not isinstance(body.get(key), typ):
            raise CheckpointError(f"{shown}: field {key!r} missing or not a JSON {typ.__name__}")
    if body["version"] >= 2:
        d = body.get("data", "missing")
        if d is not None and not (isinstance(d, dict) and isinstance(d.get("sha256"), str)
                                  and _HEX64.fullmatch(d["sha256"]) and isinstance(d.get("bytes"), int)
                                  and not isinstance(d["bytes"], bool) and d["bytes"] >= 0
                                  and isinstance(d.get("path"), str)):
            raise CheckpointError(f"{shown}: field 'data' missing or not a record of the training data (sha256, "
                                  f"bytes, path) or null")
    return folder, body


def read_bin(folder: str, body: dict[str, Any], most: int) -> tuple[str, bytearray]:
    """(the path, the bytes) of the checkpoint's state.bin: a regular file, not a link, of the size its manifest
    (body) records, that size at most `most` bytes (what the model's state can take), checked before any read;
    then its SHA-256 against the manifest's."""
    b = body["bin"]
    bpath = os.path.join(folder, STATE_FILE)
    mshown = files.shown(os.path.join(folder, MANIFEST_FILE))
    if b.get("file") != STATE_FILE:
        raise CheckpointError(f"{mshown}: bin.file is {b.get('file')!r:.80}, not {STATE_FILE!r}")
    size = b.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= most:
        raise CheckpointError(f"{mshown}: bin.bytes is {size!r:.80}; this model's state takes at most {most} bytes")
    with files.open_regular(bpath, follow=False, error=CheckpointError) as f:
        raw = f.expect(size, "the manifest says").read_all()
    if hashlib.sha256(raw).hexdigest() != b.get("sha256"):
        raise CheckpointError(f"{files.shown(bpath)}: SHA-256 does not match the manifest (the file was changed or "
                              f"damaged)")
    return bpath, raw


def check_flags(mpath: str, saved: dict[str, Any], flags: dict[str, Any]) -> None:
    """The flags a checkpoint was written with (saved, its manifest's) are the caller's, key by key, both ways."""
    differ = [k for k in sorted(set(saved) | set(flags)) if saved.get(k, "<absent>") != flags.get(k, "<absent>")]
    if differ:
        raise CheckpointError(f"{files.shown(mpath)}: written with other flags: " + ", ".join(
            f"--{k.replace('_', '-')} {saved.get(k, '<absent>')!r:.200} (now {flags.get(k, '<absent>')!r:.200})"
            for k in differ))


def _data_text(d: dict[str, Any]) -> str:
    return f"sha256 {d['sha256']} ({d['bytes']} bytes, {files.shown(d['path'])})"


def check_data(mpath: str, body: dict[str, Any], data: dict[str, Any] | None) -> None:
    """The data a checkpoint was trained on (its manifest's record) is the caller's: the same SHA-256 and size (the
    path may differ). A version 1 manifest records no data and is refused here (a caller that accepts it says so
    itself)."""
    shown = files.shown(mpath)
    if "data" not in body:
        raise CheckpointError(f"{shown}: manifest version {body.get('version')} records no digest of the training "
                              f"data, so the data cannot be verified")
    saved = body["data"]
    if saved is None and data is None:
        return
    if saved is None or data is None:
        raise CheckpointError(f"{shown}: trained on {'no data file' if saved is None else _data_text(saved)}; "
                              f"this run has {'no data file' if data is None else _data_text(data)}")
    if (saved["sha256"], saved["bytes"]) != (data["sha256"], data["bytes"]):
        raise CheckpointError(f"{shown}: trained on other data: {_data_text(saved)}; this run's data is "
                              f"{_data_text(data)}")


def load_checkpoint(m: Layer[P, Any, Any, Any], cfg: Any, path: str | os.PathLike[str],
                    flags: dict[str, Any] | None = None, allow_nonfinite: bool = False,
                    data: dict[str, Any] | None = None, check_data_record: bool = False) -> tuple[Train[P], int]:
    """(the training state, its step) from a checkpoint folder written by save_checkpoint, for model m trained by
    cfg. Verified before anything is built: the manifest (format, version, its own SHA-256), the model's structure
    digest, the optimizer's kind and every number of its configuration, the caller's flags (each key, both ways;
    flags=None: not compared), the data record when check_data_record (data: the caller's record or None), the
    .bin's size (against the manifest and the most the state can take) and SHA-256, the seed layout's sizes and
    tree shape, and the numbers themselves (finite parameters and moments, second moments >= 0, q1 and q2 in
    [0, 1]; allow_nonfinite skips the finiteness)."""
    folder, body = read_manifest(path)
    mpath = os.path.join(folder, MANIFEST_FILE)
    shown = files.shown(mpath)
    digest = structure_digest(m)
    if body["model"].get("structure_sha256") != digest or body["model"].get("count") != m.count():
        raise CheckpointError(f"{shown}: written for another model (structure digest "
                              f"{str(body['model'].get('structure_sha256'))[:12]}..., {body['model'].get('count')!r:.40} "
                              f"parameters; this model: {digest[:12]}..., {m.count()})")
    if flags is not None:
        check_flags(mpath, body["flags"], flags)
    if check_data_record:
        check_data(mpath, body, data)
    want = optimizer_record(cfg)
    got = body["optimizer"]
    if got.get("kind") != want["kind"]:
        raise CheckpointError(f"{shown}: written by optimizer {got.get('kind')!r:.80}, this run uses {want['kind']!r}")
    if got.get("config") != want["config"]:
        keys = sorted(set(want["config"]) | set(got.get("config") or {}))
        differ = [k for k in keys if (got.get("config") or {}).get(k) != want["config"].get(k)]
        raise CheckpointError(f"{shown}: the optimizer's configuration differs in {', '.join(differ):.200}")
    tr = train_new(m, cfg, m.zeros())
    if type(tr.st).__name__ != body["state"]:
        raise CheckpointError(f"{shown}: state kind {body['state']!r:.80}, this optimizer keeps "
                              f"{type(tr.st).__name__}")
    bpath, raw = read_bin(folder, body, max_state_bytes(m, tr.st))
    out = restore_from(m, tr, files.shown(bpath), raw)
    del raw
    _check_values(files.shown(bpath), m, out, allow_nonfinite)
    return out, int(body["step"])


def _check_packed(name: str, t: PTree, where: str, allow_nonfinite: bool) -> None:
    """A packed tree's leaves mean something: the unused half-word of an odd-length leaf 0, BF16 numbers finite
    (unless allowed), second moments >= 0."""
    if isinstance(t, PNode):
        _check_packed(name, t.a, where + ".a", allow_nonfinite)
        _check_packed(name, t.b, where + ".b", allow_nonfinite)
        return
    if not isinstance(t, (PLeaf, PLeafV)):
        return
    packed = [("m", t.m)] + ([("v", t.v)] if isinstance(t, PLeaf) else [])
    for what, words in packed:
        # element 2k in the low half of word k, 2k+1 in the high half; the half past n is never written
        h = np.stack([words & np.uint32(0xFFFF), words >> np.uint32(16)], axis=1).reshape(-1)
        if np.any(h[t.n:] != 0):
            raise CheckpointError(f"{name}: packed leaf {where}: the unused half-word of {what} is not 0")
        h = h[:t.n]
        if not allow_nonfinite and np.any((h & np.uint32(0x7F80)) == np.uint32(0x7F80)):
            raise CheckpointError(f"{name}: packed leaf {where}: a non-finite BF16 number in {what}")
        nan = ((h & np.uint32(0x7F80)) == np.uint32(0x7F80)) & ((h & np.uint32(0x7F)) != 0)  # any sign: not < 0
        if what == "v" and np.any(((h & np.uint32(0x8000)) != 0) & ((h & np.uint32(0x7FFF)) != 0) & ~nan):
            raise CheckpointError(f"{name}: packed leaf {where}: a negative BF16 second moment")
    if isinstance(t, PLeafV):
        if np.any(t.v < 0):
            raise CheckpointError(f"{name}: packed leaf {where}: a negative second moment")
        if not allow_nonfinite and not np.all(np.isfinite(t.v)):
            raise CheckpointError(f"{name}: packed leaf {where}: a non-finite second moment")


def _check_values(name: str, m: Layer[P, Any, Any, Any], tr: Train[P], allow_nonfinite: bool) -> None:
    """The numbers of a restored state mean something: q1, q2 in [0, 1]; second moments >= 0 (a NaN passes only
    with allow_nonfinite); parameters and moments finite unless allow_nonfinite."""
    n = m.count()
    xs: npt.NDArray[np.float32] = train_dump(m, tr)
    st = tr.st
    if isinstance(st, (TwoMom, Packed)):
        for q, v in (("q1", tr.p1), ("q2", tr.p2)):
            if not (0.0 <= float(v) <= 1.0) and not (allow_nonfinite and not np.isfinite(v)):
                raise CheckpointError(f"{name}: {q} = 1 - b^t must be in [0, 1], found {float(v)!r}")
    if isinstance(st, TwoMom):
        v2 = xs[2 * n:3 * n]
        if np.any(v2 < 0):
            raise CheckpointError(f"{name}: second moment v has a negative number at cell "
                                  f"{2 * n + int(np.argmax(v2 < 0))}")
    if isinstance(st, Packed):
        _check_packed(name, st.t, "t", allow_nonfinite)
    if not allow_nonfinite:
        head = xs[:n] if isinstance(st, Packed) else xs
        bad = ~np.isfinite(head)
        if np.any(bad):
            raise CheckpointError(f"{name}: non-finite number ({float(head[int(np.argmax(bad))])!r}) at cell "
                                  f"{int(np.argmax(bad))}")


@contextmanager
def hold_folder(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the output folder's lock (folder/LOCK_FILE, a file lock) while the block runs; FolderInUse at once if
    another process holds it. A link, a folder or any other non-file at the lock's name is refused (OutputError)
    rather than opened."""
    from filelock import FileLock, Timeout

    check_targets(folder, files=[LOCK_FILE])
    lock = FileLock(os.path.join(os.fspath(folder), LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise FolderInUse(f"{files.shown(folder)}: in use by another run (lock "
                          f"{files.shown(os.path.join(os.fspath(folder), LOCK_FILE))} is held)") from None
    try:
        yield
    finally:
        lock.release()


def remove_stale(folder: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files and folders the harness leaves when a process dies while writing (names starting
    with TMP_PREFIX) from folder; call it only while holding the folder's lock. Returns what was removed."""
    gone = []
    d = os.fspath(folder)
    for entry in sorted(os.listdir(d)):
        if entry.startswith(TMP_PREFIX):
            p = os.path.join(d, entry)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
            gone.append(entry)
    return gone
