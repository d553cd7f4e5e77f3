"""The full atlas's cost, projected from a spread sample: every sweep function with every library that provides it
and can run here, swept in a full sweep's tasks (the same chunk pass; a chunk and a group of libraries sharing one
reference, engine.lib_groups) on `chunks` runs of `patterns` consecutive positive bit patterns spread evenly over
[0, 2^31) and their negatives (bench/checker.py's spread: the smallest, the subnormals, every binade's
neighbourhood, the infinities and the NaNs at the top).

The tasks run in one process a group (a thread each, as a sweep's workers), each process first running a small
task that compiles its kernels and imports its library (a full sweep pays that once a worker; scaled up with a few
chunks it would swamp the figure). Each column's pass time (the seconds its chunk passes record: its statistics
pass, its function's calls and its share of the reference) is scaled by 2^31 over the patterns swept; a function's
projected wall time on W workers is the sum over its columns over W (a full sweep's thousands of chunks keep every
worker busy), plus the sampled run's fixed cost (its wall time less its passes: the warm-ups, the processes'
start) once. The plots and the chunk files are left out. A sample, not the run: a region's cost moves with the
input (sin's long reductions, the hard cases), so the projection is as good as the spread; `--validate
FUNCTION:LIB` also sweeps that one column over every input (its chunks in a temporary folder) and prints both;
`--run OUT` runs the atlas itself after the projection (`bendtorch sweep F --out OUT --no-plots` for each function,
every library) and records each function's wall time beside its projection.

    python -m bendtorch.bench.atlas_cost [--functions all] [--chunks 16] [--patterns 65536] [--workers 0]
                                         [--json FILE] [--validate tanh:clib] [--run OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Sequence

from bendtorch.bench.checker import chunk_starts

WARM_PATTERNS = 64


def function_cost(function: str, chunks: int, patterns: int, workers: int,
                  libs: Sequence[Any] | None = None) -> dict[str, Any]:
    """One function's sampled sweep (`libs`, default every library that provides it and can run here) in a full
    sweep's tasks (a chunk and a group of libraries sharing one reference: engine.lib_groups) and its projection to
    all 2^32 inputs."""
    from bendtorch.reports.sweep import engine as E
    from bendtorch.reports.sweep.api import function_record, libraries_for
    from bendtorch.reports.sweep.chunkpass import merge
    from bendtorch.reports.sweep.libraries import is_local
    from bendtorch.reports.sweep.patterns import FULL_HI

    fn = function_record(function)
    libraries = libraries_for(fn, libs)
    w = 1 if any(is_local(lib) for lib in libraries) else workers or os.cpu_count() or 1  # an object: here alone
    groups = E.lib_groups(libraries)
    starts = chunk_starts(chunks, patterns)
    # each group's process first runs a task of WARM_PATTERNS (its kernels compiled, its library imported: once a
    # worker in a full sweep, which a sample of a few chunks would otherwise scale up with the chunks' passes)
    warm = [(fn, g, (starts[0], starts[0] + WARM_PATTERNS)) for g in groups]
    tasks = warm + [(fn, g, (s, s + patterns)) for s in starts for g in groups]
    totals: dict[str, Any] = {}

    def got(i: int, accs: dict[str, dict[str, Any]]) -> None:
        if i >= len(warm):
            for name, acc in accs.items():
                totals[name] = merge(totals.get(name), acc)

    t0 = time.perf_counter()
    E.execute(tasks, 1, None, got, False, f"atlas cost {function}")
    wall = time.perf_counter() - t0
    scale = FULL_HI / (chunks * patterns)
    cols, passes = {}, 0.0
    for name, acc in totals.items():
        sec = float(acc["seconds"][0])
        passes += sec
        cols[name] = {"ns_per_input": round(sec / (2 * int(acc["n_patterns"][0])) * 1e9, 2),
                      "projected_core_s": round(sec * scale, 1)}
    fixed = max(0.0, wall - passes)  # one process a group: the warm-up and what the passes leave out
    return {"function": function, "inputs_swept": 2 * chunks * patterns, "workers": w, "sampled_wall_s": round(wall, 2),
            "fixed_s": round(fixed, 2), "columns": cols, "projected_wall_s": round(passes * scale / w + fixed, 1)}


def validate(function: str, lib: str, chunks: int, patterns: int, workers: int) -> dict[str, Any]:
    """One column's projection against its sweep over every input (its chunks in a temporary folder, no plots)."""
    import tempfile
    from pathlib import Path

    from bendtorch.reports.sweep.api import sweep

    proj = function_cost(function, chunks, patterns, workers, [lib])
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bendtorch-atlas-cost-") as d:
        sweep(function, [lib], Path(d), workers=workers, plot=False, progress=True, atlas=False)
    return {"function": function, "library": lib, "projected_wall_s": proj["projected_wall_s"],
            "full_wall_s": round(time.perf_counter() - t0, 1)}


