"""`bendtorch laws [--profile P] [-k EXPR] [--json FILE]`: run the law suites under a hypothesis profile and print a
table of family, law, examples tried, result and time (the JSON file holds the same rows)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bendtorch.commands.args import json_target

HELP = "run the law suites (hypothesis) and print the law table"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="ci", choices=["ci", "dev", "deep"],
                   help="hypothesis profile: ci (fast), dev, deep (100x ci's examples); default ci")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the rows as JSON to FILE (its directory must exist)")
    p.add_argument("-k", dest="select", metavar="EXPR", help="only the laws matching this pytest -k expression")


def run(args: argparse.Namespace) -> int:
    json_path = json_target(args.json) if args.json is not None else None
    from bendtorch.laws.run import run_and_print

    return run_and_print(args.profile, select=args.select, json_path=json_path)
