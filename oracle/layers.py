"""The oracle's layers: the seed's layers (main.bend lines 598-1940) in float64, from their mathematical
definitions. Same names, constructor arguments and parameter records as impl (docs/DESIGN.md's table); every value is
a float64 array and every Layer has dtype=np.float64.

Sums and products are numpy's float64 (BLAS for matrix products, pairwise sums): their error, a few 2^-53 relative
to the sum of the magnitudes, is some 2^-29 of a float32 ulp. Where a formula would cancel in float64 it is rewritten
so it does not (log-softmax's log of a sum near 1 is log1p of the rest, see oracle/funcs.py for the activations).

Hyperparameters are read as the decimal the user wrote (oracle.hyper): eps = float(str(np.float32(eps))), Dropout's
scale 1 / (1 - p) exactly for the decimal p. Dropout's mask is the seed's integer hash, bit for bit.

What a forward pass saves (S) is the oracle's own choice (Sigmoid and Tanh save their input, not their output, so
the derivative is exact rather than a function of a rounded output); callers treat S as opaque.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from bendtorch.impl.optstate import Opt, OptState
from bendtorch.impl.protocol import (Bwd, Fwd, Layer, Loaded, Step, check_dims, check_eps, check_prob, check_seed,
                                     layer_name, mat_param, pair_param, param_free)
from bendtorch.impl.specs import Flat, IdsSpec, MatSpec, ShapeError
from bendtorch.oracle.hyper import dec, recip_one_minus
from bendtorch.oracle.optim import opt_mat

F64 = npt.NDArray[np.float64]
Ids = npt.NDArray[np.int64]
DT = np.float64


def _zeros(r: int, c: int) -> F64:
    return np.zeros((r, c), dtype=np.float64)


def _f64(a: Any) -> F64:
    return np.ascontiguousarray(a, dtype=np.float64)


def _rows(name: str, n: int, c: int) -> None:
    """n >= 0 rows of c >= 1 numbers (the seed reads a row's first number for its max or its sum)."""
    check_dims(name, n=n)
    check_dims(name, 1, c=c)


# ---------------------------------------------------------------------------------------------------------------
# Parameter records (main.bend lines 602, 1225, 1684)
# ---------------------------------------------------------------------------------------------------------------


class Lin(NamedTuple):
    """Linear's parameters: w (o x i, PyTorch's layout) and b (1 x o)."""

    w: F64
    b: F64


class LN(NamedTuple):
    """LayerNorm's parameters: the gain g and the bias b, each 1 x d."""

    g: F64
    b: F64


class DropP(NamedTuple):
    """Dropout's step counter t (a U32; the optimizer step increments it, main.bend line 1265)."""

    t: int


# ---------------------------------------------------------------------------------------------------------------
# Linear, LinearFirst, LinearNB (main.bend lines 598-721, 1920-1940)
# ---------------------------------------------------------------------------------------------------------------


def _linear(kind: str, n: int, i: int, o: int, want_dx: bool) -> Layer[Lin, F64, F64, F64]:
    check_dims(kind, n=n, i=i, o=o)

    def fwd(p: Lin, x: F64) -> Fwd[Lin, F64, F64]:
        """y = x W^T + b (line 615); saves x."""
        return Fwd(p, _f64(x @ p.w.T + p.b), x)

    def bwd(p: Lin, s: F64, dy: F64, g: Lin) -> Bwd[Lin, F64]:
        """dX = dY W; dW += dY^T X; db += the column sums of dY (line 637). LinearFirst: dX = 0 (line 710)."""
        dx = _f64(dy @ p.w) if want_dx else _zeros(n, i)
        g.w[...] += dy.T @ s
        g.b[...] += np.sum(dy, axis=0, keepdims=True)
        return Bwd(p, dx, g)

    return pair_param(layer_name(kind, n, i, o), MatSpec(n, i), MatSpec(n, o), DT, Lin, ((o, i), (1, o)), fwd, bwd,
                      opt_mat)


def Linear(n: int, i: int, o: int) -> Layer[Lin, F64, F64, F64]:
    """y = x W^T + b from i to o features on n rows (main.bend line 704); P = Lin(w: o x i, b: 1 x o)."""
    return _linear("Linear", n, i, o, True)


def LinearFirst(n: int, i: int, o: int) -> Layer[Lin, F64, F64, F64]:
    """Linear whose backward pass returns zeros as dX (the model's first layer, main.bend line 720)."""
    return _linear("LinearFirst", n, i, o, False)


def LinearNB(n: int, i: int, o: int) -> Layer[F64, F64, F64, F64]:
    """y = x W^T, no bias (main.bend line 1939); P = W (o x i)."""
    check_dims("LinearNB", n=n, i=i, o=o)

    def fwd(w: F64, x: F64) -> Fwd[F64, F64, F64]:
        return Fwd(w, _f64(x @ w.T), x)

    def bwd(w: F64, s: F64, dy: F64, g: F64) -> Bwd[F64, F64]:
        """dX = dY W; dW += dY^T X."""
        g[...] += dy.T @ s
        return Bwd(w, _f64(dy @ w), g)

    return mat_param(layer_name("LinearNB", n, i, o), MatSpec(n, i), MatSpec(n, o), DT, o, i, fwd, bwd, opt_mat)


# ---------------------------------------------------------------------------------------------------------------
# Dropout (main.bend lines 1219-1288)
# ---------------------------------------------------------------------------------------------------------------

_M1 = np.uint32(2146121005)
_M2 = np.uint32(2221713035)


def mix32(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """lowbias32 (main.bend line 1229) on uint32 arrays, wrapping modulo 2^32:
    x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16."""
    a = np.asarray(x, dtype=np.uint32)
    a = a ^ (a >> np.uint32(16))
    a = a * _M1
    a = a ^ (a >> np.uint32(15))
    a = a * _M2
    a = a ^ (a >> np.uint32(16))
    return np.asarray(a, dtype=np.uint32)


def drop_key(seed: int, t: int) -> int:
    """The hash key of step t: mix32(seed xor mix32(t)) (line 1248)."""
    inner = mix32(np.array([t % 2 ** 32], dtype=np.uint32))
    return int(mix32(np.array([seed % 2 ** 32], dtype=np.uint32) ^ inner)[0])


def drop_mask(n: int, c: int, seed: int, t: int, p: Any) -> npt.NDArray[np.bool_]:
    """True where element i (row by row) is dropped: its uniform u = (mix32(key + i) >> 8) / 2^24 is < p, with p the
    float32 the layer holds (line 1238). u is a multiple of 2^-24 below 1, exact in float32 and in float64, and the
    comparison is made with p's float32 value exactly, so the mask is the seed's bit for bit."""
    key = np.uint32(drop_key(seed, t))
    idx = np.arange(n * c, dtype=np.uint64)
    h = mix32(((np.uint64(key) + idx) % np.uint64(2 ** 32)).astype(np.uint32))
    u = (h >> np.uint32(8)).astype(np.float64) / 16777216.0
    p32 = float(np.float32(p))
    with np.errstate(invalid="ignore"):
        return np.asarray((u < p32).reshape(n, c), dtype=np.bool_)


def Dropout(n: int, c: int, p: float, seed: int) -> Layer[DropP, F64, F64, F64]:
    """y = x k, k = 0 where the mask drops (probability p) and 1 / (1 - p) elsewhere (main.bend line 1287); dx = dy k.
    The mask is the seed's counter hash of (seed, t, index); the scale is 1 / (1 - p) for the decimal p, exact then
    rounded once to float64. P = DropP(t): step increments t (mod 2^32); dump writes t's 32 bits as one float32
    (line 1273), held exactly in a float64."""
    check_dims("Dropout", n=n, c=c)
    p32 = check_prob("Dropout", p)
    seed = check_seed("Dropout", seed)
    scale = recip_one_minus(p32)

    def fwd(d: DropP, x: F64) -> Fwd[DropP, F64, F64]:
        k = np.where(drop_mask(n, c, seed, d.t, p32), 0.0, scale)
        with np.errstate(invalid="ignore"):
            return Fwd(d, _f64(x * k), _f64(k))

    def bwd(d: DropP, s: F64, dy: F64, g: DropP) -> Bwd[DropP, F64]:
        with np.errstate(invalid="ignore"):
            return Bwd(d, _f64(dy * s), g)

    def step(op: Opt, d: DropP, g: DropP, st: OptState[DropP]) -> Step[DropP]:
        return Step(DropP((d.t + 1) % 2 ** 32), g, st)

    def dump(d: DropP) -> Flat:
        return np.array([np.uint32(d.t).view(np.float32)], dtype=np.float64)

    def load(d: DropP, xs: Flat, off: int) -> Loaded[DropP]:
        if off + 1 > xs.size:
            raise ShapeError(f"Dropout.load: 1 number wanted from offset {off}, the array has {xs.size}")
        t = int(np.float32(xs[off]).view(np.uint32))
        return Loaded(DropP(t), off + 1)

    def store(d: DropP, xs: Flat, off: int) -> int:
        if off + 1 > xs.size:
            raise ShapeError(f"Dropout.store: 1 number to write from offset {off}, the array has {xs.size}")
        xs[off] = np.uint32(d.t).view(np.float32)
        return off + 1

    return Layer(name=layer_name("Dropout", n, c, p=p32, seed=seed), x_spec=MatSpec(n, c), y_spec=MatSpec(n, c),
                 dtype=DT, f_fwd=fwd, f_bwd=bwd, f_step=step, f_zeros=lambda: DropP(0), f_dump=dump, f_load=load,
                 f_store=store, n_count=1)


# ---------------------------------------------------------------------------------------------------------------
# Softmax, LogSoftmax (main.bend lines 1386-1522)
# ---------------------------------------------------------------------------------------------------------------


class RowExp(NamedTuple):
    """A row-wise exp(x - max) split at one argmax per row: e (n x c), t = the sum of e over every column but that
    argmax (so sum(e) = 1 + t exactly in real arithmetic), m the row maxima (n x 1)."""

    e: F64
    t: F64
    m: F64


def row_exp(x: F64) -> RowExp:
    """exp(x - m) row by row with m the row's maximum; NaN anywhere in a row (or +inf, giving inf - inf) makes t NaN
    and so the whole row's results NaN, as in the seed's arithmetic (its sum of the exponentials is NaN)."""
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=1, keepdims=True)
        e = np.exp(x - m)
        am = np.argmax(x, axis=1)
        rest = e.copy()
        rest[np.arange(x.shape[0]), am] = 0.0
        t = np.sum(rest, axis=1, keepdims=True)
        t = np.where(np.any(np.isnan(e), axis=1, keepdims=True), np.nan, t)
    return RowExp(_f64(e), _f64(t), _f64(m))


def softmax(x: F64) -> F64:
    """exp(x - m) / sum(exp(x - m)) per row."""
    r = row_exp(x)
    with np.errstate(invalid="ignore"):
        return _f64(r.e / (1.0 + r.t))


def log_softmax(x: F64) -> F64:
    """(x - m) - log(sum exp(x - m)) per row, with log(1 + t) = log1p(t): both terms <= 0, no cancellation."""
    r = row_exp(x)
    with np.errstate(invalid="ignore"):
        return _f64((x - r.m) - np.log1p(r.t))


def Softmax(n: int, c: int) -> Layer[None, F64, F64, F64]:
    """Softmax over each row (main.bend line 1441); saves y. Backward: dx = y (dy - sum(dy y)) (line 1422)."""
    _rows("Softmax", n, c)

    def fwd(p: None, x: F64) -> Fwd[None, F64, F64]:
        y = softmax(x)
        return Fwd(None, y, y.copy())

    def bwd(p: None, y: F64, dy: F64, g: None) -> Bwd[None, F64]:
        with np.errstate(invalid="ignore"):
            return Bwd(None, _f64(y * (dy - np.sum(dy * y, axis=1, keepdims=True))), None)

    return param_free(layer_name("Softmax", n, c), MatSpec(n, c), MatSpec(n, c), DT, fwd, bwd)


def LogSoftmax(n: int, c: int) -> Layer[None, F64, F64, F64]:
    """log_softmax over each row (main.bend line 1521); saves the probabilities softmax(x). Backward:
    dx = dy - softmax(x) sum(dy) (line 1508)."""
    _rows("LogSoftmax", n, c)

    def fwd(p: None, x: F64) -> Fwd[None, F64, F64]:
        return Fwd(None, log_softmax(x), softmax(x))

    def bwd(p: None, sm: F64, dy: F64, g: None) -> Bwd[None, F64]:
        with np.errstate(invalid="ignore"):
            return Bwd(None, _f64(dy - sm * np.sum(dy, axis=1, keepdims=True)), None)

    return param_free(layer_name("LogSoftmax", n, c), MatSpec(n, c), MatSpec(n, c), DT, fwd, bwd)


# ---------------------------------------------------------------------------------------------------------------
# RMSNorm, LayerNorm (main.bend lines 1524-1866)
# ---------------------------------------------------------------------------------------------------------------


def RMSNorm(n: int, d: int, eps: float = 1e-5) -> Layer[F64, F64, F64, F64]:
    """y = g x r, r = 1 / sqrt(mean(x^2) + eps) per row (main.bend line 1679); P = the gain g (1 x d); saves x.
    Backward (line 1612): xh = x r, dxh = dy g, dx = r (dxh - xh mean(dxh xh)); dg += sum over rows of dy xh.
    eps is the decimal the user wrote."""
    _rows("RMSNorm", n, d)
    e = dec(check_eps("RMSNorm", eps))

    def inv_rms(x: F64) -> F64:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _f64(1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + e))

    def fwd(g: F64, x: F64) -> Fwd[F64, F64, F64]:
        with np.errstate(invalid="ignore", over="ignore"):
            return Fwd(g, _f64(g * (x * inv_rms(x))), x)

    def bwd(g: F64, x: F64, dy: F64, gacc: F64) -> Bwd[F64, F64]:
        with np.errstate(invalid="ignore", over="ignore"):
            r = inv_rms(x)
            xh = x * r
            dxh = dy * g
            dx = r * (dxh - xh * np.mean(dxh * xh, axis=1, keepdims=True))
            gacc[...] += np.sum(dy * xh, axis=0, keepdims=True)
        return Bwd(g, _f64(dx), gacc)

    return mat_param(layer_name("RMSNorm", n, d, eps=eps), MatSpec(n, d), MatSpec(n, d), DT, 1, d, fwd, bwd,
                     opt_mat)


