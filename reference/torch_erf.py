"""The erf inside PyTorch's exact GELU on an AVX512 CPU's path, ported operation by operation to numba.

torch.nn.functional.gelu(x) (approximate="none") on a float32 CPU tensor runs GeluKernelImpl
(aten/src/ATen/native/cpu/Activation.cpp): its vectorized lambda computes

    (x * 0.5f) * (1.0f + erf_v(x * 0.70710677f))           (M_SQRT1_2 rounded to float)

and its scalar lambda, used only for the tail of a loop that is not a whole number of vectors, calls std::erf. With
AVX512 erf_v is Vectorized<float>::erf (aten/src/ATen/cpu/vec/vec512/vec512_float.h), the
Abramowitz-Stegun 7.1.26 form (absolute error bound 1.5e-7, not a relative one):

    a = |x|; t = 1 / fma(p, a, 1); r = fma(fma(fma(fma(p5, t, p4), t, p3), t, p2), t, p1)
    e = expf_sleef_u10(-(x * x)); erf_v = sign(x) xor fma(-(e) * t, r, 1)

with the fused multiply-adds of the source (_mm512_fmadd_ps) and SLEEF's expf u10 (Sleef_expf16_u10, xexpf in
sleefsimdsp.c, whose vmla is a fused multiply-add on AVX512F). The port reproduces each float32 operation: llvm.fma
for each fused step, (v + 1.5*2^23) - 1.5*2^23 for the round-to-nearest-even of cvtps_epi32 (exact for |v| < 2^22,
and SLEEF's result is masked to 0 below -104 anyway), and SLEEF's two-step ldexp. Its agreement with torch's gelu is
checked bit for bit (tests/test_sweep_erf.py on random inputs, and the gelu_erf function of the exhaustive checker,
whose torch_aten library is compared with this port, its twin, on every input it sweeps): that is the evidence that
`erf_as` is the erf torch's GELU computes. NaN payloads are not modelled (NaN in gives NaN out). The bit helpers f2u
and u2f are impl's (impl.kernels.portable.eft).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core.extending import intrinsic

from bendtorch.impl.kernels.portable.eft import f2u, u2f


def _fma32(typingctx: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once to float32 (LLVM's llvm.fma.f32: the hardware FMA here)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        f = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f], ir.FunctionType(f, [f, f, f]))
        return builder.call(fn, args)

    return sig, codegen


fma32: Any = intrinsic(_fma32)


_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
# Vectorized<float>::erf's constants (float literals in the C++ source)
AS_P = np.float32(0.3275911)
AS_P1 = np.float32(0.254829592)
AS_P2 = np.float32(-0.284496736)
AS_P3 = np.float32(1.421413741)
AS_P4 = np.float32(-1.453152027)
AS_P5 = np.float32(1.061405429)
# SLEEF (misc.h): R_LN2f, L2Uf, L2Lf and xexpf's coefficients
R_LN2F = np.float32(1.442695040888963407359924681001892137426645954152985934135449406931)
L2UF = np.float32(0.693145751953125)
L2LF = np.float32(1.428606765330187045e-06)
E5 = np.float32(0.000198527617612853646278381)
E4 = np.float32(0.00139304355252534151077271)
E3 = np.float32(0.00833336077630519866943359)
E2 = np.float32(0.0416664853692054748535156)
E1 = np.float32(0.166666671633720397949219)
E0 = np.float32(0.5)
_RINT_MAGIC = np.float32(12582912.0)  # 1.5 * 2^23
_NEG104 = np.float32(-104.0)
_HUNDRED = np.float32(100.0)
SQRT1_2F = np.float32(0.7071067811865476)
HALF = np.float32(0.5)


@numba.njit(cache=True)
def _pow2i(q: int) -> Any:
    """SLEEF's vpow2i_vf_vi2: the float 2^q built from its exponent bits ((q + 127) << 23); q in [-126, 127]."""
    return u2f(np.uint32((q + 127) << 23))


@numba.njit(cache=True)
def sleef_expf_u10(d: np.float32) -> Any:
    """SLEEF's xexpf (Sleef_expf16_u10) on one float32, every vmla a fused multiply-add."""
    if d != d:
        return d
    if d < _NEG104:
        return _ZERO
    if _HUNDRED < d:
        return np.float32(np.inf)
    v = d * R_LN2F
    qf = (v + _RINT_MAGIC) - _RINT_MAGIC  # round half even, as cvtps_epi32 (|v| < 151 here)
    q = int(qf)
    s = fma32(qf, -L2UF, d)
    s = fma32(qf, -L2LF, s)
    u = E5
    u = fma32(u, s, E4)
    u = fma32(u, s, E3)
    u = fma32(u, s, E2)
    u = fma32(u, s, E1)
    u = fma32(u, s, E0)
    u = _ONE + fma32(s * s, u, s)
    h = q >> 1
    return (u * _pow2i(h)) * _pow2i(q - h)


@numba.njit(cache=True)
def erf_as(x: np.float32) -> Any:
    """Vectorized<float>::erf (vec512_float.h) on one float32: sign(x) (1 - r t exp(-x^2))."""
    a = abs(x)
    t = _ONE / fma32(AS_P, a, _ONE)
    r = fma32(AS_P5, t, AS_P4)
    r = fma32(r, t, AS_P3)
    r = fma32(r, t, AS_P2)
    r = fma32(r, t, AS_P1)
    e = sleef_expf_u10(-(x * x))
    y = fma32((-e) * t, r, _ONE)
    sign = f2u(x) & np.uint32(0x80000000)
    return u2f(np.uint32(f2u(y) ^ sign))


@numba.njit(cache=True)
def gelu_erf_port(x: np.float32) -> Any:
    """GeluKernelImpl's vectorized lambda: (x * 0.5f) * (1 + erf_v(x * 0.70710677f))."""
    return (x * HALF) * (_ONE + erf_as(x * SQRT1_2F))


@numba.njit(cache=True)
def erf_as_array(xs: Any, out: Any) -> None:
    for i in range(xs.size):
        out[i] = erf_as(xs[i])


@numba.njit(cache=True)
def gelu_port_array(xs: Any, out: Any) -> None:
    for i in range(xs.size):
        out[i] = gelu_erf_port(xs[i])


def erf_as_np(xs: Any) -> Any:
    """erf_as over a float32 array (a new array)."""
    x = np.ascontiguousarray(xs, dtype=np.float32).reshape(-1)
    out = np.empty_like(x)
    erf_as_array(x, out)
    return out


def gelu_port_np(xs: Any) -> Any:
    """gelu_erf_port over a float32 array (a new array)."""
    x = np.ascontiguousarray(xs, dtype=np.float32).reshape(-1)
    out = np.empty_like(x)
    gelu_port_array(x, out)
    return out


def torch_gelu(xs: Any) -> Any:
    """torch.nn.functional.gelu on a float32 array, padded to a multiple of 32 elements so that every element takes
    the vectorized path (cpu_kernel_vec's loop runs 2 vectors of 16 at a time; the tail would take std::erf), on
    the calling thread's torch thread count (set 1 for whole-vector chunks: each thread's range has its own tail)."""
    import torch

    x = np.ascontiguousarray(xs, dtype=np.float32).reshape(-1)
    n = x.size
    pad = (-n) % 32
    if pad:
        x = np.concatenate([x, np.zeros(pad, dtype=np.float32)])
    with torch.no_grad():
        y = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    return y[:n].copy()
