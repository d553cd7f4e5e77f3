"""Symbolic values for the proofs (laws/proofs.py): the Python source of impl.kernels.index's functions run on z3
terms, so what is proved is the function that runs.

`symbolic(fn)` takes the njit function's `py_func` (the source numba compiles into the kernels) and re-binds its
globals: `np.uint32` / `np.uint64` become z3 casts, `pick` becomes z3's If, the other index functions their own
symbolic versions. The z3 terms are then those of the source, not of a second copy. The operators act on one of two
domains, and each proof says which:

- unbounded integers (`Int`): Python's integer semantics (`//` and `%` floor, `>>` and `& (2^k - 1)` on any
  integer), used where the kernel cannot overflow: numba computes these indices in int64, and every one is below
  the size of an array numpy allocated (< 2^63). A `//` or `%` by a symbolic divisor adds the obligation that the
  divisor is positive (where Python's floor division and z3's agree), proved with the statement
  (`with_obligations`).
- machine words (`Word`): numba's unsigned integers, where the kernel wraps. numba computes an operation on
  uint32 in uint64 (its integer typing widens to 64 bits), so every operation here is on 64-bit vectors, `>>` is
  logical, comparisons unsigned, and `np.uint32(x)` keeps the low 32 bits, as the compiled code does. A plain
  Python integer next to a word is refused: numba would type it int64 and compute in int64 or float64.

A Python `if`, `and`, `or`, `not` or `min` on a symbolic value raises `SymbolicBranch`: the index functions choose
with `pick` and join conditions with `&` and `|`.
"""

from __future__ import annotations

import types
from typing import Any, Callable, TypeVar

import numpy as np
import z3  # type: ignore[import-untyped]

from bendtorch.impl.kernels import index as I

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------------------------
# Symbolic values
# ---------------------------------------------------------------------------------------------------------------


class SymbolicBranch(TypeError):
    """A Python branch (if, and, or, not, min, ...) on a symbolic value: the source must use pick, & and |."""


_OBLIGATIONS: list[z3.BoolRef] = []


def _need(c: z3.BoolRef) -> None:
    _OBLIGATIONS.append(c)


class Bool:
    """A symbolic condition."""

    __slots__ = ("e",)

    def __init__(self, e: z3.BoolRef) -> None:
        self.e = e

    @staticmethod
    def of(x: Any) -> z3.BoolRef:
        if isinstance(x, Bool):
            return x.e
        if isinstance(x, (bool, np.bool_)):
            return z3.BoolVal(bool(x))
        if isinstance(x, z3.BoolRef):
            return x
        raise TypeError(f"not a condition: {x!r}")

    def __and__(self, o: Any) -> Bool:
        return Bool(z3.And(self.e, Bool.of(o)))

    __rand__ = __and__

    def __or__(self, o: Any) -> Bool:
        return Bool(z3.Or(self.e, Bool.of(o)))

    __ror__ = __or__

    def __eq__(self, o: Any) -> Bool:  # type: ignore[override]
        return Bool(self.e == Bool.of(o))

    def __ne__(self, o: Any) -> Bool:  # type: ignore[override]
        return Bool(self.e != Bool.of(o))

    def __bool__(self) -> bool:
        raise SymbolicBranch("a Python branch on a symbolic condition: use pick(c, a, b), & and |")

    __hash__ = None  # type: ignore[assignment]


