"""The packed BF16 AdamW loop (main.bend lines 297-445): the word-parallel kernel against the seed's element loop
written plainly, bit for bit, and the BF16 rounding rule on its edge cases."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numpy.typing as npt

from bendtorch.impl.kernels import packed as K
from bendtorch.impl.kernels.index import bf16_of_bits

F32 = np.float32
F = npt.NDArray[np.float32]
U = npt.NDArray[np.uint32]
State = tuple[F, F, U, U, F]  # w, g, m, v, vf: adamh's arrays, in its order
HYPER = tuple(F32(x) for x in (1e-3, 0.1, 0.999, 0.001, 1e-8, 0.01))  # lr, c1, b2, c2, eps, wd


def _state(n: int, packed_v: bool, seed: int) -> State:
    r = np.random.default_rng(seed)
    w = r.standard_normal(n).astype(F32)
    g = (r.standard_normal(n) * 1e-2).astype(F32)
    m = (r.integers(0, 2**32, (n + 1) // 2, dtype=np.uint64).astype(np.uint32) & np.uint32(0x3FFF3FFF))
    v = (r.integers(0, 2**32, (n + 1) // 2, dtype=np.uint64).astype(np.uint32) & np.uint32(0x3FFF3FFF)
         if packed_v else np.zeros(0, np.uint32))
    vf = np.abs(r.standard_normal(n)).astype(F32) if not packed_v else np.zeros(0, F32)
    return w, g, m, v, vf


def _copy(s: State) -> State:
    w, g, m, v, vf = s
    return w.copy(), g.copy(), m.copy(), v.copy(), vf.copy()


@pytest.mark.parametrize("packed_v", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 64, 1001])
@pytest.mark.parametrize("dec", [True, False])
def test_packed_kernel_is_the_element_loop(packed_v: bool, n: int, dec: bool) -> None:
    a = _state(n, packed_v, n)
    b = _copy(a)
    lr, c1, b2, c2, eps, wd = HYPER
    K.adamh(*a, packed_v, lr, c1, b2, c2, eps, wd, dec, F32(0.01), F32(0.03))
    K.adamh_plain(*b, packed_v, lr, c1, b2, c2, eps, wd, dec, F32(0.01), F32(0.03))
    for x, y in zip(a, b):
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))
    assert not a[1].any()


def test_packed_kernel_same_bits_with_one_or_two_threads() -> None:
    outs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        a = _state(4097, True, 3)
        lr, c1, b2, c2, eps, wd = HYPER
        K.adamh(*a, True, lr, c1, b2, c2, eps, wd, True, F32(0.01), F32(0.03))
        outs.append(a)
    numba.set_num_threads(int(getattr(numba.config, "NUMBA_NUM_THREADS")))
    for x, y in zip(*outs):
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("bits,expect", [
    (0x3F800000, 0x3F80),  # 1.0 exact
    (0x3F808000, 0x3F80),  # a tie, kept bit 0: stays (to even)
    (0x3F818000, 0x3F82),  # a tie, kept bit 1: up (to even)
    (0x3F808001, 0x3F81),  # above the tie: up
    (0x7F800000, 0x7F80),  # +inf
    (0xFF800000, 0xFF80),  # -inf
    (0x7F7FFFFF, 0x7F80),  # the largest float rounds to inf
    (0x7FC00000, 0xFFFF),  # NaN -> 0xFFFF
    (0xFF800001, 0xFFFF),  # a negative NaN with a small payload -> 0xFFFF
    (0x00000001, 0x0000),  # the smallest subnormal rounds to +0
    (0x80000000, 0x8000),  # -0 keeps its sign
])
def test_bf16_rounding_edge_cases(bits: int, expect: int) -> None:
    assert int(bf16_of_bits(np.uint32(bits))) == expect
    assert K.bf16_of_f32_plain(np.array([bits], np.uint32).view(F32)[0]) == expect
