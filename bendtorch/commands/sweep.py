"""`bendtorch sweep FUNCTION [--lib LIB ...] [--sample N]`: one float32 function against its correctly rounded value
on every one of the 2^32 float32 inputs (or N spread inputs plus the special values, or a range), each library
side by side; per-function JSON and plots in OUT/FUNCTION/ (bendtorch.reports.sweep has the method). The function
and library names come from bendtorch.records (no numba, no torch for --help). Checked before any work: --sample,
--workers, --chunk >= 1, --chunk a multiple of 32, 0 <= --lo < --hi <= 2^31, a known function, libraries that
provide it (a built-in name, an entry point of the group bendtorch.sweep_libraries, or NAME=module:attr, imported and
called on a few inputs), a --sample that fits in memory, a --dask scheduler that answers, an --out no other sweep
holds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from bendtorch.commands.args import UsageError, int_in, writable_dir


def _function_names() -> tuple[str, ...]:
    from bendtorch.records.functions import NAMES  # the records: plain data, neither numba nor torch
    return NAMES


FUNCTIONS = _function_names()  # the sweep functions' names, from their records (bendtorch.reports.sweep.ENTRIES)
FULL_HI = 1 << 31  # the positive float32 bit patterns, each also negated (bendtorch.reports.sweep.FULL_HI)


def _int0(lo: int, hi: int) -> Callable[[str], int]:
    """int_in(lo, hi), also taking 0x... and 0b... forms."""
    check = int_in(lo, hi)

    def parse(text: str) -> int:
        try:
            v = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        return int(check(str(v)))
    parse.__name__ = "integer"
    return parse


def add_arguments(parser: argparse.ArgumentParser, function: str | None = None) -> None:
    """The sweep's arguments; with `function` given (the `erf-sweep` name), no FUNCTION argument."""
    if function is None:
        parser.add_argument("function", metavar="FUNCTION", choices=FUNCTIONS,
                            help="one of: " + ", ".join(FUNCTIONS))
    else:
        parser.set_defaults(function=function)
    from bendtorch.records.libraries import LIBRARIES

    names = ", ".join(n for n, lib in LIBRARIES.items() if not lib.twin)
    parser.add_argument("--lib", action="append", metavar="LIB", dest="libs",
                        help=f"a library to check (repeatable; default: every library that provides the function, "
                             f"but for an accelerator's and those run where named: torch_cuda, torch_compile): "
                             f"{names}; an installed plug-in's name (entry points bendtorch.sweep_libraries); or "
                             f"NAME=pkg.mod:attr, attr a function float32 array -> float32 array or an object or "
                             f"mapping providing functions by name")
    parser.add_argument("--out", type=Path, default=None,
                        help="output directory (the function's files go in OUT/FUNCTION/; default "
                             "bendtorch-out/atlas, or $BENDTORCH_OUT/atlas)")
    parser.add_argument("--sample", type=int_in(1, FULL_HI), default=None, metavar="N",
                        help="check N >= 1 spread inputs plus the special values (seconds; not exhaustive)")
    parser.add_argument("--lo", type=_int0(0, FULL_HI - 1), default=0, help="first positive bit pattern (default 0)")
    parser.add_argument("--hi", type=_int0(1, FULL_HI), default=FULL_HI,
                        help="end of the positive bit patterns (default 2^31: every pattern, each also negated)")
    parser.add_argument("--chunk", type=_int0(32, FULL_HI), default=1 << 21,
                        help="positive patterns per chunk (a multiple of 32, default 2^21)")
    parser.add_argument("--workers", type=int_in(1, 1024), default=None,
                        help="local processes (default: every core, never more than there are chunks; one for a "
                             "--sample of at most 2^21 inputs, whose passes take less than starting a worker)")
    parser.add_argument("--dask", metavar="ADDRESS", default=None,
                        help="run the chunks on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786), "
                             "or 'local' for a LocalCluster on this machine, instead of the local process pool")
    parser.add_argument("--fresh", action="store_true", help="discard chunks of an earlier run in --out")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from bendtorch.records.libraries import SpecError, parse_lib

    if args.chunk % 32:
        raise UsageError(f"--chunk {args.chunk}: must be a multiple of 32")
    if not args.lo < args.hi:
        raise UsageError(f"--lo {args.lo:#x} must be below --hi {args.hi:#x}")
    for text in args.libs or []:
        try:
            parse_lib(text)
        except SpecError as e:
            raise UsageError(str(e)) from None
    if args.out is None:
        from bendtorch.records.paths import output_dir
        args.out = output_dir("atlas")
    writable_dir(args.out)
    from bendtorch.reports import sweep as S
    from bendtorch.reports.sweep.engine import LibraryFailed
    from bendtorch.reports.sweep.errors import shown

    command = "bendtorch " + " ".join(sys.argv[1:]) if sys.argv[1:] else f"bendtorch sweep {args.function}"
    try:
        rep = S.sweep(args.function, list(dict.fromkeys(args.libs or [])) or None, args.out, sample=args.sample,
                      lo=args.lo, hi=args.hi, chunk=args.chunk, workers=args.workers or 0, dask=args.dask,
                      fresh=args.fresh, plot=not args.no_plots, progress=not args.quiet, command=command)
    except S.SweepError as e:
        raise UsageError(str(e)) from None
    except LibraryFailed as e:
        print(f"bendtorch sweep: error: a library failed during the sweep: {e}", file=sys.stderr)
        return 1
    print(shown(S.summary_line(rep) + f"\n  -> {rep['json']}"))
    return 0