def LayerNorm(n: int, d: int, eps: float = 1e-5) -> Layer[LN, F64, F64, F64]:
    """y = (x - mu) r g + b, r = 1 / sqrt(var + eps), var the biased variance, per row (main.bend line 1865);
    P = LN(g, b), each 1 x d; saves x. Backward (line 1750): xh = (x - mu) r, dxh = dy g,
    dx = r ((dxh - mean(dxh)) - xh mean(dxh xh)); dg += sum over rows of dy xh; db += sum over rows of dy.
    mu and var are two passes in float64; eps is the decimal the user wrote."""
    _rows("LayerNorm", n, d)
    e = dec(check_eps("LayerNorm", eps))

    def norm(x: F64) -> tuple[F64, F64]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            mu = np.mean(x, axis=1, keepdims=True)
            xc = x - mu
            r = 1.0 / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + e)
            return _f64(xc * r), _f64(r)

    def fwd(p: LN, x: F64) -> Fwd[LN, F64, F64]:
        xh, _ = norm(x)
        with np.errstate(invalid="ignore", over="ignore"):
            return Fwd(p, _f64(xh * p.g + p.b), x)

    def bwd(p: LN, x: F64, dy: F64, g: LN) -> Bwd[LN, F64]:
        xh, r = norm(x)
        with np.errstate(invalid="ignore", over="ignore"):
            dxh = dy * p.g
            dx = r * ((dxh - np.mean(dxh, axis=1, keepdims=True)) - xh * np.mean(dxh * xh, axis=1, keepdims=True))
            g.g[...] += np.sum(dy * xh, axis=0, keepdims=True)
            g.b[...] += np.sum(dy, axis=0, keepdims=True)
        return Bwd(p, _f64(dx), g)

    return pair_param(layer_name("LayerNorm", n, d, eps=eps), MatSpec(n, d), MatSpec(n, d), DT, LN,
                      ((1, d), (1, d)), fwd, bwd, opt_mat)


