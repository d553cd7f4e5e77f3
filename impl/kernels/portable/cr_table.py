"""The exception tables of impl's portable functions: the inputs on which a pair evaluation misrounds, with their
correctly rounded values.

raw_exp32, raw_log32, raw_tanh32, raw_sin32 and raw_cos32 misround where f(x) lies within their pair's error of a
rounding boundary: a few thousand inputs each out of 2^32, all of them found by the exhaustive checker (CORE-MATH
lists such inputs the same way). exp32, ..., cos32 look x up in the function's table and return its value there.
A table is a perfect hash (hash and displace): h = fmix32(bits of x), the slot (h mod M) xor DISP[(h >> 16) mod
NB], M and NB powers of two up to 2^16 (so the two index fields of h never overlap); a slot holds an input's bits
and its correctly rounded bits, an empty slot the NaN 0xFFFFFFFF twice. No branch: LLVM vectorises the lookup in
exp_array. The tables are built by `python -m bendtorch.reports.cr_tables` from the checker's lists and stored in
impl/kernels/cr_exceptions.npz; CR_TABLES_SHA256 below is their digest, checked at import, and numba's cache (a
folder named by the digest of this package's source: __init__.py) never serves code compiled with other tables
because changing them means changing that line.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numba
import numpy as np

from bendtorch.impl.kernels.portable.eft import M32, f2u, u2f

CR_FUNCS = ("exp", "log", "tanh", "sin", "cos")
CR_TABLES_FILE = Path(__file__).parents[1] / "cr_exceptions.npz"
CR_TABLES_SHA256 = "65aa3146472646c3f1024c116433e0cdda2eb4492ed563214b0cd60fd54aed45"
_EMPTY = 0xFFFFFFFF


@numba.njit(cache=True, inline="always")
def fmix32(k: Any) -> Any:
    """MurmurHash3's 32-bit finaliser (a bijection of 32-bit words), on a uint64 holding a 32-bit word."""
    h = k ^ (k >> np.uint64(16))
    h = (h * np.uint64(0x85EBCA6B)) & M32
    h = h ^ (h >> np.uint64(13))
    h = (h * np.uint64(0xC2B2AE35)) & M32
    return h ^ (h >> np.uint64(16))


@numba.njit(cache=True)
def _fmix32_each(k: Any) -> Any:
    h = np.empty(k.size, dtype=np.uint64)
    for i in range(k.size):
        h[i] = fmix32(np.uint64(k[i]))
    return h


def fmix32_np(k: Any) -> Any:
    """fmix32 of each word of an array of uint32 (the table builder's hash: the very function cr_fix calls)."""
    return _fmix32_each(np.ascontiguousarray(k, dtype=np.uint32).reshape(-1))


def build_cr_table(keys: Any, vals: Any) -> tuple[Any, Any, Any]:
    """The perfect hash of inputs `keys` (distinct float32 bits, no NaN) to `vals`: (KEYS, VALS, DISP), uint32.
    Deterministic: buckets in order of size (largest first), then index; each takes the least displacement that
    puts its inputs in free slots."""
    keys = np.asarray(keys, dtype=np.uint32)
    vals = np.asarray(vals, dtype=np.uint32)
    n = keys.size
    if np.unique(keys).size != n:
        raise ValueError("the table's inputs must be distinct")
    m = 1
    while m < 2 * n:             # load at most 1/2
        m *= 2
    nb = max(1, m // 4)          # buckets of about 2 inputs
    if m > 1 << 16:
        raise ValueError(f"{n} inputs: more than the 2^15 a table holds")
    h = fmix32_np(keys)
    base = (h & np.uint64(m - 1)).astype(np.int64)
    bucket = ((h >> np.uint64(16)) & np.uint64(nb - 1)).astype(np.int64)
    tk = np.full(m, _EMPTY, dtype=np.uint32)
    tv = np.full(m, _EMPTY, dtype=np.uint32)
    disp = np.zeros(nb, dtype=np.uint32)
    used = np.zeros(m, dtype=bool)
    members: dict[int, list[int]] = {}
    for i in np.argsort(bucket, kind="stable"):
        members.setdefault(int(bucket[i]), []).append(int(i))
    for b, idx in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        for d in range(m):
            slots = base[idx] ^ d
            if np.unique(slots).size == slots.size and not used[slots].any():
                used[slots] = True
                tk[slots] = keys[idx]
                tv[slots] = vals[idx]
                disp[b] = d
                break
        else:
            raise ValueError(f"bucket {b} found no free slots")
    return tk, tv, disp


def cr_tables_digest(tables: dict[str, Any]) -> str:
    """sha256 of the tables' contents (little-endian uint32, in CR_FUNCS order), independent of the file format."""
    hs = hashlib.sha256()
    for f in CR_FUNCS:
        for part in ("keys", "vals", "disp"):
            a = np.ascontiguousarray(tables[f"{f}_{part}"]).astype("<u4")
            hs.update(f"{f}_{part}:{a.size};".encode())
            hs.update(a.tobytes())
    return hs.hexdigest()


def load_cr_tables(path: Path = CR_TABLES_FILE) -> dict[str, Any]:
    """The tables in `path` (an .npz of plain uint32 arrays; nothing unpickled), their digest checked."""
    want = [f"{f}_{part}" for f in CR_FUNCS for part in ("keys", "vals", "disp")]
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in want if k not in z.files]
        if missing:
            raise RuntimeError(f"{path}: no array {missing[0]}")
        tables = {k: np.ascontiguousarray(z[k]).astype(np.uint32) for k in want}
    got = cr_tables_digest(tables)
    if got != CR_TABLES_SHA256:
        raise RuntimeError(f"{path}: its tables' sha256 is {got}, but impl/kernels/portable/cr_table.py expects "
                           f"{CR_TABLES_SHA256} (CR_TABLES_SHA256): rebuild it or update that line")
    return tables


_CR = load_cr_tables()
EXP_KEYS, EXP_VALS, EXP_DISP = _CR["exp_keys"], _CR["exp_vals"], _CR["exp_disp"]
LOG_KEYS, LOG_VALS, LOG_DISP = _CR["log_keys"], _CR["log_vals"], _CR["log_disp"]
TANH_KEYS, TANH_VALS, TANH_DISP = _CR["tanh_keys"], _CR["tanh_vals"], _CR["tanh_disp"]
SIN_KEYS, SIN_VALS, SIN_DISP = _CR["sin_keys"], _CR["sin_vals"], _CR["sin_disp"]
COS_KEYS, COS_VALS, COS_DISP = _CR["cos_keys"], _CR["cos_vals"], _CR["cos_disp"]


@numba.njit(cache=True, inline="always")
def cr_slot(keys: Any, disp: Any, h: Any) -> Any:
    """The slot of the table (keys, disp) whose key is the input of hash h = fmix32(its bits), if any is."""
    return (h & np.uint64(keys.size - 1)) ^ np.uint64(disp[(h >> np.uint64(16)) & np.uint64(disp.size - 1)])


@numba.njit(cache=True, inline="always")
def cr_fix(keys: Any, vals: Any, disp: Any, x: np.float32, y: np.float32) -> Any:
    """y, or the table's correctly rounded value when x is one of its inputs (no branch)."""
    xb = f2u(x)
    s = cr_slot(keys, disp, fmix32(np.uint64(xb)))
    return u2f(vals[s]) if keys[s] == xb else y
