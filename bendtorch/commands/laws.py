"""`bendtorch laws [--profile P] [-k EXPR] [--json FILE]`: run the law suites under a hypothesis profile and print a
table of family, law, examples tried, result and time (the JSON file holds the same rows)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bendtorch.commands.args import UsageError, json_target



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="ci", choices=["ci", "dev", "deep"],
                   help="hypothesis profile: ci (fast), dev, deep (100x ci's examples); default ci")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the rows as JSON to FILE (its directory must exist)")
    p.add_argument("-k", dest="select", metavar="EXPR", help="only the laws matching this pytest -k expression")
    p.add_argument("--target", default="impl", choices=["impl", "torch", "jax"],
                   help="the library held to the laws: impl (default; every law, a failing one exits 1), torch or "
                        "jax (the conformance laws; a failing law is a finding, reported with its counterexample, "
                        "and exits 0 unless a law errs)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="the target's device (torch only): cuda runs twice, TF32 off then on; without a GPU its "
                        "rows say not run")


def run(args: argparse.Namespace) -> int:
    json_path = json_target(args.json) if args.json is not None else None
    from bendtorch.laws.run import run_and_print

    if args.device != "cpu" and args.target != "torch":
        raise UsageError(f"--device {args.device}: only the torch target takes a device")
    return run_and_print(args.profile, select=args.select, json_path=json_path, target=args.target,
                         device=args.device)