class Int:
    """A symbolic Python integer (z3 Int), with Python's operator semantics."""

    __slots__ = ("e",)

    def __init__(self, e: z3.ArithRef) -> None:
        self.e = e

    @staticmethod
    def of(x: Any) -> z3.ArithRef:
        if isinstance(x, Int):
            return x.e
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            return z3.IntVal(int(x))
        raise TypeError(f"not an integer: {x!r}")

    def __add__(self, o: Any) -> Int:
        return Int(self.e + Int.of(o))

    def __radd__(self, o: Any) -> Int:
        return Int(Int.of(o) + self.e)

    def __sub__(self, o: Any) -> Int:
        return Int(self.e - Int.of(o))

    def __rsub__(self, o: Any) -> Int:
        return Int(Int.of(o) - self.e)

    def __mul__(self, o: Any) -> Int:
        return Int(self.e * Int.of(o))

    def __rmul__(self, o: Any) -> Int:
        return Int(Int.of(o) * self.e)

    def __neg__(self) -> Int:
        return Int(-self.e)

    @staticmethod
    def _div(a: z3.ArithRef, d: z3.ArithRef) -> z3.ArithRef:
        # z3's integer division is Euclidean; with a positive divisor it is Python's floor division
        if not z3.is_int_value(d):
            _need(d > 0)
        elif d.as_long() <= 0:
            raise ValueError("division by a non-positive constant")
        return a / d

    @staticmethod
    def _mod(a: z3.ArithRef, d: z3.ArithRef) -> z3.ArithRef:
        if not z3.is_int_value(d):
            _need(d > 0)
        elif d.as_long() <= 0:
            raise ValueError("remainder by a non-positive constant")
        return a % d

    def __floordiv__(self, o: Any) -> Int:
        return Int(Int._div(self.e, Int.of(o)))

    def __rfloordiv__(self, o: Any) -> Int:
        return Int(Int._div(Int.of(o), self.e))

    def __mod__(self, o: Any) -> Int:
        return Int(Int._mod(self.e, Int.of(o)))

    def __rmod__(self, o: Any) -> Int:
        return Int(Int._mod(Int.of(o), self.e))

    def __rshift__(self, o: Any) -> Int:
        # x >> k is floor(x / 2^k) for every Python integer x
        if not isinstance(o, (int, np.integer)) or int(o) < 0:
            raise TypeError("a symbolic integer shifts by a non-negative constant only")
        return Int(self.e / (2 ** int(o)))

    def __lshift__(self, o: Any) -> Int:
        if not isinstance(o, (int, np.integer)) or int(o) < 0:
            raise TypeError("a symbolic integer shifts by a non-negative constant only")
        return Int(self.e * (2 ** int(o)))

    def __and__(self, o: Any) -> Int:
        # x & (2^k - 1) is x mod 2^k for every Python integer x
        if isinstance(o, (int, np.integer)) and int(o) >= 0 and (int(o) + 1) & int(o) == 0:
            return Int(self.e % (int(o) + 1))
        raise TypeError("a symbolic integer is masked by a constant 2^k - 1 only")

    __rand__ = __and__

    def __lt__(self, o: Any) -> Bool:
        return Bool(self.e < Int.of(o))

    def __le__(self, o: Any) -> Bool:
        return Bool(self.e <= Int.of(o))

    def __gt__(self, o: Any) -> Bool:
        return Bool(self.e > Int.of(o))

    def __ge__(self, o: Any) -> Bool:
        return Bool(self.e >= Int.of(o))

    def __eq__(self, o: Any) -> Bool:  # type: ignore[override]
        return Bool(self.e == Int.of(o))

    def __ne__(self, o: Any) -> Bool:  # type: ignore[override]
        return Bool(self.e != Int.of(o))

    def __bool__(self) -> bool:
        raise SymbolicBranch("a Python branch on a symbolic integer: use pick(c, a, b)")

    def __index__(self) -> int:
        raise SymbolicBranch("a symbolic integer used as a Python index or range bound")

    __hash__ = None  # type: ignore[assignment]


def _bv(x: Any) -> z3.BitVecRef:
    """A word operand as a bit-vector of its numba width: a Word, or a numpy unsigned scalar (uint32: 32 bits,
    uint64: 64 bits)."""
    if isinstance(x, Word):
        return x.e
    if isinstance(x, (np.uint32, np.uint16, np.uint8)):
        return z3.BitVecVal(int(x), 32)
    if isinstance(x, np.uint64):
        return z3.BitVecVal(int(x), 64)
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"the plain integer {x!r} next to an unsigned word: numba types it int64 and computes in "
                        "int64 or float64; write np.uint32(...) or np.uint64(...)")
    raise TypeError(f"not a word: {x!r}")


