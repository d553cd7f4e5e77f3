"""The Llama of impl.llama: impl (float32) and the same Llama in PyTorch float32 (reference/torch_llama.py,
Hugging Face's computation) from the same initial weights, against the float64 oracle's model built by the same
builder: the loss, the logits and every parameter's gradient of one step.

Configurations: `tiny` (batch 3 x 16, the shipped corpus) and a 2-layer `smol` (SmolLM2-135M's widths, vocab 49152)
at t = 32 and batch 1 instead of 128 (the test's time: the float64 oracle's 49152-wide head dominates; the per-layer
arithmetic is the same at any t).

Errors are normwise, max |x - exact| / max |exact| per tensor, in units of u = 2^-24, and relative for the loss.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bendtorch.data import corpus_tokens  # noqa: E402
from bendtorch import impl  # noqa: E402
from bendtorch import oracle  # noqa: E402
from bendtorch.impl import llama  # noqa: E402
from bendtorch.reference.torch_llama import TorchLlama  # noqa: E402

U = 2.0 ** -24
CASES = {"tiny": (llama.config("tiny"), 3), "smol2": (llama.config("smol", layers=2, t=32), 1)}


def rel_u(x: Any, exact: Any) -> float:
    x, exact = np.asarray(x, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    return float(np.max(np.abs(x - exact)) / np.max(np.abs(exact)) / U)


@lru_cache(maxsize=None)
def run(case: str) -> dict[str, Any]:
    cfg, b = CASES[case]
    rng = np.random.default_rng(7)
    if cfg.vocab == 256:
        toks = corpus_tokens()
    else:
        toks = rng.integers(0, cfg.vocab, size=20 * cfg.t)
    x, y = llama.batch_at(toks, b, cfg.t, rng)
    mi, mo = llama.build(impl, cfg, b), llama.build(oracle, cfg, b)
    p32 = mi.init(3)
    weights = {k: v.copy() for k, v in llama.named(mi.names, p32).items()}
    out: dict[str, Any] = {}
    # oracle (float64, from the float32 weights exactly)
    po = llama.cast(p32, np.float64)
    f = mo.layer.fwd(po, x)
    lo = mo.loss(f.y, y)
    bo = mo.layer.bwd(f.p, f.s, lo.dy, mo.layer.zeros())
    out["oracle"] = (float(lo.loss), f.y, llama.named(mo.names, bo.g))
    # impl
    f32 = mi.layer.fwd(p32, x)
    li = mi.loss(f32.y, y)
    bi = mi.layer.bwd(f32.p, f32.s, li.dy, mi.layer.zeros())
    out["impl"] = (float(li.loss), f32.y, llama.named(mi.names, bi.g))
    # PyTorch float32
    tm = TorchLlama(cfg, weights, torch.float32)
    loss, logits = tm.loss(x, y, b)
    torch.autograd.backward(loss)  # Tensor.backward, through the typed functional form
    out["torch"] = (float(loss.detach()), logits.detach().numpy(), tm.grads())
    # PyTorch float64: a second computation of the oracle's model (checks the builder and the oracle agree with
    # Hugging Face's Llama, not just with each other)
    t64 = TorchLlama(cfg, weights, torch.float64)
    loss64, logits64 = t64.loss(x, y, b)
    torch.autograd.backward(loss64)
    out["torch64"] = (float(loss64.detach()), logits64.detach().numpy(), t64.grads())
    return out


def errors(r: dict[str, Any], who: str) -> dict[str, float]:
    el, ey, eg = r["oracle"]
    loss, logits, grads = r[who]
    e = {"loss": abs(loss - el) / abs(el) / U, "logits": rel_u(logits, ey)}
    assert set(grads) == set(eg), "the gradients must name the same parameters"
    for k in eg:
        assert np.shape(grads[k]) == np.shape(eg[k]), k
        e[k] = rel_u(grads[k], eg[k])
    return e


@pytest.mark.parametrize("case", list(CASES))
def test_oracle_is_huggingfaces_llama(case: str) -> None:
    # the float64 oracle model and the float64 PyTorch model differ only by float64 rounding (and the oracle's
    # reading of 1/sqrt(hd) and theta as decimals, 2^-24 relative at most): far below a float32 u
    e = errors(run(case), "torch64")
    assert max(e.values()) < 0.5, e


@pytest.mark.parametrize("case", list(CASES))
def test_impl_and_torch_against_oracle(case: str) -> None:
    r = run(case)
    ei, et = errors(r, "impl"), errors(r, "torch")
    # Bounds: the loss within 16 u relative (a mean of logsumexp terms; measured < 1 u for both); logits and every
    # gradient within 64 u normwise. A gradient here is the end of a chain of float32 dot products (576-1536 terms
    # for smol) through 2 layers and back; measured 2-8 u (tiny) and 5-24 u (smol, both libraries). A wrong
    # transpose, head mapping, RoPE sign or scale gives errors of order 2^24 u.
    for name, e in (("impl", ei), ("torch", et)):
        assert e["loss"] <= 16.0, (name, e["loss"])
        bad = {k: v for k, v in e.items() if v > 64.0}
        assert not bad, (name, bad)
    # impl not worse than PyTorch: its largest error at most 1.5x PyTorch's largest, and on each tensor at most
    # 2x PyTorch's + 8 u (one draw of rounding errors per tensor: a single tensor can be luckier in one library)
    assert max(ei.values()) <= 1.5 * max(et.values()), (ei, et)
    for k in ei:
        assert ei[k] <= 2.0 * et[k] + 8.0, (k, ei[k], et[k])


def test_same_weights_everywhere() -> None:
    # the builder's initialization is a pure function of the seed and gives Hugging Face's scheme
    cfg = llama.config("tiny")
    a, b = llama.build(impl, cfg, 1), llama.build(oracle, cfg, 2)
    wa, wb = llama.named(a.names, a.init(5)), llama.named(b.names, b.init(5))
    assert list(wa) == list(wb) and all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert np.all(wa["model.norm.weight"] == 1) and wa["model.norm.weight"].shape == (1, cfg.d)
    e = wa["model.embed_tokens.weight"]
    assert e.dtype == np.float32 and abs(float(e.std()) - 0.02) < 0.001 and abs(float(e.mean())) < 0.001
    assert not np.array_equal(e, llama.named(a.names, a.init(6))["model.embed_tokens.weight"])
    assert a.layer.count() == sum(v.size for v in wa.values())
