"""Checkpoints (main.bend lines 2958-3353): a training state as little-endian float32 numbers, in the seed's layout,
so that a run stopped after step k and resumed from its checkpoint computes the same bits as one that never stopped.

The layout (docs/checkpoints.md has it with an example):
- SGD (NoMom):        the parameters in dump order                                   (count numbers)
- Momentum (OneMom):  the parameters, then the momentum buffer in dump order         (2 count)
- Adam, AdamW:        the parameters, m, v, then q1 = 1 - b1^t and q2 = 1 - b2^t       (3 count + 2)
- CAdamWBF16:         the parameters, the packed tree's cells, then q1 and q2        (count + cells + 2)
A packed tree is written as cells holding uint32 bits in float32 cells, in the order the step walks it (line 2974):
PNew: 0, v16; PNode: 1, left, right; PLeaf: 2, n, m's ceil(n/2) words, v's ceil(n/2) words; PLeafV: 3, n, m's
words, v's n float32 numbers. The gradient is zero between steps and is not saved; nor is the last loss.

Reliability, beyond the seed: every file is written atomically (a temporary file in the same folder, fsync, rename,
fsync of the folder), so a crash while saving leaves the previous checkpoint whole; loading reads the whole file,
checks its size against the model's count and the packed tree's declared sizes, and the tree's shape against the
model's parameters, before it changes any state; every error names the file, what was expected and what was found.
Nothing is unpickled: the files are raw numbers.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import sys
import tempfile
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import (Layer, Mat, NoMom, OneMom, Packed, PLeaf, PLeafV, PNew, PNode, PTree, TwoMom,
                           structure_diff)
from bendtorch.impl.train import Train, train_new
from bendtorch.records.durable import TMP_PREFIX, fsync_dir, output_mode, write_bytes

P = TypeVar("P")
F32 = np.float32
LE32 = np.dtype("<f4")
LEU32 = np.dtype("<u4")


class CheckpointError(ValueError):
    """A checkpoint file that does not fit the model or the optimizer: names the file, the expectation, the finding."""


# ---------------------------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------------------------


def _f32_bytes(a: npt.NDArray[Any]) -> bytes:
    return np.ascontiguousarray(a).astype(LE32, copy=False).tobytes()


def pt_cells(t: PTree) -> int:
    """The number of cells a tree takes (pt_cells, main.bend line 2994)."""
    if isinstance(t, PNew):
        return 2
    if isinstance(t, PLeaf):
        return 2 + 2 * ((t.n + 1) // 2)
    if isinstance(t, PLeafV):
        return 2 + (t.n + 1) // 2 + t.n
    return 1 + pt_cells(t.a) + pt_cells(t.b)


def pt_store(t: PTree) -> npt.NDArray[np.uint32]:
    """The tree's cells as uint32 bits (pt_store, line 3045), in the order the step walks it."""
    out: list[npt.NDArray[np.uint32]] = []

    def go(t: PTree) -> None:
        if isinstance(t, PNew):
            out.append(np.array([0, 1 if t.v16 else 0], np.uint32))
        elif isinstance(t, PLeaf):
            out.append(np.array([2, t.n], np.uint32))
            out.append(t.m.astype(np.uint32, copy=False))
            out.append(t.v.astype(np.uint32, copy=False))
        elif isinstance(t, PLeafV):
            out.append(np.array([3, t.n], np.uint32))
            out.append(t.m.astype(np.uint32, copy=False))
            out.append(np.ascontiguousarray(t.v, dtype=F32).view(np.uint32))
        else:
            out.append(np.array([1], np.uint32))
            go(t.a)
            go(t.b)

    go(t)
    return np.concatenate(out) if out else np.zeros(0, np.uint32)


def train_dump(m: Layer[P, Any, Any, Any], tr: Train[P]) -> npt.NDArray[np.float32]:
    """Every number of a training state in the seed's layout (Train.dump, line 3152) as float32 cells."""
    parts = [m.dump(tr.p).astype(F32, copy=False)]
    st = tr.st
    if isinstance(st, OneMom):
        parts.append(m.dump(st.m).astype(F32, copy=False))
    elif isinstance(st, TwoMom):
        parts += [m.dump(st.m).astype(F32, copy=False), m.dump(st.v).astype(F32, copy=False),
                  np.array([tr.p1, tr.p2], F32)]
    elif isinstance(st, Packed):
        parts += [pt_store(st.t).view(F32), np.array([tr.p1, tr.p2], F32)]
    return np.concatenate(parts)


