"""AdamW with packed BF16 moments (CAdamWBF16, main.bend lines 50-100, 297-445): the leaf of a matrix is created on
its first step (PNew marks a part not yet stepped, so full-size float32 buffers never exist), then stepped by the
packed loop. Anything but an Adam step on a leaf leaves the values untouched (adamh_leaf's fallback, line 401)."""

from __future__ import annotations

import numpy as np

from bendtorch.impl.kernels import packed as K
from bendtorch.impl.kernels.index import n_words
from bendtorch.impl.optstate import Adam, Packed, PLeaf, PLeafV, PNew, PTree
from bendtorch.impl.protocol import Step
from bendtorch.impl.specs import Mat

F32 = np.float32


def ph_words(n: int) -> np.ndarray[tuple[int], np.dtype[np.uint32]]:
    """The words of n packed values, ceil(n / 2), zeros (BF16 0x0000 is +0.0) (ph_words, line 383)."""
    return np.zeros(n_words(n), np.uint32)


def ph_new(n: int, v16: bool) -> PTree:
    """A matrix's leaf on its first step (ph_new, line 405)."""
    if v16:
        return PLeaf(n, ph_words(n), ph_words(n))
    return PLeafV(n, ph_words(n), np.zeros(n, F32))


def adamh_mat(op: Adam, w: Mat, g: Mat, st: Packed) -> Step[Mat]:
    """One matrix's packed step (adamh_mat, line 412), in place."""
    t = st.t
    if isinstance(t, PNew):
        t = ph_new(w.size, t.v16)
    if isinstance(t, PLeaf) and t.n == w.size:
        K.adamh(w.reshape(-1), g.reshape(-1), t.m, t.v, np.zeros(0, F32), True, F32(op.lr), F32(op.c1),
                F32(op.b2), F32(op.c2), F32(op.eps), F32(op.wd), bool(op.dec), F32(op.step), F32(op.bc2))
    elif isinstance(t, PLeafV) and t.n == w.size:
        K.adamh(w.reshape(-1), g.reshape(-1), t.m, np.zeros(0, np.uint32), t.v, False, F32(op.lr), F32(op.c1),
                F32(op.b2), F32(op.c2), F32(op.eps), F32(op.wd), bool(op.dec), F32(op.step), F32(op.bc2))
    return Step(w, g, Packed(t))


def bf16_of_f32(x: Mat) -> np.ndarray[tuple[int], np.dtype[np.uint32]]:
    """Each float32 rounded to BF16 bits (ph_of, main.bend line 324): nearest, ties to even; NaN -> 0xFFFF."""
    return K.bf16_of_array(np.ascontiguousarray(x, dtype=F32).reshape(-1))


def f32_of_bf16(h: np.ndarray[tuple[int], np.dtype[np.uint32]]) -> Mat:
    """BF16 bits -> float32, exact (ph_to, line 328)."""
    return (np.asarray(h, np.uint32) << np.uint32(16)).view(F32)


def bf16_pack(h: np.ndarray[tuple[int], np.dtype[np.uint32]]) -> np.ndarray[tuple[int], np.dtype[np.uint32]]:
    """n BF16 values (bits in uint32) into ceil(n / 2) words, element 2k in the low half of word k (line 52)."""
    h = np.ascontiguousarray(np.asarray(h, np.uint32) & np.uint32(0xFFFF)).reshape(-1)
    out: np.ndarray[tuple[int], np.dtype[np.uint32]] = K.pack_words(h)
    return out


def bf16_unpack(words: np.ndarray[tuple[int], np.dtype[np.uint32]],
                n: int) -> np.ndarray[tuple[int], np.dtype[np.uint32]]:
    """The n BF16 values (bits in uint32) of packed words: bf16_pack's inverse."""
    w = np.ascontiguousarray(words, np.uint32).reshape(-1)
    if n < 0 or w.size < n_words(n):
        raise ValueError(f"bf16_unpack: {n} values need {n_words(max(n, 0))} words, got {w.size}")
    out: np.ndarray[tuple[int], np.dtype[np.uint32]] = K.unpack_words(w, n)
    return out
