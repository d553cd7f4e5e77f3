"""`bendtorch erf-sweep`: a name for `bendtorch sweep erf`, the seed's erf (and PyTorch's, and the C library's) against
the exact erf rounded to float32 on every float32 input (or a spread sample, or a range); bendtorch.reports.sweep has
the method. The numbers are checked by bendtorch.commands.sweep, before any work: --sample and --workers >= 1, --chunk
a positive multiple of 32, 0 <= --lo < --hi <= 2^31."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`erf-sweep` is a name for `sweep erf` (bendtorch.commands.sweep): the same arguments, FUNCTION fixed."""
    from bendtorch.commands import sweep

    sweep.add_arguments(parser, function="erf")


def run(args: argparse.Namespace) -> int:
    from bendtorch.commands import sweep

    return sweep.run(args)
