"""The findings' library code (reference/findings/) and impl's precise RoPE table (impl/kernels/rope_precise.py).

Each test asserts a property that a broken version fails: the precise table's kernel and plain twin give the same
bits, and its error stays at the level of one rounding where the seed's table (checked beside it with the same bound)
is thousands of units off; RoPE's default is the seed's table bit for bit; the constant readers are switched and
restored; the Softmax and cross-entropy studies rank the orders as the arithmetic says they must; the invariance
sweep tells an operation on rows from one that mixes the batch."""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import pytest

import bendtorch.impl as L
from bendtorch.impl.kernels import rope as R
from bendtorch.impl.kernels import rope_precise as P
from bendtorch.oracle.rope import rope_angles

F32 = np.float32
U = 2.0 ** -24


def table_error_u(cs: np.ndarray, sn: np.ndarray, t: int, half: int, base: float) -> np.ndarray:
    """Per position, max over c of |cos - cos64| and |sin - sin64| in units of 2^-24."""
    a = rope_angles(t, half, base)
    err: np.ndarray = np.maximum(np.abs(cs - np.cos(a)), np.abs(sn - np.sin(a))).max(axis=1) / U
    return err


@pytest.mark.parametrize("t,half,base", [(64, 8, 1e4), (37, 12, 1e5), (200, 3, 5e5), (16, 1, 1e4)])
def test_rope_precise_kernel_and_plain_twin_same_bits(t: int, half: int, base: float) -> None:
    kc, ks = P.rope_table_precise(t, half, F32(base))
    pc, ps = P.rope_table_precise_plain(t, half, F32(base))
    assert kc.dtype == np.float32 and kc.shape == (t, half)
    assert np.array_equal(kc.view(np.uint32), pc.view(np.uint32))
    assert np.array_equal(ks.view(np.uint32), ps.view(np.uint32))


@pytest.mark.parametrize("base", [1e4, 1e5])
def test_rope_precise_error_stays_at_one_rounding(base: float) -> None:
    # 1.5 u: cosf and sinf are within 1 ulp on a float32 argument, the angle pair carries ~2^-44 relative error and
    # the correction term adds one rounding; the seed's table at the same positions is > 100 u off, so the same
    # check fails on it (positions 3072..4095, angles up to 4095 rad)
    t, half = 4096, 16
    precise = table_error_u(*P.rope_table_precise(t, half, F32(base)), t, half, base)
    seed = table_error_u(*R.rope_table(t, half, F32(base)), t, half, base)
    assert precise.max() <= 1.5, precise.max()
    assert seed[3 * t // 4:].max() > 100.0, seed.max()


def test_rope_precise_rejects_positions_beyond_float32() -> None:
    with pytest.raises(ValueError, match="2\\^24"):
        P.rope_table_precise(1 << 24, 1, F32(1e4))


def test_rope_layer_default_is_the_seed_table_and_precise_is_an_option() -> None:
    n, t, h, half = 24, 12, 2, 4
    x = np.random.default_rng(0).standard_normal((n, h * 2 * half), dtype=F32)
    cs, sn = R.rope_table(t, half, F32(1e4))
    seed_y = R.rope_apply_plain(x, cs, sn, t, h, half, True)
    d = L.RoPE(n, h * 2 * half, t, h, half, 1e4)
    p = L.RoPE(n, h * 2 * half, t, h, half, 1e4, precise=True)
    assert np.array_equal(d.fwd(None, x).y.view(np.uint32), seed_y.view(np.uint32))
    pc, ps = P.rope_table_precise(t, half, F32(1e4))
    assert np.array_equal(p.fwd(None, x).y.view(np.uint32),
                          R.rope_apply_plain(x, pc, ps, t, h, half, True).view(np.uint32))
    assert "precise" in p.name and "precise" not in d.name


def test_two_truths_gap_and_switch() -> None:
    import bendtorch.oracle.attention as OA
    from bendtorch.reference.findings import two_truths as T
    before = OA._decimal
    log: list[dict[str, object]] = []
    with T.program_constants(log):
        s24 = OA._decimal(F32(1.0 / np.sqrt(24)))
        s16 = OA._decimal(F32(0.25))
    assert OA._decimal is before  # restored
    assert s24 == float(F32(1.0 / np.sqrt(24))) and s24 != before(F32(1.0 / np.sqrt(24)))
    gaps = [float(g["gap_ulps"]) for g in log]  # type: ignore[arg-type]
    assert gaps[0] > T.GAP_ULPS and gaps[1] == 0.0, gaps


def test_two_truths_restores_readers_after_an_error() -> None:
    import bendtorch.oracle.layers as OL
    from bendtorch.reference.findings import two_truths as T
    before = getattr(OL, "dec")
    with pytest.raises(RuntimeError):
        with T.program_constants():
            raise RuntimeError("boom")
    assert getattr(OL, "dec") is before


def test_softmax_left_to_right_loses_to_pairwise_at_width() -> None:
    # a running float32 sum of c ~ 4096 exponentials of N(0, 1) logits accumulates errors ~ sqrt(c) u, the pairwise
    # sum ~ sqrt(log c) u: at width 4096 the left-to-right error is several times the pairwise one
    pytest.importorskip("torch")
    from bendtorch.reference.findings import orders as O
    e = O.softmax_errors(4096, 2, seed=0)
    assert min(e["impl"]) > 2.0 * max(e["pairwise"]), e


def test_ce_pairwise_mean_equals_impl_on_one_row() -> None:
    # with one row there is no sum over rows: impl's loss and the tree_sum mean of its own terms are the same number
    pytest.importorskip("torch")
    from bendtorch.reference.findings import orders as O
    e = O.ce_errors(1, 32, seed=3)
    assert e["impl"] == e["pairwise mean"]
    e = O.ce_errors(2048, 16, seed=3)
    assert e["impl"] > e["pairwise mean"], e


class _NoThreads:
    """A stand-in target: the sweep needs only `threads`."""

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        yield


def test_invariance_sweep_tells_a_row_wise_op_from_a_batch_wise_one() -> None:
    from bendtorch.reference.findings import invariance as I
    rowwise = I.sweep(_NoThreads(), lambda tg, x: x * F32(2.0), (8,), 5)
    assert rowwise["first_batch_with_a_change"] is None and rowwise["rows_changed"] == [0] * 5
    assert rowwise["threads_1_vs_2_same_bits"] is True
    # subtracting the batch mean makes every row depend on the others: changed from B = 2 on
    batchwise = I.sweep(_NoThreads(), lambda tg, x: x - x.mean(axis=0, keepdims=True), (8,), 5)
    assert batchwise["first_batch_with_a_change"] == 2 and batchwise["batch_invariant_to"] == 1


def test_impl_softmax_is_batch_invariant_in_the_sweep() -> None:
    from bendtorch.reference.findings import invariance as I
    f, item = I.operations(classes=64)["softmax"]
    r = I.sweep(I.LIBRARIES["impl"](), f, item, 6)
    assert r["first_batch_with_a_change"] is None, r
