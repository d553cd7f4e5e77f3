"""Serial twins of the parallel kernels, for small problems.

numba's thread pool costs more than it saves on small arrays, and much more on a loaded machine (every parallel
launch waits for a busy core). `sized(kernel)` returns a function that runs the kernel
as compiled (prange over threads) when its first array argument has at least SERIAL_BELOW numbers, and otherwise a
serial twin: the SAME Python function compiled without parallel=True, so its prange is a plain range. Every parallel
kernel here pranges only over independent outputs (never over a sum; docs/DESIGN.md), so each output is the same
expression in the same order either way: the same bits (tests/test_kernel_mix_same_bits.py and
tests/test_speed_bits.py run both). The twin is cached like the kernel (cache=True), under its own name (`<name>_serial`).

Likewise `called_and_inlined(body)`: one Python function as a compiled callee for a parallel loop and as an inlined
copy for the sequential loop beside it.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import numba
import numpy as np

# numbers in the first array argument below which the serial twin runs
SERIAL_BELOW = 1 << 16


def renamed_copy(f: Any, suffix: str, **bound: Any) -> Any:
    """A copy of the Python function f named with `suffix` added (name and qualified name), its global names
    `bound` set to other values in the copy alone. numba's cache knows a function by its file, qualified name and
    bytecode, not by the globals it reads, so a copy compiled apart needs a name of its own."""
    g = types.FunctionType(f.__code__, {**f.__globals__, **bound} if bound else f.__globals__, f.__name__ + suffix,
                           f.__defaults__, f.__closure__)
    g.__qualname__ = f.__qualname__ + suffix
    g.__doc__ = f.__doc__
    g.__module__ = f.__module__
    return g


def serial_twin(kernel: Any) -> Any:
    """The kernel's Python function compiled with its options but parallel=False (prange runs as range)."""
    opts = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
    return numba.njit(cache=True, **opts)(renamed_copy(kernel.py_func, "_serial"))


def sized(kernel: Any, below: int = SERIAL_BELOW) -> Callable[..., Any]:
    """kernel(*args) on the thread pool for big first arrays, its serial twin for small ones (same bits)."""
    twin = serial_twin(kernel)

    @functools.wraps(kernel.py_func)
    def run(*args: Any) -> Any:
        for a in args:
            if isinstance(a, np.ndarray):
                return (twin if a.size < below else kernel)(*args)
        return kernel(*args)

    run.parallel = kernel  # type: ignore[attr-defined]
    run.serial = twin  # type: ignore[attr-defined]
    return run


def called_and_inlined(body: Any, **inline_bound: Any) -> tuple[Any, Any]:
    """body compiled as a function of its own (cache=True; a parallel loop calls it once per unit) and as an inlined
    copy (numba's inline="always") for a sequential loop, its global names `inline_bound` set to other values in that
    copy alone (speed choices only: see renamed_copy). numba links a copy of every compiled callee into each
    caller and optimises and emits it again there, so a callee of its own under the sequential loop is one more level
    of that work at a cold start: with the copy inlined, a command that runs only the sequential kernel compiles no
    level for it, and one that runs both kinds compiles the body twice (docs/FINDINGS.md gives the figures). The same
    Python function either way: the same bits."""
    inlined = renamed_copy(body, "_inline", **inline_bound) if inline_bound else body
    return numba.njit(cache=True)(body), numba.njit(inline="always")(inlined)