# ---------------------------------------------------------------------------------------------------------------
# Embedding (main.bend lines 1868-1918)
# ---------------------------------------------------------------------------------------------------------------


def Embedding(n: int, v: int, d: int) -> Layer[F64, Ids, F64, Ids]:
    """Row i of the output is row ids[i] of the table (v x d) (main.bend line 1917); dX is the empty id list;
    the table's gradient gets dY's row i added into row ids[i], for i in order (line 1898). An id outside [0, v)
    raises ValueError (the seed's Array.get past the end has no defined value)."""
    check_dims("Embedding", n=n, v=v, d=d)

    def check(ids: Ids) -> Ids:
        bad = np.nonzero((ids < 0) | (ids >= v))[0]
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{layer_name('Embedding', n, v, d)}: id {int(ids[k])} at position {k} is not in [0, {v})")
        return np.asarray(ids, dtype=np.int64)

    def fwd(e: F64, ids: Ids) -> Fwd[F64, F64, Ids]:
        ix = check(ids)
        return Fwd(e, _f64(e[ix]), ix.copy())

    def bwd(e: F64, ids: Ids, dy: F64, g: F64) -> Bwd[F64, Ids]:
        np.add.at(g, ids, dy)
        return Bwd(e, np.zeros(0, dtype=np.int64), g)

    return mat_param(layer_name("Embedding", n, v, d), IdsSpec(n), MatSpec(n, d), DT, v, d, fwd, bwd, opt_mat)
