"""`bendtorch bench`: one training step of impl's Llama and of the same Llama in PyTorch, timed in the same process
(bendtorch.bench.bench has the details).

    bendtorch bench                       both models
    bendtorch bench --models tiny --json bench.json
    bendtorch bench --laws --state-bytes --json reports/results/bench/MACHINE.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bendtorch.commands.args import int_in, json_target



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", nargs="+", choices=("tiny", "smol"), default=["tiny", "smol"],
                   help="which models (default: tiny smol)")
    p.add_argument("--rounds", type=int_in(1, 1000), default=3,
                   help="rounds, each timing impl then PyTorch on every model; the ratios are the median over the "
                        "rounds, with their range (default 3)")
    p.add_argument("--repeats", type=int_in(5, 10**6), default=None,
                   help="timed steps after the 2 warm-ups (>= 5; default 25 for tiny, whose steps take "
                        "milliseconds and meet the noise of a shared machine, 5 for smol)")
    p.add_argument("--layers", type=int_in(1, 64), default=None, help="override smol's layer count (default: all 30)")
    p.add_argument("--threads", type=int_in(1, 1024), default=None,
                   help="threads for both libraries (numba and torch; default: each library's default)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help="write the figures as JSON (its directory must exist)")
    p.add_argument("--laws", action="store_true",
                   help="also time `bendtorch laws --profile ci` in a subprocess (minutes)")
    p.add_argument("--no-startup", action="store_true",
                   help="skip the fresh-process timings (the first training step, the sampled sweep)")
    p.add_argument("--state-bytes", action="store_true",
                   help="also measure the optimizer state's bytes after one smol step: F32 AdamW against packed "
                        "BF16 moments (bench/state_bytes.py)")


def run(a: argparse.Namespace) -> int:
    json_path = json_target(a.json) if a.json is not None else None
    from bendtorch.bench.bench import bench

    bench(tuple(a.models), a.repeats, a.layers, a.threads, json_path, a.laws, not a.no_startup, a.state_bytes,
          a.rounds)
    return 0
