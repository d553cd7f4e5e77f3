"""The conformance targets' records, and how a target is named on the command line.

A target is a library held to the conformance laws (bendtorch.laws.test_targets) through an adapter
(bendtorch.targets.*). Each built-in target is one `TargetRecord`, written in its adapter's module as `RECORD` (so a
new built-in target is one file) and gathered here into RECORDS from the modules' text, read by every command, test
and report:
its name, the adapter's maker as a "module:attr" string (resolved lazily, above this layer), a note, the libraries it
measures (the names `records.machine.probe` knows, so a laws document's machine record carries their version, build
and dispatch level), the pip extra that installs them, the devices it runs on, and its variants: named option sets
of the maker that become separate columns of the law table (PyTorch CUDA's TF32 matmuls off and on; a compiler's
static and dynamic shapes, a runtime's graph optimisation on and off).

`classify(spec)` says what a target spec names, in this order: a built-in name, a "module:attr" string, an entry
point of the group `bendtorch.targets` (importlib.metadata). It imports nothing; bendtorch.targets.resolve loads
what it names. A spec that names nothing is a `SpecError`: one line, which the command line shows as a usage error.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

GROUP = "bendtorch.targets"   # the entry-point group a package publishes its targets in
ENV = "BENDTORCH_TARGET"      # the target spec when none is given on the command line
DEFAULT = "impl"

_REF = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


class SpecError(ValueError):
    """A target spec that names no target (unknown name, no such module or attribute, not a target, a device or
    variant the target does not have): one line."""


@dataclass(frozen=True)
class Variant:
    """A named set of the maker's keyword options, run as a column of its own. `devices` lists the devices it applies
    to (empty: every device of the target)."""

    name: str                                  # what --variant takes: "tf32-on"
    label: str                                 # the column's qualifier: "TF32 on"
    options: Mapping[str, Any] = field(default_factory=dict)
    devices: tuple[str, ...] = ()


PLAIN = Variant("default", "")   # the one column of a target without variants


@dataclass(frozen=True)
class TargetRecord:
    """One conformance target. `own`: the harness's own library, held to every law suite of bendtorch.laws (not the
    conformance laws alone), a failing law being a bug (exit 1) rather than a finding about another library.
    `devices` None: whatever the maker accepts (a target from outside the harness decides itself)."""

    name: str
    maker: str                                 # "bendtorch.targets.torch:make"
    note: str
    libraries: tuple[str, ...] = ()
    extra: str | None = None                   # the pip extra installing the libraries; None: core dependencies
    devices: tuple[str, ...] | None = ("cpu",)
    variants: tuple[Variant, ...] = ()
    own: bool = False
    # the most examples hypothesis draws for each law against this target (the profile's count where that is
    # fewer; a law scaled down divides this one), its failures not shrunk: for a target whose every new input shape
    # costs a compilation of seconds, so that its ci profile stays near the time of the others'. None: the
    # profile's count, shrinking as usual
    max_examples: int | None = None
    rank: int = 100                            # where its column goes among the built-ins (lowest first)

    def variants_on(self, device: str) -> tuple[Variant, ...]:
        """The variants that apply on device, in the record's order; PLAIN where none does."""
        vs = tuple(v for v in self.variants if not v.devices or device in v.devices)
        return vs or (PLAIN,)

    def label(self, device: str = "cpu", variant: Variant = PLAIN) -> str:
        """The column's name: "impl", "jax", "torch cuda (TF32 off)"."""
        base = self.name if device == "cpu" else f"{self.name} {device}"
        return f"{base} ({variant.label})" if variant.label else base

    def install_hint(self) -> str:
        """The pip command installing the target's libraries."""
        return f"pip install 'bendtorch[{self.extra}]'" if self.extra else "pip install bendtorch"

    def check(self, device: str, variant: str | None = None) -> tuple[Variant, ...]:
        """The variants to run on device (the one named, or all that apply); SpecError for a device or a variant
        the target does not have."""
        if self.devices is not None and device not in self.devices:
            raise SpecError(f"target {self.name} runs on {', '.join(self.devices)}, not {device}")
        vs = self.variants_on(device)
        if variant is None:
            return vs
        hit = tuple(v for v in vs if v.name == variant)
        if not hit:
            names = ", ".join(v.name for v in vs)
            raise SpecError(f"target {self.name} on {device} has no variant {variant!r} (its variants: {names})")
        return hit


