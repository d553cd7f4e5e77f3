"""torch_compile (static shapes) against the conformance law batch_invariance/linear (bit for bit): linear: row 0 in a
batch of 2 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 9 of 16 elements
differ; first at (0, 1): 3e141058 against 3e141060. Run with python; it prints how many elements differ and the
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


_linear = torch.compile(_linear, backend="inductor", mode="default", dynamic=False)


def linear(x, w, b):
    t = torch.from_numpy
    with torch.no_grad():
        return _linear(t(x), t(w), None if b is None else t(b)).numpy()


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = f32("""
    3e00bf6c be07467f 3f23f2bd 3dd6d5df bf0921a1 3eb922fd 3fa6e979 3f7273e6
    bf3427fe bfa1f955 bf1f8eea 3d29456e c014cd4e be600aec bf9f7a03 bf3b75e0
    bf0b548f bea1f218 3ed2c13d 3f857114 be039e97 3faee846 bf2a4a33 3eb3f921
    3f6749d2 3dc08985 bf3e55f8 bf6bf632 beea5b0a 3e617ad5 bf813b2b be56321f
    be230be2 3f0a74db
""", (2, 17))
i = 0
w = np.load(HERE / 'torch-compile-static-shapes--batch_invariance--linear.w.npy', allow_pickle=False)
b = f32("""
    3e419736 bf05d2d8 bed37d11 c01c4100 3fe65cd0 3f927407 bea69dd2 3f461830
    3e8ffad8 bf0dc755 3f7a41dc be9f0145 bea85b9b bf4aca21 3ee8f044 bdcb2859
""", (16,))

got = linear(x, w, b)[i:i + 1]
want = linear(x[i:i + 1], w, b)

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