def train_save(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str], tr: Train[P]) -> Train[P]:
    """Train.save (line 3344): the layout train_dump gives, written atomically; the state comes back unchanged."""
    write_bytes(path, _f32_bytes(train_dump(m, tr)))
    return tr


def params_save(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str], p: P) -> P:
    """Params.save (line 3295): every parameter in dump order (count numbers), atomically."""
    xs = np.zeros(m.count(), F32)
    m.store(p, xs, 0)
    write_bytes(path, _f32_bytes(xs))
    return p


# ---------------------------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------------------------


def _read_cells(path: str | os.PathLike[str]) -> npt.NDArray[np.float32]:
    name = os.fspath(path)
    try:
        raw = open(name, "rb").read()
    except OSError as e:
        raise CheckpointError(f"{name}: cannot read: {e.strerror}") from e
    if len(raw) % 4:
        raise CheckpointError(f"{name}: {len(raw)} bytes is not a whole number of float32 numbers (4 bytes each)")
    return np.frombuffer(raw, dtype=LE32).astype(F32)


def mat_load(r: int, c: int, path: str | os.PathLike[str], off: int = 0) -> Mat:
    """Mat.load (line 1014): an r x c matrix stored as r*c little-endian float32 from byte off of a file."""
    name = os.fspath(path)
    want = r * c * 4
    try:
        with open(name, "rb") as f:
            f.seek(off)
            raw = f.read(want)
    except OSError as e:
        raise CheckpointError(f"{name}: cannot read: {e.strerror}") from e
    if len(raw) != want:
        raise CheckpointError(f"{name}: wrong number of values for this shape: {r} x {c} needs {want} bytes from "
                              f"byte {off}, found {len(raw)}")
    return np.frombuffer(raw, dtype=LE32).astype(F32).reshape(r, c)


