"""jax against the conformance law batch_invariance/matmul (bit for bit): x·Wᵀ: row 1 in a batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 1 of 1 elements
differ; first at (0, 0): 440980d0 against 440980c8. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy.special
import optax


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


jax.config.update("jax_platforms", "cpu")


def _linear(x, w, b):
    y = jnp.matmul(x, w.T)
    return y if b is None else y + b


_linear = jax.jit(_linear)


def linear(x, w, b):
    a = jnp.asarray
    return np.asarray(_linear(a(x), a(w), None if b is None else a(b)))


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'jax--batch_invariance--matmul.x.npy', allow_pickle=False)
i = 1
w = f32("""
    3eb0f069 3f525591 3ea92f0c bfa6cddb 3f67c567 3ee48b35 bf0975c4 3f14c428
    3ebaa93c 3e969889 3ce8d5c3 3f0bf562 bf3c8841 be26d1de bef6d858 3f194dfc
    3d22b3a6
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
