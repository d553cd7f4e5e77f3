"""AdamW over packed BF16 moments (main.bend lines 297-445): the loops of adamh_l (m and v packed) and adamhv_l
(m packed, v float32), in place.

A BF16 value is the top half of a float32; two are packed in a uint32 word, element 2k in the low half of word k
(line 52). Each moment is read from its half (exact), updated in F32 in Adam's order, rounded to BF16 to nearest
with ties to even (a NaN becomes 0xFFFF) and written back; the weight update reads the stored, rounded moments.
The compiled loops run over words (the two elements of a word in order, low then high), so they may run in parallel
with the bits of the seed's element-by-element loop: no element reads another's word."""

from __future__ import annotations

import math

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.index import (bf16_of_bits, bf16_widen_bits, half, is_high, n_words, put, word_elems,
                                            word_of)

F = npt.NDArray[np.float32]
U = npt.NDArray[np.uint32]
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


# bf16_of_bits (ph_of_bits, main.bend line 321), bf16_widen_bits (ph_to's bits, line 328), half and put (ph_half,
# ph_put, lines 332-344) and the word layout live in impl.kernels.index, proved for every input by laws/proofs.py.


@numba.njit(cache=True, inline="always", error_model="numpy")
def bf16_to_f32(h: np.uint32) -> np.float32:
    """BF16 bits -> F32, exact (ph_to, line 328)."""
    a = np.empty(1, np.uint32)
    a[0] = bf16_widen_bits(h)
    return np.float32(a.view(np.float32)[0])


@numba.njit(cache=True, inline="always", error_model="numpy")
def f32_bits(x: np.float32) -> np.uint32:
    a = np.empty(1, np.float32)
    a[0] = x
    return np.uint32(a.view(np.uint32)[0])


@numba.njit(cache=True, inline="always", error_model="numpy")
def _elem(t: int, w: F, g: F, mw: np.uint32, vw: np.uint32, vf: F, packed_v: bool, c1: np.float32,
          b2: np.float32, c2: np.float32, eps: np.float32, wd: np.float32, dec: bool, ns: np.float32,
          bc2: np.float32, decay: np.float32) -> tuple[np.uint32, np.uint32]:
    odd = is_high(t)
    x = w[t]
    y = g[t]
    gg = y if dec else y + x * wd
    hm = bf16_of_bits(f32_bits(bf16_to_f32(half(odd, mw)) + c1 * (gg - bf16_to_f32(half(odd, mw)))))
    if packed_v:
        vo = bf16_to_f32(half(odd, vw))
        hv = bf16_of_bits(f32_bits(vo * b2 + (c2 * gg) * gg))
        nv = bf16_to_f32(hv)
        vw = put(odd, vw, hv)
    else:
        nv = vf[t] * b2 + (c2 * gg) * gg
        vf[t] = nv
    xw = x * decay if dec else x
    w[t] = xw + (ns * bf16_to_f32(hm)) / (math.sqrt(nv) / bc2 + eps)
    g[t] = _ZERO
    return put(odd, mw, hm), vw


@numba.njit(cache=True, parallel=True, error_model="numpy")
def adamh(w: F, g: F, m: U, v: U, vf: F, packed_v: bool, lr: np.float32, c1: np.float32, b2: np.float32,
          c2: np.float32, eps: np.float32, wd: np.float32, dec: bool, step: np.float32, bc2: np.float32) -> None:
    """adamh_l (packed_v) or adamhv_l (v in vf) over the n = w.size elements, word by word."""
    n = w.size
    ns = -step
    decay = _ONE - lr * wd
    for k in numba.prange(n_words(n)):
        mw = m[k]
        vw = v[k] if packed_v else np.uint32(0)
        t0, t1 = word_elems(k, n)
        for t in range(t0, t1):
            mw, vw = _elem(t, w, g, mw, vw, vf, packed_v, c1, b2, c2, eps, wd, dec, ns, bc2, decay)
        m[k] = mw
        if packed_v:
            v[k] = vw


# ---- plain twins, for tests: the seed's element loop in numpy scalar arithmetic ----


def bf16_of_f32_plain(x: np.float32) -> int:
    u = int(np.array([x], np.float32).view(np.uint32)[0])
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return 0xFFFF
    return (((u + 0x7FFF) & 0xFFFFFFFF) + ((u >> 16) & 1) & 0xFFFFFFFF) >> 16


def bf16_to_f32_plain(h: int) -> np.float32:
    return np.float32(np.array([(h & 0xFFFF) << 16], np.uint32).view(np.float32)[0])


def adamh_plain(w: F, g: F, m: U, v: U, vf: F, packed_v: bool, lr: np.float32, c1: np.float32, b2: np.float32,
                c2: np.float32, eps: np.float32, wd: np.float32, dec: bool, step: np.float32,
                bc2: np.float32) -> None:
    f = np.float32
    lr, c1, b2, c2, eps, wd, step, bc2 = (f(a) for a in (lr, c1, b2, c2, eps, wd, step, bc2))
    for t in range(w.size):
        odd = t & 1
        k = t >> 1
        x, y = w[t], g[t]
        gg = y if dec else f(y + f(x * wd))
        mo = bf16_to_f32_plain(int(m[k]) >> 16 if odd else int(m[k]) & 0xFFFF)
        hm = bf16_of_f32_plain(f(mo + f(c1 * f(gg - mo))))
        if packed_v:
            vo = bf16_to_f32_plain(int(v[k]) >> 16 if odd else int(v[k]) & 0xFFFF)
            hv = bf16_of_f32_plain(f(f(vo * b2) + f(f(c2 * gg) * gg)))
            nv = bf16_to_f32_plain(hv)
            v[k] = ((int(v[k]) & 0xFFFF) | (hv << 16)) if odd else ((int(v[k]) & 0xFFFF0000) | hv)
        else:
            nv = f(f(vf[t] * b2) + f(f(c2 * gg) * gg))
            vf[t] = nv
        xw = f(x * f(f(1.0) - f(lr * wd))) if dec else x
        w[t] = f(xw + f(f(-step * bf16_to_f32_plain(hm)) / f(f(np.sqrt(nv) / bc2) + eps)))
        g[t] = f(0.0)
        m[k] = ((int(m[k]) & 0xFFFF) | (hm << 16)) if odd else ((int(m[k]) & 0xFFFF0000) | hm)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def bf16_of_array(x: F) -> U:
    """bf16_of_bits over an array of float32s."""
    out = np.empty(x.size, np.uint32)
    u = x.view(np.uint32)
    for i in numba.prange(x.size):
        out[i] = bf16_of_bits(u[i])
    return out


@numba.njit(cache=True, error_model="numpy")
def pack_words(h: U) -> U:
    """n 16-bit values into n_words(n) words: element t into half is_high(t) of word word_of(t) (line 52)."""
    n = h.size
    out = np.zeros(n_words(n), np.uint32)
    for t in range(n):
        k = word_of(t)
        out[k] = put(is_high(t), out[k], h[t])
    return out


@numba.njit(cache=True, error_model="numpy")
def unpack_words(words: U, n: int) -> U:
    """The n 16-bit values of packed words (pack_words' inverse); words holds at least n_words(n) words."""
    out = np.zeros(n, np.uint32)
    for t in range(n):
        out[t] = half(is_high(t), words[word_of(t)])
    return out
