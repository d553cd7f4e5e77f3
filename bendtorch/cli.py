"""`bendtorch`: the harness's command line. Each subcommand lives in its own module, which provides
`add_arguments(parser)` and `run(args) -> int`; this file only dispatches, importing a module when it is used."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("reports.report", "run the reference comparisons and write report.json and REPORT.md"),
    "erf-sweep": ("reports.erf_sweep", "check impl's erf against the exact erf on every float32 input"),
    "laws": ("laws.run", "run the law suites (hypothesis) and print the law table"),
    "train": ("bendtorch.train_cmd", "train the tiny or smol Llama with impl"),
    "bench": ("bench.bench", "time one training step of impl and PyTorch in the same process"),
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
    args = build_parser().parse_args(argv)
    mod = importlib.import_module(args._module)
    code: int = mod.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
