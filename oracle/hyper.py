"""How the oracle reads the float32 numbers a user configured (docs/DESIGN.md, "oracle/").

A hyperparameter reaches the libraries as a float32 (np.float32(0.9) = 0.89999997615814208984375). The oracle reads
it as the decimal the user wrote: the shortest decimal that round-trips the float32, `float(str(np.float32(x)))`,
and takes 1 - b, 1 - b^t and 1 / (1 - p) in exact decimal arithmetic (Python's `decimal` at 60 digits, far more than
the 17 a float64 holds), rounded once to float64.

The one check kept in float32 is the seed's `beta_ok` (main.bend lines 514-519): whether a configuration is poisoned
is a property of its float32 fields, so the oracle decides it with the seed's own float32 operations.
"""

from __future__ import annotations

from decimal import Decimal, DivisionByZero, InvalidOperation, Overflow, localcontext
from typing import Any

import numpy as np

_PREC = 60


def dec_str(x: Any) -> str:
    """The shortest decimal that round-trips the float32 nearest x (numpy's Dragon4 shortest repr)."""
    return str(np.float32(x))


def dec(x: Any) -> float:
    """The decimal the user wrote, as the nearest float64: float(str(np.float32(x)))."""
    return float(dec_str(x))


def _d(x: Any) -> Decimal:
    return Decimal(dec_str(x))


def _ctx_float(f: Any) -> float:
    with localcontext() as ctx:
        ctx.prec = _PREC
        for t in (DivisionByZero, InvalidOperation, Overflow):
            ctx.traps[t] = False
        r: Decimal = f()
        return float(r)


def one_minus(b: Any) -> float:
    """1 - b for the decimal b, exact (the seed's c = 1 - b, main.bend lines 273-275), rounded once to float64."""
    return _ctx_float(lambda: Decimal(1) - _d(b))


def one_minus_pow(b: Any, t: int) -> float:
    """1 - b^t for the decimal b and a step count t >= 0, at 60 digits, rounded once to float64 (PyTorch's bias
    correction 1 - beta^t; the seed carries it as q <- q + c (1 - q) in F32, main.bend line 925)."""
    if t < 0:
        raise ValueError(f"one_minus_pow: step count {t} < 0")
    return _ctx_float(lambda: Decimal(1) - _d(b) ** t)


def recip_one_minus(p: Any) -> float:
    """1 / (1 - p) for the decimal p (Dropout's scale, main.bend line 1248), correctly rounded to float64; +inf for
    p = 1 (the seed's F32 division gives +inf too, and no kept element ever uses it)."""
    return _ctx_float(lambda: Decimal(1) / (Decimal(1) - _d(p)))


# (1 - b) - c, squared, at most 2^-46 (main.bend line 519's constant, exactly)
_BETA_TOL = np.float32(2.0 ** -46)


def beta_ok32(b: Any, c: Any) -> bool:
    """The seed's beta_ok (main.bend line 517) in its own float32 operations: 0 < c <= 1 and ((1 - b) - c)^2 <= 2^-46,
    each operation rounded to float32. A NaN fails every comparison."""
    f = np.float32
    bb, cc = f(b), f(c)
    with np.errstate(all="ignore"):
        d = f(f(f(1.0) - bb) - cc)
        dd = f(d * d)
    return bool(cc > f(0.0)) and bool(cc <= f(1.0)) and bool(dd <= _BETA_TOL)
