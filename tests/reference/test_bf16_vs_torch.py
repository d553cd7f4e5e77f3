"""Packed BF16 moments against PyTorch's bfloat16 (main.bend lines 297-445).

1. The conversion: impl's F32 -> BF16 rounding (ph_of_bits, line 321: nearest, ties to even, NaN -> 0xFFFF) is
   torch's `.to(torch.bfloat16)` bit for bit on every special value and on a million random bit patterns; BF16 -> F32
   is exact in both.
2. The optimizer: torch.optim.AdamW cannot hold a bfloat16 `exp_avg` beside float32 parameters (its lerp_ refuses
   mixed dtypes: "expected dtype c10::BFloat16 for `end` but got dtype float"), so the PyTorch side is AdamW's update
   in `_single_tensor_adam`'s order written with torch tensor operations, the moments held as torch.bfloat16 tensors
   and rounded by torch's own conversion after each update, the weight update reading the stored, rounded moments.
   - With the seed's float32 scalars (q1, q2, step size, bc2, decay, as float32 tensors) and one torch operation per
     rounding (mul, add, div, sqrt: no fused lerp/addcmul), it is impl's packed AdamW bit for bit over 20 steps:
     the seed's claim that its rounding is PyTorch's holds in the whole algorithm, not just on single values.
   - With PyTorch's own fused kernels and float64 scalars (lerp_, addcmul_, addcdiv_; 1 - b^t in Python floats) the
     two differ by the causes docs/optimizers.md measures for float32 AdamW (fused multiply-adds, scalars rounded
     from float64, MKL's sqrt); each of those can move a moment across a BF16 rounding boundary, one BF16 ulp (2^-8
     relative) in m or in v. Adam's update is lr * m_hat / sqrt(v_hat), at most about lr in size, so one such flip moves
     the update by at most lr (2^-8 + 2^-9) < lr 2^-7. Asserted bound: after k steps every weight is within
     k lr 2^-7 of impl's (absolute).
   The seed-scalar path takes its square root from numpy (correctly rounded, as the seed's sqrtf), because torch.sqrt
   on float32 CPU tensors is MKL's VML vsSqrt, faithful but not always correctly rounded (reference/torch_ref.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bendtorch.impl.optim import CAdamWBF16, cfg_c1, cfg_c2, opt_at, opt_mat, state_new
from bendtorch.impl.optstate import Adam, Packed, PLeaf, PLeafV
from bendtorch.impl.packed import bf16_of_f32, f32_of_bf16
from bendtorch.reference.torch_ref import torch_mod

F32 = np.float32


def torch_bf16_bits(x: np.ndarray) -> np.ndarray:
    torch = torch_mod()
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=F32)).to(torch.bfloat16)
    bits: np.ndarray = t.view(torch.int16).numpy().astype(np.uint16).astype(np.uint32)
    return bits


SPECIAL_BITS = [
    0x00000000, 0x80000000,              # +0, -0
    0x00000001, 0x80000001, 0x00007FFF,  # subnormals rounding to zero
    0x00008000, 0x00018000, 0x00008001,  # subnormal ties (to even: down, up) and just above a tie
    0x007FFFFF, 0x00800000, 0x807FFFFF,  # the largest subnormal, the smallest normal
    0x3F800000, 0x3F808000, 0x3F818000,  # 1.0, ties at 1.0
    0x3F807FFF, 0x3F808001, 0xBF808000,  # around a tie, a negative tie
    0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF,  # the top of the range: below a tie, the tie to infinity, the largest
    0x7F800000, 0xFF800000,              # infinities
    0x7F800001, 0x7FC00000, 0x7FFFFFFF,  # NaNs: signalling, quiet, all payload bits
    0xFF800001, 0xFFC00000, 0xFFFFFFFF,  # negative NaNs
]


def test_conversion_is_torch_bfloat16_on_every_special_value() -> None:
    x = np.array(SPECIAL_BITS, np.uint32).view(F32)
    assert np.array_equal(bf16_of_f32(x), torch_bf16_bits(x))
    # and a NaN is 0xFFFF in both, whatever its payload
    nans = np.isnan(x)
    assert np.all(bf16_of_f32(x)[nans] == 0xFFFF)


def test_conversion_is_torch_bfloat16_on_random_bit_patterns() -> None:
    u = np.random.default_rng(0).integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    x = u.view(F32)
    assert np.array_equal(bf16_of_f32(x), torch_bf16_bits(x))


def test_widening_is_exact_in_both() -> None:
    torch = torch_mod()
    h = np.arange(0x10000, dtype=np.uint32)
    ours = f32_of_bf16(h).view(np.uint32)
    theirs = torch.from_numpy(h.astype(np.uint16).view(np.int16)).view(torch.bfloat16).to(torch.float32)
    t = theirs.numpy().view(np.uint32)
    finite = (h & 0x7F80) != 0x7F80
    assert np.array_equal(ours[finite], t[finite]) and np.all(ours == h << 16)


def _torch_packed_adamw(w0: np.ndarray, grads: list[np.ndarray], cfg: Any, v16: bool, seed_scalars: bool) -> Any:
    """AdamW in _single_tensor_adam's order with bfloat16-held moments, in torch operations (see the docstring)."""
    torch = torch_mod()
    f = torch.float32
    w = torch.from_numpy(w0.copy())
    m = torch.zeros_like(w, dtype=torch.bfloat16)
    v = torch.zeros_like(w, dtype=torch.bfloat16 if v16 else f)
    lr, b1, b2, eps, wd = (float(getattr(cfg, k)) for k in ("lr", "b1", "b2", "eps", "wd"))
    q1 = q2 = F32(0.0)
    out = []
    for k, gr in enumerate(grads, start=1):
        g = torch.from_numpy(gr)
        if seed_scalars:
            q1 = F32(q1 + F32(cfg_c1(cfg) * F32(F32(1.0) - q1)))
            q2 = F32(q2 + F32(cfg_c2(cfg) * F32(F32(1.0) - q2)))
            op = opt_at(cfg, q1, q2)
            assert isinstance(op, Adam)  # an AdamW config steps as Adam (opt_at): narrows the type for op.wd
            s = {n: torch.tensor(F32(getattr(op, n)), dtype=f) for n in ("c1", "b2", "c2", "eps", "step", "bc2")}
            decay = torch.tensor(F32(F32(1.0) - F32(op.lr * op.wd)), dtype=f)
            w = torch.mul(w, decay)
            m32 = torch.add(m.to(f), torch.mul(s["c1"], torch.sub(g, m.to(f))))
            m = m32.to(torch.bfloat16)
            v32 = torch.add(torch.mul(v.to(f), s["b2"]), torch.mul(torch.mul(s["c2"], g), g))
            v = v32.to(torch.bfloat16) if v16 else v32
            den = torch.add(torch.div(torch.from_numpy(np.sqrt(v.to(f).numpy())), s["bc2"]), s["eps"])
            w = torch.add(w, torch.div(torch.mul(-s["step"], m.to(f)), den))
        else:
            w.mul_(1 - lr * wd)
            m32 = m.to(f).lerp_(g, 1 - b1)
            m = m32.to(torch.bfloat16)
            v32 = v.to(f).mul_(b2).addcmul_(g, g, value=1 - b2)
            v = v32.to(torch.bfloat16) if v16 else v32
            bc1, bc2 = 1 - b1 ** k, (1 - b2 ** k) ** 0.5
            den = (v.to(f).sqrt() / bc2).add_(eps)
            w.addcdiv_(m.to(f), den, value=-lr / bc1)
        out.append(w.numpy().copy())
    return out


