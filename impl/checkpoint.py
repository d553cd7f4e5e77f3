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

import os
import tempfile
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import (Layer, Mat, NoMom, OneMom, Packed, PLeaf, PLeafV, PNew, PNode, PTree, TwoMom,
                           structure_diff)
from bendtorch.impl.train import Train

P = TypeVar("P")
F32 = np.float32
LE32 = np.dtype("<f4")
LEU32 = np.dtype("<u4")


class CheckpointError(ValueError):
    """A checkpoint file that does not fit the model or the optimizer: names the file, the expectation, the finding."""


# ---------------------------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------------------------


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """data into path, atomically: a temporary file in the same folder, fsync, rename over path, fsync the folder."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(target) + "-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


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
    write_atomic(path, _f32_bytes(train_dump(m, tr)))
    return tr


def params_save(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str], p: P) -> P:
    """Params.save (line 3295): every parameter in dump order (count numbers), atomically."""
    xs = np.zeros(m.count(), F32)
    m.store(p, xs, 0)
    write_atomic(path, _f32_bytes(xs))
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


def _pt_parse(name: str, u: npt.NDArray[np.uint32], off: int, depth: int = 0) -> tuple[PTree, int]:
    """A tree from the cells at off (pt_load, line 3113), with every declared size checked against the file."""
    if depth > 1000:
        raise CheckpointError(f"{name}: packed tree nested deeper than 1000 at cell {off}")
    if off >= u.size:
        raise CheckpointError(f"{name}: packed tree runs past the end of the file at cell {off}")
    tag = int(u[off])
    if tag == 1:
        a, o1 = _pt_parse(name, u, off + 1, depth + 1)
        b, o2 = _pt_parse(name, u, o1, depth + 1)
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
            raise CheckpointError(f"{name}: a {kind} checkpoint of {m.name} needs at least {n} parameters, a "
                                  f"packed tree and 2 powers ({n + 4} numbers), found {xs.size}")
        t, end = _pt_parse(name, xs.view(np.uint32), n)
        if end + 2 != xs.size:
            raise CheckpointError(f"{name}: expected {end + 2} numbers ({n} parameters, {end - n} tree cells, 2 "
                                  f"powers), found {xs.size}")
        _pt_fits(name, t, tr.p)
        p = m.load(_fresh(m, tr.p), xs, 0).p
        return Train(p, tr.g, Packed(t), F32(xs[end]), F32(xs[end + 1]), F32(0.0))
    want = {NoMom: n, OneMom: 2 * n, TwoMom: 3 * n + 2}[type(st)]
    if xs.size != want:
        what = {NoMom: f"{n} parameters", OneMom: f"{n} parameters and {n} momentum numbers",
                TwoMom: f"{n} parameters, {n} m, {n} v and 2 powers"}[type(st)]
        raise CheckpointError(f"{name}: a {kind} checkpoint of {m.name} holds {want} numbers ({what}), "
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
        raise CheckpointError(f"the training state does not fit {m.name}: {e}")
    return z


def params_load(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str]) -> P:
    """Parameters written by params_save, checked against the model's count first."""
    name = os.fspath(path)
    xs = _read_cells(name)
    if xs.size != m.count():
        raise CheckpointError(f"{name}: {m.name} has {m.count()} parameters, the file holds {xs.size} numbers")
    return m.load(m.zeros(), xs, 0).p
