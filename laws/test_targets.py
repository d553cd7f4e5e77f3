"""Conformance laws: each statement and its strategy written once, held against the target the session names
(`bendtorch laws --target SPEC`, or pytest's `--bendtorch-target SPEC` through the plugin bendtorch.laws.plugin:
a built-in target, pkg.mod:attr or an entry point), through the adapters of bendtorch.targets.

Every law compares bits. Where an operation has no meaning for a library the adapter raises NotApplicable and the law
reports "not applicable" with the reason; where it cannot run here, "not run" with the reason; never a pass. A law
that does not hold raises a LawFailure recording the smallest counterexample hypothesis found (shapes, inputs, the
two results' bits); `bendtorch laws --json` carries it.

Sizes are drawn from short lists (not powers of two included) rather than every integer: a JAX target compiles once
per shape, and a handful of shapes keeps the ci profile of all targets under two minutes. Values come from numpy's
PCG64 at a drawn seed (normal values with zeros of both signs, subnormals, tiny and large magnitudes mixed in, see
strategies.fill_rng), so a counterexample too large to print is regenerated from its seed."""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import Any, Iterator

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bendtorch.impl.llama import LlamaCfg, config
from bendtorch.laws.registry import law, scaled
from bendtorch.laws.strategies import bits32, fill_rng, seeds
from bendtorch.laws.verdict import exact_rne, expect_same, fail
from bendtorch.targets.base import OPTS, NotApplicable, NotRun, Opt, Target

F32 = np.float32

BATCHES = [2, 33, 64]            # rows in the batch: row i and 1..63 others
WIDTHS = [17, 256]               # features per row
OUTS = [1, 16]                   # Linear's outputs
# attention's (t, kv, g, hd): t positions, kv key/value heads of g query heads each, head dim hd
ATTN = [(3, 1, 2, 4), (8, 2, 3, 8)]
TINY = config("tiny")            # the seed's tiny Llama (t = 16)
STEP = config("tiny", t=1)       # the same model on one token per sequence: a one-token step's shapes


@pytest.fixture(scope="session")
def target(bendtorch_target: Target) -> Target:
    """The target every law here is held to: the plugin's bendtorch_target."""
    return bendtorch_target


@contextlib.contextmanager
def applicable() -> Iterator[None]:
    """NotApplicable and NotRun from an adapter become the law's outcome, with the reason."""
    try:
        yield
    except NotApplicable as e:
        pytest.skip(f"not applicable: {e}")
    except NotRun as e:
        pytest.skip(f"not run: {e}")


def values(seed: int, shape: tuple[int, ...], scale: float = 1.0) -> Any:
    """float32 values of the shape from seed (strategies.fill_rng: normal, with 2% special values)."""
    r = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return fill_rng(seed, special_rate=0.02, scale=scale)(r, shape[-1]).reshape(shape)


# ---------------------------------------------------------------------------------------------------------------
# batch invariance: row i alone has the bits it has among other rows
# ---------------------------------------------------------------------------------------------------------------

@st.composite
def batch_rows(draw: Any) -> tuple[int, int, int, int]:
    """(B, i, c, seed): a batch of B rows of c features, row i the one watched."""
    b = draw(st.sampled_from(BATCHES))
    return b, draw(st.integers(0, b - 1)), draw(st.sampled_from(WIDTHS)), draw(seeds())


def row_invariant(what: str, f: Any, x: Any, i: int, **inputs: Any) -> None:
    """f's row i on the batch x has the bits f gives on row i alone."""
    batch = f(x)[i:i + 1]
    alone = f(x[i:i + 1])
    expect_same(f"{what}: row {i} in a batch of {x.shape[0]} against alone", batch, alone,
                {"x": x, "i": i, **inputs})


