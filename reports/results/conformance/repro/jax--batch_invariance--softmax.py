"""jax against the conformance law batch_invariance/softmax (bit for bit): softmax: row 0 in a batch of 33 against
alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 5 of 256
elements differ; first at (0, 17): 358ba31a against 358ba31b. Run with python; it prints how many elements differ
and the first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy.special
import optax


jax.config.update("jax_platforms", "cpu")


def _softmax(x):
    return jax.nn.softmax(x, axis=-1)


_softmax = jax.jit(_softmax)


def softmax(x):
    a = jnp.asarray
    return np.asarray(_softmax(a(x)))


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'jax--batch_invariance--softmax.x.npy', allow_pickle=False)
i = 0

got = softmax(x)[i:i + 1]
want = softmax(x[i:i + 1])

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
