"""The exhaustive checker (`bendtorch sweep FUNCTION`): float32 functions of one float32 argument against their
correctly rounded value on every one of the 2^32 float32 inputs (or a spread sample, or a range), every library
side by side, in the manner of CORE-MATH's check_exhaustive.

A function is a record of bendtorch.records.functions (its float64 reference and mpmath formula live in
bendtorch.oracle.functions); a library is a record of bendtorch.records.libraries, or one from outside
(NAME=module:attr, an entry point of the group `bendtorch.sweep_libraries`, or a Python function given to `check`).
The modules, by concern:

- kernels: the compiled reference and statistics passes;
- chunkpass: one chunk (the reference once, each library's figures), the mpmath decisions, the merge;
- libraries/: finding and resolving libraries, and the built-in adapters (one module per family);
- keys: what a library's chunks are keyed by; chunks: the sealed chunk files, their manifest, the folder's lock;
- engine: the process pool, Dask, the range and sample sweeps; patterns: the sample's inputs, the memory estimate;
- figures: the figures and the JSON's columns (machine and key per column); legacy: the earlier JSON layout
  (migrate: the command that rewrites such files);
- plots, atlas: the PNGs and the Markdown table; api: `sweep`, `check` and `sample`.

The public calls:

    from bendtorch.reports import sweep
    sweep.check("exp", mypkg.exp32, sample=100_000)      # one library's figures, in this process
    sweep.sweep("exp", ["impl", "torch"], Path("out"))   # every figure, written to out/exp/ and out/ATLAS.md
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from bendtorch.records.functions import ERF_PIECES, FUNCTIONS, SweepFunction
from bendtorch.records.libraries import LIBRARIES, ORDER, SweepLibrary
from bendtorch.reports.sweep.api import LibArg, check, function_record, libraries_for, sample, sweep
from bendtorch.reports.sweep.atlas import atlas_markdown, pct, summary_line, write_atlas
from bendtorch.reports.sweep.errors import SweepError
from bendtorch.reports.sweep.figures import comparable, figures
from bendtorch.reports.sweep.patterns import FULL_HI, sample_patterns, special_patterns

__all__ = ["ATLAS_LIBS", "ENTRIES", "ERF_PIECES", "FULL_HI", "RESULTS", "SweepError", "SweepFunction", "SweepLibrary",
           "atlas_markdown", "build_report", "check", "comparable", "figures", "pct", "results_json", "sample",
           "sample_patterns", "special_patterns", "summary_line", "sweep", "sweep_patterns", "write_atlas"]

ENTRIES = FUNCTIONS                                           # the sweep functions' records, by name
ATLAS_LIBS = tuple(n for n in ORDER if not LIBRARIES[n].twin)   # the atlas's columns, in order
RESULTS = Path(__file__).resolve().parent.parent / "results" / "atlas"   # the committed results, one folder each


def results_json(func: str, kind: str = "full", results_dir: Path = RESULTS) -> Path:
    """RESULTS_DIR/FUNCTION/sweep_KIND.json: where `bendtorch sweep FUNCTION --out RESULTS_DIR` writes (kind full
    or sample)."""
    return Path(results_dir) / func / f"sweep_{kind}.json"


def sweep_patterns(function: str | SweepFunction, libs: Sequence[LibArg], pats: Any, workers: int = 1,
                   dask: str | None = None, progress: bool = True) -> dict[str, dict[str, Any]]:
    """Each library's accumulators on the given positive patterns and their negatives (no files), by name."""
    from bendtorch.reports.sweep import engine

    fn = function_record(function)
    libraries = libraries_for(fn, libs)
    with engine.dask_client(dask) as client:
        return engine.sweep_patterns(fn, libraries, pats, workers, client, progress)


def build_report(function: str | SweepFunction, tots: dict[str, dict[str, Any]], mode: str, command: str,
                 workers: int | str) -> dict[str, Any]:
    """The report of accumulators (sweep_patterns'), with this machine's record."""
    from bendtorch.records.machine import machine
    from bendtorch.reports.sweep import figures as F

    fn = function_record(function)
    libraries = libraries_for(fn, list(tots))
    dists = sorted({lib.distribution for lib in libraries if lib.distribution})
    return F.build_report(fn, libraries, tots, mode, command, machine(dists, workers=workers))
