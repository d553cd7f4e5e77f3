"""Conformance targets: the libraries the conformance laws (bendtorch.laws.test_targets) are held against.

The operations a target has are `Target`'s (base.py); the built-in adapters are this package's other modules, one
per library, each described by its record in bendtorch.records.targets (RECORDS). A target is named by a spec,
resolved in this order:

1. a built-in name (a record's name: "impl", "torch", ...): its record, the adapter's maker loaded when the target
   is made;
2. a "module:attr" reference ("mypkg.target:make"), the attribute being a maker `make(device="cpu", **options) ->
   Target`, a Target subclass (made as `Cls(device=..., **options)`), a Target instance, or a TargetRecord;
3. the name of an entry point of the group `bendtorch.targets`, whose value is such a reference.

`resolve(spec)` gives a `Resolved` (SpecError, one line, for a spec that names nothing); `Resolved.make(device,
variant)` makes the target, or raises NotRun with the reason it cannot run here (its library is missing: the adapter
says so itself; no GPU)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from typing import Any

from bendtorch.records.targets import (PLAIN, RECORDS, SpecError, TargetRecord, Variant, classify, default_spec,
                                       order)
from bendtorch.targets.base import (F32, OPTS, NotApplicable, NotRun, Opt, Target, as_f32, impl_shape, require,
                                    weights)

__all__ = ["F32", "OPTS", "NotApplicable", "NotRun", "Opt", "PLAIN", "RECORDS", "Resolved", "SpecError", "Target",
           "TargetRecord", "Variant", "as_f32", "column", "default_spec", "impl_shape", "load_ref", "make_target",
           "order", "require", "resolve", "weights"]


def load_ref(ref: str) -> Any:
    """The object a "module:attr" reference names (attr may be dotted). SpecError when the module or the attribute
    does not exist; NotRun when the module exists but cannot be imported here (a library it needs is missing)."""
    mod_name, _, attr = ref.partition(":")
    try:
        found = importlib.util.find_spec(mod_name)
    except (ImportError, ValueError):  # a parent package that is missing, or not a package
        found = None
    if found is None:
        raise SpecError(f"target {ref}: no module named {mod_name!r}")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ImportError as e:
        raise NotRun(f"{mod_name} cannot be imported: {e}") from e
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"target {ref}: module {mod_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _summary(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def _record_of(name: str, ref: str, obj: Any) -> TargetRecord:
    """The record of what a reference named: a TargetRecord as it is, else one made from the maker, class or
    instance (its libraries and devices as the class declares them; a maker decides its devices itself)."""
    if isinstance(obj, TargetRecord):
        return obj
    if isinstance(obj, Target):
        return TargetRecord(name, ref, _summary(type(obj)), libraries=tuple(obj.libraries), devices=(obj.device,))
    if isinstance(obj, type) and issubclass(obj, Target):
        return TargetRecord(name, ref, _summary(obj), libraries=tuple(obj.libraries), devices=tuple(obj.devices))
    if isinstance(obj, type) or not callable(obj):
        raise SpecError(f"target {ref}: a {type(obj).__name__}, not a target (a maker make(device, **options), a "
                        f"Target subclass or instance, or a TargetRecord)")
    return TargetRecord(name, ref, _summary(obj), devices=None)


@dataclass(frozen=True)
class Resolved:
    """A target spec resolved: how it was found, the target's record, and what the reference named (None for a
    record whose maker is loaded when the target is made). `not_run`: the reason it cannot be made here, found while
    resolving (its module needs a library that is missing)."""

    spec: str
    how: str
    record: TargetRecord
    obj: Any = None
    not_run: str | None = None

    def make(self, device: str = "cpu", variant: Variant = PLAIN) -> Target:
        """The target on device with the variant's options; NotRun where it cannot run here, SpecError where the
        maker gives something that is not a Target."""
        if self.not_run is not None:
            raise NotRun(self.not_run)
        obj = self.obj if self.obj is not None else load_ref(self.record.maker)
        if isinstance(obj, Target):
            return obj
        options = dict(variant.options)
        try:
            inspect.signature(obj).bind(device=device, **options)
        except TypeError as e:
            raise SpecError(f"target {self.spec}: {self.record.maker} is not a maker make(device, **options): "
                            f"{e}") from None
        except ValueError:  # no signature to read (a builtin): the call says
            pass
        t = obj(device=device, **options)
        if not isinstance(t, Target):
            raise SpecError(f"target {self.spec}: {self.record.maker} gave a {type(t).__name__}, not a Target")
        return t

    def libraries(self, target: Target | None = None) -> list[str]:
        """The libraries measured: the record's, then those the made target declares."""
        return list(dict.fromkeys([*self.record.libraries, *(target.libraries if target is not None else ())]))


def resolve(spec: str | None = None) -> Resolved:
    """The target a spec names (default_spec() when None): a built-in name, a "module:attr" reference, or an entry
    point of the group bendtorch.targets. SpecError when it names nothing a target can be made from."""
    spec = default_spec() if spec is None else spec
    named = classify(spec)
    if named.record is not None:
        return Resolved(spec, named.how, named.record)
    assert named.ref is not None
    try:
        obj = load_ref(named.ref)
    except NotRun as e:
        return Resolved(spec, named.how, TargetRecord(named.name, named.ref, "", devices=None), not_run=str(e))
    rec = _record_of(named.name, named.ref, obj)
    return Resolved(spec, named.how, rec, obj=None if isinstance(obj, TargetRecord) else obj)


def column(res: Resolved, device: str = "cpu", variant: Variant = PLAIN) -> tuple[Target | None, dict[str, Any]]:
    """The target of one column of the law table, made, and its description: {"target": label, "versions": {...}}
    (with "variant" where it has one), or the target None and {"target": label, "not_run": reason}."""
    d: dict[str, Any] = {"target": res.record.label(device, variant)}
    if variant is not PLAIN:
        d["variant"] = variant.name
    try:
        t = res.make(device, variant)
    except NotRun as e:
        return None, {**d, "not_run": str(e)}
    return t, {**d, "versions": t.versions()}


def make_target(spec: str = "impl", device: str = "cpu", variant: str | None = None) -> Target:
    """The target a spec names, on device, with the named variant (default: the first that applies); NotRun where
    it cannot run here, SpecError for a spec, device or variant that does not exist."""
    res = resolve(spec)
    return res.make(device, res.record.check(device, variant)[0])