def _literal(node: ast.expr, where: str) -> Any:
    """The value of a record's expression: calls of TargetRecord and Variant with literal arguments (strings, numbers,
    booleans, None, tuples, dicts; adjacent strings and `+` of them), nothing else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _MAKERS:
        return _MAKERS[node.func.id](*(_literal(a, where) for a in node.args),
                                     **{str(k.arg): _literal(k.value, where) for k in node.keywords})
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, where) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {_literal(k, where): _literal(v, where) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left, where) + _literal(node.right, where)
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"{where}, line {node.lineno}: a target's RECORD holds literals, TargetRecord and Variant "
                         f"only") from None


def built_ins(folders: Iterable[str | Path] | None = None) -> dict[str, TargetRecord]:
    """The built-in targets' records, in the order of their rank: each adapter module of bendtorch.targets (or of
    `folders`) states its own (`RECORD = TargetRecord(...)`), read here from the module's text, never imported (an
    adapter imports its library, which may be missing, and the command line's help lists the names)."""
    if folders is None:
        spec = importlib.util.find_spec("bendtorch.targets")
        assert spec is not None and spec.submodule_search_locations, "bendtorch.targets is a package"
        folders = list(spec.submodule_search_locations)
    found = []
    for folder in folders:
        for path in sorted(Path(folder).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            m = _RECORD.search(text)
            if m is None:
                continue
            # the statement alone (up to the blank line after it): parsing the whole module would cost more than
            # the command line's help
            end = text.find("\n\n", m.start())
            stmt = ast.parse(text[m.start():end if end >= 0 else len(text)], str(path)).body[0]
            assert isinstance(stmt, ast.Assign), f"{path.name}: RECORD = TargetRecord(...)"
            found.append(_literal(stmt.value, path.name))
    return {r.name: r for r in sorted(found, key=lambda r: (r.rank, r.name))}


_MAKERS: dict[str, Any] = {"TargetRecord": TargetRecord, "Variant": Variant}
_RECORD = re.compile(r"^RECORD = TargetRecord\(", re.M)
RECORDS: dict[str, TargetRecord] = built_ins()


def order(name: str, device: str = "cpu") -> tuple[int, int]:
    """Where a target's column goes: the built-ins in RECORDS' order, then any other; each target's devices in
    its record's order."""
    names = list(RECORDS)
    rec = RECORDS.get(name)
    devs = list(rec.devices or ()) if rec else []
    return (names.index(name) if rec else len(names), devs.index(device) if device in devs else len(devs))


def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed targets of other packages: entry points of the group GROUP, by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=GROUP)}


def default_spec() -> str:
    """The spec used when none is given: $BENDTORCH_TARGET, else impl."""
    return os.environ.get(ENV) or DEFAULT


@dataclass(frozen=True)
class Named:
    """What a spec names: a built-in record, or a "module:attr" reference (given, or an entry point's value)."""

    how: Literal["built-in", "module:attr", "entry point"]
    name: str                                  # the column's name: the record's, the spec's, the entry point's
    record: TargetRecord | None = None
    ref: str | None = None


def classify(spec: str) -> Named:
    """A built-in name, then a "module:attr" string, then an entry point of GROUP; SpecError otherwise."""
    spec = spec.strip()
    if spec in RECORDS:
        return Named("built-in", spec, record=RECORDS[spec])
    if ":" in spec:
        if not _REF.match(spec):
            raise SpecError(f"target {spec!r}: not a module:attr reference (pkg.mod:make)")
        return Named("module:attr", spec, ref=spec)
    eps = entry_points()
    if spec in eps:
        return Named("entry point", spec, ref=eps[spec].value)
    known = ", ".join(RECORDS) + (f"; installed: {', '.join(sorted(eps))}" if eps else "")
    raise SpecError(f"unknown target {spec!r}: not a built-in target ({known}), not a module:attr reference, and no "
                    f"entry point {spec!r} in the group {GROUP}")