def _pt_parse(name: str, u: npt.NDArray[np.uint32], off: int) -> tuple[PTree, int]:
    """A tree from the cells at off (pt_load, line 3113), with every declared size checked against the file. The
    recursion goes at most 1000 deep (the seed's fuel); Python's stack is given room for it while parsing."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 1100)
    try:
        return _pt_parse_at(name, u, off, 0)
    finally:
        sys.setrecursionlimit(limit)


def _pt_parse_at(name: str, u: npt.NDArray[np.uint32], off: int, depth: int) -> tuple[PTree, int]:
    if depth >= 1000:
        # the seed's pt_load reads with fuel 1000 (main.bend lines 3095-3114): a part at depth 1000 comes back as
        # PNew{False} and its cells are read as what follows; refused here instead (docs/checkpoints.md)
        raise CheckpointError(f"{name}: packed tree nested 1000 deep at cell {off}: the seed reads no deeper")
    if off >= u.size:
        raise CheckpointError(f"{name}: packed tree runs past the end of the file at cell {off}")
    tag = int(u[off])
    if tag == 1:
        a, o1 = _pt_parse_at(name, u, off + 1, depth + 1)
        b, o2 = _pt_parse_at(name, u, o1, depth + 1)
        return PNode(a, b), o2
    if tag not in (0, 2, 3):
        raise CheckpointError(f"{name}: packed tree cell {off}: tag {tag} is none of 0 (PNew), 1 (PNode), "
                              f"2 (PLeaf), 3 (PLeafV)")
    if off + 1 >= u.size:
        raise CheckpointError(f"{name}: packed tree runs past the end of the file at cell {off + 1}")
    val = int(u[off + 1])
    if tag == 0:
        if val not in (0, 1):
            raise CheckpointError(f"{name}: packed tree cell {off + 1}: PNew's v16 must be 0 or 1, found {val}")
        return PNew(val == 1), off + 2
    n = val
    hw = (n + 1) // 2
    size = 2 * hw if tag == 2 else hw + n
    if off + 2 + size > u.size:
        raise CheckpointError(f"{name}: packed leaf at cell {off} declares {n} numbers ({size} cells), but the file "
                              f"has only {u.size - off - 2} cells after it")
    m = u[off + 2: off + 2 + hw].copy()
    if tag == 2:
        return PLeaf(n, m, u[off + 2 + hw: off + 2 + 2 * hw].copy()), off + 2 + size
    return PLeafV(n, m, u[off + 2 + hw: off + 2 + hw + n].copy().view(F32)), off + 2 + size


def _pt_fits(name: str, t: PTree, p: Any, where: str = "p") -> None:
    """The tree follows the parameters' pairs (line 50): a matrix has PNew or a leaf of its size; a pair has PNew or a
    node; a part without matrices has PNew."""
    if isinstance(p, np.ndarray):
        if isinstance(t, (PLeaf, PLeafV)) and t.n != p.size:
            raise CheckpointError(f"{name}: packed leaf for {where} holds {t.n} numbers, the model's matrix has "
                                  f"{p.size}")
        if isinstance(t, PNode):
            raise CheckpointError(f"{name}: packed tree has a node where the model has the matrix {where}")
        return
    if isinstance(p, tuple) and len(p) == 2:
        if isinstance(t, PNode):
            _pt_fits(name, t.a, p[0], where + "[0]")
            _pt_fits(name, t.b, p[1], where + "[1]")
        elif not isinstance(t, PNew):
            raise CheckpointError(f"{name}: packed tree has a leaf where the model has the pair {where}")
        return
    if not isinstance(t, PNew):
        raise CheckpointError(f"{name}: packed tree has parts where the model's {where} has no matrix")


def _pt_packing(name: str, t: PTree, v16: bool) -> None:
    """Every part of the tree is packed the way the optimizer packs (v16: PLeaf, m and v BF16; else PLeafV, v
    float32), so a file of the other packing is not read as this one."""
    if isinstance(t, PNode):
        _pt_packing(name, t.a, v16)
        _pt_packing(name, t.b, v16)
    elif isinstance(t, PNew) and t.v16 != v16:
        raise CheckpointError(f"{name}: packed tree's PNew has v16 = {int(t.v16)}, the optimizer has v16 = {int(v16)}")
    elif isinstance(t, (PLeaf, PLeafV)) and isinstance(t, PLeaf) != v16:
        raise CheckpointError(f"{name}: packed tree has a {type(t).__name__} leaf (v "
                              f"{'BF16' if isinstance(t, PLeaf) else 'float32'}), the optimizer has v16 = {int(v16)}")


def train_restore(m: Layer[P, Any, Any, Any], tr: Train[P], path: str | os.PathLike[str]) -> Train[P]:
    """Train.restore (line 3224) from a file: a training state of the same optimizer kind as tr, filled from the
    numbers train_save wrote. The whole file is read and checked first; on any error tr is left as it was."""
    name = os.fspath(path)
    xs = _read_cells(name)
    n = m.count()
    st = tr.st
    kind = type(st).__name__
    if isinstance(st, Packed):
        if xs.size < n + 2:
            raise CheckpointError(f"{name}: a {kind} checkpoint of {m.label} needs at least {n} parameters, a "
                                  f"packed tree and 2 powers ({n + 4} numbers), found {xs.size}")
        t, end = _pt_parse(name, xs.view(np.uint32), n)
        if end + 2 != xs.size:
            raise CheckpointError(f"{name}: expected {end + 2} numbers ({n} parameters, {end - n} tree cells, 2 "
                                  f"powers), found {xs.size}")
        _pt_fits(name, t, tr.p)
        if isinstance(st.t, PNew):
            _pt_packing(name, t, st.t.v16)
        p = m.load(_fresh(m, tr.p), xs, 0).p
        return Train(p, tr.g, Packed(t), F32(xs[end]), F32(xs[end + 1]), F32(0.0))
    want = {NoMom: n, OneMom: 2 * n, TwoMom: 3 * n + 2}[type(st)]
    if xs.size != want:
        what = {NoMom: f"{n} parameters", OneMom: f"{n} parameters and {n} momentum numbers",
                TwoMom: f"{n} parameters, {n} m, {n} v and 2 powers"}[type(st)]
        raise CheckpointError(f"{name}: a {kind} checkpoint of {m.label} holds {want} numbers ({what}), "
                              f"found {xs.size}")
    p = m.load(_fresh(m, tr.p), xs, 0).p
    if isinstance(st, OneMom):
        return Train(p, tr.g, OneMom(m.load(_fresh(m, st.m), xs, n).p), F32(0.0), F32(0.0), F32(0.0))
    if isinstance(st, TwoMom):
        mm = m.load(_fresh(m, st.m), xs, n).p
        vv = m.load(_fresh(m, st.v), xs, 2 * n).p
        return Train(p, tr.g, TwoMom(mm, vv), F32(xs[3 * n]), F32(xs[3 * n + 1]), F32(0.0))
    return Train(p, tr.g, NoMom(), F32(0.0), F32(0.0), F32(0.0))


def _fresh(m: Layer[P, Any, Any, Any], like: P) -> P:
    """New buffers of the model's structure to load into, so a failed load cannot leave tr half-written."""
    z = m.zeros()
    e = structure_diff(like, z)
    if e is not None:
        raise CheckpointError(f"the training state does not fit {m.label}: {e}")
    return z


