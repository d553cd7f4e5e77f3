"""Laws of the packed BF16 moments (main.bend lines 297-345): the rounding rule, NaN, exact widening, packing."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from bendtorch.impl.packed import bf16_of_f32, bf16_pack, bf16_unpack, f32_of_bf16
from bendtorch.laws.registry import law
from bendtorch.laws.verdict import exact_rne

F32 = np.float32


@law("bf16", "round_to_nearest_even", "bit for bit")
@given(st.integers(0, 2**32 - 1))
@example(0x3F808000)
@example(0x3F818000)
@example(0x7F7FFFFF)
@example(0x00008000)
def test_rounding_matches_the_exact_rule(u: int) -> None:
    """F32 -> BF16 rounds to nearest with ties to even (ph_of_bits, line 321) on every non-NaN input."""
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return
    x = np.array([u], np.uint32).view(F32)
    assert int(bf16_of_f32(x)[0]) == exact_rne(u)


@law("bf16", "nan_is_ffff", "bit for bit")
@given(st.integers(1, 2**23 - 1), st.booleans())
def test_nan_gives_ffff(payload: int, neg: bool) -> None:
    """A NaN becomes 0xFFFF (line 299), whatever its sign and payload."""
    u = 0x7F800000 | payload | (0x80000000 if neg else 0)
    assert int(bf16_of_f32(np.array([u], np.uint32).view(F32))[0]) == 0xFFFF


@law("bf16", "widening_is_exact", "bit for bit")
@given(st.integers(0, 0xFFFF))
def test_bf16_to_f32_is_exact(h: int) -> None:
    """BF16 -> F32 is exact (ph_to, line 328): the float32 has the BF16 bits on top and zeros below, and rounding it
    back gives the same BF16 (NaNs aside, which all become 0xFFFF)."""
    x = f32_of_bf16(np.array([h], np.uint32))
    assert int(x.view(np.uint32)[0]) == h << 16
    if not np.isnan(x[0]):
        assert int(bf16_of_f32(x)[0]) == h


@law("bf16", "pack_unpack", "bit for bit")
@given(st.lists(st.integers(0, 0xFFFF), min_size=0, max_size=33))
def test_packing_then_unpacking_gives_the_values_back(hs: list[int]) -> None:
    """Two values a word, element 2k in the low half of word k (line 52): unpacking the words gives the values."""
    h = np.array(hs, np.uint32)
    w = bf16_pack(h)
    assert w.size == (len(hs) + 1) // 2
    assert np.array_equal(bf16_unpack(w, len(hs)), h)
    if len(hs) >= 2:
        assert int(w[0]) == hs[0] | (hs[1] << 16)
