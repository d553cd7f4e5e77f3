"""`bendtorch report`: every reference comparison (impl, PyTorch float32, the float64 oracle), the small model, the
optimizer study, the erf sweep's sample, the training drift, the law table, the machine-dependent facts measured
again on this machine (PyTorch's batch-size groups, the conformance table's torch column) beside the committed
ones, written as report.json (with a schema version; report.schema.json describes it) and REPORT.md, with every
file REPORT.md links beside it (bendtorch.reports.report does the work).

    bendtorch report [--out DIR] [--quick] [--erf-sample N] [--no-plots] [--only NAME ...] [--target SPEC ...]
                     [--device DEVICE] [--accuracy-only]

--target names the columns of the op-accuracy matrix (each op x target, in ulps against the oracle; repeatable or
comma-separated; a built-in name, pkg.mod:attr or an entry point as for `bendtorch laws`; "all": every built-in target
that can be made here, each variant on the device); default impl and torch. --device runs those targets on another
device their records list (`--target torch --device cuda`: PyTorch CUDA, TF32 off and on; "not run: no GPU" rows
where there is none). --accuracy-only writes only that matrix, as
ACCURACY.md and accuracy.json (records/schemas/accuracy.schema.json); the committed matrix in
reports/results/accuracy/ is `bendtorch report --target all --accuracy-only --out reports/results/accuracy`.

The default --out is bendtorch-out/report ($BENDTORCH_OUT/report when that is set); a relative --out is relative
to the current directory. Exit code 0 when every row passes and nothing erred, 1 otherwise (each error is also one
line on stderr), 2 for a mistake in the arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from bendtorch.commands.args import UsageError, default_out, int_in, utf8_path, writable_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="output directory (default bendtorch-out/report, or $BENDTORCH_OUT/report)")
    parser.add_argument("--quick", action="store_true",
                        help="one shape and one seed per op, a short model run, no 100-step optimizer study")
    parser.add_argument("--erf-sample", type=int_in(0, 1 << 31), default=None, metavar="N",
                        help="spread inputs for the erf sweep's sample mode (default 20000, 2000 with --quick; "
                             "0 skips it)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--only", action="append", default=None, metavar="NAME",
                        help="only this op (repeatable; names as in the table; an unknown name is an error); "
                             "skips the model-wide sections")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--no-drift", action="store_true", help="skip the tiny Llama's 100-step drift run")
    parser.add_argument("--no-laws", action="store_true", help="skip the law table (the laws' ci profile)")
    parser.add_argument("--no-live", action="store_true",
                        help="skip measuring PyTorch's machine-dependent facts again here (its batch-size groups "
                             "and its conformance column); the committed figures are still shown, with their "
                             "machine")
    parser.add_argument("--target", action="append", default=None, metavar="SPEC",
                        help="a column of the op-accuracy matrix (repeatable or comma-separated): a built-in target, "
                             "pkg.mod:attr or an entry point's name, or 'all' (every built-in target that can be "
                             "made here, each variant); default impl,torch")
    parser.add_argument("--device", default="cpu", metavar="DEVICE",
                        help="the device of the op-accuracy matrix's targets, one their records list (torch: cpu or "
                             "cuda); default cpu")
    parser.add_argument("--accuracy-only", action="store_true",
                        help="write only the op-accuracy matrix (ACCURACY.md, accuracy.json) into --out")
    parser.add_argument("--erf-full", type=Path, default=None, metavar="JSON",
                        help="the full erf sweep's results to include when present (default: the committed "
                             "reports/results/atlas/erf/sweep_full.json, from `bendtorch sweep erf`)")


def _command(a: argparse.Namespace) -> str:
    """The command line that reproduces this report."""
    parts = ["bendtorch report"]
    if a.out is not None:
        parts += ["--out", str(a.out)]
    parts += ["--quick"] * a.quick + ["--no-plots"] * a.no_plots + ["--no-drift"] * a.no_drift + \
        ["--no-laws"] * a.no_laws + ["--no-live"] * a.no_live
    if a.erf_sample is not None:
        parts += ["--erf-sample", str(a.erf_sample)]
    if a.erf_full is not None:
        parts += ["--erf-full", str(a.erf_full)]
    for o in a.only or []:
        parts += ["--only", o]
    for t in a.target or []:
        parts += ["--target", t]
    if a.device != "cpu":
        parts += ["--device", a.device]
    parts += ["--accuracy-only"] * a.accuracy_only
    return " ".join(parts)


def _columns(a: argparse.Namespace) -> tuple[list[Any] | None, bool]:
    """The matrix's columns the --target options name (None: the default), resolved before any work, and whether
    the targets that cannot be made here are left out ("all" names them)."""
    if a.target is None:
        if a.device != "cpu":
            raise UsageError("--device: names the device of the --target columns; give --target")
        return None, False
    from bendtorch.records.targets import SpecError
    from bendtorch.reports.accuracy import ALL, columns

    try:
        cols = columns(a.target, a.device)
    except SpecError as e:
        raise UsageError(f"--target: {e}") from None
    return cols, any(p.strip() == ALL for t in a.target for p in t.split(","))


def _accuracy_only(a: argparse.Namespace, out: Path, cols: list[Any] | None, skip: bool) -> int:
    from bendtorch.records.durable import refuse_links, write_json, write_text
    from bendtorch.reports.accuracy import OUTPUTS, matrix_markdown
    from bendtorch.reports.report import accuracy_run

    refuse_links(out, OUTPUTS)
    doc = accuracy_run(cols, a.quick, a.only, _command(a), skip)
    write_json(out / "accuracy.json", doc)
    md = matrix_markdown(doc, heading="#")
    write_text(out / "ACCURACY.md", md)
    for e in doc["impl_failures"] + doc["errors"]:
        print(f"bendtorch report: error: {' '.join(e.split())}", file=sys.stderr)
    print(f"{len(doc['columns'])} columns, {doc['seconds']:.1f} s -> {out / 'ACCURACY.md'}, {out / 'accuracy.json'}")
    return 1 if doc["impl_failures"] or doc["errors"] else 0


def run(a: argparse.Namespace) -> int:
    if a.erf_full is not None:
        utf8_path(a.erf_full, "--erf-full")
        if not os.path.isfile(a.erf_full):
            raise UsageError(f"--erf-full {a.erf_full}: no such file")
    cols, skip = _columns(a)
    if a.only:
        from bendtorch.reference.ops import OPS
        from bendtorch.reports.accuracy import measured_ops

        names = [o.name for o in (measured_ops() if a.accuracy_only else OPS)]
        unknown = [n for n in a.only if n not in names]
        if unknown:
            raise UsageError(f"--only: no op named {', '.join(map(repr, unknown))} (the names: {', '.join(names)})")
    out = writable_dir(default_out(a.out, "report"), "--out" if a.out is not None else "the output folder")
    if a.accuracy_only:
        return _accuracy_only(a, out, cols, skip)
    from bendtorch.records.durable import refuse_links
    from bendtorch.reports.report import OUTPUTS, report

    refuse_links(out, OUTPUTS)  # a link where an output goes: one line and exit code 2 (the command line's rule)
    # absolute from here on: the laws run in a subprocess whose working directory is not this one
    rep = report(out.resolve(), a.quick, a.erf_sample, not a.no_plots, a.only, a.quiet, not a.no_drift,
                 not a.no_laws, a.erf_full.resolve() if a.erf_full is not None else None, _command(a),
                 live=not a.no_live, shown_out=out, targets=cols, skip_not_run=skip)
    for e in rep["errors"]:  # each error also in REPORT.md's Errors section
        print(f"bendtorch report: error: {e}", file=sys.stderr)
    return 0 if rep["all_pass"] else 1
