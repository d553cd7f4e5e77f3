"""torch_compile (static shapes) against the conformance law batch_invariance/layer_norm (bit for bit): layer_norm: row
28 in a batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 11 of 17
elements differ; first at (0, 0): 3e280140 against 3e280158. Run with python; it prints how many elements differ and
the first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import torch
import torch.nn.functional as F


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


_layer_norm = torch.compile(_layer_norm, backend="inductor", mode="default", dynamic=False)


def layer_norm(x, w, b, eps):
    t = torch.from_numpy
    with torch.no_grad():
        return _layer_norm(t(x), t(w), t(b), eps).numpy()


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'torch-compile-static-shapes--batch_invariance--layer_norm.x.npy', allow_pickle=False)
i = 28
w = f32("""
    3f2c1d27 bfe3dcba 3f24a140 bf2f67f6 bf0a43ff 807fffff 3ebfc169 3f7c81b2
    bfa89d79 3f29c5e8 bf5ccef8 3f3f76fa 3f3d9b03 3f86a9a8 bfb2b5d0 3f303618
    beffabf9
""", (17,))
b = f32("""
    bf9cd5c4 3fa37bad 3fcb98f7 4004d669 bc6b5758 3fc2b106 be9481d4 bc7a61bc
    3f654e3c 3f13298a 3f79d466 3e530312 3d1e2d7b 3fe2a322 beadd95d bf27169b
    3f313e04
""", (17,))

got = layer_norm(x, w, b, 1e-5)[i:i + 1]
want = layer_norm(x[i:i + 1], w, b, 1e-5)

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
