"""The conformance suite's own checks (laws/test_targets.py, laws/targets/):

- every conformance law fails on a deliberately broken adapter (a real adapter with one operation changed in the
  way the law forbids) and holds on the adapter it breaks, so a "holds" in the table means something;
- each library adapter (torch, jax) maps the laws' operations correctly: its results have the laws' shapes and agree
  with impl's to within rounding, which a wrong layout, axis or weight orientation would not;
- `bendtorch laws --target` reports findings with their counterexamples, and the exit code rule.

The JAX checks are skipped, with the reason, where jax is not installed."""

from __future__ import annotations

import contextlib
import importlib.util
from typing import Any, Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from bendtorch.impl.llama import config
from bendtorch.laws.registry import LawFailure
from bendtorch.laws.run import conformance_markdown, exit_code
from bendtorch.laws.targets import NotRun, Opt, Target, load

F32 = np.float32

# hypothesis binds a test's settings when @given decorates it: the laws are imported under this profile (20
# examples, no deadline, derandomized so the check is reproducible; the laws' own conftest gives the same where it
# is loaded first), and the profile in force before is put back at once.
settings.register_profile("conformance-tests", max_examples=20, deadline=None, database=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
_before = getattr(settings, "_current_profile", None) or "default"
settings.load_profile("conformance-tests")
from bendtorch.laws import test_targets as T  # noqa: E402
settings.load_profile(_before)


def up(a: Any) -> Any:
    """Every element one ulp up: the smallest change a bit-for-bit law must see."""
    a = np.asarray(a, F32)
    return np.nextafter(a, F32(np.inf)).astype(F32)


class Broken(Target):
    """A real adapter with one operation replaced; every other operation is the base's."""

    def __init__(self, base: Target, **ops: Callable[..., Any]) -> None:
        self.base, self.ops = base, ops
        self.name = f"broken {base.name}"
        self.calls = 0
        self.nthreads = 0

    def __getattribute__(self, name: str) -> Any:
        ops = object.__getattribute__(self, "ops")
        if name in ops:
            return lambda *a, **k: ops[name](self, *a, **k)
        if name in ("base", "ops", "calls", "nthreads", "name", "_na", "device") or name.startswith("__"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "base"), name)


def batched(op: str) -> Callable[..., Any]:
    """op, but one ulp up whenever more than one row (or sequence) is computed at once."""
    def f(self: Broken, x: Any, *a: Any) -> Any:
        y = getattr(self.base, op)(x, *a)
        return up(y) if np.asarray(x).shape[0] > 1 else y
    return f


def _llama_batched(self: Broken, cfg: Any, seed: int, tokens: Any) -> Any:
    y = self.base.llama_logits(cfg, seed, tokens)
    return up(y) if tokens.shape[0] > 1 else y


def _attn_reads_last(what: str) -> Callable[..., Any]:
    def f(self: Broken, q: Any, k: Any, v: Any, sc: float) -> Any:
        o = self.base.attention(q, k, v, sc)
        src = v if what == "v" else k
        leak = src[:, :, -1:, :].sum(axis=(1, 3), keepdims=True)  # the last position, read by every position
        return (o + F32(1e-3) * leak).astype(F32)
    return f


def _grad_after(self: Broken, q: Any, k: Any, v: Any, do: Any, sc: float) -> Any:
    dq, dk, dv = self.base.attention_grad(q, k, v, do, sc)
    dk = dk.copy()
    dk[:, :, -1, :] += F32(1.0)
    return dq, dk, dv


def _tiled_heads(self: Broken, q: Any, k: Any, v: Any, sc: float) -> Any:
    """Query head a reads key/value head a % kv (np.tile) instead of a // g."""
    r = q.shape[1] // k.shape[1]
    return self.base.attention(q, np.tile(k, (1, r, 1, 1)), np.tile(v, (1, r, 1, 1)), sc)


