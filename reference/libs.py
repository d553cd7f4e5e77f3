"""Where the constructors live: one name (`Linear`, `CrossEntropy`, `Seq`, ...) resolved in impl or in oracle, so an
op is described once and built in either library (DESIGN.md: identical names and arguments in `impl` and `oracle`).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

# the modules that may define a name, in the order they are searched
_IMPL_MODULES = ("impl", "bendtorch.impl.layers", "impl.layers.linear", "impl.layers.embedding", "impl.layers.activations",
                 "impl.layers.dropout", "impl.layers.rows", "bendtorch.impl.losses", "bendtorch.impl.combinators")
_ORACLE_MODULES = ("oracle", "bendtorch.oracle.layers", "oracle.layers.linear", "oracle.layers.embedding",
                   "oracle.layers.activations", "oracle.layers.dropout", "oracle.layers.rows", "bendtorch.oracle.losses",
                   "bendtorch.oracle.combinators", "bendtorch.oracle.activations", "bendtorch.oracle.linear", "bendtorch.oracle.rows", "bendtorch.oracle.dropout",
                   "bendtorch.oracle.embedding", "bendtorch.impl.combinators")


class Missing(LookupError):
    """A constructor not (yet) written in that library."""


class Lib:
    """One library's constructors by name: `lib.Linear(n, i, o)`."""

    def __init__(self, which: str) -> None:
        self.which = which
        self.dtype: Any = np.float32 if which == "impl" else np.float64
        self._mods = _IMPL_MODULES if which == "impl" else _ORACLE_MODULES
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._cache:
            return self._cache[name]
        for m in self._mods:
            try:
                mod = importlib.import_module(m)
            except ImportError:
                continue
            v = getattr(mod, name, None)
            if v is not None and callable(v):
                self._cache[name] = v
                return v
        raise Missing(f"{self.which} has no {name} yet (searched {', '.join(self._mods)})")

    def has(self, name: str) -> bool:
        try:
            getattr(self, name)
            return True
        except Missing:
            return False


IMPL = Lib("impl")
ORACLE = Lib("oracle")
