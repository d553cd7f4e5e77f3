"""Attention and RoPE on their own: impl (float32) and PyTorch float32 against the float64 oracle, forward and
backward.

PyTorch's attention is taken two ways: a plain masked softmax (S = Q Kᵀ sc, masked_fill -inf, softmax, P V) and
`scaled_dot_product_attention(is_causal=True)`, grouped-query heads by `repeat_interleave` of K and V (so autograd
sums each key/value head's gradient over its g query heads). PyTorch's RoPE is Hugging Face Llama's: inv_freq in
float32, freqs = pos ⊗ inv_freq, x cos + rotate_half(x) sin.

Errors are normwise: max |x - exact| / max |exact|, in units of u = 2^-24 (float32's unit roundoff), per output
matrix. Elementwise ulps are not meaningful here: an output that is a cancelling sum (P·V, dQ) can be near 0 while its
terms are not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as Fn  # noqa: E402

import bendtorch.oracle.attention as OA  # noqa: E402
import bendtorch.oracle.rope as OR  # noqa: E402
from bendtorch.impl.kernels import attention as A  # noqa: E402
from bendtorch.impl.layers.rope import RoPE  # noqa: E402

F32 = np.float32
U = 2.0 ** -24
Arr = np.ndarray[Any, Any]


def rel_u(x: Arr, exact: Arr) -> float:
    """Normwise error in units of 2^-24."""
    return float(np.max(np.abs(x.astype(np.float64) - exact)) / np.max(np.abs(exact)) / U)


def torch_attention(q: Arr, k: Arr, v: Arr, dy: Arr, b: int, t: int, kv: int, g: int, hd: int, sc: F32,
                    sdpa: bool) -> tuple[Arr, tuple[Arr, Arr, Arr]]:
    h = kv * g
    Q = torch.tensor(q).reshape(b, t, h, hd).transpose(1, 2).contiguous().requires_grad_()
    K = torch.tensor(k).reshape(b, t, kv, hd).transpose(1, 2).contiguous().requires_grad_()
    V = torch.tensor(v).reshape(b, t, kv, hd).transpose(1, 2).contiguous().requires_grad_()
    Kr, Vr = K.repeat_interleave(g, dim=1), V.repeat_interleave(g, dim=1)
    if sdpa:
        O = Fn.scaled_dot_product_attention(Q, Kr, Vr, is_causal=True, scale=float(sc))
    else:
        S = (Q @ Kr.transpose(-1, -2)) * float(sc)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        O = torch.softmax(S.masked_fill(~mask, float("-inf")), dim=-1) @ Vr
    torch.autograd.backward(O, torch.tensor(dy).reshape(b, t, h, hd).transpose(1, 2))  # O.backward(dy), typed

    def back(X: Any, c: int) -> Arr:
        r: Arr = X.detach().transpose(1, 2).reshape(b * t, c).numpy()
        return r

    return back(O, h * hd), (back(Q.grad, h * hd), back(K.grad, kv * hd), back(V.grad, kv * hd))


# (b, t, kv, g, hd): b = 1, 2, 3, 5 (3 and 5 not powers of two), g = 1..4, hd up to SmolLM2's 64
CASES = [(3, 16, 2, 2, 8), (1, 64, 3, 3, 64), (5, 33, 1, 4, 16), (2, 24, 4, 1, 5)]

# The bound, 32 u normwise for every implementation: each output is a float32 dot of hd terms (scores), an expf, a
# sum and a division (softmax), then a dot of t terms (P·V; the backward pass one more level of the same). A
# worst-case analysis gives (t + hd + small) u relative to the magnitudes, up to ~140 u here; the measured figures are
# 2-8 u for impl and PyTorch alike (rounding errors of random signs grow like sqrt of the terms). 32 u is four times
# the largest measured and still fails for any real mistake (a wrong mask, scale or head gives errors of order 1).
BOUND = 32.0


@pytest.mark.parametrize("case", CASES)
def test_attention_against_oracle(case: tuple[int, int, int, int, int]) -> None:
    b, t, kv, g, hd = case
    rng = np.random.default_rng(sum(case))
    n, w, kvw = b * t, kv * g * hd, kv * hd
    q, dy = (rng.standard_normal((n, w)).astype(F32) for _ in range(2))
    k, v = (rng.standard_normal((n, kvw)).astype(F32) for _ in range(2))
    sc = F32(1.0 / np.sqrt(hd))
    d = [x.astype(np.float64) for x in (q, k, v, dy)]
    sco = float(str(sc))
    eo = OA.attention_fwd(d[0], d[1], d[2], b, t, kv, g, hd, sco)
    eb = OA.attention_bwd(d[0], d[1], d[2], d[3], b, t, kv, g, hd, sco)
    runs = {"impl": (A.attn_fwd(q, k, v, b, t, kv, g, hd, sc), A.attn_bwd(q, k, v, dy, b, t, kv, g, hd, sc))}
    for sdpa in (False, True):
        runs["sdpa" if sdpa else "torch"] = torch_attention(q, k, v, dy, b, t, kv, g, hd, sc, sdpa)
    errs: dict[str, list[float]] = {}
    for name, (o, grads) in runs.items():
        errs[name] = [rel_u(o, eo)] + [rel_u(x, e) for x, e in zip(grads, eb)]
        assert max(errs[name]) <= BOUND, (name, errs[name])
    # impl is not worse than the better PyTorch implementation by more than 2x + 2 u on any output (the same kind of
    # sums; the 2 u absorb the luck of single draws)
    for i in range(4):
        assert errs["impl"][i] <= 2.0 * min(errs["torch"][i], errs["sdpa"][i]) + 2.0, errs


def torch_rope(x: Arr, dy: Arr, t: int, h: int, half: int, base: float) -> tuple[Arr, Arr]:
    n = x.shape[0]
    X = torch.tensor(x).reshape(n, h, 2 * half).requires_grad_()
    inv = 1.0 / (torch.tensor(F32(base)) ** (torch.arange(0, 2 * half, 2, dtype=torch.int64).float() / (2 * half)))
    fr = torch.outer(torch.tensor(np.arange(n) % t).float(), inv)
    emb = torch.cat([fr, fr], -1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    rot = torch.cat([-X[..., half:], X[..., :half]], -1)
    Y = X * cos + rot * sin
    Y.backward(torch.tensor(dy).reshape(n, h, 2 * half))
    return Y.detach().reshape(n, -1).numpy(), X.grad.reshape(n, -1).numpy()


@pytest.mark.parametrize("b,t,h,half,base", [(2, 16, 4, 4, 10000.0), (1, 128, 9, 32, 100000.0),
                                             (3, 40, 2, 8, 10000.0), (5, 7, 3, 1, 500.0)])
def test_rope_against_oracle(b: int, t: int, h: int, half: int, base: float) -> None:
    n, w = b * t, h * 2 * half
    rng = np.random.default_rng(t + h)
    x, dy = (rng.standard_normal((n, w)).astype(F32) for _ in range(2))
    lay, orc = RoPE(n, w, t, h, half, base), OR.RoPE(n, w, t, h, half, base)
    ey = orc.fwd(None, x.astype(np.float64)).y
    edx = orc.bwd(None, None, dy.astype(np.float64), None).dx
    iy, idx = lay.fwd(None, x).y, lay.bwd(None, None, dy, None).dx
    ty, tdx = torch_rope(x, dy, t, h, half, base)
    # The angle pos * inv[c] is computed in float32 (by the seed and by Hugging Face alike): its absolute error is
    # up to about pos * 2^-23 (inv's rounding and the product's), so a rotated value is off by up to
    # |a| + |b| times that, plus a few u from cosf, sinf and the two products: (4 t + 8) u normwise. Measured:
    # 1-2 u at t = 16, ~60 u at t = 128 (the same for PyTorch).
    bound = 4.0 * t + 8.0
    ie, te = [rel_u(iy, ey), rel_u(idx, edx)], [rel_u(ty, ey), rel_u(tdx, edx)]
    assert max(ie) <= bound and max(te) <= bound, (ie, te)
    for i in range(2):
        assert ie[i] <= 1.5 * te[i] + 2.0, (ie, te)