def _impl_packed_adamw(w0: np.ndarray, grads: list[np.ndarray], cfg: Any) -> list[np.ndarray]:
    w = w0.copy()
    st = state_new(cfg, lambda: np.zeros_like(w))
    q1 = q2 = F32(0.0)
    out = []
    for gr in grads:
        q1 = F32(q1 + F32(cfg_c1(cfg) * F32(F32(1.0) - q1)))
        q2 = F32(q2 + F32(cfg_c2(cfg) * F32(F32(1.0) - q2)))
        r = opt_mat(opt_at(cfg, q1, q2), w, gr.copy(), st)
        w, st = r.p, r.st
        out.append(w.copy())
    assert isinstance(st, Packed) and isinstance(st.t, (PLeaf, PLeafV))
    return out


@pytest.mark.parametrize("v16", [False, True])
def test_packed_adamw_is_torch_bfloat16_adamw_bit_for_bit_with_the_seeds_scalars(v16: bool) -> None:
    r = np.random.default_rng(1)
    w0 = r.standard_normal((37, 29)).astype(F32)
    grads = [(r.standard_normal((37, 29)) * 0.1).astype(F32) for _ in range(20)]
    cfg = CAdamWBF16(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), v16)
    ours = _impl_packed_adamw(w0, grads, cfg)
    theirs = _torch_packed_adamw(w0, grads, cfg, v16, seed_scalars=True)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"step {k + 1}"


@pytest.mark.parametrize("v16", [False, True])
def test_packed_adamw_within_bound_of_torchs_fused_kernels(v16: bool) -> None:
    r = np.random.default_rng(2)
    w0 = r.standard_normal((37, 29)).astype(F32)
    grads = [(r.standard_normal((37, 29)) * 0.1).astype(F32) for _ in range(20)]
    cfg = CAdamWBF16(F32(1e-2), F32(0.9), F32(0.999), F32(1e-8), F32(0.01), F32(0.1), F32(0.001), v16)
    ours = _impl_packed_adamw(w0, grads, cfg)
    theirs = _torch_packed_adamw(w0, grads, cfg, v16, seed_scalars=False)
    for k, (a, b) in enumerate(zip(ours, theirs), start=1):
        gap = float(np.max(np.abs(a.astype(np.float64) - b)))
        assert gap <= k * 1e-2 * 2.0 ** -7, f"step {k}: {gap}"
