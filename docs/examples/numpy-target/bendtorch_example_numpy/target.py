"""numpy float32 as a bendtorch conformance target: each law's operation written with numpy alone, in float32.

linear and the product x·Wᵀ go through numpy's matmul, so through the BLAS numpy was built with (OpenBLAS's sgemm,
or its sgemv for a single row or column); the norms, softmax, log-softmax and cross-entropy's per-row terms are
numpy's float32 reductions (pairwise sums along each row); attention is the causal grouped-query formula with each
key/value head repeated for its query heads. What numpy does not have is not applicable, with the reason: automatic
differentiation (attention's backward, training), optimizers, dropout, bfloat16, erf, a model. Thread control is
threadpoolctl's limit on the BLAS."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np
from threadpoolctl import threadpool_limits

from bendtorch.targets import NotApplicable, Target

F32 = np.float32


def f32(a: Any) -> Any:
    return np.ascontiguousarray(a, dtype=F32)


class Numpy(Target):
    name = "numpy"
    libraries = ("numpy", "threadpoolctl")

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        y = f32(x) @ f32(w).T
        return y if b is None else f32(y + f32(b))

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        x = f32(x)
        return f32(x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + F32(eps)) * f32(w))

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        x = f32(x)
        c = x - np.mean(x, axis=-1, keepdims=True)
        return f32(c / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + F32(eps)) * f32(w) + f32(b))

    def softmax(self, x: Any) -> Any:
        e = np.exp(f32(x) - np.max(f32(x), axis=-1, keepdims=True))
        return f32(e / np.sum(e, axis=-1, keepdims=True))

    def log_softmax(self, x: Any) -> Any:
        s = f32(x) - np.max(f32(x), axis=-1, keepdims=True)
        return f32(s - np.log(np.sum(np.exp(s), axis=-1, keepdims=True)))

    def ce_rows(self, z: Any, labels: Any) -> Any:
        lab = np.asarray(labels, np.int64)
        return f32(-self.log_softmax(z)[np.arange(lab.size), lab])

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        """q: b x h x t x hd; k, v: b x kv x t x hd; query head a reads key/value head a // (h / kv)."""
        q, k, v = f32(q), f32(k), f32(v)
        g = q.shape[1] // k.shape[1]
        k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
        t = q.shape[2]
        with np.errstate(invalid="ignore", over="ignore"):  # inf or NaN keys after a query's position are masked
            s = (q @ k.swapaxes(-1, -2)) * F32(sc)
        s = np.where(np.tril(np.ones((t, t), bool)), s, F32(-np.inf))
        return f32(self.softmax(s) @ v)

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        raise NotApplicable("numpy attention backward: numpy has no automatic differentiation")

    def dropout(self, x: Any, p: float) -> Any:
        raise NotApplicable("numpy dropout: numpy has no dropout")

    def bf16_bits(self, x: Any) -> Any:
        raise NotApplicable("numpy bfloat16: numpy has no bfloat16 type")

    def erf(self, x: Any) -> Any:
        raise NotApplicable("numpy erf: numpy has no erf (math and scipy.special have one)")

    def llama_logits(self, cfg: Any, seed: int, tokens: Any) -> Any:
        raise NotApplicable("numpy Llama: numpy has no model library")

    def train(self, cfg: Any, seed: int, opt: Any, batches: Any, save_at: int | None = None) -> Any:
        raise NotApplicable("numpy training: numpy has no automatic differentiation")

    def opt_steps(self, opt: Any, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        raise NotApplicable(f"numpy optimizer {opt.name}: numpy has no optimizers")

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        with threadpool_limits(limits=k, user_api="blas"):
            yield


def make(device: str = "cpu") -> Target:
    """The target on device (the CPU: anything else is refused by Target)."""
    return Numpy(device)