@law("batch_invariance", "linear", "bit for bit")
@given(batch_rows(), st.sampled_from(OUTS))
@example((2, 0, 17, 0), 16)
def test_linear_batch_invariant(target: Target, p: tuple[int, int, int, int], o: int) -> None:
    """Linear, y = x·Wᵀ + b: row i of y has the same bits whether x holds it alone or among 1..63 other rows (the
    property batch-invariant kernels give LLM inference; impl's fixed summation order keeps it)."""
    b, i, c, seed = p
    x, w, bias = values(seed, (b, c)), values(seed + 1, (o, c)), values(seed + 2, (o,))
    with applicable():
        row_invariant("linear", lambda a: target.linear(a, w, bias), x, i, w=w, b=bias, seed=seed)


@law("batch_invariance", "matmul", "bit for bit")
@given(batch_rows(), st.sampled_from(OUTS))
@example((33, 1, 17, 0), 1)
def test_matmul_batch_invariant(target: Target, p: tuple[int, int, int, int], o: int) -> None:
    """The product x·Wᵀ alone (Linear without bias): row i has the same bits alone or among other rows."""
    b, i, c, seed = p
    x, w = values(seed, (b, c)), values(seed + 1, (o, c))
    with applicable():
        row_invariant("x·Wᵀ", lambda a: target.linear(a, w, None), x, i, w=w, seed=seed)


@law("batch_invariance", "rms_norm", "bit for bit")
@given(batch_rows())
def test_rms_norm_batch_invariant(target: Target, p: tuple[int, int, int, int]) -> None:
    """RMSNorm (eps 1e-5, a gain per feature): row i has the same bits alone or among other rows."""
    b, i, c, seed = p
    x, w = values(seed, (b, c)), values(seed + 1, (c,))
    with applicable():
        row_invariant("rms_norm", lambda a: target.rms_norm(a, w, 1e-5), x, i, w=w, seed=seed)


@law("batch_invariance", "layer_norm", "bit for bit")
@given(batch_rows())
def test_layer_norm_batch_invariant(target: Target, p: tuple[int, int, int, int]) -> None:
    """LayerNorm (eps 1e-5, gain and bias per feature): row i has the same bits alone or among other rows."""
    b, i, c, seed = p
    x, w, bias = values(seed, (b, c)), values(seed + 1, (c,)), values(seed + 2, (c,))
    with applicable():
        row_invariant("layer_norm", lambda a: target.layer_norm(a, w, bias, 1e-5), x, i, w=w, b=bias, seed=seed)


@law("batch_invariance", "softmax", "bit for bit")
@given(batch_rows())
def test_softmax_batch_invariant(target: Target, p: tuple[int, int, int, int]) -> None:
    """softmax over each row: row i has the same bits alone or among other rows."""
    b, i, c, seed = p
    with applicable():
        row_invariant("softmax", target.softmax, values(seed, (b, c), 4.0), i, seed=seed)


@law("batch_invariance", "log_softmax", "bit for bit")
@given(batch_rows())
def test_log_softmax_batch_invariant(target: Target, p: tuple[int, int, int, int]) -> None:
    """log-softmax over each row: row i has the same bits alone or among other rows."""
    b, i, c, seed = p
    with applicable():
        row_invariant("log_softmax", target.log_softmax, values(seed, (b, c), 4.0), i, seed=seed)


@law("batch_invariance", "cross_entropy_rows", "bit for bit")
@given(batch_rows())
@example((33, 26, 256, 0))
def test_ce_rows_batch_invariant(target: Target, p: tuple[int, int, int, int]) -> None:
    """Cross-entropy's per-row terms (no reduction): row i's term has the same bits alone or among other rows."""
    b, i, c, seed = p
    z = values(seed, (b, c), 4.0)
    lab = np.random.default_rng(seed).integers(0, c, b)
    with applicable():
        batch = target.ce_rows(z, lab)[i:i + 1]
        alone = target.ce_rows(z[i:i + 1], lab[i:i + 1])
        expect_same(f"cross-entropy term {i} in a batch of {b} against alone", batch, alone,
                    {"z": z, "labels": lab, "i": i, "seed": seed})


