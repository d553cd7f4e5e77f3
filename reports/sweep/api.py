"""The sweep as a library call: `sweep` (what `bendtorch sweep FUNCTION` runs: every library of a function, or
those named, on all 2^32 inputs, a range, or a sample, writing OUT/FUNCTION/sweep_*.json, the plots and
OUT/ATLAS.md), `check` (one library, a name, a "module:attr" string or a Python function, on a sample, for a
notebook; no files unless asked) and `sample` (the report's in-process sample)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from bendtorch.records.functions import FUNCTIONS, SweepFunction
from bendtorch.records.libraries import EXTRAS, SweepLibrary, installed, providers
from bendtorch.reports.sweep import engine as E
from bendtorch.reports.sweep.atlas import JSON_MAX, write_atlas
from bendtorch.reports.sweep.chunks import locked, read_json
from bendtorch.reports.sweep.errors import SweepError, shown
from bendtorch.reports.sweep.figures import build_report, join_columns
from bendtorch.reports.sweep.keys import chunk_key
from bendtorch.reports.sweep.libraries import LibraryError, check_provides, is_local
from bendtorch.reports.sweep.libraries import library as find_library
from bendtorch.reports.sweep.legacy import upgrade
from bendtorch.records.files import available_memory
from bendtorch.reports.sweep.patterns import FULL_HI, TASK_BYTES, sample_bytes, sample_patterns

LibArg = str | SweepLibrary | Callable[[Any], Any]


def function_record(function: str | SweepFunction) -> SweepFunction:
    if isinstance(function, SweepFunction):
        return function
    if function not in FUNCTIONS:
        raise SweepError(f"{function}: no such sweep function (the functions are {', '.join(FUNCTIONS)})")
    return FUNCTIONS[function]


def default_libraries(function: str) -> list[str]:
    """Every built-in library that provides the function and can run here; one line on stderr names those left out
    because their optional extra is not installed."""
    names = list(providers(function))
    left = [n for n in names if not installed(n)]
    if left:
        hints = ", ".join(f"{n}: pip install 'bendtorch[{EXTRAS[n][0]}]'" for n in left)
        print(f"sweep: {function} without {', '.join(left)} (not installed; {hints})", file=sys.stderr)
    return [n for n in names if n not in left]


def libraries_for(fn: SweepFunction, libs: Sequence[LibArg] | None) -> list[SweepLibrary]:
    """The libraries named (default: every library that provides the function and can run here), each checked to
    provide it."""
    out: list[SweepLibrary] = []
    for arg in libs or default_libraries(fn.name):
        try:
            lib = find_library(arg, fn.name)
            check_provides(lib, fn.name)
        except LibraryError as e:
            raise SweepError(f"--lib {e}") from None
        if lib.device is not None:  # an accelerator's library: one line before any work where there is none
            from bendtorch.reports.sweep.libraries.pytorch import gpu_device
            try:
                gpu_device()
            except RuntimeError as e:
                raise SweepError(f"--lib {lib.name}: {e}") from None
        if lib.name not in {x.name for x in out}:
            out.append(lib)
    if not out:
        raise SweepError(f"{fn.name}: no library provides it (name one with --lib NAME=module:attr)")
    return out


def check_memory(sample: int | None, chunk: int, workers: int) -> None:
    """SweepError before any allocation when the request cannot fit in the memory this process can have."""
    need = sample_bytes(sample, workers) if sample is not None else TASK_BYTES * chunk * max(1, workers)
    have, limit = available_memory()
    if need > have:
        what = f"--sample {sample}" if sample is not None else f"--chunk {chunk} on {workers} workers"
        raise SweepError(f"{what}: needs about {need / 2**30:.1f} GiB (about {need // max(1, 2 * (sample or chunk))} "
                         f"bytes an input), and {have / 2**30:.1f} GiB is available ({limit})")


def _old_json(path: Path, mode: str) -> dict[str, Any] | None:
    """An earlier run's JSON of the same mode at path, in the current layout; None (said on stderr where a file
    is there but cannot be read as one) otherwise."""
    if not os.path.lexists(path):
        return None
    doc, why = read_json(path, JSON_MAX)
    if not isinstance(doc, dict) or not isinstance(doc.get("libraries"), dict):
        print(f"sweep: {shown(path)} is not a sweep JSON ({why or 'another document'}): replaced by this run's",
              file=sys.stderr)
        return None
    return upgrade(doc) if doc.get("mode") == mode else None


# a sample of at most this many inputs runs by default on one worker (this process, and one more for the columns of
# BENDTORCH_LIBM=clib): on 2 cores, `sweep exp --sample N --no-plots` took 9.7 s that way against 15.6 s with a worker
# per core at N = 100,000, 10.6 s against 15.0 s at 10^6, and 19.1 s against 19.2 s at 4 x 10^6
SMALL_SAMPLE = 1 << 21


def sweep(function: str | SweepFunction, libs: Sequence[LibArg] | None, out: Path | None, sample: int | None = None,
          lo: int = 0, hi: int = FULL_HI, chunk: int = 1 << 21, workers: int = 0, dask: str | None = None,
          fresh: bool = False, plot: bool = True, progress: bool = True, command: str = "",
          patterns: Any = None, atlas: bool = True) -> dict[str, Any]:
    """Sweep `function` (a name or a record) with `libs` (default: every library that provides it): a sample of
    `sample` spread inputs plus the special values, or the positive patterns [lo, hi) and their negatives in chunks
    of `chunk` (resumable), or the given `patterns`. With `out`, writes OUT/FUNCTION/sweep_full.json,
    sweep_sample.json or sweep_range_LO_HI.json (joined with the columns of an earlier run of the same mode), the
    plots and OUT/ATLAS.md, holding OUT's lock; returns the report. SweepError before any work for a request that
    cannot be run."""
    from bendtorch.records.machine import machine

    t0 = time.perf_counter()
    fn = function_record(function)
    libraries = libraries_for(fn, libs)
    if not workers and sample is not None and not dask and sample <= SMALL_SAMPLE:
        workers = 1  # a small sample's passes take milliseconds: starting and loading a worker costs more
    workers = workers or os.cpu_count() or 1
    if any(is_local(lib) for lib in libraries):
        if dask:
            raise SweepError("--dask: a library given as a Python object runs in this process only (give it as "
                             "module:attr to run it on a cluster)")
        workers = 1
    in_mem = sample is not None or patterns is not None or out is None
    check_memory(sample if sample is not None else None, chunk if not in_mem else 0, workers)
    dists = sorted({lib.distribution for lib in libraries if lib.distribution})
    with E.dask_client(dask) as client:
        if out is None:
            return _run(fn, libraries, None, sample, lo, hi, chunk, workers, client, fresh, plot, progress, command,
                        patterns, lambda: machine(dists, workers=dask or workers), t0)
        d = Path(out) / fn.name
        from bendtorch.records.durable import ensure_dir
        ensure_dir(d)
        with locked(Path(out)):
            rep = _run(fn, libraries, Path(out), sample, lo, hi, chunk, workers, client, fresh, plot, progress,
                       command, patterns, lambda: machine(dists, workers=dask or workers), t0)
            if atlas:
                write_atlas(Path(out))
            return rep


def _run(fn: SweepFunction, libraries: list[SweepLibrary], out: Path | None, sample: int | None, lo: int, hi: int,
         chunk: int, workers: int, client: Any, fresh: bool, plot: bool, progress: bool, command: str,
         patterns: Any, machine: Callable[[], dict[str, Any]], t0: float) -> dict[str, Any]:
    from bendtorch.records.durable import write_json

    chunk_record = None
    if sample is not None or patterns is not None or out is None:
        pats = patterns if patterns is not None else (sample_patterns(sample) if sample is not None
                                                      else np.arange(lo, hi, dtype=np.uint32))
        # the machine record (which imports each measured library to read its build: TensorFlow takes seconds) is
        # made while the worker processes sweep (in memory: no chunk's key waits for it), and before this process
        # runs any task itself (a task sets its thread counts to one; the record keeps this process's own)
        got: dict[str, dict[str, Any]] = {}
        tots = E.sweep_patterns(fn, libraries, pats, workers, client, progress,
                                while_pools_run=lambda: got.setdefault("m", machine()))
        m = got["m"]
        keys = {lib.name: chunk_key(fn, lib, m) for lib in libraries}
        n = 2 * int(next(iter(tots.values()))["n_patterns"][0])
        if sample is not None:
            kind, mode = "sample", f"sample ({n} inputs: {sample} spread plus the special values)"
        elif patterns is not None:
            kind, mode = "patterns", f"given patterns ({n} inputs)"
        else:
            kind, mode = f"range_{lo:08x}_{hi:08x}", f"range [0x{lo:08x}, 0x{hi:08x}) and negatives"
    else:
        m = machine()
        keys = {lib.name: chunk_key(fn, lib, m) for lib in libraries}
        d = out / fn.name
        if fresh and (d / "chunks").is_dir() and not (d / "chunks").is_symlink():
            import shutil
            shutil.rmtree(d / "chunks")
        tots, stats = E.sweep_range(out, fn, libraries, {k: v["sha256"] for k, v in keys.items()}, lo, hi, chunk,
                                    workers, client, progress)
        chunk_record = stats.record()
        full = lo == 0 and hi == FULL_HI
        mode = "full (all 2^32 bit patterns)" if full else f"range [0x{lo:08x}, 0x{hi:08x}) and negatives"
        kind = "full" if full else f"range_{lo:08x}_{hi:08x}"
    command = shown(command or f"bendtorch sweep {fn.name}")
    rep = build_report(fn, libraries, tots, mode, command, m, keys)
    rep["seconds"] = time.perf_counter() - t0
    run = {"command": command, "libraries": [lib.name for lib in libraries], "seconds": rep["seconds"]}
    if chunk_record is not None:
        run["chunks"] = chunk_record
    if out is None:
        rep["runs"] = [run]
        return rep
    d = out / fn.name
    path = d / f"sweep_{kind}.json"
    old = _old_json(path, mode)
    if old is not None:
        rep["libraries"] = join_columns(old["libraries"], rep["libraries"])
        rep["runs"] = old.get("runs", [{"command": old.get("command"), "seconds": old.get("seconds")}])
        if not plot and "plots" in old:
            rep["plots"] = old["plots"]      # a run without plots keeps the earlier run's
    rep.setdefault("runs", []).append(run)
    if plot:
        from bendtorch.reports.sweep.plots import plots
        rep["plots"] = plots(fn.name, fn.title, tots, d, mode.split(" (")[0], kind)
    rep["json"] = shown(path)
    write_json(path, rep)
    return rep


def range_accumulators(function: str | SweepFunction, libs: Sequence[LibArg], out: Path, lo: int, hi: int, chunk: int,
                       workers: int, progress: bool = True) -> dict[str, dict[str, Any]]:
    """Each library's merged accumulators on [lo, hi) and the negatives, from the resumable chunks under
    OUT/FUNCTION/chunks/ (computing those missing or failing their checks), holding OUT's lock; no JSON."""
    from bendtorch.records.durable import ensure_dir
    from bendtorch.records.machine import machine

    fn = function_record(function)
    libraries = libraries_for(fn, libs)
    m = machine(sorted({lib.distribution for lib in libraries if lib.distribution}), workers=workers)
    ensure_dir(Path(out) / fn.name)
    with locked(Path(out)):
        keys = {lib.name: chunk_key(fn, lib, m)["sha256"] for lib in libraries}
        return E.sweep_range(Path(out), fn, libraries, keys, lo, hi, chunk, workers, None, progress)[0]


