"""The sweep functions' records: one `SweepFunction` per function the exhaustive checker (`bendtorch sweep FUNCTION`,
bendtorch.reports.sweep) measures, in the manner of the two-line header of a function in CORE-MATH's
check_exhaustive.

A record names its code by "module:attr" strings, resolved lazily above this layer (this module imports nothing of
the project but the op records, whose activations' atlas functions it adds): `reference`, a compiled float64 function x -> (value, scale) whose error is at most
`error_bound * scale` (bendtorch.oracle.functions holds every one); `mpmath`, the same function in mpmath, which
decides the inputs whose float64 value lies within that bound of a float32 rounding boundary (the hard cases);
`piece_of`, a compiled classifier of x into `pieces` for figures per piece. Which libraries provide a function is
stated by the libraries (bendtorch.records.libraries, `providers(name)`), not here.

`symmetry` ("odd", "even" or "none"): the checker computes the reference for x >= 0 and mirrors it, and counts the
bit differences between a library's f(-x) and its mirrored f(x). `twins` names, for a library, a second
implementation (itself a library record) that must give its bits: the sweep counts the inputs where they differ.
`claims` states, for a library, published figures to confirm or refute: max_ulp_at_most, correctly_rounded_fraction
((value, tolerance)), within_one_ulp_fraction, nan_in_nan_out, with their source. `half_x_ties` marks a function
f(x) = (x/2)(1 + g(x)) with g odd, of the sign of x and |g(x)| <= 2|x| (SiLU, both GELUs): its ties at x/2 are
decided by a proof from that form (bendtorch.reports.sweep.kernels.HALF_X_RULE) instead of mpmath.

Adding a function: one record here, its reference and mpmath formula in oracle/functions.py, and the function in
the record of each library that provides it (CONTRIBUTING.md, "Adding a function to the atlas"). An activation's two
functions need no record here, nor a place in impl's library record: its op record gives both.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping

Symmetry = Literal["none", "odd", "even"]
ERROR_BOUND = 2.0 ** -46   # the float64 references' error allowed for, relative to their scale
_O = "bendtorch.oracle.functions"


@dataclass(frozen=True)
class SweepFunction:
    """One function of one float32 argument, checked on every float32 input against its correctly rounded value."""

    name: str                                   # the command line's FUNCTION: "exp"
    title: str                                  # the atlas's words: "exp(x)"
    reference: str                              # "bendtorch.oracle.functions:ref_exp": x -> (value, scale)
    mpmath: str                                 # "bendtorch.oracle.functions:mp_exp": the hard cases' formula
    domain: str = "every float32"               # where the function is a number (the checker runs every input)
    error_bound: float = ERROR_BOUND            # |reference - f(x)| <= error_bound * scale
    symmetry: Symmetry = "none"
    pieces: tuple[str, ...] = ("all",)
    piece_of: str | None = None                 # "module:attr" of a compiled x -> piece index
    twins: Mapping[str, str] = field(default_factory=dict)
    claims: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    half_x_ties: bool = False

    def fields_digest(self) -> str:
        """sha256 of the record's fields in canonical JSON (the part of a chunk's key the record gives; the code
        its strings name is digested where it is resolved)."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"), default=list)
        return hashlib.sha256(text.encode()).hexdigest()


ERF_PIECES = ("[0, 0.84375)", "[0.84375, 1.25)", "[1.25, 1.75)", "[1.75, 2.25)", "[2.25, 2.75)", "[2.75, 3.25)",
              "[3.25, 3.92)", "[3.92, inf]")

# the seed's claims for its erf (main.bend lines 1118-1120)
ERF_CLAIMS = {"impl": {"source": "main.bend lines 1118-1120", "max_ulp_at_most": 0.93,
                       "correctly_rounded_fraction": (0.971, 0.0005), "within_one_ulp_fraction": 1.0,
                       "nan_in_nan_out": True}}


def _f(name: str, title: str, **kw: Any) -> SweepFunction:
    return SweepFunction(name, title, f"{_O}:ref_{name}", f"{_O}:mp_{name}", **kw)


_POS = "x >= 0 (NaN below 0)"

FUNCTIONS: dict[str, SweepFunction] = {f.name: f for f in [
    _f("exp", "exp(x)", twins={"impl": "impl_exp_array"}),
    _f("log", "log(x)", domain="x >= 0 (log 0 = -inf, NaN below 0)"),
    _f("tanh", "tanh(x)", symmetry="odd"),
    _f("sin", "sin(x) (RoPE)", symmetry="odd"),
    _f("cos", "cos(x) (RoPE)", symmetry="even"),
    _f("pow", "10000^x (RoPE's table: powf(base, 2c/d))"),
    _f("erf", "erf(x)", symmetry="odd", pieces=ERF_PIECES, piece_of="bendtorch.impl.kernels.erf:erf_piece32",
       claims=ERF_CLAIMS),
    _f("sqrt", "sqrt(x)", domain=_POS),
    _f("rsqrt", "1/sqrt(x) (RMSNorm: 1 / sqrt(v))", domain=_POS),
    _f("sigmoid", "sigmoid(x) = 1/(1 + exp(-x))"),
    _f("silu", "SiLU(x) = x sigmoid(x)", half_x_ties=True),
    _f("gelu_tanh", "GELU, tanh form", half_x_ties=True),
    _f("gelu_erf", "GELU, erf form x Phi(x)", twins={"torch_aten": "torch_gelu_erf_port"}, half_x_ties=True),
    _f("dsigmoid", "sigmoid'(x)", symmetry="even"),
    _f("dtanh", "tanh'(x)", symmetry="even"),
    _f("dsilu", "SiLU'(x)"),
    _f("dgelu_tanh", "GELU'(x), tanh form"),
    _f("dgelu_erf", "GELU'(x), erf form"),
]}


def _activation_functions() -> list[SweepFunction]:
    """The atlas functions of the activations' op records (records.ops: `Act.sweep`, value and derivative at dy = 1)
    that have no entry above: the plain entry (every float32 input, no symmetry, the references `ref_NAME` and
    `mp_NAME` in oracle/functions.py). So a new activation reaches the atlas from its op record; an entry above
    refines one (its title, domain, symmetry, twins, half-x ties) and keeps its digest."""
    from bendtorch.records.ops import ACTIVATIONS
    out = []
    for op in ACTIVATIONS:
        if op.act is not None and op.act.sweep is not None:
            value, derivative = op.act.sweep
            out += [_f(value, f"{op.name}(x)"), _f(derivative, f"{op.name}'(x)")]
    return [f for f in out if f.name not in FUNCTIONS]


FUNCTIONS.update({f.name: f for f in _activation_functions()})

NAMES = tuple(FUNCTIONS)