def run_atlas(names: Sequence[str], out: str, workers: int, projected: dict[str, float]) -> dict[str, Any]:
    """The atlas itself: every function's full sweep with every library that provides it and can run here, into
    OUT (resumable: a function's finished chunks are kept), each timed beside its projection."""
    from pathlib import Path

    from bendtorch.reports.sweep.api import sweep

    rows: list[dict[str, Any]] = []
    for n in names:
        t0 = time.perf_counter()
        rep = sweep(n, None, Path(out), workers=workers, plot=False, progress=True,
                    command=f"bendtorch sweep {n} --out {Path(out).name} --no-plots")
        row: dict[str, Any] = {"function": n, "libraries": sorted(rep["libraries"]),
                               "full_wall_s": round(time.perf_counter() - t0, 1), "projected_wall_s": projected.get(n)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    total = round(sum(r["full_wall_s"] for r in rows), 1)
    return {"out": Path(out).name, "functions": rows, "full_atlas_wall_s": total}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bendtorch.bench.atlas_cost", description=__doc__.splitlines()[0])
    p.add_argument("--functions", default="all", help="comma-separated sweep functions (default: all)")
    p.add_argument("--chunks", type=int, default=16)
    p.add_argument("--patterns", type=int, default=1 << 16, help="positive patterns per chunk")
    p.add_argument("--workers", type=int, default=0, help="worker processes (default: every core)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--validate", metavar="FUNCTION:LIB", help="also sweep that column over every input")
    p.add_argument("--run", metavar="OUT", help="then run the atlas itself into OUT, each function timed")
    a = p.parse_args(argv)
    from bendtorch.records.durable import write_json
    from bendtorch.records.functions import NAMES
    from bendtorch.records.machine import describe, machine
    from bendtorch.reports.sweep.patterns import FULL_HI

    names = list(NAMES) if a.functions == "all" else a.functions.split(",")
    unknown = [n for n in names if n not in NAMES]
    if unknown or a.chunks < 1 or a.patterns < 32 or a.chunks * a.patterns > FULL_HI:
        print(f"atlas_cost: {'no sweep function ' + ', '.join(unknown) if unknown else 'bad --chunks/--patterns'}",
              file=sys.stderr)
        raise SystemExit(2)
    if a.run:
        try:
            os.makedirs(a.run, exist_ok=True)
            if not os.access(a.run, os.W_OK):
                raise PermissionError("not writable")
        except OSError as e:
            print(f"atlas_cost: --run {a.run}: {e.strerror or e}", file=sys.stderr)
            raise SystemExit(2) from None
    t0 = time.perf_counter()
    rows = []
    for n in names:
        r = function_cost(n, a.chunks, a.patterns, a.workers)
        rows.append(r)
        print(json.dumps(r), flush=True)
    total = sum(r["projected_wall_s"] for r in rows)
    m = machine()
    out: dict[str, Any] = {"machine": m, "workers": a.workers or os.cpu_count() or 1, "chunks": a.chunks,
                           "patterns_per_chunk": a.patterns, "functions": rows,
                           "projected_full_atlas_wall_s": round(total, 1),
                           "measured_in_s": round(time.perf_counter() - t0, 1)}
    if a.validate:
        f, _, lib = a.validate.partition(":")
        out["validation"] = validate(f, lib, a.chunks, a.patterns, a.workers)
        print(json.dumps(out["validation"]), flush=True)
    print(f"the full atlas ({len(rows)} functions, every library here): projected {total / 60:.1f} min wall on "
          f"{out['workers']} workers, {describe(m)}")
    if a.json:
        write_json(a.json, out)
    if a.run:
        out["run"] = run_atlas(names, a.run, a.workers, {r["function"]: r["projected_wall_s"] for r in rows})
        print(f"the full atlas: {out['run']['full_atlas_wall_s'] / 60:.1f} min wall, projected {total / 60:.1f}")
        if a.json:
            write_json(a.json, out)


if __name__ == "__main__":
    main()
