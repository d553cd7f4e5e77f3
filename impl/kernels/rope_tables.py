"""The built-in models' RoPE tables, computed and written beside impl.kernels.rope to ship with the package (it
reads them back while the source they follow from is unchanged; see its docstring). Run after changing that source:

    python -m bendtorch.impl.kernels.rope_tables [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels import rope as R
from bendtorch.records.durable import write_npz


def write_shipped(path: Path, tables: Iterable[tuple[int, int, float]]) -> list[str]:
    """Compute the tables (t, half, base) with impl's portable functions (the longest t for each (half, base)) and
    write them, with the source's digest, to `path` (atomically). Returns the keys written."""
    if libm.MODE != "portable":
        raise RuntimeError("the shipped RoPE tables are impl's portable functions': unset BENDTORCH_LIBM")
    longest: dict[tuple[int, np.float32], int] = {}
    for t, half, base in tables:
        k = (half, np.float32(base))
        longest[k] = max(longest.get(k, 0), t)
    arrays: dict[str, npt.NDArray[np.generic]] = {"digest": np.array(R.source_digest())}
    for (half, b32), t in sorted(longest.items()):
        key = R.table_key(half, b32)
        arrays["cos_" + key], arrays["sin_" + key] = R.computed_table(t, half, b32)
    write_npz(path, arrays)
    R.shipped_tables.cache_clear()
    return sorted(k[4:] for k in arrays if k.startswith("cos_"))


def main(argv: Sequence[str] | None = None) -> int:
    from bendtorch.impl.llama import CONFIGS  # the models' module builds on the kernels

    p = argparse.ArgumentParser(prog="python -m bendtorch.impl.kernels.rope_tables",
                                description="compute the built-in models' RoPE tables and write them to ship with "
                                            "impl.kernels.rope (after a change to the source they follow from)")
    p.add_argument("--out", type=Path, default=R.SHIPPED, help=f"the file to write (default: {R.SHIPPED.name} "
                                                               "beside impl.kernels.rope)")
    a = p.parse_args(argv)
    keys = write_shipped(a.out, [(c.t, c.hd // 2, c.theta) for c in CONFIGS.values()])
    print(f"{a.out.name}: tables {', '.join(keys)} (half_base)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
