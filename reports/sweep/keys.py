"""The key of a library's chunks: everything that could change a chunk's numbers, so that a chunk made under another
key is recomputed, never reused, and a sweep JSON names the key each column was made under.

A key holds the checker's version (CHECKER_VERSION: the chunk pass and its arrays), the function (its record's
fields and the source of the code it names: the float64 reference with the helpers and constants it reads, the
mpmath formula, the piece classifier), and the library: its record's fields, the source of the modules its strings
name (and of the modules its record lists), impl's source digest for an impl library, the version, build and
dispatch level of the distribution it measures (bendtorch.records.machine.probe), and, for a library whose bits can
move with the processor (every library but impl's own functions), the CPU (model, vendor, numbers, flags).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import types
from typing import Any, Iterator

from bendtorch.records.functions import SweepFunction
from bendtorch.records.libraries import SweepLibrary

CHECKER_VERSION = 2   # the chunk pass, its accumulators and the chunk files' seal: bump when any of them changes
CPU_FIELDS = ("model", "vendor", "family", "model_number", "arch", "flags")


def canonical_digest(doc: Any) -> str:
    """sha256 of a JSON value in canonical form (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _names(c)


def code_digest(*objs: Any) -> str:
    """sha256 of the source of the functions given (a numba function's Python function) and, in turn, of the
    functions and constants of their own modules that they read."""
    h = hashlib.sha256()
    seen: set[int] = set()

    def visit(obj: Any) -> None:
        fn = getattr(obj, "py_func", obj)
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            return
        seen.add(id(fn))
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            src = repr(fn.__code__.co_code)
        h.update(f"{fn.__module__}:{fn.__qualname__}\n{src}\n".encode())
        for name in sorted(set(_names(fn.__code__))):
            v = fn.__globals__.get(name)
            if isinstance(v, (bool, int, float, str)) or type(v).__module__ == "numpy" and hasattr(v, "dtype"):
                h.update(f"{name}={v!r}\n".encode())
            elif getattr(getattr(v, "py_func", v), "__module__", None) == fn.__module__:
                visit(v)

    for o in objs:
        visit(o)
    return h.hexdigest()


def module_digest(module: str) -> str:
    """sha256 of a module's source file (its name alone where it has none: a built-in or compiled module)."""
    spec = importlib.util.find_spec(module)
    origin = getattr(spec, "origin", None)
    h = hashlib.sha256(module.encode())
    if origin and origin.endswith(".py"):
        with open(origin, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def function_key(fn: SweepFunction) -> dict[str, Any]:
    """The function's part of a key."""
    from bendtorch.reports.sweep.libraries import resolve_ref

    code = [resolve_ref(fn.reference), resolve_ref(fn.mpmath)]
    if fn.piece_of:
        code.append(resolve_ref(fn.piece_of))
    return {"name": fn.name, "record": fn.fields_digest(), "code": code_digest(*code)}


def library_key(lib: SweepLibrary, function: str, machine: dict[str, Any]) -> dict[str, Any]:
    """The library's part of a key, for one function, on the machine record `machine` (records.machine.machine of
    the measured distributions)."""
    from bendtorch.reports.sweep.libraries import LOCAL, resolve

    spec = lib.functions[function]
    modules = sorted({spec.partition(":")[0], *lib.code} - {""})
    out: dict[str, Any] = {"name": lib.name, "record": lib.fields_digest(), "function": spec,
                           "code": {m: module_digest(m) for m in modules if not m.startswith("<")}}
    if spec.startswith(LOCAL):  # a function given as an object: its own source
        out["code"]["<local>"] = code_digest(resolve(spec))
    if lib.impl:
        out["impl_digest"] = machine.get("impl_digest")
    if lib.libm:
        out["libm"] = lib.libm
    if lib.distribution:
        facts = (machine.get("libraries") or {}).get(lib.distribution) or {}
        out["distribution"] = {"name": lib.distribution,
                               **{k: facts.get(k) for k in ("version", "build", "dispatch", "error") if k in facts}}
    if not lib.everywhere:
        c = machine.get("cpu") or {}
        out["cpu"] = {k: c.get(k) for k in CPU_FIELDS}
    return out


def chunk_key(fn: SweepFunction, lib: SweepLibrary, machine: dict[str, Any]) -> dict[str, Any]:
    """The whole key of `lib`'s chunks of `fn` here, with its digest under "sha256"."""
    key = {"checker": CHECKER_VERSION, "function": function_key(fn), "library": library_key(lib, fn.name, machine)}
    return {"sha256": canonical_digest(key), **key}
