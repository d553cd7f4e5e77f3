"""impl's own float32 exp, log, tanh, sin, cos and pow: float32 arithmetic and integer operations only, so they give
the same bits on every machine, C library and operating system (the C library's expf, logf, ... differ between C
libraries and their releases, and the seed's F32 builtins are its runtime's, not fixed by its text).

Each function carries its result as an unevaluated pair of float32 numbers hi + lo (about 48 significant bits, the
error-free transformations of eft.py) and rounds once at the end; the error before that last rounding is a few
2^-36 of the result or less, so the result is the correctly rounded float32 except on inputs within that distance of
a rounding boundary, and always faithful (raw_exp32, raw_log32, ...). The exhaustive checker (reports/sweep.py)
measures each function on all 2^32 inputs and lists those inputs, a few thousand a function; exp32, log32, tanh32,
sin32 and cos32 return the correctly rounded value there from an exception table (cr_table.py), so they are correctly
rounded on every input. pow32, a function of two float32s (2^64 inputs, beyond any list), is the pair evaluation
alone.

    tables.py     2^(j/64), log(1/c), sin(j/64), cos(j/64), ln 2, pi/2, the bits of 2/pi, from exact integers
    eft.py        a float32's bits, the shared constants, two_sum, fast_two_sum, split, two_prod
    cr_table.py   the exception tables (a perfect hash), their digest checked at import
    exp.py        exp32, raw_exp32, exp_array (a row at a time, vectorised; its form follows target.py)
    log.py        log32, raw_log32
    tanh.py       tanh32, raw_tanh32
    sincos.py     sin32, cos32, raw_sin32, raw_cos32 and their Payne-Hanek reduction
    pow.py        pow32
    target.py     the CPU numba compiles for (its features pick speed choices, never bits)

Every float32 literal is a module constant of type np.float32 (a bare 1.0 is wider in numba and would promote the
arithmetic), and no operation is fused (numba without fastmath never contracts).

The functions call one another across these files, and numba's on-disk cache is keyed on a function's own file
alone (it would keep serving exp32 compiled with an older two_sum, or with older exception tables). So every function
here is compiled into one cache folder named by SOURCE_DIGEST, the digest of all of this package's source (which
names the tables' digest): `CACHE_DIR`, under NUMBA_CACHE_DIR when set, else the user's cache. impl.kernels.libm
caches the kernels that call these functions in the same folder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba


def numba_cache_dir(name: str) -> str:
    """The folder `name` of numba's on-disk cache: under NUMBA_CACHE_DIR when set, else ~/.cache/bendtorch."""
    base = getattr(numba.config, "CACHE_DIR", "") or os.path.join(os.path.expanduser("~"), ".cache", "bendtorch")
    return os.path.join(base, name)


def _source_digest() -> str:
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f"{f.name}\n".encode())
        h.update(f.read_bytes())
    return h.hexdigest()


SOURCE_DIGEST = _source_digest()
CACHE_DIR = numba_cache_dir(f"numba-libm-portable-{SOURCE_DIGEST[:16]}")
CACHE_ROOT = os.path.dirname(CACHE_DIR)  # the folder of every bendtorch cache folder (libm's, the checker's)

_outer_cache_dir = getattr(numba.config, "CACHE_DIR", "")
setattr(numba.config, "CACHE_DIR", CACHE_DIR)  # read by each njit(cache=True) as it is defined
try:
    from bendtorch.impl.kernels.portable.exp import exp32, exp_array, raw_exp32
    from bendtorch.impl.kernels.portable.log import log32, raw_log32
    from bendtorch.impl.kernels.portable.pow import pow32
    from bendtorch.impl.kernels.portable.sincos import cos32, raw_cos32, raw_sin32, sin32
    from bendtorch.impl.kernels.portable.tanh import raw_tanh32, tanh32
finally:
    setattr(numba.config, "CACHE_DIR", _outer_cache_dir)

__all__ = ["CACHE_DIR", "CACHE_ROOT", "SOURCE_DIGEST", "cos32", "exp32", "exp_array", "log32", "numba_cache_dir",
           "pow32", "raw_cos32", "raw_exp32", "raw_log32", "raw_sin32", "raw_tanh32", "sin32", "tanh32"]
