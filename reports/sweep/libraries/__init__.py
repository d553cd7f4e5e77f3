"""The sweep's libraries: finding a library by name (a built-in record of bendtorch.records.libraries, an entry point
of the group `bendtorch.sweep_libraries`, or NAME=module:attr given on the command line or to `check`) and resolving
a record's "module:attr" strings into functions float32 array -> float32 array.

`resolve` runs inside every worker (the process pool's and Dask's alike): a worker imports the module by name, so a
library from outside the project works there as long as its module imports in the worker. A function given as a
Python object that cannot be found again by its module and name (a lambda, a notebook's function) is a local
library: it runs in the calling process only. The built-in adapters are the modules beside this one, one per
family: impl (impl, impl_clib, impl_raw, the exp_array twin), pytorch (torch, torch_scalar, torch_aten and the ports
of PyTorch's erf), numpy_ufuncs, c_library, mlx, onnxruntime, tensorflow.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import itertools
from dataclasses import replace
from typing import Any, Callable, Mapping

from bendtorch.records import libraries as R
from bendtorch.records.libraries import SweepLibrary

Fn = Callable[[Any], Any]
LOCAL = "<local>:"              # the prefix of a local library's function strings
_LOCAL_FNS: dict[str, Fn] = {}  # this process's local functions, by their string
_RESOLVED: dict[str, Fn] = {}   # each string resolved once per process
_COUNT = itertools.count()


class LibraryError(ValueError):
    """A library that cannot be found or used: one line naming it."""


def resolve_ref(spec: str) -> Any:
    """The object a "module:attr" string names (attr a dotted path through attributes and mapping keys)."""
    module, _, path = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise LibraryError(f"{spec}: cannot import {module} ({type(e).__name__}: {e})") from None
    for part in path.split("."):
        try:
            obj = obj[part] if isinstance(obj, Mapping) else getattr(obj, part)
        except (KeyError, AttributeError):
            raise LibraryError(f"{spec}: {module} has no {path} (no {part!r})") from None
    return obj


def resolve(spec: str) -> Fn:
    """The function float32 array -> float32 array a library record's string names, resolved once per process."""
    fn = _RESOLVED.get(spec)
    if fn is None:
        fn = _LOCAL_FNS[spec] if spec.startswith(LOCAL) else resolve_ref(spec)
        if not callable(fn):
            raise LibraryError(f"{spec}: not callable (a {type(fn).__name__})")
        _RESOLVED[spec] = fn
    return fn


def is_local(lib: SweepLibrary) -> bool:
    """A library that runs in this process only (a function given as an object)."""
    return any(s.startswith(LOCAL) for s in lib.functions.values())


def _from_object(name: str, obj: Any, ref: str | None, function: str | None) -> SweepLibrary:
    """A library record from what a spec or an entry point names: a SweepLibrary (renamed), a callable (the one
    function `function`), or a mapping or object providing functions by their names."""
    if isinstance(obj, SweepLibrary):
        return obj if obj.name == name else replace(obj, name=name)
    module = ref.partition(":")[0] if ref else getattr(obj, "__module__", None)
    code = (module,) if module else ()
    dist = _distribution(module)
    note = f"{ref or name} (a library from outside bendtorch)"
    if callable(obj) and not isinstance(obj, type):
        if function is None:
            raise LibraryError(f"{name}: a single function; name the function it computes")
        return SweepLibrary(name, note, {function: ref or _local(obj)}, distribution=dist, code=code)
    funcs: dict[str, str] = {}
    for f in _function_names():
        got = obj.get(f) if isinstance(obj, Mapping) else getattr(obj, f, None)
        if isinstance(got, str):
            funcs[f] = got
        elif callable(got):
            funcs[f] = f"{ref}.{f}" if ref else _local(got)
    if not funcs:
        raise LibraryError(f"{name}: {ref or type(obj).__name__} is neither a function nor a library (no function "
                           f"named {', '.join(_function_names()[:3])}, ...)")
    return SweepLibrary(name, note, funcs, distribution=dist, code=code)


def _function_names() -> tuple[str, ...]:
    from bendtorch.records.functions import NAMES
    return NAMES


