"""reports/cr_tables.py, the maker of impl's exception tables: on ranges holding some of a committed table's inputs,
the checker's list of the inputs the raw function misrounds is exactly the table's inputs there, with the table's
values; the file it writes loads in impl (digest checked)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bendtorch.impl.kernels.portable import cr_table as H
from bendtorch.reports import cr_tables

EMPTY = np.uint32(0xFFFFFFFF)


@pytest.mark.parametrize("func", ["exp", "log", "tanh"])
def test_the_checkers_list_on_a_range_is_the_tables(func: str, tmp_path: Path) -> None:
    tk, tv = getattr(H, f"{func.upper()}_KEYS"), getattr(H, f"{func.upper()}_VALS")
    keys = np.sort(tk[tk != EMPTY])
    k0 = int(keys[keys.size // 3]) & 0x7FFFFFFF
    lo = max(0, (k0 - 6000) & ~31)
    hi = lo + 12288
    got_k, got_v = cr_tables.misrounded(func, tmp_path, 1, progress=False, lo=lo, hi=hi, chunk=4096)
    pos = tk & np.uint32(0x7FFFFFFF)
    sel = (tk != EMPTY) & (pos >= lo) & (pos < hi)
    order = np.argsort(tk[sel])
    assert got_k.size >= 1
    assert (got_k == tk[sel][order]).all() and (got_v == tv[sel][order]).all()


def test_the_written_file_loads_in_impl(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    cr_tables.write(path, H.load_cr_tables())
    assert H.cr_tables_digest(H.load_cr_tables(path)) == H.CR_TABLES_SHA256
