"""A compiled loop bound to the compiled functions it calls, cached on disk.

The checker's loops call a function they are given: the reference, a piece classifier, a library's scalar function.
Passed as an argument, the function makes numba compile the loop again in every process (the reference pass alone
took about 2 s of a sampled sweep, the largest part of it once its libraries were imported); a copy of the loop
whose globals name the functions (impl.kernels.serial.renamed_copy) can be cached. numba knows a cached function by
its file, its name and its bytecode, not by what it calls, so each copy is named for its functions and cached in a
folder (inside the one in use: impl.kernels.libm's) named by the digest of their code, of impl's source and of the
loop's file: a changed function compiles anew rather than loading another's machine code.

The checker's own loops (the statistics pass, the reference pass) call no function of impl's libm, so they need not
be compiled once per libm choice: `shared=True` and `njit_shared` cache them in a folder beside libm's
(portable.CACHE_ROOT), named by the digest of their code and of impl's source, where a worker of either choice loads
what the other compiled. A sampled sweep's impl_clib worker compiles them while the command imports the libraries it
measures (TensorFlow and PyTorch: about 5 s), and the command then loads them: a first `sweep exp --sample 100000` on
an empty cache, docs/FINDINGS.md.
"""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any, Callable, TypeVar, cast

import numba
from numba.core.caching import NullCache

from bendtorch.impl.kernels.portable import CACHE_ROOT, numba_cache_dir
from bendtorch.impl.kernels.serial import renamed_copy
from bendtorch.records.machine import impl_digest
from bendtorch.reports.sweep.keys import code_digest

_BOUND: dict[tuple[Any, ...], Any] = {}
_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_impl_digest = functools.cache(impl_digest)   # read once a process (every file of impl)


def _cached(f: Any) -> bool:
    """Whether numba caches f (njit with cache=True): a function it cannot cache (one that calls a ctypes pointer)
    leaves its callers uncachable too."""
    return not isinstance(getattr(f, "_cache", NullCache()), NullCache)


def _in_folder(folder: str, f: Any) -> Any:
    """f compiled with numba's njit(cache=True), its cache in `folder` (numba reads the folder as f is defined)."""
    outer = getattr(numba.config, "CACHE_DIR", "")
    setattr(numba.config, "CACHE_DIR", folder)
    try:
        return numba.njit(cache=True)(f)
    finally:
        setattr(numba.config, "CACHE_DIR", outer)


def njit_shared(*files: str) -> Callable[[_Fn], _Fn]:
    """A decorator: njit(cache=True) into the shared folder named by the digest of `files` (the loops' module and
    the modules of the compiled functions they call, which numba's cache does not follow) and of impl's source. For
    loops that call no function of impl's libm."""
    h = hashlib.sha256(f"{_impl_digest()}\n".encode())
    for name in files:
        with open(name, "rb") as src:
            h.update(src.read())
    folder = os.path.join(CACHE_ROOT, f"numba-checker-{h.hexdigest()[:16]}")

    def jit(f: _Fn) -> _Fn:
        return cast(_Fn, _in_folder(folder, f))

    return jit


def bound(template: Any, shared: bool = False, **fs: Any) -> Any:
    """template (a Python function) compiled with each of its globals named in fs bound to that compiled function,
    once per process; cached on disk where every function in fs is, or with `shared` (functions that call none of
    impl's libm: the float64 references) in the shared folder beside it."""
    key = (template, shared, *sorted(fs.items(), key=lambda kv: kv[0]))
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
    name = f"numba-sweep-{h.hexdigest()[:16]}"
    k = _BOUND[key] = _in_folder(os.path.join(CACHE_ROOT, name) if shared else numba_cache_dir(name), copy)
    return k
