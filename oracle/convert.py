"""From impl's float32 values to the oracle's float64 ones, exactly (every float32 is a float64)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bendtorch.impl.optstate import NoMom, OneMom, Packed, TwoMom
from bendtorch.oracle.layers import DropP, LN, Lin

_RECORDS: dict[str, Any] = {"Lin": Lin, "LN": LN, "DropP": DropP}


def from_impl(x: Any) -> Any:
    """A float32 value (array, scalar, parameters, a structure of pairs, records and optimizer buffers) as the
    oracle's float64 one, exactly and as a copy: float arrays become C-contiguous float64 arrays, integer arrays
    (ids, labels) are copied, float scalars become np.float64, integer scalars (Dropout's counter) Python ints,
    tuples stay tuples, impl's records Lin, LN, DropP become the oracle's records of the same names, NoMom, OneMom,
    TwoMom keep their shape. Packed BF16 moments have no float64 counterpart here: TypeError."""
    if x is None:
        return None
    if isinstance(x, np.ndarray):
        if np.issubdtype(x.dtype, np.floating):
            return np.array(x, dtype=np.float64, order="C", copy=True)
        return x.copy()
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return np.float64(x)
    if isinstance(x, tuple):
        name = type(x).__name__
        if hasattr(x, "_fields"):
            if name not in _RECORDS:
                raise TypeError(f"from_impl: no oracle record named {name}")
            return _RECORDS[name](*[from_impl(v) for v in x])
        return tuple(from_impl(v) for v in x)
    if isinstance(x, list):
        return [from_impl(v) for v in x]
    if isinstance(x, NoMom):
        return NoMom()
    if isinstance(x, OneMom):
        return OneMom(from_impl(x.m))
    if isinstance(x, TwoMom):
        return TwoMom(from_impl(x.m), from_impl(x.v))
    if isinstance(x, Packed):
        raise TypeError("from_impl: packed BF16 moments have no float64 form here (unpack them first)")
    raise TypeError(f"from_impl: cannot convert {type(x).__name__}")


def to_f64_params(p: Any) -> Any:
    """A model's parameters (any structure of arrays, pairs and records) as float64: from_impl."""
    return from_impl(p)