@st.composite
def attn_problems(draw: Any, batches: list[int] = BATCHES) -> tuple[int, int, int, int, int, int, float]:
    """(b, t, kv, g, hd, seed, scale): b sequences of t positions, kv key/value heads of g query heads, head dim hd."""
    t, kv, g, hd = draw(st.sampled_from(ATTN))
    return (draw(st.sampled_from(batches)), t, kv, g, hd, draw(seeds()),
            draw(st.sampled_from([0.125, 0.35355338, 1.0])))


def qkv(b: int, t: int, kv: int, g: int, hd: int, seed: int) -> tuple[Any, Any, Any, Any]:
    """Q (b, kv*g, t, hd), K and V (b, kv, t, hd), dO like Q."""
    return (values(seed, (b, kv * g, t, hd)), values(seed + 1, (b, kv, t, hd)), values(seed + 2, (b, kv, t, hd)),
            values(seed + 3, (b, kv * g, t, hd)))


@law("batch_invariance", "attention", "bit for bit")
@given(attn_problems(batches=[2, 64]), st.data())
def test_attention_batch_invariant(target: Target, p: Any, data: Any) -> None:
    """Causal grouped-query attention: sequence i's output has the same bits computed alone or among 1..63 other
    sequences."""
    b, t, kv, g, hd, seed, sc = p
    i = data.draw(st.integers(0, b - 1))
    q, k, v, _ = qkv(b, t, kv, g, hd, seed)
    with applicable():
        batch = target.attention(q, k, v, sc)[i:i + 1]
        alone = target.attention(q[i:i + 1], k[i:i + 1], v[i:i + 1], sc)
        expect_same(f"attention of sequence {i} in a batch of {b} against alone", batch, alone,
                    {"q": q, "k": k, "v": v, "scale": sc, "i": i, "seed": seed})


def llama_invariant(target: Target, cfg: LlamaCfg, b: int, i: int, seed: int, what: str) -> None:
    toks = np.random.default_rng(seed).integers(0, cfg.vocab, (b, cfg.t))
    with applicable():
        batch = target.llama_logits(cfg, seed & 0xFF, toks)[i:i + 1]
        alone = target.llama_logits(cfg, seed & 0xFF, toks[i:i + 1])
        expect_same(f"{what}: logits of sequence {i} in a batch of {b} against alone", batch, alone,
                    {"tokens": toks, "i": i, "weights_seed": seed & 0xFF, "t": cfg.t})


@st.composite
def llama_batches(draw: Any) -> tuple[int, int, int]:
    b = draw(st.sampled_from([2, 64]))
    return b, draw(st.integers(0, b - 1)), draw(seeds())


@law("batch_invariance", "llama_forward", "bit for bit")
@given(llama_batches())
@scaled(4)
def test_llama_forward_batch_invariant(target: Target, p: tuple[int, int, int]) -> None:
    """The tiny Llama's forward (t = 16; weights by impl.llama's initialization from a seed, the same numbers for
    every target): sequence i's logits have the same bits computed alone or among 1..63 other sequences."""
    b, i, seed = p
    llama_invariant(target, TINY, b, i, seed, "tiny Llama forward")


@law("batch_invariance", "llama_one_token_step", "bit for bit")
@given(llama_batches())
@scaled(4)
def test_llama_step_batch_invariant(target: Target, p: tuple[int, int, int]) -> None:
    """The tiny Llama on one token per sequence, the shapes of a one-token step (every matmul gets b rows, the case
    that decides batch invariance in inference): sequence i's logits have the same bits alone or among other
    sequences. (impl has no key/value cache: the step is the model on one position.)"""
    b, i, seed = p
    llama_invariant(target, STEP, b, i, seed, "tiny Llama one-token step")


# ---------------------------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------------------------