def params_load(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str]) -> P:
    """Parameters written by params_save, checked against the model's count first."""
    name = os.fspath(path)
    xs = _read_cells(name)
    if xs.size != m.count():
        raise CheckpointError(f"{name}: {m.label} has {m.count()} parameters, the file holds {xs.size} numbers")
    return m.load(m.zeros(), xs, 0).p


# ---------------------------------------------------------------------------------------------------------------
# verified checkpoints: the seed's .bin with a manifest, published together
# ---------------------------------------------------------------------------------------------------------------
#
# A checkpoint is a folder holding `state.bin` (train_dump's bytes, the seed's layout unchanged) and `manifest.json`
# (format and version, the optimizer's kind and configuration, a digest of the model's structure, the step, the
# caller's flags, the .bin's size and SHA-256, and the manifest's own SHA-256). The pair is written into a fresh
# temporary folder beside the target and published by one rename, so a reader sees both files or neither, and a
# crash leaves the previous checkpoint as it was. `load_checkpoint` verifies all of it before any state changes.
# train_restore / params_load above stay for bare seed-format files from elsewhere: they check sizes and shapes
# only, and verify nothing about where the numbers came from.

FORMAT = "bendtorch-checkpoint"
FORMAT_VERSION = 1
STATE_FILE = "state.bin"
MANIFEST_FILE = "manifest.json"
CKPT_TMP_PREFIX = TMP_PREFIX + "ckpt-"


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