def sample(func: str, n: int, out: Path, libs: Sequence[LibArg] | None = None, command: str = "") -> dict[str, Any]:
    """`sweep` in sample mode (n spread inputs plus the special values) in this process: one worker, no plots, no
    progress bar, the caller's numba and torch thread counts restored afterwards (the worker sets one each). Writes
    OUT/FUNCTION/sweep_sample.json; returns the report."""
    import numba
    import torch

    threads = numba.get_num_threads(), torch.get_num_threads()
    try:
        return sweep(func, libs, out, sample=n, workers=1, plot=False, progress=False,
                     command=command or f"bendtorch sweep {func} --sample {n}", atlas=False)
    finally:
        numba.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])


def check(function: str | SweepFunction, library: LibArg, sample: int = 100_000, lo: int | None = None,
          hi: int | None = None, out: Path | None = None, workers: int = 1, progress: bool = False
          ) -> dict[str, Any]:
    """One library's figures for one function, for a notebook: `library` is a library's name, "module:attr" (a
    float32 array -> float32 array function, or an object or mapping providing several), NAME=module:attr, or a
    Python function float32 array -> float32 array; on `sample` spread inputs plus the special values, or on the
    positive patterns [lo, hi) and their negatives. Runs in this process (workers=1) unless told otherwise; writes
    nothing unless `out` is given. Returns the library's column (max_ulp, correctly_rounded_fraction, ...), the
    report's hard cases under "hard_cases". SweepError for a library that cannot be used.

        check("exp", mypkg.exp32)                       # a function of one's own
        check("tanh", "numpy", sample=1_000_000)        # a built-in library
    """
    import numba
    import torch

    fn = function_record(function)
    try:
        lib = find_library(library, fn.name)
    except LibraryError as e:
        raise SweepError(str(e)) from None
    threads = numba.get_num_threads(), torch.get_num_threads()  # the in-process worker sets one each
    rng = lo is not None or hi is not None
    try:
        rep = sweep(fn, [lib], out, sample=None if rng else sample, lo=lo or 0, hi=FULL_HI if hi is None else hi,
                    workers=workers, plot=out is not None, progress=progress, command=f"check({fn.name!r}, ...)")
    finally:
        numba.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])
    col = next(c for c in rep["libraries"].values()
               if c["library_name"] == lib.name and c["machine"] == rep["machine"])
    return {**col, "hard_cases": rep["hard_cases"], "mode": rep["mode"]}
