"""Dropout's mask (main.bend lines 1228-1248): a counter-based hash of (seed, step, index), so a run is reproducible
and a twin computes the same mask.

    mix32(x)     lowbias32 (line 1229): a = x ^ (x >> 16); b = a * 2146121005; c = b ^ (b >> 15);
                 d = c * 2221713035; d ^ (d >> 16), all mod 2^32
    key          mix32(seed ^ mix32(t))                            (drop_mask, line 1248)
    factor[i]    0 if float32(mix32(key + i) >> 8) / 16777216 < p, else scale = 1 / (1 - p) in float32 (drop_k,
                 line 1237); i the flat index over the n*c numbers, key + i mod 2^32

u = (h >> 8) / 2^24 is exact in float32 (a 24-bit integer times a power of two). The numba kernel computes the 32-bit
words in uint64 and masks to 32 bits after each multiplication (numba would otherwise promote uint32 products to
int64); the plain twin uses numpy uint32 arrays, whose arithmetic wraps mod 2^32. Each factor depends on its own
index only, so the kernel runs under prange.

Every kernel is compiled with error_model="numpy": a float division by zero gives the IEEE infinity or NaN, as the
seed's F32 division does, instead of numba's default ZeroDivisionError (same bits otherwise).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.index import drop_counter

F = npt.NDArray[np.float32]
U = npt.NDArray[np.uint32]
F32 = np.float32

_M32 = np.uint64(0xFFFFFFFF)
_K1 = np.uint64(2146121005)
_K2 = np.uint64(2221713035)
_S8 = np.uint64(8)
_S15 = np.uint64(15)
_S16 = np.uint64(16)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TWO24 = np.float32(16777216.0)


@numba.njit(cache=True, error_model="numpy")
def mix32(x: np.uint64) -> np.uint64:
    """lowbias32 (Chris Wellons), main.bend line 1229, on a 32-bit word held in a uint64."""
    a = x ^ (x >> _S16)
    b = (a * _K1) & _M32
    c = b ^ (b >> _S15)
    d = (c * _K2) & _M32
    return d ^ (d >> _S16)


@numba.njit(cache=True, error_model="numpy")
def drop_key(seed: np.uint64, t: np.uint64) -> np.uint64:
    """mix32(seed ^ mix32(t)) (drop_mask, line 1248)."""
    return mix32(seed ^ mix32(t))


def scale_of(p: np.float32) -> np.float32:
    """1 / (1 - p) in float32, each operation rounded once (line 1248); p = 1 gives +inf (every number dropped)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return F32(_ONE / F32(_ONE - F32(p)))


@numba.njit(cache=True, parallel=True, error_model="numpy")
def mask_into(key: np.uint64, p: np.float32, scale: np.float32, out: F) -> None:
    """out[i] = 0 if (mix32(key + i) >> 8) / 2^24 < p else scale, over the flat out (drop_l, line 1240)."""
    for i in numba.prange(out.size):
        h = mix32(drop_counter(key, i))
        u = np.float32(h >> _S8) / _TWO24
        out[i] = _ZERO if u < p else scale


def mask(n: int, c: int, seed: int, t: int, p: np.float32) -> F:
    """The n x c factor matrix for step t (drop_mask, line 1247)."""
    p32 = F32(p)
    out = np.empty((n, c), dtype=F32)
    key = drop_key(np.uint64(seed & 0xFFFFFFFF), np.uint64(t & 0xFFFFFFFF))
    mask_into(np.uint64(key), p32, scale_of(p32), out.reshape(-1))
    return out


# ---------------------------------------------------------------------------------------------------------------
# plain twin: numpy uint32 arrays (arithmetic mod 2^32) and float32
# ---------------------------------------------------------------------------------------------------------------

def mix32_plain(x: U) -> U:
    """mix32 over a uint32 array (numpy's uint32 products wrap mod 2^32)."""
    x = np.asarray(x, dtype=np.uint32)
    with np.errstate(over="ignore"):
        a = x ^ (x >> np.uint32(16))
        b = a * np.uint32(2146121005)
        c = b ^ (b >> np.uint32(15))
        d = c * np.uint32(2221713035)
        return d ^ (d >> np.uint32(16))


def mask_plain(n: int, c: int, seed: int, t: int, p: np.float32) -> F:
    """mask's factors, computed with numpy uint32 arrays."""
    p32 = F32(p)
    tk = mix32_plain(np.array([t & 0xFFFFFFFF], dtype=np.uint32))
    key = mix32_plain(np.array([seed & 0xFFFFFFFF], dtype=np.uint32) ^ tk)
    with np.errstate(over="ignore"):
        idx = key + np.arange(n * c, dtype=np.uint64).astype(np.uint32)
    u = (mix32_plain(idx) >> np.uint32(8)).astype(F32) / _TWO24
    return np.where(u < p32, _ZERO, scale_of(p32)).astype(F32).reshape(n, c)
