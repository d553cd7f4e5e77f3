"""mlx against the conformance law erf/odd (bit for bit): erf(-x) against -erf(x).

Found by bendtorch's conformance laws on AMD EPYC (family 26, model 2), 2 cores: 4 of 16 elements differ; first at
(0,): 80000000 against 00000000. Run with python; it prints how many elements differ and the first, as bit patterns
(got against want).
"""
import numpy as np
import mlx.core as mx
import mlx.nn as nn


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


mx.set_default_device(mx.cpu)


def _erf(x):
    return mx.erf(x)


def erf(x):
    a = mx.array
    y = _erf(a(x))
    mx.eval(y)
    return np.array(y)


x = f32("""
    00000000 407ae148 00000001 3f580000 00000000 407ae148 00000001 3f580000
    00000000 407ae148 00000001 3f580000 00000000 407ae148 00000001 3f580000
""", (16,))

got = erf(-x)
want = -erf(x)

g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
bad = g.view(np.uint32) != w.view(np.uint32)
idx = np.argwhere(bad)
print(f"{int(bad.sum())} of {bad.size} elements differ", end="")
if idx.size:
    k = tuple(int(a) for a in idx[0])
    print(f"; first at {k}: {g[k].view(np.uint32):08x} ({float(g[k])!r}) against "
          f"{w[k].view(np.uint32):08x} ({float(w[k])!r})")
else:
    print()