def w64(e: z3.BitVecRef) -> z3.BitVecRef:
    """A bit-vector term zero-extended to 64 bits, the width of every word here."""
    return e if e.size() == 64 else z3.ZeroExt(64 - e.size(), e)


class Word:
    """A symbolic unsigned machine integer of numba (a z3 bit-vector of 32 or 64 bits). Every operation is done on
    64 bits (numba's typing of uint32 arithmetic), `np.uint32(x)` keeps the low 32 bits."""

    __slots__ = ("e",)

    def __init__(self, e: z3.BitVecRef) -> None:
        self.e = e

    @staticmethod
    def _op(a: Any, b: Any, f: Callable[[z3.BitVecRef, z3.BitVecRef], z3.BitVecRef]) -> Word:
        return Word(f(w64(_bv(a)), w64(_bv(b))))

    def __add__(self, o: Any) -> Word:
        return Word._op(self, o, lambda a, b: a + b)

    def __radd__(self, o: Any) -> Word:
        return Word._op(o, self, lambda a, b: a + b)

    def __sub__(self, o: Any) -> Word:
        return Word._op(self, o, lambda a, b: a - b)

    def __rsub__(self, o: Any) -> Word:
        return Word._op(o, self, lambda a, b: a - b)

    def __mul__(self, o: Any) -> Word:
        return Word._op(self, o, lambda a, b: a * b)

    def __rmul__(self, o: Any) -> Word:
        return Word._op(o, self, lambda a, b: a * b)

    def __and__(self, o: Any) -> Word:
        return Word._op(self, o, lambda a, b: a & b)

    def __rand__(self, o: Any) -> Word:
        return Word._op(o, self, lambda a, b: a & b)

    def __or__(self, o: Any) -> Word:
        return Word._op(self, o, lambda a, b: a | b)

    def __ror__(self, o: Any) -> Word:
        return Word._op(o, self, lambda a, b: a | b)

    def __xor__(self, o: Any) -> Word:
        return Word._op(self, o, lambda a, b: a ^ b)

    def __rxor__(self, o: Any) -> Word:
        return Word._op(o, self, lambda a, b: a ^ b)

    @staticmethod
    def _shift(a: Any, b: Any, f: Callable[[z3.BitVecRef, z3.BitVecRef], z3.BitVecRef]) -> Word:
        sa, sb = w64(_bv(a)), w64(_bv(b))
        if not z3.is_bv_value(sb):
            _need(z3.ULT(sb, 64))  # LLVM's shift by 64 or more is undefined
        elif sb.as_long() >= 64:
            raise ValueError("a shift by 64 or more bits is undefined in the compiled code")
        return Word(f(sa, sb))

    def __lshift__(self, o: Any) -> Word:
        return Word._shift(self, o, lambda a, b: a << b)

    def __rlshift__(self, o: Any) -> Word:
        return Word._shift(o, self, lambda a, b: a << b)

    def __rshift__(self, o: Any) -> Word:
        return Word._shift(self, o, z3.LShR)

    def __rrshift__(self, o: Any) -> Word:
        return Word._shift(o, self, z3.LShR)

    def __floordiv__(self, o: Any) -> Word:
        b = w64(_bv(o))
        _need(b != 0)
        return Word(z3.UDiv(w64(self.e), b))

    def __mod__(self, o: Any) -> Word:
        b = w64(_bv(o))
        _need(b != 0)
        return Word(z3.URem(w64(self.e), b))

    def _cmp(self, o: Any, f: Callable[[z3.BitVecRef, z3.BitVecRef], z3.BoolRef]) -> Bool:
        return Bool(f(w64(self.e), w64(_bv(o))))

    def __lt__(self, o: Any) -> Bool:
        return self._cmp(o, z3.ULT)

    def __le__(self, o: Any) -> Bool:
        return self._cmp(o, z3.ULE)

    def __gt__(self, o: Any) -> Bool:
        return self._cmp(o, z3.UGT)

    def __ge__(self, o: Any) -> Bool:
        return self._cmp(o, z3.UGE)

    def __eq__(self, o: Any) -> Bool:  # type: ignore[override]
        return self._cmp(o, lambda a, b: a == b)

    def __ne__(self, o: Any) -> Bool:  # type: ignore[override]
        return self._cmp(o, lambda a, b: a != b)

    def __bool__(self) -> bool:
        raise SymbolicBranch("a Python branch on a symbolic word: use pick(c, a, b)")

    __hash__ = None  # type: ignore[assignment]


