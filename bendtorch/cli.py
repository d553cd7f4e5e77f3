"""`bendtorch`: the harness's command line. Each subcommand is a module of `bendtorch.commands` (its arguments and
a call into the library); this file only dispatches. A user's mistake (`UsageError`) is one line on stderr and exit
code 2, never a traceback."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from bendtorch.commands.args import UsageError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("bendtorch.reports.report", "run the reference comparisons and write report.json and REPORT.md"),
    "erf-sweep": ("bendtorch.reports.erf_sweep", "check impl's erf against the exact erf on every float32 input"),
    "laws": ("bendtorch.commands.laws", "run the law suites (hypothesis) and print the law table"),
    "train": ("bendtorch.train_cmd", "train the tiny or smol Llama with impl"),
    "bench": ("bendtorch.bench.bench", "time one training step of impl and PyTorch in the same process"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bendtorch",
        description="Verification-first research harness for BendTorch's float32 library: impl/ against the "
                    "float64 oracle and PyTorch, to the ulp.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mod = importlib.import_module(args._module)
    try:
        code: int = mod.run(args)
    except UsageError as e:
        print(f"bendtorch {args.command}: error: {e}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
