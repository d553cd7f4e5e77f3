"""RoPE's table and rotation (main.bend lines 2120-2197), float32.

Rows are positions (row r is position r mod t); a row holds h heads of 2*half numbers, and the pair
(x[c], x[c + half]) of a head turns by the angle of table entry (r mod t, c).

Table (rope_ang, line 2133; rope_tab, line 2137), entry e = pos*half + c, every operation in float32:
    ang = (1 / powf(base, float32(c + c) / float32(half + half))) * float32(pos),   cos = cosf(ang), sin = sinf(ang)
with impl.kernels.libm's powf, cosf, sinf (impl's portable functions unless BENDTORCH_LIBM=clib).

Rotation (rope_p3, line 2151), each pair on its own, in PyTorch's order of operations:
    forward:  x[c] = a*cos + (-b)*sin,   x[c+half] = b*cos + a*sin
    backward: x[c] = a*cos + b*sin,      x[c+half] = b*cos + (-(a*sin))
with a = x[c], b = x[c + half]. The kernel writes a new array (fwd and bwd never write into their input).
The plain version is the same expressions in numpy float32 (one rounding each).

The built-in models' tables are computed ahead and shipped beside this file (rope_tables.npz, written by
`python -m bendtorch.impl.kernels.rope_tables`): computing one compiles powf, cosf and sinf, 3 s of the 14 s a cold
`train --model tiny` compiles, for a table of 64 numbers. impl's bits are the same on every machine, so a table
computed once holds everywhere; it is read only with impl's portable functions (BENDTORCH_LIBM=clib's follow the C
library) and only while its digest matches the source its bits follow from (this file, libm.py,
impl.kernels.portable). Entry (pos, c) depends on pos, c, half and base alone, so one table of T positions serves
every t <= T. tests/test_rope_shipped.py recomputes every shipped table.
"""

from __future__ import annotations

import functools
import hashlib
import warnings
import zipfile
from pathlib import Path

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import sized

from bendtorch.impl.kernels import libm, portable

F = npt.NDArray[np.float32]
F32 = np.float32

HERE = Path(__file__).resolve().parent
SHIPPED = HERE / "rope_tables.npz"


def rope_table(t: int, half: int, base: np.float32) -> tuple[F, F]:
    """(cos, sin), each t x half, entry (pos, c) from rope_ang's operations in its order (line 2133): the shipped
    table's first t rows where one is current (new arrays, the caller's own), else computed."""
    got = shipped_table(t, half, base)
    return got if got is not None else computed_table(t, half, base)


def computed_table(t: int, half: int, base: np.float32) -> tuple[F, F]:
    """rope_table's numbers computed here, entry by entry, with libm's powf, cosf and sinf."""
    base = F32(base)
    cs = np.zeros((t, half), dtype=np.float32)
    sn = np.zeros((t, half), dtype=np.float32)
    for e in range(t * half):
        pos, c = divmod(e, half)
        ex = F32(F32(c + c) / F32(half + half))
        ang = F32(F32(F32(1.0) / libm.powf(base, ex)) * F32(pos))
        cs[pos, c] = libm.cosf(ang)
        sn[pos, c] = libm.sinf(ang)
    return cs, sn


# ---------------------------------------------------------------------------------------------------------------
# the shipped tables: computed ahead, read back while the source they follow from is unchanged
# ---------------------------------------------------------------------------------------------------------------


def source_digest() -> str:
    """sha256 of the source a portable table's bits follow from: impl.kernels.portable (its SOURCE_DIGEST), libm.py
    and this file."""
    h = hashlib.sha256(f"{portable.SOURCE_DIGEST}\n".encode())
    for f in (HERE / "libm.py", HERE / "rope.py"):
        h.update(f.read_bytes())
    return h.hexdigest()


def table_key(half: int, base: np.float32) -> str:
    """The name a table has in the shipped file: half and the bits of base as float32 ("4_461c4000")."""
    return f"{half}_{int(np.asarray(F32(base)).view(np.uint32)):08x}"


@functools.cache
def shipped_tables(path: Path) -> dict[str, tuple[F, F]]:
    """The current tables of a shipped file by key; none for BENDTORCH_LIBM=clib or a file of other source. The file
    is only a speed aid: one that cannot be read or holds a malformed table is warned of and not used."""
    if libm.MODE != "portable" or not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["digest"]) != source_digest():
                return {}
            out = {}
            for name in z.files:
                if name.startswith("cos_"):
                    key = name[4:]
                    cs, sn = z[name], z["sin_" + key]
                    half = int(key.split("_")[0])
                    if cs.dtype != np.float32 or cs.ndim != 2 or cs.shape[1] != half or sn.shape != cs.shape \
                            or sn.dtype != np.float32:
                        raise ValueError(f"table {key}: {cs.dtype} {cs.shape} and {sn.dtype} {sn.shape}")
                    out[key] = (cs, sn)
            return out
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        warnings.warn(f"{path}: RoPE tables not read ({type(e).__name__}: {e}); computing them instead",
                      RuntimeWarning, stacklevel=2)
        return {}


def shipped_table(t: int, half: int, base: np.float32) -> tuple[F, F] | None:
    """The first t rows of the shipped table for (half, base), as new arrays; None when none is shipped, it has
    fewer than t rows, or it is not current (see shipped_tables)."""
    got = shipped_tables(SHIPPED).get(table_key(half, base))
    if got is None or got[0].shape[0] < t:
        return None
    return got[0][:t].copy(), got[1][:t].copy()


@sized
@numba.njit(cache=True, parallel=True)
def rope_apply(x: F, cs: F, sn: F, t: int, h: int, half: int, fwd: bool) -> F:
    """The rotated copy of x (n x w, w = h*2*half): forward or backward (rope_p3, line 2151). Rows are independent
    (prange over rows, each element's value one fixed expression)."""
    n = x.shape[0]
    y = np.empty_like(x)
    for r in numba.prange(n):
        pos = r % t
        for hh in range(h):
            c0 = hh * (half + half)
            for c in range(half):
                a = x[r, c0 + c]
                b = x[r, c0 + c + half]
                co = cs[pos, c]
                z = sn[pos, c]
                if fwd:
                    y[r, c0 + c] = a * co + (-b) * z
                    y[r, c0 + c + half] = b * co + a * z
                else:
                    y[r, c0 + c] = a * co + b * z
                    y[r, c0 + c + half] = b * co + (-(a * z))
    return y


def rope_apply_plain(x: F, cs: F, sn: F, t: int, h: int, half: int, fwd: bool) -> F:
    n = x.shape[0]
    xr = x.reshape(n, h, 2, half)
    a = xr[:, :, 0, :]
    b = xr[:, :, 1, :]
    pos = np.arange(n) % t
    co = cs[pos][:, None, :]
    z = sn[pos][:, None, :]
    y = np.empty_like(xr)
    if fwd:
        y[:, :, 0, :] = a * co + (-b) * z
        y[:, :, 1, :] = b * co + a * z
    else:
        y[:, :, 0, :] = a * co + b * z
        y[:, :, 1, :] = b * co + (-(a * z))
    return y.reshape(n, h * 2 * half)
