"""The op table's comparison with PyTorch: the op records (bendtorch.records.ops: names, sample inputs, bounds with
their reasons, law families, gaps) that are compared with PyTorch, each with its PyTorch float32 counterpart (`TORCH`,
keyed by the record's name), and the pass criterion `judge`. The tests (tests/reference/test_*.py,
tests/test_layers_optable.py) and `bendtorch report` all read these lists and `judge`, so they cannot disagree.
docs/ops.md says how to add an op.

Pass criterion of one output of an op (`judge`, on reference.compare.run_op's figures: element-wise statistics pooled
over every value of every case, the normwise error the worst of any case):
  * impl's normwise error against the oracle, max |x - exact| / ulp32(max |exact|) (reference.compare.normwise: a
    relative bound in ulps of the output's largest exact value), <= `bound`, and where the output is well
    conditioned element by element, impl's element-wise max ulp error <= `bound_elem` (each with its reason in
    `why`): element-wise, an output whose exact value is near zero after cancellation (tanh's 1 - y^2 at |x| > 3,
    GELU at x < -3, a matmul sum that nearly cancels) has a huge ulp error in every float32 library, PyTorch's
    included, so the element-wise max is reported but only bounded where it means something;
  * impl's error is not above PyTorch's by more than `factor`: impl's p99 <= factor * torch's p99 + 1 and impl's
    median <= factor * torch's median + 0.5 (the + 1 / + 0.5 ulp: where PyTorch is correctly rounded, 0.5 ulp, and
    impl's order differs, impl may be 1 ulp off the oracle while torch is not; the max is left to `bound` because
    one element whose exact value is near zero dominates it for both libraries);
  * bit for bit equal to PyTorch for the outputs in `bitexact` (same arithmetic: ReLU, Add2, Mul2, Embedding
    forward, Dropout with the same mask, ...).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import bendtorch.impl as IMPL
import bendtorch.oracle as ORACLE
from bendtorch.impl.ops import ImplOp, impl_op
from bendtorch.oracle import funcs
from bendtorch.records import ops as R
from bendtorch.records.ops import Act, Dims, OpRecord
from bendtorch.records.studies import resolve

F32 = np.float32
Op = OpRecord  # an op of the table is its record
TorchFn = Callable[[Dims], Callable[..., Any]]  # dims -> a layer's f(x, params) / a loss's f(y, t)


def _tf() -> Any:
    import torch.nn.functional as tf
    return tf


def _torch() -> Any:
    from bendtorch.reference.torch_ref import torch_mod
    return torch_mod()


def _lin(x: Any, ps: Any) -> Any:
    return _tf().linear(x, ps[0], ps[1].reshape(-1))


def _dropout_mask(d: Dims) -> Any:
    """impl's keep mask for (n, c, p, seed 1234, t 0): where impl's Dropout keeps x = 1."""
    lay = IMPL.Dropout(d["n"], d["c"], d["p"], 1234)
    y = lay.fwd(lay.zeros(), np.ones((d["n"], d["c"]), F32)).y
    return np.asarray(y != 0, dtype=F32)


def _dropout_torch(d: Dims) -> Callable[..., Any]:
    """ATen's dropout given the same mask: noise = bernoulli(1 - p) (here impl's mask), noise.div_(1 - p),
    y = x * noise (aten/src/ATen/native/Dropout.cpp, _dropout_impl); 1 - p is a float64 Python scalar."""
    mask = _dropout_mask(d)

    def f(x: Any, ps: Any) -> Any:
        noise = _torch().tensor(mask).div_(1.0 - float(F32(d["p"])))
        return x * noise
    return f


def _unary(act: Act) -> TorchFn:
    """An activation's PyTorch function, named on its record (Act.torch, with its keyword arguments)."""
    def of_dims(d: Dims) -> Callable[..., Any]:
        f, kw = resolve(act.torch), dict(act.torch_options)
        return lambda x, ps: f(x, **kw)
    return of_dims


