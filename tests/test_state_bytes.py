"""Packed BF16 moments take half the bytes of F32 Adam's two moments, measured on the state a real step
of the tiny Llama leaves (bench/state_bytes.py; the README gives smol's figures)."""

from __future__ import annotations

from bendtorch.bench.state_bytes import measure


def test_packed_bf16_state_is_half_of_f32_adams() -> None:
    r = measure("tiny")
    assert r["adamw_f32"] == 2 * r["parameter_bytes"]  # m and v, 4 bytes a number each
    # 2 bytes a number each, plus at most one padding half-word per matrix with an odd count (none in tiny)
    assert r["adamw_bf16_mv"] == r["parameter_bytes"]
    assert r["bf16_mv_over_f32"] == 0.5 and r["bf16_m_over_f32"] == 0.75