def _cast(x: Any, bits: int) -> Any:
    """np.uint32 / np.uint64 on a symbolic value: a word keeps its low bits (or is zero-extended); a concrete value
    is cast by numpy."""
    if isinstance(x, Word):
        e = x.e
        return Word(z3.Extract(bits - 1, 0, e) if e.size() > bits else z3.ZeroExt(bits - e.size(), e)
                    if e.size() < bits else e)
    if isinstance(x, Int):
        raise TypeError("an unbounded integer cast to a word: give the proof a word")
    return np.uint32(x) if bits == 32 else np.uint64(x)


def pick(c: Any, a: Any, b: Any) -> Any:
    """pick(c, a, b) on symbolic values: z3's If (numba unifies two unsigned widths to the wider)."""
    if isinstance(c, (bool, np.bool_)):
        return a if c else b
    cond = Bool.of(c)
    if isinstance(a, tuple):
        return tuple(pick(c, x, y) for x, y in zip(a, b))
    if isinstance(a, Word) or isinstance(b, Word) or isinstance(a, np.unsignedinteger):
        ea, eb = _bv(a), _bv(b)
        n = max(ea.size(), eb.size())
        ea = ea if ea.size() == n else z3.ZeroExt(n - ea.size(), ea)
        eb = eb if eb.size() == n else z3.ZeroExt(n - eb.size(), eb)
        return Word(z3.If(cond, ea, eb))
    if isinstance(a, (Bool, bool)) or isinstance(b, (Bool, bool)):
        return Bool(z3.If(cond, Bool.of(a), Bool.of(b)))
    return Int(z3.If(cond, Int.of(a), Int.of(b)))


class _SymNp:
    """numpy as the index functions see it when run symbolically."""

    @staticmethod
    def uint32(x: Any) -> Any:
        return _cast(x, 32)

    @staticmethod
    def uint64(x: Any) -> Any:
        return _cast(x, 64)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


_SYM_NP = _SymNp()
_MEMO: dict[Any, Callable[..., Any]] = {}


def _is_dispatcher(v: Any) -> bool:
    return hasattr(v, "py_func") and hasattr(v, "targetoptions")


def symbolic(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn's Python source (fn.py_func for a compiled function) with its globals re-bound for symbolic values:
    np -> the z3 casts, pick -> z3's If, every compiled function it calls -> its own symbolic version."""
    py = I.source(fn)
    if py is I.source(I.pick):
        return pick
    if py in _MEMO:
        return _MEMO[py]
    g = dict(py.__globals__)
    for k, v in list(g.items()):
        if _is_dispatcher(v) or (v is I.source(I.pick)):
            g[k] = _lazy(v)
    g["np"] = _SYM_NP
    out = types.FunctionType(py.__code__, g, py.__name__, py.__defaults__, py.__closure__)
    _MEMO[py] = out
    return out


def _lazy(v: Any) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return symbolic(v)(*args)
    return call


def term(x: Any) -> Any:
    """The z3 term of a symbolic value (or of a Python int / bool)."""
    if isinstance(x, (Int, Bool, Word)):
        return x.e
    if isinstance(x, bool):
        return z3.BoolVal(x)
    if isinstance(x, int):
        return z3.IntVal(x)
    return x

def with_obligations(build: Callable[[], T]) -> tuple[T, list[z3.BoolRef]]:
    """build() and the obligations its symbolic operations added (a divisor's sign, ...), collected apart from any
    other build's."""
    _OBLIGATIONS.clear()
    try:
        return build(), list(_OBLIGATIONS)
    finally:
        _OBLIGATIONS.clear()
