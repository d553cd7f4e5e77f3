"""A compiled loop bound to the compiled functions it calls, cached on disk.

The checker's loops call a function they are given: the reference, a piece classifier, a library's scalar function.
Passed as an argument, the function makes numba compile the loop again in every process (the reference pass alone
took about 2 s of a sampled sweep, the largest part of it once its libraries were imported); a copy of the loop
whose globals name the functions (impl.kernels.serial.renamed_copy) can be cached. numba knows a cached function by
its file, its name and its bytecode, not by what it calls, so each copy is named for its functions and cached in a
folder (inside the one in use: impl.kernels.libm's) named by the digest of their code, of impl's source and of the
loop's file: a changed function compiles anew rather than loading another's machine code.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import numba
from numba.core.caching import NullCache

from bendtorch.impl.kernels.portable import numba_cache_dir
from bendtorch.impl.kernels.serial import renamed_copy
from bendtorch.records.machine import impl_digest
from bendtorch.reports.sweep.keys import code_digest

_BOUND: dict[tuple[Any, ...], Any] = {}
_impl_digest = functools.cache(impl_digest)   # read once a process (every file of impl)


def _cached(f: Any) -> bool:
    """Whether numba caches f (njit with cache=True): a function it cannot cache (one that calls a ctypes pointer)
    leaves its callers uncachable too."""
    return not isinstance(getattr(f, "_cache", NullCache()), NullCache)


def bound(template: Any, **fs: Any) -> Any:
    """template (a Python function) compiled with each of its globals named in fs bound to that compiled function,
    once per process; cached on disk where every function in fs is."""
    key = (template, *sorted(fs.items(), key=lambda kv: kv[0]))
    k = _BOUND.get(key)
    if k is not None:
        return k
    pys = [getattr(f, "py_func", f) for f in fs.values()]
    suffix = "".join(f"_{py.__module__}_{py.__qualname__}".replace(".", "_") for py in pys)
    copy = renamed_copy(template, suffix, **fs)
    if not all(_cached(f) for f in fs.values()):
        k = _BOUND[key] = numba.njit(copy)
        return k
    h = hashlib.sha256(f"{code_digest(*fs.values())}\n{_impl_digest()}\n".encode())
    with open(template.__code__.co_filename, "rb") as src:
        h.update(src.read())
    outer = getattr(numba.config, "CACHE_DIR", "")
    setattr(numba.config, "CACHE_DIR", numba_cache_dir(f"numba-sweep-{h.hexdigest()[:16]}"))
    try:  # read as the function is defined (njit with cache=True)
        k = _BOUND[key] = numba.njit(cache=True)(copy)
    finally:
        setattr(numba.config, "CACHE_DIR", outer)
    return k
