"""How a conformance law says it does not hold: the two results compared bit for bit, and on a difference a
LawFailure whose record lets a framework author reproduce it in a few lines (the shapes, the inputs' bits where they
are small, the seed that regenerates them where they are not, and the first differing element's two bit patterns).
Also the exact BF16 rounding rule the bf16 laws hold every library to."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from bendtorch.laws.registry import LawFailure

F32 = np.float32
INLINE = 4096  # arrays up to this many elements are recorded bit for bit; larger ones by shape (and their seed)


def encode(a: Any) -> Any:
    """A JSON form of an input: float32 (and bfloat16) arrays as their bit patterns in hex, space-separated in
    C order (`decode` reads them back), integer arrays as lists, scalars as they are."""
    if isinstance(a, np.ndarray):
        head: dict[str, Any] = {"shape": list(a.shape), "dtype": str(a.dtype)}
        if a.size > INLINE:
            return {**head, "note": f"more than {INLINE} elements: regenerate from the seed"}
        if a.dtype == np.float32:
            words = np.ascontiguousarray(a).view(np.uint32).ravel().tolist()
            return {**head, "bits": " ".join(f"{u:08x}" for u in words)}
        if a.dtype == np.uint16:
            return {**head, "bits": " ".join(f"{u:04x}" for u in a.ravel().tolist())}
        return {**head, "values": a.ravel().tolist()}
    if isinstance(a, (np.floating, float)):
        return {"float32": f"{int(np.array([a], F32).view(np.uint32)[0]):08x}", "value": float(a)}
    if isinstance(a, np.integer):
        return int(a)
    if isinstance(a, (tuple, list)):
        return [encode(x) for x in a]
    return a


def decode(enc: dict[str, Any]) -> Any:
    """The array an `encode` record holds: np.array of its bits viewed as its dtype, in its shape."""
    words = [int(h, 16) for h in enc["bits"].split()]
    if enc["dtype"] == "float32":
        return np.array(words, np.uint32).view(F32).reshape(enc["shape"])
    return np.array(words, np.uint16).reshape(enc["shape"])


def _bits(x: Any) -> str:
    a = np.asarray(x)
    if a.dtype == np.float32:
        return f"{int(a.reshape(1).view(np.uint32)[0]):08x}"
    if a.dtype == np.uint16:
        return f"{int(a.reshape(1)[0]):04x}"
    return repr(a.item())


def differ(got: Any, want: Any, nan_equal: bool = True, zero_sign: bool = True) -> Any:
    """The mask of elements whose bits differ; with nan_equal any NaN matches any NaN (a NaN stays a NaN, its
    payload may change), without zero_sign -0 matches +0."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        raise LawFailure(f"shapes differ: {g.shape} against {w.shape}", {"got_shape": list(g.shape),
                                                                        "want_shape": list(w.shape)})
    if g.dtype == np.float32:
        bad = g.view(np.uint32) != w.view(np.uint32)
        if nan_equal:
            bad &= ~(np.isnan(g) & np.isnan(w))
        if not zero_sign:
            bad &= ~((g == 0) & (w == 0))
        return bad
    return g != w


def fail(what: str, inputs: dict[str, Any], **extra: Any) -> LawFailure:
    """A LawFailure saying `what`, with the inputs recorded."""
    rec = {"what": what, "inputs": {k: encode(v) for k, v in inputs.items()},
           **{k: encode(v) for k, v in extra.items()}}
    return LawFailure(what, rec)


def expect_same(what: str, got: Any, want: Any, inputs: dict[str, Any], nan_equal: bool = True,
                zero_sign: bool = True) -> None:
    """got and want have the same bits (see differ); otherwise a LawFailure naming the first differing element
    with both bit patterns and how many differ."""
    bad = differ(got, want, nan_equal, zero_sign)
    if not np.any(bad):
        return
    g, w = np.asarray(got), np.asarray(want)
    idx = tuple(int(j) for j in np.argwhere(bad)[0])
    first = {"index": list(idx), "got_bits": _bits(g[idx]), "want_bits": _bits(w[idx]),
             "got": float(g[idx]), "want": float(w[idx])}
    raise LawFailure(f"{what}: {int(bad.sum())} of {bad.size} elements differ; first at {idx}: "
                     f"{first['got_bits']} ({first['got']!r}) against {first['want_bits']} ({first['want']!r})",
                     {"what": what, "inputs": {k: encode(v) for k, v in inputs.items()},
                      "differ": int(bad.sum()), "of": int(bad.size), "first": first})


def exact_rne(u: int) -> int:
    """The BF16 bits nearest to the float32 with bits u, ties to the even last bit, computed with exact rationals
    from the definition (overflow to infinity where the nearest value would be 2^128 or beyond)."""
    sign, mag = u & 0x80000000, u & 0x7FFFFFFF
    down = mag & 0xFFFF0000
    up = down + 0x10000

    def val(b: int) -> Fraction:
        if b >= 0x7F800000:
            return Fraction(2) ** 128
        return Fraction(float(np.array([b], np.uint32).view(F32)[0]))

    x, lo, hi = val(mag), val(down), val(up)
    if x - lo < hi - x:
        r = down
    elif x - lo > hi - x:
        r = up
    else:
        r = down if (down >> 16) & 1 == 0 else up
    return (sign | r) >> 16
