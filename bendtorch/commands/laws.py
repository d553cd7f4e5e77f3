"""`bendtorch laws [--profile P] [--target SPEC] [--device D] [--variant V] [-k EXPR] [--json FILE]
[--allow-not-run] [--jobs N]`: run the law suites under a hypothesis profile against a target and print the table
of suite, family, law, examples tried, result and time, with one total line (the JSON file holds the same rows and
the machine). A target of several columns (variants) runs them at once, each in a process of its own, unless --jobs
1."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bendtorch.commands.args import UsageError, int_in, json_target


def add_arguments(p: argparse.ArgumentParser) -> None:
    from bendtorch.records.targets import RECORDS  # the records import nothing heavy: --help stays quick

    p.add_argument("--profile", default="ci", choices=["ci", "dev", "deep"],
                   help="hypothesis profile: ci (fast), dev, deep (100x ci's examples); default ci")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the rows as JSON to FILE (its directory must exist)")
    p.add_argument("-k", dest="select", metavar="EXPR", help="only the laws matching this pytest -k expression")
    p.add_argument("--target", default=None, metavar="SPEC",
                   help="the library held to the laws: a built-in target (" + ", ".join(RECORDS) + "; impl, the "
                        "default, runs every law and a failing one exits 1; any other runs the conformance laws, a "
                        "failing law being a finding reported with its counterexample, exit 0 unless a law errs), "
                        "pkg.mod:attr (a maker, a Target class or instance), or the name of an entry point of the "
                        "group bendtorch.targets; default $BENDTORCH_TARGET, else impl")
    p.add_argument("--device", default="cpu", metavar="DEVICE",
                   help="the target's device, one its record lists (torch: cpu or cuda, which runs each variant, "
                        "TF32 off then on); default cpu")
    p.add_argument("--variant", default=None, metavar="NAME",
                   help="one of the target's variants on the device (torch cuda: tf32-off, tf32-on); default every "
                        "one, a column each")
    p.add_argument("--allow-not-run", action="store_true",
                   help="exit 0 when every law was not run (the target's library is not installed, no GPU) "
                        "instead of 1")
    p.add_argument("--jobs", type=int_in(1, 64), default=None, metavar="N",
                   help="columns (variants) run at once, each in a process of its own; 1 runs them in turn in "
                        "this process; default every column, at most one per core")


def run(args: argparse.Namespace) -> int:
    json_path = json_target(args.json) if args.json is not None else None
    from bendtorch.laws.run import default_jobs, prepare, run_and_print
    from bendtorch.records.targets import ENV, SpecError

    if args.target is not None and not args.target.strip():
        raise UsageError("--target: empty")
    try:
        plan = prepare(args.target, args.device, args.variant)
    except SpecError as e:
        src = f" (from ${ENV})" if args.target is None and os.environ.get(ENV) else ""
        raise UsageError(f"{e}{src}") from None
    if plan.resolved.record.name == "impl" and args.select is None:
        from bendtorch.impl.kernels import warm

        warm.start(f"laws-{args.profile}")  # on a cold cache, a second process compiles the laws' kernels too
    jobs = default_jobs(plan) if args.jobs is None else args.jobs
    return run_and_print(plan, args.profile, select=args.select, json_path=json_path,
                         allow_not_run=args.allow_not_run, jobs=jobs)
