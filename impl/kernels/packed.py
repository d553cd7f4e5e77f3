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

F = npt.NDArray[np.float32]
U = npt.NDArray[np.uint32]
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_ABS = np.uint32(0x7FFFFFFF)
_INF = np.uint32(0x7F800000)
_RND = np.uint32(0x7FFF)
_NAN16 = np.uint32(0xFFFF)
_LO = np.uint32(0xFFFF)
_HI = np.uint32(0xFFFF0000)
_S16 = np.uint32(16)
_ONE_U = np.uint32(1)


@numba.njit(cache=True, inline="always", error_model="numpy")
def bf16_of_bits(u: np.uint32) -> np.uint32:
    """F32 bits -> BF16 bits (ph_of_bits, main.bend line 321): add 0x7FFF plus the lowest kept bit, keep the top
    half (round to nearest, ties to even; wraps mod 2^32 as U32 does); a NaN gives 0xFFFF."""
    if (u & _ABS) > _INF:
        return _NAN16
    return np.uint32(np.uint32(np.uint32(u + _RND) + np.uint32((u >> _S16) & _ONE_U)) >> _S16)


@numba.njit(cache=True, inline="always", error_model="numpy")
def bf16_to_f32(h: np.uint32) -> np.float32:
    """BF16 bits -> F32, exact (ph_to, line 328)."""
    a = np.empty(1, np.uint32)
    a[0] = np.uint32(h << _S16)
    return np.float32(a.view(np.float32)[0])


@numba.njit(cache=True, inline="always", error_model="numpy")
def f32_bits(x: np.float32) -> np.uint32:
    a = np.empty(1, np.float32)
    a[0] = x
    return np.uint32(a.view(np.uint32)[0])


@numba.njit(cache=True, inline="always", error_model="numpy")
def _half(odd: bool, w: np.uint32) -> np.uint32:
    return (w >> _S16) if odd else (w & _LO)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _put(odd: bool, w: np.uint32, h: np.uint32) -> np.uint32:
    return ((w & _LO) | np.uint32(h << _S16)) if odd else ((w & _HI) | h)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _elem(t: int, w: F, g: F, mw: np.uint32, vw: np.uint32, vf: F, packed_v: bool, c1: np.float32,
          b2: np.float32, c2: np.float32, eps: np.float32, wd: np.float32, dec: bool, ns: np.float32,
          bc2: np.float32, decay: np.float32) -> tuple[np.uint32, np.uint32]:
    odd = (t & 1) == 1
    x = w[t]
    y = g[t]
    gg = y if dec else y + x * wd
    hm = bf16_of_bits(f32_bits(bf16_to_f32(_half(odd, mw)) + c1 * (gg - bf16_to_f32(_half(odd, mw)))))
    if packed_v:
        vo = bf16_to_f32(_half(odd, vw))
        hv = bf16_of_bits(f32_bits(vo * b2 + (c2 * gg) * gg))
        nv = bf16_to_f32(hv)
        vw = _put(odd, vw, hv)
    else:
        nv = vf[t] * b2 + (c2 * gg) * gg
        vf[t] = nv
    xw = x * decay if dec else x
    w[t] = xw + (ns * bf16_to_f32(hm)) / (math.sqrt(nv) / bc2 + eps)
    g[t] = _ZERO
    return _put(odd, mw, hm), vw


@numba.njit(cache=True, parallel=True, error_model="numpy")
def adamh(w: F, g: F, m: U, v: U, vf: F, packed_v: bool, lr: np.float32, c1: np.float32, b2: np.float32,
          c2: np.float32, eps: np.float32, wd: np.float32, dec: bool, step: np.float32, bc2: np.float32) -> None:
    """adamh_l (packed_v) or adamhv_l (v in vf) over the n = w.size elements, word by word."""
    n = w.size
    ns = -step
    decay = _ONE - lr * wd
    for k in numba.prange((n + 1) // 2):
        mw = m[k]
        vw = v[k] if packed_v else np.uint32(0)
        for t in range(2 * k, min(2 * k + 2, n)):
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
