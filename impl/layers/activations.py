"""Element-wise activations (main.bend lines 737-761, 1046-1217): ReLU, Sigmoid, Tanh (ActOut: they save a copy of
their output, their gradient is a function of it) and SiLU, GELU (tanh form), GELUErf (ActIn: they save a copy of
their input). No parameters (P is None). Each is one record of bendtorch.records.ops.ACTIVATIONS, whose kernels (in
the seed's order of operations) and plain twins are `impl.kernels.elementwise.ACTS`'s entry; `Activation(name, n, c)`
builds any of them, and a named constructor here is one optional line naming its record.

    fwd: y = f(x) element by element;                  s = copy of y (ActOut) or of x (ActIn)
    bwd: dx = d(dy, s) element by element;             g stays None
"""

from __future__ import annotations

import numpy as np

from bendtorch.impl.kernels import elementwise as K
from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, param_free
from bendtorch.impl.specs import Mat, MatSpec

ActLayer = Layer[None, Mat, Mat, Mat]

__all__ = ["Activation", "ActLayer", "ReLU", "Sigmoid", "Tanh", "SiLU", "GELU", "GELUErf"]


def Activation(name: str, n: int, c: int) -> ActLayer:
    """The activation of the table's entry `name` over n x c (a ValueError for a name not in the table)."""
    k = K.act_kernel(name)
    check_dims(k.name, n=n, c=c)
    code, saves_y = k.code, k.saves_output

    def fwd(p: None, x: Mat) -> Fwd[None, Mat, Mat]:
        """ActOut (line 749) / ActIn (line 1052): y = f(x); the saved value is a copy of y, or of x."""
        y = K.act_fwd(code, x)
        s = y.copy() if saves_y else np.array(x, dtype=np.float32, copy=True)
        return Fwd(None, y, s)

    def bwd(p: None, s: Mat, dy: Mat, g: None) -> Bwd[None, Mat]:
        """act_b2 (line 744): dx = d(dy, s) element by element (Ew.zip)."""
        return Bwd(None, K.act_bwd(code, dy, s), None)

    spec = MatSpec(n, c)
    return param_free(layer_name(k.name, n, c), spec, spec, np.float32, fwd, bwd)


def ReLU(n: int, c: int) -> ActLayer:
    """relu(x) = x unless x < 0 (so relu(-0) = -0, relu(NaN) = NaN); gradient +0 where y <= 0, else dy
    (main.bend lines 752-761)."""
    return Activation("ReLU", n, c)


def Sigmoid(n: int, c: int) -> ActLayer:
    """y = 1 / (1 + exp(-x)); dx = (dy * (1 - y)) * y (lines 1055-1063)."""
    return Activation("Sigmoid", n, c)


def Tanh(n: int, c: int) -> ActLayer:
    """y = tanh(x); dx = dy * (1 - y*y) (lines 1065-1072)."""
    return Activation("Tanh", n, c)


def SiLU(n: int, c: int) -> ActLayer:
    """y = x / (1 + exp(-x)); dx = (dy*s) * (1 + x*(1 - s)), s = sigmoid(x) (lines 1074-1084)."""
    return Activation("SiLU", n, c)


def GELU(n: int, c: int) -> ActLayer:
    """GELU's tanh form, PyTorch's approximate="tanh" (lines 1086-1102)."""
    return Activation("GELU", n, c)


def GELUErf(n: int, c: int) -> ActLayer:
    """GELU's exact form with the seed's erf, PyTorch's default (lines 1201-1217)."""
    return Activation("GELUErf", n, c)
