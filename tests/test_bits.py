"""Printing numbers as the decimal of their 32 bits (main.bend lines 1019-1036)."""

from __future__ import annotations

import numpy as np

from bendtorch.impl.bits import f32_bits, f32_of_bits, f32_print, mat_print, same_bits

F32 = np.float32


def test_mat_print_gives_each_number_as_its_bits_row_by_row() -> None:
    m = np.array([[1.0, -0.0], [np.inf, 2.5]], F32)
    assert mat_print("w", m) == "w 1065353216 2147483648 2139095040 1075838976"
    assert f32_print("loss", F32(1.0)) == "loss 1065353216"


def test_bits_round_trip_and_tell_zeros_and_nans_apart() -> None:
    for u in (0, 0x80000000, 1, 0x7FC00001, 0xFFFFFFFF, 0x3F800000):
        assert f32_bits(f32_of_bits(u)) == u
    assert not same_bits(np.array([0.0], F32), np.array([-0.0], F32))
    assert same_bits(np.array([np.nan], F32), np.array([np.nan], F32))
    assert not same_bits(np.zeros((2, 1), F32), np.zeros((1, 2), F32))
