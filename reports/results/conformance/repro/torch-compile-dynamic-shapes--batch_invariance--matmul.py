"""torch_compile (dynamic shapes) against the conformance law batch_invariance/matmul (bit for bit): x·Wᵀ: row 29 in a
batch of 64 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 1 of 1 elements
differ; first at (0, 0): bdd80278 against bdd80270. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import torch
import torch.nn.functional as F


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _linear(x, w, b):
    return F.linear(x, w, b)


_linear = torch.compile(_linear, backend="inductor", mode="default", dynamic=True)


def linear(x, w, b):
    t = torch.from_numpy
    with torch.no_grad():
        return _linear(t(x), t(w), None if b is None else t(b)).numpy()


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'torch-compile-dynamic-shapes--batch_invariance--matmul.x.npy', allow_pickle=False)
i = 29
w = f32("""
    bf5f4f66 bfc20012 be889ca5 bf703d8e 3ee8efbf 3f81f116 be291838 c0118a1a
    bfdb53db 3db9df41 3fb5f85a 3bb06e91 bd759f56 3fb3350a 3eeb6821 3eebe6d2
    80000001
""", (1, 17))

got = linear(x, w, None)[i:i + 1]
want = linear(x[i:i + 1], w, None)

g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
bad = g.view(np.uint32) != w.view(np.uint32)
bad &= ~(np.isnan(g) & np.isnan(w))  # a NaN matches any NaN
idx = np.argwhere(bad)
print(f"{int(bad.sum())} of {bad.size} elements differ", end="")
if idx.size:
    k = tuple(int(a) for a in idx[0])
    print(f"; first at {k}: {g[k].view(np.uint32):08x} ({float(g[k])!r}) against "
          f"{w[k].view(np.uint32):08x} ({float(w[k])!r})")
else:
    print()
