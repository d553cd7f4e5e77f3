"""PyTorch float32 references: run a layer, a loss or an optimizer in torch (torch.nn.functional, torch.optim with
foreach=False), on 2 threads, from numpy inputs, and hand the results back as numpy float32 arrays.

Everything here is float32 on the CPU. torch is imported inside the functions (reports/ and the CLI import this
module lazily, and impl/ and oracle/ never import it).

Facts about torch 2.13's CPU kernels that the comparisons rely on (measured in
tests/reference/test_optimizers_vs_torch.py and docs/optimizers.md): `add(a, b, alpha=s)`, `lerp(a, b, w)` and `addcmul(a, b, c, value=s)` round once at the last
multiply-add (a fused multiply-add, in the vector loop and in its scalar tail alike); `torch.sqrt` on float32 calls
MKL's VML vsSqrt in its high-accuracy mode (faithful, up to 1 ulp off the correctly rounded root); a Python float
scalar is rounded to float32 once, where the kernel reads it.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

F32 = np.float32
Arr = npt.NDArray[Any]

_READY = False


def torch_mod() -> Any:
    """torch on 2 threads (set again if something else changed it, e.g. the erf sweep's workers use 1), float32
    defaults."""
    global _READY
    import torch
    if not _READY:
        torch.set_default_dtype(torch.float32)
        _READY = True
    if torch.get_num_threads() != 2:
        torch.set_num_threads(2)
    return torch


def to_t(a: Arr, grad: bool = False) -> Any:
    """A numpy array as a torch tensor (a copy; float arrays must already be float32, ids are int64)."""
    torch = torch_mod()
    a = np.ascontiguousarray(a)
    if np.issubdtype(a.dtype, np.floating):
        if a.dtype != np.float32:
            raise TypeError(f"torch references take float32 inputs, got {a.dtype}")
        return torch.tensor(a, dtype=torch.float32, requires_grad=grad)
    return torch.tensor(a.astype(np.int64), dtype=torch.int64)


def to_np(t: Any) -> Arr:
    r: Arr = t.detach().cpu().numpy().copy()
    return r


def _grads_of(x: Any) -> Any:
    """x's gradient (for a tuple of tensors, a tuple of gradients); an id tensor's gradient is the empty id list."""
    if isinstance(x, tuple):
        return tuple(_grads_of(v) for v in x)
    if not x.is_floating_point():
        return np.zeros(0, dtype=np.int64)
    if x.grad is None:
        return np.zeros(tuple(x.shape), dtype=np.float32)
    return to_np(x.grad)


def _wrap(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return to_t(x, grad=np.issubdtype(np.asarray(x).dtype, np.floating))


def run_layer(fn: Callable[..., Any], x: Any, params: Sequence[Arr], dy: Any) -> dict[str, Any]:
    """y = fn(x, params) in torch float32, then y.backward(dy). x is an array (or a pair of arrays, or int64 ids);
    params is a list of float32 arrays (in the layer's dump order). Returns y, dx (x's shape; ids give the empty
    list), dp (the list of parameter gradients, zeros where a parameter is unused)."""
    torch = torch_mod()
    xt = _wrap(x)
    ps = [to_t(p, grad=True) for p in params]
    y = fn(xt, ps)
    ys = y if isinstance(y, tuple) else (y,)
    dys = dy if isinstance(dy, tuple) else (dy,)
    torch.autograd.backward(list(ys), [to_t(d) for d in dys])
    dp = [to_np(p.grad) if p.grad is not None else np.zeros(p.shape, np.float32) for p in ps]
    yo = tuple(to_np(v) for v in ys) if isinstance(y, tuple) else to_np(y)
    return {"y": yo, "dx": _grads_of(xt), "dp": dp}


def run_loss(fn: Callable[[Any, Any], Any], y: Arr, t: Arr) -> dict[str, Any]:
    """loss = fn(y, t) (mean over the batch) in torch float32, then loss.backward(). Returns loss (a float32
    scalar) and dy."""
    yt = to_t(y, grad=True)
    tt = to_t(t)
    loss = fn(yt, tt)
    loss.backward()
    return {"loss": np.float32(loss.item()), "dy": to_np(yt.grad)}


# ---- the layers and losses as torch functions of (x, params) / (y, t) -----------------------------------------

def F() -> Any:
    import torch.nn.functional as tf
    return tf


def optimizer(kind: str, params: list[Any], hp: dict[str, float]) -> Any:
    """torch.optim's SGD / SGD with momentum / Adam / AdamW over params, foreach=False (the single-tensor loop,
    `_single_tensor_sgd` / `_single_tensor_adam`), hyperparameters given as Python floats (float64), as a user
    writes them."""
    torch = torch_mod()
    if kind == "SGD":
        return torch.optim.SGD(params, lr=hp["lr"], foreach=False)
    if kind == "Momentum":
        return torch.optim.SGD(params, lr=hp["lr"], momentum=hp["mu"], foreach=False)
    if kind == "Adam":
        return torch.optim.Adam(params, lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"],
                                weight_decay=hp["wd"], foreach=False)
    if kind == "AdamW":
        return torch.optim.AdamW(params, lr=hp["lr"], betas=(hp["b1"], hp["b2"]), eps=hp["eps"],
                                 weight_decay=hp["wd"], foreach=False)
    raise ValueError(f"unknown optimizer {kind!r}")


def run_optimizer(kind: str, hp: dict[str, float], w0: Arr, grads: Sequence[Arr]) -> list[Arr]:
    """w after each of len(grads) steps of torch's optimizer from w0, the gradients given (float32)."""
    torch = torch_mod()
    w = torch.nn.Parameter(to_t(w0))
    opt = optimizer(kind, [w], hp)
    out: list[Arr] = []
    for g in grads:
        w.grad = to_t(g)
        opt.step()
        out.append(to_np(w))
    return out
