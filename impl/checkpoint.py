"""The seed's checkpoint layout (main.bend lines 2958-3353): a training state as little-endian float32 numbers, so
that a run stopped after step k and resumed from its checkpoint computes the same bits as one that never stopped.

The layout (docs/checkpoints.md has it with an example):
- SGD (NoMom):        the parameters in dump order                                   (count numbers)
- Momentum (OneMom):  the parameters, then the momentum buffer in dump order         (2 count)
- Adam, AdamW:        the parameters, m, v, then q1 = 1 - b1^t and q2 = 1 - b2^t       (3 count + 2)
- CAdamWBF16:         the parameters, the packed tree's cells, then q1 and q2        (count + cells + 2)
A packed tree is written as cells holding uint32 bits in float32 cells, in the order the step walks it (line 2974):
PNew: 0, v16; PNode: 1, left, right; PLeaf: 2, n, m's ceil(n/2) words, v's ceil(n/2) words; PLeafV: 3, n, m's
words, v's n float32 numbers. The gradient is zero between steps and is not saved; nor is the last loss.

Reliability, beyond the seed: every file is written atomically (bendtorch.records.durable), so a crash while saving
leaves the previous file whole; a file is read only as a regular file whose size fits what the model can hold
(`max_state_bytes`: the size is checked before any byte is read, then the bytes are read in bounded pieces; the
seed's read_all reads at most 2,000,000,000 bytes, line 2970), then checked against the model's count, the packed
tree's declared sizes and the tree's shape before any state changes; every error names the file, what was expected
and what was found. Nothing is unpickled: the files are raw numbers. The verified checkpoint folder (a manifest beside
the .bin) is impl.checkpoint_folder.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator, TypeVar

import numpy as np
import numpy.typing as npt

from bendtorch.impl.protocol import (Layer, Mat, NoMom, OneMom, Packed, PLeaf, PLeafV, PNew, PNode, PTree, TwoMom,
                           structure_diff)
from bendtorch.impl.train import Train
from bendtorch.records import files
from bendtorch.records.durable import write_bytes

P = TypeVar("P")
F32 = np.float32
LE32 = np.dtype("<f4")
LEU32 = np.dtype("<u4")


class CheckpointError(ValueError):
    """A checkpoint file that does not fit the model or the optimizer: names the file, the expectation, the finding."""


# ---------------------------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------------------------


def le_bytes(a: npt.NDArray[Any]) -> memoryview:
    """An array's numbers as little-endian float32 bytes, without a copy where they already are."""
    return np.ascontiguousarray(a, dtype=LE32).data.cast("B")


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


def train_dump_parts(m: Layer[P, Any, Any, Any], tr: Train[P]) -> Iterator[npt.NDArray[np.float32]]:
    """train_dump's cells in consecutive parts (the parameters, each moment, the packed tree, the powers), each made
    when asked for: a writer holds one part at a time, not a second copy of the whole state."""
    yield m.dump(tr.p).astype(F32, copy=False)
    st = tr.st
    if isinstance(st, OneMom):
        yield m.dump(st.m).astype(F32, copy=False)
    elif isinstance(st, TwoMom):
        yield m.dump(st.m).astype(F32, copy=False)
        yield m.dump(st.v).astype(F32, copy=False)
        yield np.array([tr.p1, tr.p2], F32)
    elif isinstance(st, Packed):
        yield pt_store(st.t).view(F32)
        yield np.array([tr.p1, tr.p2], F32)


def train_dump(m: Layer[P, Any, Any, Any], tr: Train[P]) -> npt.NDArray[np.float32]:
    """Every number of a training state in the seed's layout (Train.dump, line 3152) as float32 cells."""
    return np.concatenate(list(train_dump_parts(m, tr)))


def train_save(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str], tr: Train[P]) -> Train[P]:
    """Train.save (line 3344): the layout train_dump gives, written atomically; the state comes back unchanged."""
    write_bytes(path, le_bytes(train_dump(m, tr)))
    return tr


