"""The shared training loop's helpers (reference/trio.py) and the Adam c2 study's pairings (reference/adam_c2.py),
without training: distributions over seeds, AdamW's constants, and the bias each (c2, q2) pairing puts in v / q2."""

from __future__ import annotations

import numpy as np
import pytest

from bendtorch.reference import adam_c2, trio


def test_distribution_lists_every_seed() -> None:
    d = trio.distribution({3: 2.0, 1: 0.5, 2: 1.0})
    assert d == {"median": 1.0, "min": 0.5, "max": 2.0, "n": 3, "seeds": [1, 2, 3], "values": [0.5, 1.0, 2.0]}
    assert trio.fmt_distribution(d, ".2f") == "median 1.00 (range 0.50 to 2.00, 3 seeds: 1-3)"
    assert "seeds: 0, 5" in trio.fmt_distribution(trio.distribution({0: 1.0, 5: 1.0}))
    with pytest.raises(ValueError, match="no seeds"):
        trio.distribution({})


def test_adamw_constants_are_the_decimals_meant() -> None:
    # c = 1 - b as the decimal meant (oracle.hyper.one_minus), not 1 - b in float32 (main.bend lines 273-275)
    cfg = trio.AdamWHP(lr=1e-3).impl_cfg()
    assert cfg.c1 == np.float32(0.1) and cfg.c2 == np.float32(0.001)
    assert cfg.c2 != np.float32(1.0) - np.float32(0.999)


def test_drift_is_relative_to_the_reference() -> None:
    ref = [np.array([3.0, 4.0])]
    assert trio.drift([np.array([3.0, 4.5])], ref).tolist() == [0.1]
    assert trio.drift(ref, ref).tolist() == [0.0]


def test_c2_values() -> None:
    assert adam_c2.c2_value("0.001") == np.float32(0.001)
    c = adam_c2.c2_value("1-b2 (F32)")
    assert c == np.float32(1.0) - np.float32(0.999)
    # the seed's "1.3e-5 too small"
    assert 1.2e-5 < 1.0 - float(c) / float(np.float32(0.001)) < 1.4e-5
    with pytest.raises(ValueError):
        adam_c2.c2_value("0.01")


@pytest.mark.parametrize("c2v", adam_c2.C2_V)
def test_matched_pairings_keep_v_over_q2_unbiased(c2v: str) -> None:
    # the recursion with v's own c2 makes q2 = 1 - (1 - c2)^t: v / q2 carries no bias beyond float32 rounding
    b = adam_c2.v_over_q2_bias(c2v, "recursion, same c2", 100)
    assert np.max(np.abs(b)) < 1e-6, np.max(np.abs(b))


@pytest.mark.parametrize("c2v", adam_c2.C2_V)
def test_mismatched_pairings_carry_the_c2_gap(c2v: str) -> None:
    # the other c2 in q2's recursion: v / q2 off by the 1.3e-5 gap between the two c2, on every step
    b = adam_c2.v_over_q2_bias(c2v, "recursion, other c2", 100)
    assert np.all((np.abs(b) > 1.2e-5) & (np.abs(b) < 1.4e-5)), b


def test_q2_rules_start_at_one_minus_b2() -> None:
    for q in adam_c2.Q2:
        for c in adam_c2.C2_V:
            q1 = adam_c2.q2_rule(q, c)(np.float32(0.0), 1)
            assert abs(float(q1) - 0.001) < 2e-8, (q, c, q1)
    assert adam_c2.q2_rule("float64 power", "0.001")(np.float32(0.0), 7) == np.float32(1.0 - 0.999 ** 7)
