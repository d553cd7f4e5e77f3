"""`bendtorch report`: every reference comparison (impl, PyTorch float32, the float64 oracle), the small model, the
optimizer study, the erf sweep's sample, the training drift and the law table, written as report.json (with a
schema version; report.schema.json describes it) and REPORT.md (bendtorch.reports.report does the work).

    bendtorch report [--out DIR] [--quick] [--erf-sample N] [--no-plots] [--only NAME ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bendtorch.commands.args import UsageError, int_in, writable_dir



def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("reports/out"), help="output directory (default reports/out/)")
    parser.add_argument("--quick", action="store_true",
                        help="one shape and one seed per op, a short model run, no 100-step optimizer study")
    parser.add_argument("--erf-sample", type=int_in(0, 1 << 31), default=None, metavar="N",
                        help="spread inputs for the erf sweep's sample mode (default 20000, 2000 with --quick; "
                             "0 skips it)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--only", action="append", default=None, metavar="NAME",
                        help="only this op (repeatable; names as in the table; an unknown name is an error)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--no-drift", action="store_true", help="skip the tiny Llama's 100-step drift run")
    parser.add_argument("--no-laws", action="store_true", help="skip the law table (the laws' ci profile)")
    parser.add_argument("--erf-full", type=Path, default=None, metavar="JSON",
                        help="the full erf sweep's results to include when present (default: the committed "
                             "reports/results/atlas/erf/sweep_full.json, from `bendtorch sweep erf`)")


def _command(a: argparse.Namespace) -> str:
    """The command line that reproduces this report."""
    parts = ["bendtorch report"]
    if a.out != Path("reports/out"):
        parts += ["--out", str(a.out)]
    parts += ["--quick"] * a.quick + ["--no-plots"] * a.no_plots + ["--no-drift"] * a.no_drift + \
        ["--no-laws"] * a.no_laws
    if a.erf_sample is not None:
        parts += ["--erf-sample", str(a.erf_sample)]
    for o in a.only or []:
        parts += ["--only", o]
    return " ".join(parts)


def run(a: argparse.Namespace) -> int:
    if a.erf_full is not None and not a.erf_full.is_file():
        raise UsageError(f"--erf-full {a.erf_full}: no such file")
    if a.only:
        from bendtorch.reference.ops import OPS

        names = [o.name for o in OPS]
        unknown = [n for n in a.only if n not in names]
        if unknown:
            raise UsageError(f"--only: no op named {', '.join(map(repr, unknown))} (the names: {', '.join(names)})")
    writable_dir(a.out)
    from bendtorch.reports.report import report

    rep = report(a.out, a.quick, a.erf_sample, not a.no_plots, a.only, a.quiet, not a.no_drift, not a.no_laws,
                 a.erf_full, _command(a))
    return 0 if rep["all_pass"] else 1