def params_save(m: Layer[P, Any, Any, Any], path: str | os.PathLike[str], p: P) -> P:
    """Params.save (line 3295): every parameter in dump order (count numbers), atomically."""
    xs = np.zeros(m.count(), F32)
    m.store(p, xs, 0)
    write_bytes(path, le_bytes(xs))
    return p


# ---------------------------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------------------------


def cells(name: str, raw: bytes | bytearray) -> npt.NDArray[np.float32]:
    """A file's bytes as float32 cells (a whole number of 4-byte numbers), a view of raw where the machine is
    little-endian (no copy)."""
    if len(raw) % 4:
        raise CheckpointError(f"{name}: {len(raw)} bytes is not a whole number of float32 numbers (4 bytes each)")
    return np.frombuffer(raw, dtype=LE32).astype(F32, copy=False)


def mat_load(r: int, c: int, path: str | os.PathLike[str], off: int = 0) -> Mat:
    """Mat.load (line 1014): an r x c matrix stored as r*c little-endian float32 from byte off of a file (a regular
    file holding those bytes: its size is checked before they are read)."""
    want = r * c * 4
    with files.open_regular(path, error=CheckpointError) as f:
        if off < 0 or off + want > f.size:
            raise f.fail(f"wrong number of values for this shape: {r} x {c} needs {want} bytes from byte {off}, "
                         f"found {max(0, min(want, f.size - off))}")
        raw = f.read_at(off, want)
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


def max_tree_cells(p: Any) -> int:
    """The most cells a packed tree over parameters p can take (a tree of no other shape is read): a matrix of n
    numbers a PLeafV (2 + ceil(n/2) + n cells, more than a PLeaf's or a PNew's), a pair a PNode over its two parts,
    any other part a PNew (2 cells)."""
    if isinstance(p, np.ndarray):
        return max(2, 2 + (p.size + 1) // 2 + p.size)
    if isinstance(p, tuple) and len(p) == 2:
        return max(2, 1 + max_tree_cells(p[0]) + max_tree_cells(p[1]))
    return 2


def max_state_bytes(m: Layer[P, Any, Any, Any], st: Any) -> int:
    """The most bytes a training state of model m with optimizer state st (its kind is what counts) takes in the
    seed's layout: exact for NoMom, OneMom and TwoMom, the largest packed tree for Packed."""
    n = m.count()
    if isinstance(st, Packed):
        return 4 * (n + max_tree_cells(m.zeros()) + 2)
    return 4 * {NoMom: n, OneMom: 2 * n, TwoMom: 3 * n + 2}[type(st)]


def train_restore(m: Layer[P, Any, Any, Any], tr: Train[P], path: str | os.PathLike[str]) -> Train[P]:
    """Train.restore (line 3224) from a file: a training state of the same optimizer kind as tr, filled from the
    numbers train_save wrote. The file must be a regular file no larger than the state can be (max_state_bytes); it
    is read and checked whole first; on any error tr is left as it was."""
    raw = files.read_bounded(path, max_state_bytes(m, tr.st), f"a {type(tr.st).__name__} state of {m.label}",
                             error=CheckpointError)
    return restore_from(m, tr, files.shown(path), raw)


def restore_from(m: Layer[P, Any, Any, Any], tr: Train[P], name: str, raw: bytes | bytearray) -> Train[P]:
    """train_restore from a file's bytes already read (name: the file, for messages)."""
    xs = cells(name, raw)
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
    """Parameters written by params_save: a regular file of exactly the model's count of numbers, checked before it
    is read."""
    n = m.count()
    with files.open_regular(path, error=CheckpointError) as f:
        if f.size != 4 * n:
            raise f.fail(f"{m.label} has {n} parameters ({4 * n} bytes), the file holds {f.size} bytes")
        xs = cells(f.name, f.read_all())
    return m.load(m.zeros(), xs, 0).p
