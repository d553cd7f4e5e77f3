"""Dropout (main.bend lines 1219-1288): each number is kept with probability 1 - p and scaled by 1 / (1 - p), or set
to 0. The mask is a hash of (seed, step, index) (`impl.kernels.dropout`), so a run is reproducible. The step counter
t is the layer's "parameter" `DropP(t)`: the optimizer step only increments it (mod 2^32), checkpoints keep it.

    fwd: factor = mask(seed, t, p) (n x c);  y = x * factor;  s = factor      (drop_fwd, line 1255)
    bwd: dx = dy * factor;  p and g come back unchanged                      (drop_b2, line 1260)
    step: t <- t + 1 mod 2^32 whatever the optimizer; g and the state unchanged (drop_step, line 1265)
    zeros: DropP(0); dump: t's 32 bits as one float32 (line 1273); load reads them back (line 1279); count 1

DropP.t is a Python int in [0, 2^32) (the seed's U32); a gradient of Dropout is a DropP too, never read.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bendtorch.impl.kernels import dropout as K
from bendtorch.impl.optstate import Opt, OptState
from bendtorch.impl.protocol import Bwd, Fwd, Layer, Loaded, Step, check_dims, check_prob, check_seed, layer_name
from bendtorch.impl.specs import Flat, Mat, MatSpec, ShapeError

F32 = np.float32
_M32 = 0xFFFFFFFF


class DropP(NamedTuple):
    """Dropout's step counter (main.bend line 1225), a U32."""

    t: int


def drop_dump(d: DropP) -> Flat:
    """The counter bitcast to one float32 (drop_dump, line 1270)."""
    return np.array([d.t & _M32], dtype=np.uint32).view(F32)


def drop_load(d: DropP, xs: Flat, off: int) -> Loaded[DropP]:
    """The counter read back from the bits of xs[off] (drop_load, line 1279); the old counter is dropped."""
    if off + 1 > xs.size:
        raise ShapeError(f"Dropout.load: 1 number wanted from offset {off}, the array has {xs.size}")
    word = np.ascontiguousarray(xs[off:off + 1], dtype=F32).view(np.uint32)
    return Loaded(DropP(int(word[0])), off + 1)


def drop_store(d: DropP, xs: Flat, off: int) -> int:
    """The counter bitcast into xs[off] (drop_store, line 1283); the next offset."""
    if off + 1 > xs.size:
        raise ShapeError(f"Dropout.store: 1 number to write from offset {off}, the array has {xs.size}")
    bits = np.array([d.t & _M32], dtype=np.uint32)
    if xs.dtype == F32:
        xs.view(np.uint32)[off] = bits[0]
    else:
        xs[off] = bits.view(F32)[0]
    return off + 1


def Dropout(n: int, c: int, p: float, seed: int) -> Layer[DropP, Mat, Mat, Mat]:
    """Dropout over an n x c matrix with drop probability p (a float32) and a 32-bit seed (line 1287)."""
    check_dims("Dropout", n=n, c=c)
    p32 = check_prob("Dropout", p)
    sd = check_seed("Dropout", seed)

    def fwd(d: DropP, x: Mat) -> Fwd[DropP, Mat, Mat]:
        """y = x * factor, the factors saved (drop_fwd, line 1255)."""
        k = K.mask(n, c, sd, d.t, p32)
        with np.errstate(all="ignore"):   # inf * 0 is NaN, as the seed's F32 product; no warning
            y: Mat = x * k
        return Fwd(d, y, k)

    def bwd(d: DropP, s: Mat, dy: Mat, g: DropP) -> Bwd[DropP, Mat]:
        """dx = dy * factor (drop_b2, line 1260)."""
        with np.errstate(all="ignore"):
            dx: Mat = dy * s
        return Bwd(d, dx, g)

    def step(op: Opt, d: DropP, g: DropP, st: OptState[DropP]) -> Step[DropP]:
        """t + 1 mod 2^32, whatever the optimizer (drop_step, line 1265)."""
        return Step(DropP((d.t + 1) & _M32), g, st)

    return Layer(name=layer_name("Dropout", n, c, p=p32, seed=sd), x_spec=MatSpec(n, c), y_spec=MatSpec(n, c),
                 dtype=F32, f_fwd=fwd, f_bwd=bwd, f_step=step, f_zeros=lambda: DropP(0), f_dump=drop_dump,
                 f_load=drop_load, f_store=drop_store, n_count=1)