@st.composite
def causal_problems(draw: Any) -> Any:
    b, t, kv, g, hd, seed, sc = draw(attn_problems(batches=[1, 2]))
    return b, t, kv, g, hd, seed, sc, draw(st.integers(0, t - 2))


@law("attention", "causal", "bit for bit (finite values)")
@given(causal_problems())
def test_causal(target: Target, p: Any) -> None:
    """Outputs at positions 0..i keep their bits when the queries, keys and values at the later positions change
    (to other finite values)."""
    b, t, kv, g, hd, seed, sc, i = p
    q, k, v, _ = qkv(b, t, kv, g, hd, seed)
    q2, k2, v2, _ = qkv(b, t, kv, g, hd, seed + 7)
    q2[:, :, :i + 1], k2[:, :, :i + 1], v2[:, :, :i + 1] = q[:, :, :i + 1], k[:, :, :i + 1], v[:, :, :i + 1]
    with applicable():
        expect_same(f"outputs at positions 0..{i} after the later positions changed",
                    target.attention(q2, k2, v2, sc)[:, :, :i + 1], target.attention(q, k, v, sc)[:, :, :i + 1],
                    {"q": q, "k": k, "v": v, "q2": q2, "k2": k2, "v2": v2, "scale": sc, "i": i, "seed": seed})


@law("attention", "causal_keys", "bit for bit (any later keys, inf and NaN included)")
@given(causal_problems(), st.sampled_from(["finite", "inf", "nan"]))
@example((1, 3, 1, 2, 4, 0, 1.0, 0), "inf")
def test_causal_keys(target: Target, p: Any, kind: str) -> None:
    """Query position i reads keys 0..i only: keys after i replaced by anything (finite, infinite or NaN) leave the
    outputs at positions 0..i bit for bit."""
    b, t, kv, g, hd, seed, sc, i = p
    q, k, v, _ = qkv(b, t, kv, g, hd, seed)
    k2 = k.copy()
    k2[:, :, i + 1:] = {"finite": values(seed + 9, k2[:, :, i + 1:].shape), "inf": F32(np.inf),
                        "nan": F32(np.nan)}[kind]
    with applicable():
        expect_same(f"outputs at positions 0..{i} after the later keys became {kind}",
                    target.attention(q, k2, v, sc)[:, :, :i + 1], target.attention(q, k, v, sc)[:, :, :i + 1],
                    {"q": q, "k": k, "v": v, "k2": k2, "scale": sc, "i": i, "seed": seed})


@law("attention", "causal_grad", "zero (either sign)")
@given(causal_problems())
def test_causal_grad(target: Target, p: Any) -> None:
    """No gradient reaches a key or value after the query's position: with dO zero but at position i, dK and dV are
    zero at every later position."""
    b, t, kv, g, hd, seed, sc, i = p
    q, k, v, do = qkv(b, t, kv, g, hd, seed)
    do[:, :, :i] = 0
    do[:, :, i + 1:] = 0
    with applicable():
        _, dk, dv = target.attention_grad(q, k, v, do, sc)
        for name, d in (("dK", dk), ("dV", dv)):
            later = d[:, :, i + 1:]
            if not np.all(later == 0):
                raise fail(f"{name} after position {i} is not zero", {"q": q, "k": k, "v": v, "do": do,
                                                                      "scale": sc, "i": i, "seed": seed},
                           got=later[later != 0][:1])


@law("attention", "kv_of_group", "bit for bit")
@given(attn_problems(batches=[1]))
def test_kv_of_group(target: Target, p: Any) -> None:
    """Grouped-query attention equals attention with each key/value head repeated for its g query heads
    (query head a reads key/value head a // g), bit for bit: the output and dQ."""
    b, t, kv, g, hd, seed, sc = p
    q, k, v, do = qkv(b, t, kv, g, hd, seed)
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    inputs = {"q": q, "k": k, "v": v, "do": do, "scale": sc, "seed": seed}
    with applicable():
        expect_same("output: grouped against repeated heads", target.attention(q, k, v, sc),
                    target.attention(q, kr, vr, sc), inputs)
        expect_same("dQ: grouped against repeated heads", target.attention_grad(q, k, v, do, sc)[0],
                    target.attention_grad(q, kr, vr, do, sc)[0], inputs)


