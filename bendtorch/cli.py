"""`bendtorch`: the harness's command line. Each subcommand is a module of `bendtorch.commands` (its arguments and
a call into the library); this file only dispatches. A user's mistake (`UsageError`, or an output the durable
writer refuses: a link in place of a file) is one line on stderr and exit code 2, never a traceback; a file that
cannot be written once the work has started is one line and exit code 1."""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
from typing import NoReturn, Sequence

from bendtorch.commands.args import UsageError
from bendtorch.records.durable import OutputError

# name -> (command module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("bendtorch.commands.report", "run the reference comparisons and write report.json and REPORT.md"),
    "erf-sweep": ("bendtorch.commands.erf_sweep", "check impl's erf against the exact erf on every float32 input"),
    "sweep": ("bendtorch.commands.sweep", "check a float32 function of every library against its correctly rounded value"),
    "laws": ("bendtorch.commands.laws", "run the law suites (hypothesis) and print the law table"),
    "train": ("bendtorch.commands.train", "train the tiny or smol Llama with impl"),
    "bench": ("bendtorch.commands.bench", "time one training step of impl and PyTorch in the same process"),
    "study": ("bendtorch.commands.study", "run one of the studies behind the findings; write its result and figure"),
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (`bendtorch train: error: ...`) and exit code 2;
    `--help` gives the usage."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bendtorch",
        description="Verification-first research harness for BendTorch's float32 library: impl/ against the "
                    "float64 oracle and PyTorch, to the ulp.")
    from bendtorch import __version__
    parser.add_argument("--version", action="version", version=f"bendtorch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(p)
    return parser


def _one_line(e: OSError) -> str:
    """An OSError as one line: its message and the file it names."""
    if e.strerror and e.filename is not None:
        return f"{e.filename}: {e.strerror}"
    return " ".join(str(e).split()) or type(e).__name__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a bad argument already printed: the code, not an exception, to a caller
        return e.code if isinstance(e.code, int) else 2
    mod = importlib.import_module(args._module)
    try:
        code: int = mod.run(args)
    except (UsageError, OutputError) as e:
        print(f"bendtorch {args.command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"bendtorch {args.command}: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"bendtorch {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


def run_command() -> NoReturn:
    """The `bendtorch` command: main(), then the process ends without the interpreter's teardown.

    After a command the interpreter holds about 1,100 modules (numba's typing registries, the loaded kernels,
    matplotlib, scipy); freeing them one by one at exit took 0.25-0.5 s (of a 1.6 s warm `train --model tiny`, on
    an AMD EPYC), work the operating system does at once when the process ends. So the exit handlers run (atexit:
    the cold-start worker's stop, temporary folders, process pools), the standard streams are flushed, and the
    process ends with main's code. Where a thread that is not a daemon is still running, the ordinary exit waits
    for it as Python would. An exception out of main (a bug, not a user's mistake) takes the ordinary exit too."""
    code = main()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(code)


if __name__ == "__main__":
    run_command()