def _local(fn: Fn) -> str:
    """A function's string: "module:qualname" where that finds it again in another process, else a local one."""
    module, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if module and module != "__main__" and "<" not in qual:
        try:
            if resolve_ref(f"{module}:{qual}") is fn:
                return f"{module}:{qual}"
        except LibraryError:
            pass
    spec = f"{LOCAL}{next(_COUNT)}"
    _LOCAL_FNS[spec] = fn
    return spec


def _distribution(module: str | None) -> str | None:
    """The installed distribution a module comes from (its version enters the chunks' key), if any."""
    if not module:
        return None
    top = module.split(".")[0]
    dists = importlib.metadata.packages_distributions().get(top) or []
    return dists[0] if dists else None


def _factory(obj: Any) -> bool:
    """A callable taking no argument (it makes the library), rather than a function of a float32 array."""
    if not callable(obj) or isinstance(obj, (type, SweepLibrary)) or _provides_any(obj):
        return False
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def entry_point(name: str, function: str | None = None) -> SweepLibrary | None:
    """The library an installed package publishes under `name` (group bendtorch.sweep_libraries), or None. The
    entry point's object is a SweepLibrary, a mapping or object providing functions by name, a function float32
    array -> float32 array (of the function being swept), or a callable of no argument returning one of those."""
    for ep in importlib.metadata.entry_points(group=R.GROUP, name=name):
        try:
            obj = ep.load()
            if _factory(obj):
                obj = obj()
        except Exception as e:  # noqa: BLE001  (a broken plug-in is one line, not a traceback)
            raise LibraryError(f"{name}: entry point {ep.value} does not load ({type(e).__name__}: {e})") from None
        return _from_object(name, obj, ep.value, function)
    return None


def _provides_any(obj: Any) -> bool:
    return any(callable(getattr(obj, f, None)) for f in _function_names())


def library(arg: str | SweepLibrary | Fn, function: str | None = None) -> SweepLibrary:
    """The library an argument names: a record; a built-in name; NAME=module:attr; an entry point's name; a
    "module:attr" string (named by its attr); or a callable (for `function`). LibraryError when it names none."""
    if isinstance(arg, SweepLibrary):
        return arg
    if not isinstance(arg, str):
        if not callable(arg):
            raise LibraryError(f"{arg!r}: not a library (a name, 'module:attr', or a function)")
        name = getattr(arg, "__name__", "function")
        return _from_object(name if name.isidentifier() else "function", arg, None, function)
    if ":" in arg and "=" not in arg:
        arg = f"{arg.rpartition(':')[2].split('.')[-1]}={arg}"
    try:
        name, ref = R.parse_lib(arg)
    except R.SpecError as e:
        raise LibraryError(str(e).removeprefix("--lib ")) from None
    if ref is None:
        if name in R.LIBRARIES:
            return R.LIBRARIES[name]
        got = entry_point(name, function)
        if got is None:
            known = ", ".join(R.ORDER + R.entry_point_names())
            raise LibraryError(f"{name}: no such library (the libraries are {known}; or NAME=module:attr)")
        return got
    return _from_object(name, resolve_ref(ref), ref, function)


def check_provides(lib: SweepLibrary, function: str) -> None:
    """LibraryError unless `lib` provides `function`; a library from outside is resolved here, before any work, and
    called on a few inputs: it must return a float32 array of their shape (the built-in records are the tests')."""
    import numpy as np

    spec = lib.functions.get(function)
    if spec is None:
        have = ", ".join(lib.functions) or "none"
        raise LibraryError(f"{lib.name}: provides no {function} (it provides {have})")
    if lib.name in R.LIBRARIES and R.LIBRARIES[lib.name] == lib:
        return
    fn = resolve(spec)
    x = np.array([0.0, -0.0, 0.5, -1.5, 3.0, 1e-40, np.inf, np.nan] * 4, dtype=np.float32)
    try:
        with np.errstate(all="ignore"):
            y = fn(x.copy())
    except Exception as e:  # noqa: BLE001  (a library that cannot run is one line)
        raise LibraryError(f"{lib.name}: {spec} failed on a float32 array ({type(e).__name__}: {e})") from None
    if not isinstance(y, np.ndarray) or y.dtype != np.float32 or y.shape != x.shape:
        got = f"a {y.dtype} array of shape {y.shape}" if isinstance(y, np.ndarray) else f"a {type(y).__name__}"
        raise LibraryError(f"{lib.name}: {spec} gave {got} for a float32 array of shape {x.shape} (a float32 "
                           f"array of the same shape is wanted)")
