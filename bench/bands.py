"""A library's cost by band of the float32 line: nanoseconds per input on one core of each of its sweep functions on
`patterns` consecutive positive bit patterns and their negatives, at each of a few starts from the subnormals to the
large numbers (the library's call alone, no checker). Where a row jumps by ten times or more in one band, some
operation there is slow on this CPU: on an Intel core, an operation whose operand or result is subnormal goes through
a microcode assist (tens to hundreds of cycles), while an AMD core takes none; the bands near 1e-22 are where x*x is
subnormal, those near 1e-36 and 0 where x itself or x^3 is.

    python -m bendtorch.bench.bands [--lib impl] [--functions all] [--patterns 262144] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

import numpy as np

# the bands' first positive patterns: 0 (subnormals), x near 1.5e-36, 2.5e-29, 4.2e-22, 2.8e-17, 1.8e-12, 1.2e-7,
# 0.0078 and 510
STARTS = (0x00000000, 0x04000000, 0x10000000, 0x1C000000, 0x24000000, 0x2C000000, 0x34000000, 0x3C000000,
          0x44000000)


def bands(lib_name: str, functions: Sequence[str] | None = None, patterns: int = 1 << 18,
          repeats: int = 3) -> dict[str, Any]:
    """{"library", "starts" (each band's first input), "ns_per_input": {function: [ns per band]}}: the median over
    `repeats` of the CPU time of one call on the band's inputs (bench.checker.own_cost: the inputs a chunk pass hands
    the library), after a call that compiles and imports. ValueError, before any work, for a library or function
    that is not there."""
    from bendtorch.bench.checker import built_in, own_cost
    from bendtorch.reports.sweep.engine import worker_init

    lib = built_in("bands", lib_name, list(functions or ()))
    names = list(functions) if functions else list(lib.functions)
    worker_init()  # one thread, as a sweep's worker
    # a band's figure is the checker's own-cost measure on one chunk: the library's call on the band's inputs
    out = {name: [own_cost(lib.functions[name], [s], patterns, repeats) for s in STARTS] for name in names}
    return {"library": lib_name, "starts": [float(np.uint32(s).view(np.float32)) for s in STARTS],
            "patterns": patterns, "ns_per_input": out}


def table(res: dict[str, Any]) -> str:
    """The result as rows of text: a function a row, a band a column."""
    head = "function    " + " ".join(f"{s:>9.2g}" for s in res["starts"])
    rows = [f"{f:11s} " + " ".join(f"{v:9.1f}" for v in vs) for f, vs in res["ns_per_input"].items()]
    return "\n".join([f"{res['library']}: ns per input, one core, by band (first |x|)", head, *rows])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bendtorch.bench.bands", description=__doc__.splitlines()[0])
    p.add_argument("--lib", default="impl", help="a built-in sweep library (default impl)")
    p.add_argument("--functions", default="all", help="comma-separated, or all (default)")
    p.add_argument("--patterns", type=int, default=1 << 18, help="positive patterns a band")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None, help="also write the result here, with the machine record")
    a = p.parse_args(argv)
    try:
        res = bands(a.lib, None if a.functions == "all" else a.functions.split(","), a.patterns, a.repeats)
    except ValueError as e:
        print(e, file=sys.stderr)
        raise SystemExit(2) from None
    print(table(res))
    if a.json:
        from pathlib import Path

        from bendtorch.records.durable import write_json
        from bendtorch.records.machine import machine

        write_json(Path(a.json), {**res, "machine": machine()})


if __name__ == "__main__":
    main()