def _canonical(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n").encode()


def _seal(body: dict[str, Any]) -> bytes:
    """The manifest's bytes: the body and the SHA-256 of the body's canonical bytes, itself in canonical form."""
    return _canonical({**body, "manifest_sha256": hashlib.sha256(_canonical(body)).hexdigest()})


def _write_synced(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


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
                    flags: dict[str, Any] | None = None) -> str:
    """The training state as a checkpoint folder at path (state.bin in the seed's layout, manifest.json), published
    atomically: written into a fresh temporary folder beside path, then renamed onto it (an existing checkpoint at
    path is swapped out in one step where the system allows, then removed). Returns the folder's path."""
    target = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(target)
    data = _f32_bytes(train_dump(m, tr))
    body = {"format": FORMAT, "version": FORMAT_VERSION, "step": int(step), "optimizer": optimizer_record(cfg),
            "state": type(tr.st).__name__, "model": {"structure_sha256": structure_digest(m), "count": m.count()},
            "flags": dict(flags or {}),
            "bin": {"file": STATE_FILE, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}}
    tmp = tempfile.mkdtemp(prefix=CKPT_TMP_PREFIX + os.path.basename(target) + "-", dir=parent)
    try:
        os.chmod(tmp, output_mode(directory=True))
        for name, blob in ((STATE_FILE, data), (MANIFEST_FILE, _seal(body))):
            _write_synced(os.path.join(tmp, name), blob)
            os.chmod(os.path.join(tmp, name), output_mode())
        fsync_dir(tmp)
        if not os.path.lexists(target):
            os.rename(tmp, target)  # fails rather than merge if another writer got there first
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


def read_manifest(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """(the checkpoint folder, its verified manifest) for a checkpoint folder or a file inside one. Every check
    that fails raises CheckpointError with one line naming the file and the field."""
    name = os.fspath(path)
    folder = name
    if os.path.isfile(name):
        folder = os.path.dirname(os.path.abspath(name))
        if os.path.basename(name) not in (STATE_FILE, MANIFEST_FILE) or \
                not os.path.isfile(os.path.join(folder, MANIFEST_FILE)):
            raise CheckpointError(f"{name}: a bare file without a bendtorch manifest: its numbers cannot be verified "
                                  f"(a checkpoint is a folder with {STATE_FILE} and {MANIFEST_FILE}; "
                                  f"impl.checkpoint.train_restore reads a bare seed-format file, verifying nothing)")
    elif not os.path.isdir(name):
        raise CheckpointError(f"{name}: no checkpoint there")
    mpath = os.path.join(folder, MANIFEST_FILE)
    try:
        raw = open(mpath, "rb").read()
    except OSError as e:
        raise CheckpointError(f"{mpath}: cannot read the manifest: {e.strerror}") from None
    try:
        doc = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"{mpath}: not a manifest: not ASCII JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"{mpath}: not a manifest: a JSON {type(doc).__name__}, not an object")
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"{mpath}: not a manifest: format is {doc.get('format')!r}, not {FORMAT!r}")
    if doc.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"{mpath}: manifest version {doc.get('version')!r}, this bendtorch reads version "
                              f"{FORMAT_VERSION}")
    try:
        canonical = _canonical(doc)
    except ValueError:
        canonical = b""
    if canonical != raw:
        raise CheckpointError(f"{mpath}: the manifest's bytes were changed (they are not the canonical form "
                              f"bendtorch writes)")
    body = {k: v for k, v in doc.items() if k != "manifest_sha256"}
    if doc.get("manifest_sha256") != hashlib.sha256(_canonical(body)).hexdigest():
        raise CheckpointError(f"{mpath}: manifest_sha256 does not match the manifest's contents")
    step = body.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise CheckpointError(f"{mpath}: step must be an integer >= 0, found {step!r}")
    for key, typ in (("optimizer", dict), ("model", dict), ("flags", dict), ("bin", dict), ("state", str)):
        if not isinstance(body.get(key), typ):
            raise CheckpointError(f"{mpath}: field {key!r} missing or not a JSON {typ.__name__}")
    return folder, body


def verify_bin(folder: str, body: dict[str, Any]) -> str:
    """The checkpoint's state.bin has the size and SHA-256 its manifest (body) records; returns its path."""
    b = body["bin"]
    bpath = os.path.join(folder, STATE_FILE)
    if b.get("file") != STATE_FILE:
        raise CheckpointError(f"{os.path.join(folder, MANIFEST_FILE)}: bin.file is {b.get('file')!r}, not "
                              f"{STATE_FILE!r}")
    try:
        raw = open(bpath, "rb").read()
    except OSError as e:
        raise CheckpointError(f"{bpath}: cannot read: {e.strerror}") from None
    if len(raw) != b.get("bytes"):
        raise CheckpointError(f"{bpath}: {len(raw)} bytes, the manifest says {b.get('bytes')!r}")
    if hashlib.sha256(raw).hexdigest() != b.get("sha256"):
        raise CheckpointError(f"{bpath}: SHA-256 does not match the manifest (the file was changed or damaged)")
    return bpath


def check_flags(mpath: str, body: dict[str, Any], flags: dict[str, Any]) -> None:
    """The flags a checkpoint was written with (its manifest's body) are the caller's, key by key, both ways."""
    saved = body["flags"]
    differ = [k for k in sorted(set(saved) | set(flags)) if saved.get(k, "<absent>") != flags.get(k, "<absent>")]
    if differ:
        raise CheckpointError(f"{mpath}: written with other flags: " + ", ".join(
            f"--{k.replace('_', '-')} {saved.get(k, '<absent>')!r} (now {flags.get(k, '<absent>')!r})"
            for k in differ))