def _grad_batched(self: Broken, q: Any, k: Any, v: Any, do: Any, sc: float) -> Any:
    dq, dk, dv = self.base.attention_grad(q, k, v, do, sc)
    return (dq, dk, up(dv)) if q.shape[0] > 1 else (dq, dk, dv)


def _train_counted(self: Broken, *a: Any, **k: Any) -> Any:
    self.calls += 1
    p, losses = self.base.train(*a, **k)
    return p, (up(losses) if self.calls % 2 == 0 else losses)


@contextlib.contextmanager
def _threads(self: Broken, n: int) -> Iterator[None]:
    self.nthreads = n
    yield


def _train_threads(self: Broken, *a: Any, **k: Any) -> Any:
    p, losses = self.base.train(*a, **k)
    return p, (up(losses) if self.nthreads == 2 else losses)


def _train_resumed(self: Broken, cfg: Any, seed: int, opt: Opt, data: Any, save_at: int | None = None) -> Any:
    p, losses = self.base.train(cfg, seed, opt, data, save_at=save_at)
    return ({n: up(w) for n, w in p.items()} if save_at is not None else p), losses


def _opt_up(self: Broken, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
    return [up(p) for p in self.base.opt_steps(opt, params, grads)]


def _bf16_truncate(self: Broken, x: Any) -> Any:
    return (np.asarray(x, F32).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_nan_inf(self: Broken, x: Any) -> Any:
    h = self.base.bf16_bits(x)
    return np.where(np.isnan(np.asarray(x, F32)), np.uint16(0x7F80), h).astype(np.uint16)


def _dropout_ftz(self: Broken, x: Any, p: float) -> Any:
    """Subnormals flushed to zero, as a CPU in FTZ mode would."""
    y = np.asarray(self.base.dropout(x, p), F32).copy()
    y[(y != 0) & (np.abs(y) < F32(1.1754944e-38))] = F32(0.0)
    return y


def _erf_asym(self: Broken, x: Any) -> Any:
    y = self.base.erf(x)
    return np.where(np.asarray(x) < 0, np.nextafter(y, F32(0)), y).astype(F32)


def _erf_dip(self: Broken, x: Any) -> Any:
    y = self.base.erf(x)
    return np.where(np.asarray(x) >= F32(0.84375), y - F32(0.01), y).astype(F32)


def _erf_big(self: Broken, x: Any) -> Any:
    return (self.base.erf(x) * F32(1.5)).astype(F32)


# law -> (the adapter broken, the operation replaced)
BREAKS: dict[str, tuple[str, dict[str, Callable[..., Any]]]] = {
    "test_linear_batch_invariant": ("impl", {"linear": batched("linear")}),
    "test_matmul_batch_invariant": ("impl", {"linear": batched("linear")}),
    "test_rms_norm_batch_invariant": ("impl", {"rms_norm": batched("rms_norm")}),
    "test_layer_norm_batch_invariant": ("impl", {"layer_norm": batched("layer_norm")}),
    "test_softmax_batch_invariant": ("impl", {"softmax": batched("softmax")}),
    "test_log_softmax_batch_invariant": ("impl", {"log_softmax": batched("log_softmax")}),
    "test_ce_rows_batch_invariant": ("torch", {"ce_rows": batched("ce_rows")}),
    "test_attention_batch_invariant": ("impl", {"attention": batched("attention")}),
    "test_llama_forward_batch_invariant": ("impl", {"llama_logits": _llama_batched}),
    "test_llama_step_batch_invariant": ("impl", {"llama_logits": _llama_batched}),
    "test_causal": ("impl", {"attention": _attn_reads_last("v")}),
    "test_causal_keys": ("impl", {"attention": _attn_reads_last("k")}),
    "test_causal_grad": ("impl", {"attention_grad": _grad_after}),
    "test_kv_of_group": ("impl", {"attention": _tiled_heads}),
    "test_attn_par_fwd": ("impl", {"attention": batched("attention")}),
    "test_attn_par_bwd": ("impl", {"attention_grad": _grad_batched}),
    "test_run_to_run": ("impl", {"train": _train_counted}),
    "test_threads": ("impl", {"train": _train_threads, "threads": _threads}),
    "test_resume": ("impl", {"train": _train_resumed}),
    "test_lr_zero": ("impl", {"opt_steps": _opt_up}),
    "test_zero_grad_sgd": ("impl", {"opt_steps": _opt_up}),
    "test_bf16_rne": ("impl", {"bf16_bits": _bf16_truncate}),
    "test_bf16_nan": ("impl", {"bf16_bits": _bf16_nan_inf}),
    "test_dropout_p_zero": ("impl", {"dropout": _dropout_ftz}),
    "test_erf_odd": ("impl", {"erf": _erf_asym}),
    "test_erf_monotone": ("impl", {"erf": _erf_dip}),
    "test_erf_bounded": ("impl", {"erf": _erf_big}),
}

LAWS = sorted(n for n in vars(T) if n.startswith("test_") and callable(getattr(T, n)))


def base(name: str) -> Target:
    try:
        return load(name)
    except NotRun as e:
        pytest.skip(f"not run: {e}")


def test_every_conformance_law_has_a_breakage() -> None:
    assert sorted(BREAKS) == LAWS


@pytest.mark.parametrize("law", LAWS)
def test_law_fails_on_a_broken_adapter_and_holds_on_the_real_one(law: str) -> None:
    """The law holds on the real adapter and fails, with a recorded counterexample, on the broken one."""
    which, ops = BREAKS[law]
    real = base(which)
    fn = getattr(T, law)
    fn(target=real)
    with pytest.raises((LawFailure, BaseExceptionGroup)) as e:
        fn(target=Broken(real, **ops))
    errs = list(e.value.exceptions) if isinstance(e.value, BaseExceptionGroup) else [e.value]
    assert all(isinstance(x, LawFailure) and x.record.get("what") for x in errs), errs


# ---- the library adapters map the operations right: the laws' shapes, impl's numbers to within rounding ----

def close(a: Any, b: Any) -> bool:
    """Agreement up to the libraries' own rounding: a relative 1e-3 (about 8000 ulps, far more than any of these
    few-operation results differ by between libraries) plus 1e-5 absolute. A wrong mapping (heads transposed, a
    weight used untransposed, the wrong axis) gives differences of order one, which this catches."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 1e-3 * np.abs(b) + 1e-5))


ADAPTERS = ["torch", pytest.param("jax", marks=pytest.mark.skipif(
    importlib.util.find_spec("jax") is None or importlib.util.find_spec("optax") is None,
    reason="not run: jax (and optax) not installed: pip install 'bendtorch[jax]'"))]


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_agrees_with_impl(name: str) -> None:
    lib, ref = base(name), load("impl")
    r = np.random.default_rng(0)
    x, w, b = (r.standard_normal(s).astype(F32) for s in ((5, 7), (3, 7), (3,)))
    g, bb = r.standard_normal(7).astype(F32), r.standard_normal(7).astype(F32)
    assert close(lib.linear(x, w, b), ref.linear(x, w, b))
    assert close(lib.linear(x, w, None), ref.linear(x, w, None))
    assert close(lib.rms_norm(x, g, 1e-5), ref.rms_norm(x, g, 1e-5))
    assert close(lib.layer_norm(x, g, bb, 1e-5), ref.layer_norm(x, g, bb, 1e-5))
    assert close(lib.softmax(x), ref.softmax(x))
    assert close(lib.log_softmax(x), ref.log_softmax(x))
    lab = np.array([0, 6, 3, 2, 1])
    assert close(lib.ce_rows(x, lab), -ref.log_softmax(x)[np.arange(5), lab])
    q, k, v = (r.standard_normal(s).astype(F32) for s in ((2, 4, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4)))
    assert close(lib.attention(q, k, v, 0.5), ref.attention(q, k, v, 0.5))
    assert all(close(a, c) for a, c in zip(lib.attention_grad(q, k, v, q, 0.5), ref.attention_grad(q, k, v, q, 0.5)))
    assert close(lib.erf(x), ref.erf(x))
    assert np.array_equal(lib.bf16_bits(x), ref.bf16_bits(x))  # both round to nearest even on these values
    cfg = config("tiny", t=4)
    toks = r.integers(0, cfg.vocab, (2, 4))
    assert close(lib.llama_logits(cfg, 3, toks), ref.llama_logits(cfg, 3, toks))
    data = [(toks, r.integers(0, cfg.vocab, (2, 4))) for _ in range(2)]
    for opt in (Opt("sgd", 0.1), Opt("momentum", 0.05), Opt("adam", 1e-3, wd=0.01), Opt("adamw", 1e-3, wd=0.01)):
        pa, la = lib.train(cfg, 3, opt, data)
        pb, lb = ref.train(cfg, 3, opt, data)
        assert close(la, lb), opt
        assert all(close(pa[n], pb[n]) for n in pb), opt
        ps = [r.standard_normal((3, 4)).astype(F32)]
        gs = [[r.standard_normal((3, 4)).astype(F32)] for _ in range(3)]
        assert close(lib.opt_steps(opt, ps, gs)[0], ref.opt_steps(opt, ps, gs)[0]), opt


# ---- what the command reports ----

def test_exit_code_rule() -> None:
    """impl: a failing law exits 1. Another library: a failing law is a finding (exit 0), an erring law exits 1."""
    held = [{"result": "passed"}, {"result": "not applicable"}, {"result": "not run"}]
    assert exit_code(held, "impl") == 0 and exit_code(held, "torch") == 0
    assert exit_code(held + [{"result": "failed"}], "impl") == 1
    assert exit_code(held + [{"result": "failed"}], "jax") == 0
    assert exit_code(held + [{"result": "error"}], "torch") == 1
    assert exit_code([], "torch") == 1


def test_conformance_markdown() -> None:
    ce = {"what": "linear: row 0 in a batch of 2 against alone", "inputs": {"x": {"shape": [2, 17]}, "i": 0},
          "first": {"index": [0, 1], "got_bits": "3f800001", "want_bits": "3f800000", "got": 1.0000001, "want": 1.0}}
    docs = [{"profile": "ci", "seconds": 1.0, "targets": [{"target": "impl", "versions": {"numba": "x"}}],
             "rows": [{"family": "batch_invariance", "law": "linear", "result": "passed", "target": "impl",
                       "suite": "conformance"},
                      {"family": "protocol", "law": "seq_assoc", "result": "passed", "target": "impl",
                       "suite": "impl"}]},
            {"profile": "ci", "seconds": 2.0, "targets": [{"target": "torch", "versions": {"torch": "y"}}],
             "rows": [{"family": "batch_invariance", "law": "linear", "result": "failed", "target": "torch",
                       "suite": "conformance", "counterexample": ce}]}]
    md = conformance_markdown(docs)
    assert "| family | law | impl | torch |" in md
    assert "| batch_invariance | linear | holds | **fails** |" in md
    assert "seq_assoc" not in md  # impl's own laws are not part of the conformance table
    assert "3f800001 (1.0000001) against 3f800000 (1.0)" in md and "x 2x17, i 0" in md


def test_a_counterexample_record_gives_the_inputs_back() -> None:
    """The JSON record of an input reads back to the same bits (NaN payloads, -0 and subnormals included)."""
    from bendtorch.laws.verdict import decode, encode
    a = np.array([[1.5, -0.0], [np.nan, 1e-45]], F32)
    a.view(np.uint32)[1, 0] = 0x7FA00001  # a signaling NaN's payload
    assert np.array_equal(decode(encode(a)).view(np.uint32), a.view(np.uint32))
    h = np.array([0x7FC1, 0x8000], np.uint16)
    assert np.array_equal(decode(encode(h)), h)
    assert encode(np.zeros(5000, F32)).get("bits") is None  # too large: regenerated from the seed instead
