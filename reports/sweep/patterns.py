"""The sample mode's inputs (spread bit patterns plus the special values) and the memory a sweep needs before it
allocates: a request that cannot fit is refused with the estimate and the memory this process can have."""

from __future__ import annotations

from typing import Any

import numpy as np

FULL_HI = 1 << 31   # the positive float32 bit patterns: [0, 2^31), each also negated
# bytes a sample holds per positive pattern while its patterns are made (float64 and int64 spreads, their unique
# copies), and while one task runs on them in a process (the reference's float64 value, scale and ulp, float32
# value and hard flag for x and -x, the inputs, one library's results, its copies in and out of the library, and the
# twin's rows): measured peaks, with room
PATTERN_BYTES = 48
TASK_BYTES = 180


def special_patterns() -> Any:
    """The positive bit patterns of special values: zeros, subnormal ends, the normal range's ends, the erf pieces'
    boundaries and their neighbours, values where functions change regime, inf and NaNs with payloads."""
    from bendtorch.impl.kernels.erf import BOUNDS

    vals = [0.0, 1e-45, 2.8e-45, 1e-40, 1.1754942e-38, 1.17549435e-38, 1e-30, 2.0 ** -12, 1e-3, 0.1, 0.5,
            1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 3.9192, 3.9193, 4.0, 6.0, 10.0, 1e30, 3.4028235e38, np.inf,
            88.72283, 88.72284, 87.33654, 103.97208, 104.0, 9.01, 0.7853982, 1.5707964, 3.1415927, 6.2831855,
            2.3994, 0.75179, 201.0, 1e4, 1e6]
    fs = [np.float32(v) for v in vals]
    for b in BOUNDS:
        x = np.float32(b)
        fs += [x, np.nextafter(x, np.float32(0)), np.nextafter(np.nextafter(x, np.float32(0)), np.float32(0)),
               np.nextafter(x, np.float32(9)), np.nextafter(np.nextafter(x, np.float32(9)), np.float32(9))]
    bits = np.array(fs, dtype=np.float32).view(np.uint32)
    nans = np.array([0x7F800001, 0x7FBFFFFF, 0x7FC00000, 0x7FC12345, 0x7FFFFFFF], dtype=np.uint32)
    return np.unique(np.concatenate([bits, nans]))


def sample_patterns(n: int, with_specials: bool = True) -> Any:
    """n spread inputs: n/2 positive patterns evenly spaced over [0, 2^31) (each also negated), plus the special
    values; the count padded with further spread patterns to a multiple of 32 (torch's whole-vector loops)."""
    m = max(1, n // 2)
    spread = np.unique((np.arange(m, dtype=np.float64) * (FULL_HI / m)).astype(np.int64)).astype(np.uint32)
    allb = np.unique(np.concatenate([spread, special_patterns()])) if with_specials else spread
    pad = (-allb.size) % 32
    k = 1
    while pad:
        extra = np.setdiff1d(np.arange(k * 7919, (k + 1) * 7919 * 64, 7919 * 2, dtype=np.uint32), allb)[:pad]
        allb = np.unique(np.concatenate([allb, extra]))
        pad = (-allb.size) % 32
        k += 1
    return allb


def sample_bytes(n: int, workers: int) -> int:
    """The memory a sample of n inputs needs: its patterns in this process, and a task's arrays in each process at
    work (this one too when it runs the tasks)."""
    from bendtorch.reports.sweep.engine import sample_parts

    m = max(1, n // 2)
    part = -(-m // sample_parts(m))
    return PATTERN_BYTES * m + TASK_BYTES * part * max(1, workers)