def load_checkpoint(m: Layer[P, Any, Any, Any], cfg: Any, path: str | os.PathLike[str],
                    flags: dict[str, Any] | None = None, allow_nonfinite: bool = False) -> tuple[Train[P], int]:
    """(the training state, its step) from a checkpoint folder written by save_checkpoint, for model m trained by
    cfg. Verified before anything is built: the manifest (format, version, its own SHA-256), the model's structure
    digest, the optimizer's kind and every number of its configuration, the caller's flags (each key, both ways),
    the .bin's size and SHA-256, the seed layout's sizes and tree shape, and the numbers themselves (finite
    parameters and moments, second moments >= 0, q1 and q2 in [0, 1]; allow_nonfinite skips the finiteness)."""
    folder, body = read_manifest(path)
    mpath = os.path.join(folder, MANIFEST_FILE)
    digest = structure_digest(m)
    if body["model"].get("structure_sha256") != digest or body["model"].get("count") != m.count():
        raise CheckpointError(f"{mpath}: written for another model (structure digest "
                              f"{str(body['model'].get('structure_sha256'))[:12]}..., {body['model'].get('count')} "
                              f"parameters; this model: {digest[:12]}..., {m.count()})")
    if flags is not None:
        check_flags(mpath, body, flags)
    want = optimizer_record(cfg)
    got = body["optimizer"]
    if got.get("kind") != want["kind"]:
        raise CheckpointError(f"{mpath}: written by optimizer {got.get('kind')!r}, this run uses {want['kind']!r}")
    if got.get("config") != want["config"]:
        keys = sorted(set(want["config"]) | set(got.get("config") or {}))
        differ = [k for k in keys if (got.get("config") or {}).get(k) != want["config"].get(k)]
        raise CheckpointError(f"{mpath}: the optimizer's configuration differs in {', '.join(differ)}")
    bpath = verify_bin(folder, body)
    tr = train_new(m, cfg, m.zeros())
    if type(tr.st).__name__ != body["state"]:
        raise CheckpointError(f"{mpath}: state kind {body['state']!r}, this optimizer keeps {type(tr.st).__name__}")
    out = train_restore(m, tr, bpath)
    _check_values(bpath, m, out, allow_nonfinite)
    return out, int(body["step"])


def _check_values(name: str, m: Layer[P, Any, Any, Any], tr: Train[P], allow_nonfinite: bool) -> None:
    """The numbers of a restored state mean something: q1, q2 in [0, 1]; second moments >= 0 (a NaN passes only
    with allow_nonfinite); parameters and moments finite unless allow_nonfinite."""
    n = m.count()
    xs = train_dump(m, tr)
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
        def walk(t: PTree, where: str) -> None:
            if isinstance(t, PNode):
                walk(t.a, where + ".a")
                walk(t.b, where + ".b")
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
                if what == "v" and np.any(((h & np.uint32(0x8000)) != 0) & ((h & np.uint32(0x7FFF)) != 0)):
                    raise CheckpointError(f"{name}: packed leaf {where}: a negative BF16 second moment")
            if isinstance(t, PLeafV):
                if np.any(t.v < 0):
                    raise CheckpointError(f"{name}: packed leaf {where}: a negative second moment")
                if not allow_nonfinite and not np.all(np.isfinite(t.v)):
                    raise CheckpointError(f"{name}: packed leaf {where}: a non-finite second moment")
        walk(st.t, "t")
    if not allow_nonfinite:
        head = xs[:n] if isinstance(st, Packed) else xs
        bad = ~np.isfinite(head)
        if np.any(bad):
            raise CheckpointError(f"{name}: non-finite number ({float(head[int(np.argmax(bad))])!r}) at cell "
                                  f"{int(np.argmax(bad))}")


def remove_stale(folder: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files and folders this module leaves when a process dies while writing (names starting
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