@law("attention", "attn_par_fwd", "bit for bit")
@given(attn_problems(batches=[2, 3]))
def test_attn_par_fwd(target: Target, p: Any) -> None:
    """The sequences computed in one batch give the bits each gives computed alone (forward)."""
    b, t, kv, g, hd, seed, sc = p
    q, k, v, _ = qkv(b, t, kv, g, hd, seed)
    with applicable():
        o = target.attention(q, k, v, sc)
        for i in range(b):
            expect_same(f"output of sequence {i} of {b} against alone", o[i:i + 1],
                        target.attention(q[i:i + 1], k[i:i + 1], v[i:i + 1], sc),
                        {"q": q, "k": k, "v": v, "scale": sc, "i": i, "seed": seed})


@law("attention", "attn_par_bwd", "bit for bit")
@given(attn_problems(batches=[2, 3]))
def test_attn_par_bwd(target: Target, p: Any) -> None:
    """The sequences computed in one batch give the bits each gives computed alone (dQ, dK, dV)."""
    b, t, kv, g, hd, seed, sc = p
    q, k, v, do = qkv(b, t, kv, g, hd, seed)
    with applicable():
        grads = target.attention_grad(q, k, v, do, sc)
        for i in range(b):
            one = target.attention_grad(q[i:i + 1], k[i:i + 1], v[i:i + 1], do[i:i + 1], sc)
            for name, a, c in zip(("dQ", "dK", "dV"), grads, one):
                expect_same(f"{name} of sequence {i} of {b} against alone", a[i:i + 1], c,
                            {"q": q, "k": k, "v": v, "do": do, "scale": sc, "i": i, "seed": seed})


# ---------------------------------------------------------------------------------------------------------------
# determinism and checkpoints: tiny Llama training steps
# ---------------------------------------------------------------------------------------------------------------

B_TRAIN = 2  # sequences a batch: the training laws compile once per optimizer on a JAX target


def opts() -> st.SearchStrategy[Opt]:
    return st.sampled_from([Opt("sgd", 0.1), Opt("momentum", 0.05), Opt("adam", 1e-3, wd=0.01),
                            Opt("adamw", 1e-3, wd=0.01)])


def batches(seed: int, b: int, steps: int) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, TINY.vocab, (b, TINY.t)), rng.integers(0, TINY.vocab, (b, TINY.t)))
            for _ in range(steps)]


def same_run(what: str, a: tuple[dict[str, Any], Any], c: tuple[dict[str, Any], Any], inputs: dict[str, Any]) -> None:
    expect_same(f"{what}: losses", a[1], c[1], inputs)
    for name in a[0]:
        expect_same(f"{what}: {name}", a[0][name], c[0][name], inputs)


@law("determinism", "run_to_run", "bit for bit")
@given(seeds(), opts())
@scaled(5)
def test_run_to_run(target: Target, seed: int, opt: Opt) -> None:
    """Two tiny Llama training steps (forward, cross-entropy, backward, optimizer) run twice from the same weights
    and batches give the same losses and parameters, bit for bit."""
    data = batches(seed, B_TRAIN, 2)
    with applicable():
        same_run("a second run", target.train(TINY, seed & 0xFF, opt, data), target.train(TINY, seed & 0xFF, opt, data),
                 {"b": B_TRAIN, "seed": seed, "optimizer": opt.name})


