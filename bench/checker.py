"""The sweep checker's own cost: nanoseconds per input on one core, measured with a library that costs nothing
(`answers`: the correctly rounded results, computed before the timing and looked up by the chunk they belong to),
so what is timed is the worker's chunk pass alone (bendtorch.reports.sweep.chunkpass.run_task: the reference, the
hard cases, the statistics pass). A few chunks spread over the positive patterns, each timed `repeats` times in this
process; the figure is the median over the repeats of the chunks' total time over their inputs: the process's CPU time
(a busy machine's waits left out), and the wall time beside it. With --lib, a built-in library is timed the same way
instead (its own cost included), and its function alone on the same inputs beside it (own_ns_per_input).

The chunks, evenly spread, are a sample of a full sweep's inputs, and their mean its cost an input where they are
many. With few, one band weighs too much: of 4 chunks one is the subnormals' (0.4% of a full sweep's inputs, a
quarter of those 4 chunks'), where the reference's float32 rounding costs most on an Intel core (tanh's 12.6 ns an
input there against 7.0-7.7 in the chunks beside it; Intel Xeon, family 6, model 167). The default, 32 chunks of
2^20 patterns, is 1/64 of the line. A function or library that is not there, or sizes out of range, is refused in
one line (exit code 2) before any work.

    python -m bendtorch.bench.checker [--functions exp,tanh,erf,dsilu] [--chunks 32] [--patterns 1048576]
                                      [--repeats 3] [--lib clib]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

ANSWERS: dict[tuple[int, int], Any] = {}   # (first bit pattern, size) of a chunk's inputs -> their correct results
LIBRARY = "answers"


def answers(x: Any) -> Any:
    """The library that costs nothing: the stored correct results of these inputs (registered by `prepare`)."""
    return ANSWERS[(int(x[:1].view(np.uint32)[0]), int(x.size))]


def chunk_starts(chunks: int, patterns: int) -> list[int]:
    """`chunks` starts of `patterns` consecutive positive patterns, evenly spread over [0, 2^31)."""
    step = (1 << 31) // chunks
    return [min(k * step, (1 << 31) - patterns) for k in range(chunks)]


def chunk_inputs(start: int, patterns: int) -> Any:
    """The float32 inputs a chunk pass hands a library: the positive patterns [start, start + patterns), then their
    negatives."""
    b = np.arange(start, start + patterns, dtype=np.uint32)
    return np.concatenate([b, b | np.uint32(0x80000000)]).view(np.float32)


def prepare(function: str, lo: int, hi: int) -> None:
    """Register the correct results of the patterns [lo, hi) and their negatives (the checker's own reference)."""
    from bendtorch.records.functions import FUNCTIONS
    from bendtorch.reports.sweep.chunkpass import reference

    bits = np.arange(lo, hi, dtype=np.uint32)
    ANSWERS[(lo, 2 * (hi - lo))] = reference(FUNCTIONS[function], bits).c32.copy()


def built_in(tool: str, lib_name: str, functions: list[str], also: tuple[str, ...] = ()) -> Any:
    """The built-in sweep library `lib_name`; ValueError, naming it (`tool` says whose refusal), where there is no
    such library (`also`: other names the tool takes, listed in the message) or it lacks one of `functions`."""
    from bendtorch.records.libraries import LIBRARIES

    if lib_name not in LIBRARIES:
        raise ValueError(f"{tool}: no built-in library {lib_name!r} (one of {', '.join([*also, *LIBRARIES])})")
    lib = LIBRARIES[lib_name]
    missing = [f for f in functions if f not in lib.functions]
    if missing:
        raise ValueError(f"{tool}: {lib_name} has no {', '.join(missing)}")
    return lib


def check(functions: list[str], lib_name: str, chunks: int, patterns: int, repeats: int) -> None:
    """ValueError, naming what is wrong, for a function or library that is not there (or a library of impl that this
    process's libm choice cannot run), or sizes out of range: before any work."""
    from bendtorch.records.functions import FUNCTIONS
    from bendtorch.reports.sweep.chunkpass import libm_mode

    unknown = [f for f in functions if f not in FUNCTIONS]
    if unknown:
        raise ValueError(f"checker: no sweep function {', '.join(map(repr, unknown))} (one of {', '.join(FUNCTIONS)})")
    if lib_name != LIBRARY:
        lib = built_in("checker", lib_name, functions, also=(LIBRARY,))
        if lib.libm is not None and libm_mode() != lib.libm:
            raise ValueError(f"checker: {lib_name} runs with BENDTORCH_LIBM={lib.libm} (this process has "
                             f"{libm_mode()})")
    if chunks < 1 or patterns < 1 or repeats < 1 or chunks * patterns > 1 << 31:
        raise ValueError(f"checker: --chunks {chunks} of --patterns {patterns} with --repeats {repeats}: each must be "
                         f"at least 1 and the chunks' patterns at most 2^31, the positive ones")


def measure(function: str, lib_name: str, chunks: int, patterns: int, repeats: int) -> dict[str, Any]:
    """ns per input of run_task on the chunks, per repeat, and their median."""
    from bendtorch.records.functions import FUNCTIONS
    from bendtorch.records.libraries import LIBRARIES, SweepLibrary
    from bendtorch.reports.sweep.chunkpass import round32_mp, run_task
    from bendtorch.reports.sweep.libraries import resolve_ref

    fn = FUNCTIONS[function]
    starts = chunk_starts(chunks, patterns)
    if lib_name == LIBRARY:
        lib = SweepLibrary(LIBRARY, "the correct results, looked up", {function: f"{__name__}:answers"})
        for lo, hi in [(s, s + patterns) for s in starts] + [(starts[0], starts[0] + 64)]:
            prepare(function, lo, hi)
    else:
        lib = LIBRARIES[lib_name]
    run_task((fn, (lib,), (starts[0], starts[0] + 64)))  # compiled before the timing
    round32_mp(resolve_ref(fn.mpmath), 0.75, 1.0)  # and mpmath's first call (once a worker, in a sweep)
    per, wall = [], []
    inputs = 2 * patterns * len(starts)
    for _ in range(repeats):
        t0, w0 = time.process_time(), time.perf_counter()
        for s in starts:
            run_task((fn, (lib,), (s, s + patterns)))
        per.append((time.process_time() - t0) / inputs * 1e9)
        wall.append((time.perf_counter() - w0) / inputs * 1e9)
    ANSWERS.clear()
    out = {"function": function, "library": lib_name, "ns_per_input": round(statistics.median(per), 2),
           "repeats": [round(p, 2) for p in per], "wall_ns_per_input": round(statistics.median(wall), 2),
           "inputs": inputs}
    if lib_name != LIBRARY:
        out["own_ns_per_input"] = own_cost(lib.functions[function], starts, patterns, repeats)
    return out


def own_cost(spec: str, starts: list[int], patterns: int, repeats: int) -> float:
    """The library's function alone on the same inputs (the chunks' positive patterns and their negatives, as a
    chunk pass hands them over): ns per input on one core, the median over the repeats. A column costs the checker
    plus this."""
    from bendtorch.reports.sweep.libraries import resolve

    f = resolve(spec)
    xs = [chunk_inputs(s, patterns) for s in starts]
    f(xs[0][:64].copy())
    per: list[float] = []
    for _ in range(repeats):
        t0 = time.process_time()
        for x in xs:
            f(x)
        per.append((time.process_time() - t0) / sum(x.size for x in xs) * 1e9)
    return round(statistics.median(per), 2)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bendtorch.bench.checker", description=__doc__.splitlines()[0])
    p.add_argument("--functions", default="exp,tanh,erf,dsilu")
    p.add_argument("--chunks", type=int, default=32)
    p.add_argument("--patterns", type=int, default=1 << 20, help="positive patterns per chunk")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--lib", default=LIBRARY, help=f"{LIBRARY} (costs nothing) or a built-in library's name")
    a = p.parse_args(argv)
    try:
        check(a.functions.split(","), a.lib, a.chunks, a.patterns, a.repeats)
    except ValueError as e:
        print(e, file=sys.stderr)
        raise SystemExit(2) from None
    from bendtorch.reports.sweep.engine import worker_init

    worker_init()  # one thread, as a sweep's worker
    for f in a.functions.split(","):
        print(json.dumps(measure(f, a.lib, a.chunks, a.patterns, a.repeats)), flush=True)


if __name__ == "__main__":
    main()
