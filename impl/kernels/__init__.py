"""impl's compiled kernels: numba, no fastmath (so no fused multiply-add and no reassociation), every float32
literal written as np.float32 (a bare 1.0 is wider than float32 in numba and would promote the arithmetic), every
loop order fixed and documented. Each kernel module keeps a plain version of the same order (`*_plain`), and tests/
checks the two agree bit for bit.

The transcendental functions (exp, log, tanh, sin, cos, pow) are impl's own float32 code (`impl.kernels.portable`),
called through `impl.kernels.libm` (`libm.exp32`, ... in kernels, `libm.expf`, ... in plain code), which can select
the C library's expf, logf, ... instead (BENDTORCH_LIBM=clib); numpy's float32 ufuncs have their own SIMD versions
whose bits differ from the C library's, and from one CPU's SIMD level to another's, so impl never uses them where
bits matter.
"""

from bendtorch.impl.kernels import cachelock

cachelock.install()  # before any kernel is compiled: numba's cache index written by one process at a time