@law("determinism", "threads_1_vs_2", "bit for bit")
@given(seeds(), opts())
@scaled(5)
def test_threads(target: Target, seed: int, opt: Opt) -> None:
    """Two tiny Llama training steps on 1 thread and on 2 threads give the same losses and parameters."""
    data = batches(seed, B_TRAIN, 2)
    with applicable():
        with target.threads(1):
            one = target.train(TINY, seed & 0xFF, opt, data)
        with target.threads(2):
            two = target.train(TINY, seed & 0xFF, opt, data)
        same_run("2 threads against 1", two, one, {"b": B_TRAIN, "seed": seed, "optimizer": opt.name})


@law("checkpoints", "resume_same_bits", "bit for bit")
@given(seeds(), opts(), st.integers(1, 2))
@scaled(5)
def test_resume(target: Target, seed: int, opt: Opt, k: int) -> None:
    """Saving the model's and the optimizer's state after k of 3 training steps, loading both into fresh objects and
    going on ends on the bits of the run that never stopped (losses and parameters)."""
    data = batches(seed, B_TRAIN, 3)
    with applicable():
        same_run(f"resumed after step {k}", target.train(TINY, seed & 0xFF, opt, data, save_at=k),
                 target.train(TINY, seed & 0xFF, opt, data),
                 {"b": B_TRAIN, "seed": seed, "optimizer": opt.name, "k": k})


# ---------------------------------------------------------------------------------------------------------------
# optimizers
# ---------------------------------------------------------------------------------------------------------------

@st.composite
def opt_problems(draw: Any) -> tuple[list[Any], list[list[Any]], int]:
    seed = draw(seeds())
    shapes = [(3, 7), (1, 5)]
    ps = [values(seed + j, s, 10.0) for j, s in enumerate(shapes)]
    gs = [[values(seed + 10 * (k + 1) + j, s) for j, s in enumerate(shapes)] for k in range(2)]
    return ps, gs, seed


@law("optimizers", "lr_zero_keeps_parameters", "bit for bit, but -0 may become +0")
@given(opt_problems(), st.sampled_from(OPTS), st.sampled_from([0.0, 0.01, 0.1]))
def test_lr_zero(target: Target, p: Any, name: str, wd: float) -> None:
    """Two steps with lr = 0 leave the parameters (SGD and momentum without weight decay; Adam and AdamW with weight
    decay wd): the same bits, except that a -0 parameter may come back +0 (w + (+0))."""
    ps, gs, seed = p
    opt = Opt(name, 0.0, wd=wd if name in ("adam", "adamw") else 0.0)
    with applicable():
        out = target.opt_steps(opt, ps, gs)
        for j, (a, w) in enumerate(zip(out, ps)):
            expect_same(f"{name} lr=0 wd={opt.wd}: parameter {j}", a, w,
                        {"params": ps, "grads": gs, "seed": seed, "optimizer": asdict(opt), "j": j}, zero_sign=False)


@law("optimizers", "zero_grad_sgd_keeps_parameters", "bit for bit")
@given(opt_problems(), st.sampled_from(["sgd", "momentum"]), st.sampled_from([1e-3, 0.1, 1.0]))
def test_zero_grad_sgd(target: Target, p: Any, name: str, lr: float) -> None:
    """SGD (plain and with momentum) with weight decay 0 and a zero gradient leaves the parameters bit for bit."""
    ps, gs, seed = p
    zs = [[np.zeros_like(g) for g in step] for step in gs]
    with applicable():
        opt = Opt(name, lr)
        out = target.opt_steps(opt, ps, zs)
        for j, (a, w) in enumerate(zip(out, ps)):
            expect_same(f"{name} lr={lr}, zero gradient: parameter {j}", a, w,
                        {"params": ps, "grads": gs, "seed": seed, "optimizer": asdict(opt), "j": j})


# ---------------------------------------------------------------------------------------------------------------
# elementwise: BF16, dropout, erf (16 elements an example: one shape for every call)
# ---------------------------------------------------------------------------------------------------------------

def words() -> st.SearchStrategy[Any]:
    return hnp.arrays(np.uint32, (16,), elements=st.integers(0, 2**32 - 1))


