"""The `proofs` family: each statement of laws/proofs.py, proved by z3 for every value within its bounds (main.bend
line 20: the seed's laws are checked by Bend's kernel for every size). One law per proof, generated from the
table laws.proofs.PROOFS; a law that does not hold prints z3's counterexample (its message, and the note of its row
in `bendtorch laws`). tests/test_proof_engine.py shows each proof failing on a broken function."""

from __future__ import annotations

from typing import Callable

from bendtorch.laws.proofs import PROOFS, UNBOUNDED, Proof, check
from bendtorch.laws.registry import COUNTEREXAMPLES, law


def _law_of(p: Proof) -> Callable[[], None]:
    def test() -> None:
        o = check(p)
        if not o.proved:  # the law table's note shows z3's counterexample (or why z3 gave up)
            COUNTEREXAMPLES[f"{__name__}::test_{p.name}"] = {"what": o.message(), "inputs": o.counterexample}
        assert o.proved, o.message()

    test.__name__ = f"test_{p.name}"
    test.__qualname__ = test.__name__
    test.__module__ = __name__
    test.__doc__ = f"{p.says}. Over {p.domain}; assumes {p.assumes}."
    holds = f"{'for every size' if p.domain == UNBOUNDED else 'for every input'}, over {p.domain}"
    return law("proofs", p.name, holds, strength="proved")(test)


for _p in PROOFS:
    globals()[f"test_{_p.name}"] = _law_of(_p)
