"""`python -m bendtorch.reports.cr_tables`: the exception tables of impl's portable functions
(impl/kernels/cr_exceptions.npz), from the exhaustive checker.

For each of exp, log, tanh, sin and cos, the checker runs the pair evaluation alone (library `impl_raw`,
impl.kernels.portable.raw_*) on all 2^32 inputs (resuming from the sealed chunks under OUT/FUNCTION/chunks/impl_raw/,
the same ones `bendtorch sweep FUNCTION` writes, reused only under the same key) and lists every input it does not
round correctly, with the correctly rounded float32 (the checker's reference: float64, and mpmath where float64 is too
close to a rounding boundary to decide). Those lists, as perfect hashes (cr_table.build_cr_table), are the tables;
the file is written atomically and the digest printed: CR_TABLES_SHA256 in impl/kernels/portable/cr_table.py must be
set to it (impl refuses other tables at import).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bendtorch.reports import sweep as S
from bendtorch.reports.sweep.api import range_accumulators
from bendtorch.reports.sweep.chunks import MISS_CAP
from bendtorch.reports.sweep.chunkpass import MISS_LISTED

DEFAULT_OUT = S.RESULTS


def misrounded(func: str, out: Path, workers: int, progress: bool = True, lo: int = 0, hi: int = S.FULL_HI,
               chunk: int = 1 << 21) -> tuple[Any, Any]:
    """Every input raw_FUNC32 misrounds (sorted bits) and its correctly rounded bits: all 2^32 inputs, or the
    positive patterns [lo, hi) and their negatives."""
    tot = range_accumulators(func, ["impl_raw"], out, lo, hi, chunk, workers, progress=progress)["impl_raw"]
    if tot["miss"].size != tot["miss_n"][0]:
        raise RuntimeError(f"{func}: the list of misrounded inputs is incomplete (more than {MISS_CAP} in one chunk "
                           f"or {MISS_LISTED} in all)")
    keys = (tot["miss"].astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)
    order = np.argsort(keys, kind="stable")
    return keys[order], tot["miss_want"][order].astype(np.uint32)


def build(out: Path, workers: int, progress: bool = True) -> dict[str, Any]:
    """Every function's table from its list: {FUNC_keys, FUNC_vals, FUNC_disp} (cr_table.build_cr_table)."""
    from bendtorch.impl.kernels.portable import cr_table

    tables: dict[str, Any] = {}
    for func in cr_table.CR_FUNCS:
        keys, vals = misrounded(func, out, workers, progress)
        tk, tv, td = cr_table.build_cr_table(keys, vals)
        tables.update({f"{func}_keys": tk, f"{func}_vals": tv, f"{func}_disp": td})
        print(f"{func}: {keys.size} inputs misrounded by raw_{func}32, a table of {tk.size} slots", file=sys.stderr)
    return tables


def write(path: Path, tables: dict[str, Any]) -> None:
    """The tables to `path` as plain little-endian uint32 arrays (compressed .npz), atomically."""
    from bendtorch.records.durable import write_npz
    write_npz(path, {k: np.ascontiguousarray(v).astype("<u4") for k, v in tables.items()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bendtorch.reports.cr_tables",
                                 description="the exception tables of impl's portable functions, from the "
                                             "exhaustive checker's lists of the inputs their pair evaluation "
                                             "misrounds")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the atlas directory holding the sweeps' chunks")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local processes (default: every core)")
    ap.add_argument("--file", type=Path, default=None, help="where to write the tables (default: impl's own file)")
    ap.add_argument("--fresh", action="store_true",
                    help="sweep the raw functions anew (after changing one) instead of resuming from their chunks")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    a = ap.parse_args(argv)
    if a.workers < 1:
        ap.error("--workers must be >= 1")
    try:
        return _run(a)
    except (RuntimeError, ValueError, OSError, S.SweepError) as e:
        print(f"cr_tables: error: {e}", file=sys.stderr)
        return 2


def _run(a: argparse.Namespace) -> int:
    from bendtorch.impl.kernels.portable import cr_table

    if a.fresh:
        import shutil
        for func in cr_table.CR_FUNCS:
            shutil.rmtree(a.out / func / "chunks" / "impl_raw", ignore_errors=True)
    tables = build(a.out, a.workers, not a.quiet)
    digest = cr_table.cr_tables_digest(tables)
    path = a.file or cr_table.CR_TABLES_FILE
    write(path, tables)
    same = digest == cr_table.CR_TABLES_SHA256
    print(f"wrote {path}; digest {digest}" + ("" if same else " (set CR_TABLES_SHA256 in "
                                                              "impl/kernels/portable/cr_table.py to it)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