@law("bf16", "round_to_nearest_even", "bit for bit")
@given(words())
@example(np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00008000] * 4, np.uint32))
def test_bf16_rne(target: Target, u: Any) -> None:
    """float32 -> bfloat16 rounds to the nearest, ties to the even last bit (overflow to infinity), on every
    non-NaN input."""
    u = u[(u & 0x7FFFFFFF) <= 0x7F800000]
    u = np.concatenate([u, np.zeros(16 - u.size, np.uint32)])
    x = u.view(F32)
    want = np.array([exact_rne(int(w)) for w in u], np.uint16)
    with applicable():
        expect_same("bfloat16 bits against round to nearest even", target.bf16_bits(x), want, {"x": x})


@law("bf16", "nan_kept", "a NaN")
@given(hnp.arrays(np.uint32, (16,), elements=st.integers(1, 2**23 - 1)), st.booleans())
def test_bf16_nan(target: Target, payload: Any, neg: bool) -> None:
    """A float32 NaN (any payload, either sign) converts to a bfloat16 NaN, never to an infinity or a number (its
    payload's high bits may all be zero)."""
    x = ((payload | 0x7F800000) | (0x80000000 if neg else 0)).astype(np.uint32).view(F32)
    with applicable():
        h = target.bf16_bits(x)
        bad = ~(((h & 0x7F80) == 0x7F80) & ((h & 0x7F) != 0))
        if np.any(bad):
            raise fail("a NaN did not stay a NaN", {"x": x}, got=h[bad][:1])


@law("dropout", "p_zero_identity", "bit for bit; a NaN stays a NaN")
@given(st.sampled_from([(1, 1), (3, 5), (16, 17)]), seeds())
def test_dropout_p_zero(target: Target, shape: tuple[int, int], seed: int) -> None:
    """Dropout with p = 0 in training mode is the identity, bit for bit, on any float32 (a NaN stays a NaN)."""
    x = np.random.default_rng(seed).integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32).view(F32)
    with applicable():
        expect_same("dropout(p=0) against its input", target.dropout(x, 0.0), x, {"x": x, "seed": seed})


def floats16() -> st.SearchStrategy[Any]:
    return st.lists(bits32(), min_size=16, max_size=16).map(lambda a: np.array(a, F32))


@law("erf", "odd", "bit for bit")
@given(floats16())
@example(np.array([0.0, 3.92, 1e-45, 0.84375] * 4, F32))
def test_erf_odd(target: Target, x: Any) -> None:
    """erf(-x) = -erf(x): the two results' bits differ in the sign bit alone (erf(-0) = -0)."""
    x = np.where(np.isnan(x), F32(0.5), x).astype(F32)
    with applicable():
        a, c = target.erf(-x), target.erf(x)
        expect_same("erf(-x) against -erf(x)", a, (-c).astype(F32), {"x": x}, nan_equal=False)


@law("erf", "monotone", "non-decreasing")
@given(floats16())
@example(np.array([0.84375, np.nextafter(F32(0.84375), F32(0))] * 8, F32))
def test_erf_monotone(target: Target, x: Any) -> None:
    """Over ordered float32 inputs (NaN aside), x <= y gives erf(x) <= erf(y)."""
    x = np.sort(x[~np.isnan(x)])
    with applicable():
        y = target.erf(x)
        down = np.flatnonzero(y[1:] < y[:-1])
        if down.size:
            j = int(down[0])
            raise fail("erf decreases", {"x": x}, x_pair=x[j:j + 2], erf_pair=y[j:j + 2])


@law("erf", "bounded", "bit for bit")
@given(floats16())
def test_erf_bounded(target: Target, x: Any) -> None:
    """|erf(x)| <= 1 for every non-NaN float32."""
    x = x[~np.isnan(x)]
    with applicable():
        y = target.erf(x)
        if np.any(np.abs(y) > 1):
            raise fail("|erf(x)| > 1", {"x": x}, got=y[np.abs(y) > 1][:1])

