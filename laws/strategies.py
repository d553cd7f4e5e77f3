"""Strategies for the law suites: float32 values that include zeros of both signs, subnormals, large and tiny
magnitudes and, where a law speaks of them, infinities and NaNs; shapes including sizes that are not powers of two."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

F32 = np.float32

def f32(allow_nan: bool = False, allow_infinity: bool = False, max_abs: float | None = None) -> st.SearchStrategy[Any]:
    """One float32: anything finite by default (subnormals and both zeros included), bounded by max_abs if given."""
    if max_abs is None:
        base = st.floats(width=32, allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=True)
    else:
        base = st.floats(-max_abs, max_abs, width=32, allow_subnormal=True)
    return base.map(F32)


def mats(r: int, c: int, max_abs: float | None = 1e3, allow_nan: bool = False,
         allow_infinity: bool = False) -> st.SearchStrategy[Any]:
    """An r x c float32 matrix; elements drawn from f32 with the given bounds."""
    if max_abs is None:
        elems = st.floats(width=32, allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=True)
    else:
        elems = st.floats(-max_abs, max_abs, width=32, allow_subnormal=True)
    return hnp.arrays(np.float32, (r, c), elements=elems)


def bits32() -> st.SearchStrategy[Any]:
    """Any float32 by its 32 bits (every NaN payload and both zeros included)."""
    return st.integers(0, 2**32 - 1).map(lambda u: np.array([u], np.uint32).view(F32)[0])


def dims(lo: int = 1, hi: int = 9) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


# ---------------------------------------------------------------------------------------------------------------
# Extensions for the attention, protocol, losses, dropout, rope, checkpoint and determinism families
# ---------------------------------------------------------------------------------------------------------------

SUBNORMALS = [1e-45, -1e-45, 2.8e-45, -7e-42, 1.1754942e-38, -1.1754942e-38]
ZEROS = [0.0, -0.0]


def elems(max_abs: float = 1e3, allow_nan: bool = False, allow_infinity: bool = False,
          tiny: bool = True) -> st.SearchStrategy[float]:
    """One float32 element: moderate values (|x| <= max_abs) mixed with zeros of both signs, subnormals, tiny
    magnitudes (1e-30) and the largest magnitudes at most max_abs; infinities and NaNs only when asked."""
    specials = ZEROS + ([x for x in SUBNORMALS] if tiny else []) + \
        [x for x in (1e-30, -1e-30, 1e-20, 1.0, -1.0, 0.5, max_abs, -max_abs) if abs(x) <= max_abs]
    if max_abs >= 1e30:
        specials += [3.4028235e38, -3.4028235e38] if max_abs >= 3.4e38 else []
    if allow_infinity:
        specials += [float("inf"), float("-inf")]
    if allow_nan:
        specials.append(float("nan"))
    specials = [float(F32(x)) for x in specials]
    m = float(F32(max_abs))
    parts: list[st.SearchStrategy[float]] = [
        st.floats(-m, m, width=32, allow_subnormal=True),
        st.floats(-4.0, 4.0, width=32),
        st.sampled_from(specials),
    ]
    return st.one_of(*parts)


def arrays(shape: tuple[int, ...], el: st.SearchStrategy[float] | None = None) -> st.SearchStrategy[Any]:
    """A float32 array of the shape, elements from `el` (default `elems()`)."""
    return hnp.arrays(np.float32, shape, elements=el if el is not None else elems())


def seeds() -> st.SearchStrategy[int]:
    """A 32-bit seed (the seed's U32), with 0 and the largest one among the first tried."""
    return st.one_of(st.sampled_from([0, 1, 2**32 - 1]), st.integers(0, 2**32 - 1))


@st.composite
def attn_shapes(draw: Any, max_b: int = 4, max_t: int = 7, max_kv: int = 3, max_g: int = 3,
                max_hd: int = 5) -> tuple[int, int, int, int, int]:
    """(b, t, kv, g, hd): b sequences of t positions, kv key/value heads of g query heads each, head dim hd; every
    count from 1, so 3, 5, 7 (not powers of two) occur."""
    return (draw(st.integers(1, max_b)), draw(st.integers(1, max_t)), draw(st.integers(1, max_kv)),
            draw(st.integers(1, max_g)), draw(st.integers(1, max_hd)))


def scales() -> st.SearchStrategy[Any]:
    """Attention's scale sc: 1/sqrt(hd)-like values and others, as float32."""
    return st.one_of(st.sampled_from([0.125, 0.35355338, 0.5, 1.0]),
                     st.floats(float(F32(0.01)), 4.0, width=32)).map(F32)


def fill_rng(seed: int, special_rate: float = 0.1, allow_nan: bool = False,
             allow_infinity: bool = False, scale: float = 1.0) -> Any:
    """A filler (r, c) -> float32 r x c matrix from numpy's PCG64 at `seed`: normal values times scale, with about
    special_rate of them replaced by zeros of both signs, subnormals, tiny and large magnitudes (and infinities and
    NaNs when asked). Cheap for the big parameter trees the protocol laws need."""
    rng = np.random.default_rng(seed)
    sp = ZEROS + SUBNORMALS + [1e-30, -1e-30, 1e4, -1e4]
    if allow_infinity:
        sp += [float("inf"), float("-inf")]
    if allow_nan:
        sp.append(float("nan"))
    spa = np.array(sp, dtype=F32)

    def fill(r: int, c: int) -> Any:
        a = (rng.standard_normal((r, c)) * scale).astype(F32)
        hit = rng.random((r, c)) < special_rate
        a[hit] = spa[rng.integers(0, spa.size, int(hit.sum()))]
        return a

    return fill


def fill_bits(seed: int) -> Any:
    """A filler (r, c) -> r x c float32 of uniformly random 32-bit patterns (every NaN payload, both zeros,
    subnormals, infinities): for laws that copy numbers and must keep their bits."""
    rng = np.random.default_rng(seed)

    def fill(r: int, c: int) -> Any:
        return rng.integers(0, 2**32, (r, c), dtype=np.uint64).astype(np.uint32).view(F32)

    return fill
