"""The checks every target's own tests make of its operations against the float64 oracle, on small inputs where any
faithful float32 evaluation agrees: exactly where every partial result is an exact float32 (Linear on small
integers, BF16 rounding, dropout with p = 0), within ROW_ULPS elsewhere. One function per operation family, called
with the target (tests/test_target_*.py)."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType
from typing import Any

import numpy as np

from bendtorch.laws.verdict import exact_rne
from bendtorch.oracle import attention as OA
from bendtorch.oracle import layers as OL
from bendtorch.oracle.ulp import normwise

F32 = np.float32

# A bound in ulps of each row's largest exact value (oracle.ulp.normwise): each output is a few roundings away from
# the truth (a 40-term sum, an exp within a few ulps, a division, a square root); a wrong axis, a missing max shift,
# a weight used untransposed or heads read in the wrong order are off by thousands of ulps.
ROW_ULPS = 8.0


def f64(a: Any) -> Any:
    return np.asarray(a, np.float64)


def rows_within(got: Any, exact: Any, bound: float = ROW_ULPS) -> bool:
    return bool(got.shape == exact.shape and max(normwise(a, c) for a, c in zip(got, exact)) <= bound)


def linear_is_exact_on_small_integers(t: Any) -> None:
    """Every product and partial sum of integers below 2^24 is exact in float32, so any summation order gives the
    exact x·Wᵀ + b: the target must give numpy's float64 result rounded, bit for bit."""
    r = np.random.default_rng(0)
    x, w, b = (r.integers(-4, 5, s).astype(F32) for s in ((5, 17), (3, 17), (3,)))
    assert np.array_equal(t.linear(x, w, b), (f64(x) @ f64(w).T + f64(b)).astype(F32))
    assert np.array_equal(t.linear(x, w, None), (f64(x) @ f64(w).T).astype(F32))


def row_operations_agree_with_the_oracle(t: Any) -> None:
    """softmax, log-softmax, cross-entropy's rows, RMSNorm and LayerNorm of 6 rows of 40 within ROW_ULPS."""
    r = np.random.default_rng(1)
    x = r.standard_normal((6, 40)).astype(F32)
    w, b = r.standard_normal(40).astype(F32), r.standard_normal(40).astype(F32)
    assert rows_within(t.softmax(x), OL.softmax(f64(x)))
    assert rows_within(t.log_softmax(x), OL.log_softmax(f64(x)))
    lab = r.integers(0, 40, 6)
    assert rows_within(t.ce_rows(x, lab)[:, None], -OL.log_softmax(f64(x))[np.arange(6), lab][:, None])
    X = f64(x)
    rms = X / np.sqrt(np.mean(X * X, axis=1, keepdims=True) + 1e-5) * f64(w)
    assert rows_within(t.rms_norm(x, w, 1e-5), rms)
    mu = X.mean(axis=1, keepdims=True)
    ln = (X - mu) / np.sqrt(((X - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5) * f64(w) + f64(b)
    assert rows_within(t.layer_norm(x, w, b, 1e-5), ln)


def grouped_causal_attention_agrees_with_the_oracle(t: Any, grad: bool = True) -> None:
    """Two sequences, 4 query heads over 2 key/value heads, 5 positions: the output (and with grad dQ, dK, dV)
    within ROW_ULPS of the float64 oracle (normwise over all of each), which reads key/value head a // 2 for query
    head a."""
    b, h, kv, t_, hd, sc = 2, 4, 2, 5, 8, 0.35
    r = np.random.default_rng(2)
    q, k, v = (r.standard_normal(s).astype(F32) for s in ((b, h, t_, hd), (b, kv, t_, hd), (b, kv, t_, hd)))

    def lay(a: Any) -> Any:  # (b, heads, t, hd) -> the oracle's (b t) x (heads hd)
        return f64(a).transpose(0, 2, 1, 3).reshape(b * t_, -1)

    want = OA.attention_fwd(lay(q), lay(k), lay(v), b, t_, kv, h // kv, hd, sc)
    assert normwise(lay(t.attention(q, k, v, sc)), want) <= ROW_ULPS
    if grad:
        grads = OA.attention_bwd(lay(q), lay(k), lay(v), lay(q), b, t_, kv, h // kv, hd, sc)
        for got, exact in zip(t.attention_grad(q, k, v, q, sc), grads):
            assert normwise(lay(got), exact) <= ROW_ULPS


def bf16_and_dropout_zero_are_exact(t: Any) -> None:
    """BF16 rounding is round-to-nearest-even of the top 16 bits (ties, the largest finite, a subnormal, a sticky
    bit); dropout with p = 0 returns every bit of its input (NaNs and infinities included)."""
    u = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00008000, 0x3F800001, 0xBF7FFFFF], np.uint32)
    assert np.array_equal(t.bf16_bits(u.view(F32)), np.array([exact_rne(int(a)) for a in u], np.uint16))
    x = np.random.default_rng(3).integers(0, 2**32, (3, 5), dtype=np.uint64).astype(np.uint32).view(F32)
    assert np.array_equal(t.dropout(x, 0.0).view(np.uint32), x.view(np.uint32))


def conformance_laws() -> ModuleType:
    """bendtorch.laws.test_targets imported under the conformance tests' profile (20 examples, no deadline,
    derandomized so a check is reproducible), the profile in force before put back at once: hypothesis binds a
    test's settings when @given decorates it, so whichever test module imports the laws first decides them for all,
    and every module that calls this gets the same."""
    from hypothesis import HealthCheck, settings
    settings.register_profile("conformance-tests", max_examples=20, deadline=None, database=None, derandomize=True,
                              suppress_health_check=list(HealthCheck))
    before = getattr(settings, "_current_profile", None) or "default"
    settings.load_profile("conformance-tests")
    try:
        from bendtorch.laws import test_targets
    finally:
        settings.load_profile(before)
    return test_targets


def not_run_without(module: str, target: str) -> list[str]:
    """The lines a fresh Python prints whose import of `module` is blocked (not installed, as far as Python can
    tell): the adapter's module imports all the same, making the target raises NotRun (its reason printed first),
    and the target's column says not run (its reason printed second)."""
    code = (f"import sys\n"
            f"sys.modules[{module!r}] = None\n"
            f"import bendtorch.targets.{target}\n"
            f"from bendtorch.targets import NotRun, column, make_target, resolve\n"
            f"try:\n"
            f"    make_target({target!r})\n"
            f"except NotRun as e:\n"
            f"    print('NotRun:', e)\n"
            f"print(column(resolve({target!r}))[1]['not_run'])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()