# the record's name -> PyTorch's float32 function of the dims: an activation's from its record, the others' here
# (the optimizers' steps run torch.optim instead: reference.torch_ref.run_optimizer)
TORCH: dict[str, TorchFn] = {
    **{r.name: _unary(r.act) for r in R.ACTIVATIONS if r.act is not None},
    "Linear": lambda d: _lin, "LinearFirst": lambda d: _lin,
    "LinearNB": lambda d: (lambda x, ps: _tf().linear(x, ps[0])),
    "Dropout": _dropout_torch,
    "Softmax": lambda d: (lambda x, ps: _tf().softmax(x, dim=1)),
    "LogSoftmax": lambda d: (lambda x, ps: _tf().log_softmax(x, dim=1)),
    "RMSNorm": lambda d: (lambda x, ps: _tf().rms_norm(x, (d["d"],), ps[0].reshape(-1), 1e-5)),
    "LayerNorm": lambda d: (lambda x, ps: _tf().layer_norm(x, (d["d"],), ps[0].reshape(-1), ps[1].reshape(-1), 1e-5)),
    "Embedding": lambda d: (lambda x, ps: _tf().embedding(x, ps[0])),
    "CrossEntropy": lambda d: (lambda y, t: _tf().cross_entropy(y, t)),
    "NLL": lambda d: (lambda y, t: _tf().nll_loss(y, t)),
    "MSE": lambda d: (lambda y, t: _tf().mse_loss(y, t)),
    "Add2": lambda d: (lambda x, ps: x[0] + x[1]), "Mul2": lambda d: (lambda x, ps: x[0] * x[1]),
    "Seq(Linear,ReLU)": lambda d: (lambda x, ps: _tf().relu(_lin(x, ps))),
    "Fork(Linear,LinearNB)+Add2": lambda d: (lambda x, ps: _lin(x, ps) + _tf().linear(x, ps[2])),
    "Both(Sigmoid,Tanh)+Mul2": lambda d: (lambda x, ps: _torch().sigmoid(x[0]) * _torch().tanh(x[1])),
    "Residual(Seq(Linear,Tanh))": lambda d: (lambda x, ps: x + _torch().tanh(_lin(x, ps))),
    "Tie(Linear,Tanh,Linear)": lambda d: (lambda x, ps: _lin(_torch().tanh(_lin(x, ps)), ps)),
}


def torch_fn(op: OpRecord) -> TorchFn:
    """PyTorch's function of a compared op; a KeyError for an op without one."""
    try:
        return TORCH[op.name]
    except KeyError:
        raise KeyError(f"{op.name}: no PyTorch function in reference.ops.TORCH") from None


def impl_half(op: OpRecord) -> ImplOp | None:
    """impl's entry of the same name (a constructor's record; None for compositions and optimizer steps)."""
    return impl_op(op.name) if op.impl_kind is not None else None


def oracle_half(op: OpRecord) -> Any:
    """The oracle's half of a constructor's record: an activation's formulas (oracle.funcs.ACTIVATIONS), else its
    constructor of the same name."""
    if op.impl_kind is None:
        return None
    return funcs.ACTIVATIONS.get(op.name) or getattr(ORACLE, op.name, None)


def _compared(ops: tuple[OpRecord, ...]) -> list[OpRecord]:
    return [o for o in ops if o.compared]


LAYERS: list[OpRecord] = _compared(R.LAYERS)
LOSSES: list[OpRecord] = _compared(R.LOSSES)
COMBOS: list[OpRecord] = _compared(R.COMBINATORS + R.COMPOSITIONS)
OPTIMIZERS: list[OpRecord] = list(R.OPTIMIZER_STEPS)
OPS: list[OpRecord] = LAYERS + LOSSES + COMBOS + OPTIMIZERS


def op_named(name: str) -> OpRecord:
    return R.op(name)


def judge(op: OpRecord, out: str, r: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether one output's comparison passes (see the module's docstring), and why not."""
    why: list[str] = []
    im, tm = r["impl"], r["torch"]
    b = op.bound.get(out, np.inf)
    if im["norm"] > b:
        why.append(f"impl normwise error {im['norm']:.3g} ulp > bound {b}")
    be = op.bound_elem.get(out, np.inf)
    if im["max"] > be:
        why.append(f"impl max {im['max']:.3g} ulp > element-wise bound {be}")
    if im["p99"] > op.factor * tm["p99"] + 1.0:
        why.append(f"impl p99 {im['p99']:.3g} > {op.factor} x torch p99 {tm['p99']:.3g} + 1")
    if im["median"] > op.factor * tm["median"] + 0.5:
        why.append(f"impl median {im['median']:.3g} > {op.factor} x torch median {tm['median']:.3g} + 0.5")
    if out in op.bitexact and not r["bit_equal"]:
        why.append(f"not bit for bit equal to PyTorch ({r['n_differ']} of {im['n']} differ)")
    return (not why), why
